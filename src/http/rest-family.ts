// Mounts a request-core family (src/core/family.ts) on the HTTP server: one route per core route,
// the route's role (else the family's) on each, checked by the authorisation stage, and the
// family's error style as the API family's error shape.

import { errorJsonFamily, jsonFamily, textFamily, type HttpServer } from './server.js';
import { mediaType, readBody, readJsonBody } from './body.js';
import { HttpError } from './context.js';
import type { RequestContext } from './context.js';
import { JsonPieces, PayloadReply, TextReply, replyText, restOf, roleOf, type CoreRequest, type Family, type Method } from '../core/family.js';
import { isThenable } from '../core/thenable.js';

export interface RestMountOptions {
  /** The permissions of an identity name (the identity store); undefined for an unknown name. */
  permissionsOf(name: string): readonly string[] | undefined;
  /** Request body bound in bytes (413 beyond); default 1 MiB. */
  bodyLimit?: number;
}

export function mountRest(server: HttpServer, family: Family, opts: RestMountOptions): void {
  if (family.rest === undefined) throw new Error(`family ${family.name} has no REST base`);
  if (family.errors === 'native' || family.errors === 'message') throw new Error(`family ${family.name}: the ${family.errors} error style is MQTT only`);
  const api = family.errors === 'json' ? jsonFamily(family.name) : family.errors === 'error' ? errorJsonFamily(family.name) : textFamily(family.name);
  for (const route of family.routes) {
    const { method, path } = restOf(family, route);
    // Not an async function: a synchronous handler answers without a promise; an asynchronous
    // one's value is written by `reply` where the server ends the request (each `then` or await
    // is a promise and a microtask more per request).
    server.route(method, path, api, (ctx) => {
      const result = route.handler(new RestRequest(ctx, route.method, route.path, opts));
      if (isThenable(result)) return Promise.resolve(result);
      reply(ctx, result);
    }, roleOf(family, route), reply);
  }
}

function reply(ctx: RequestContext, result: unknown): void {
  if (result instanceof JsonPieces) return ctx.stream(200, result.pieces, 'application/json', result.close);
  // REST has no metrics: a native reply is its status and its body, as text.
  if (result instanceof PayloadReply) return result.body === undefined ? ctx.empty(result.status) : ctx.text(result.status, result.body);
  if (result instanceof TextReply) return ctx.send(result.status, result.text, result.contentType, result.headers);
  const text = replyText(result);
  if (text === undefined) ctx.empty(200);
  else ctx.rawJson(200, text);
}

/**
 * The neutral request of a REST call; resources and identity are worked out only when read. A
 * class, not an object literal with getters: a literal's getters are new closures on every request,
 * which gives every request object a shape of its own (slow property reads in every handler, and
 * those shapes and closures kept the garbage collector busy).
 */
class RestRequest implements CoreRequest {
  readonly transport = 'rest' as const;
  readonly params: Readonly<Record<string, string>>;
  readonly metrics = undefined;
  readonly clientId = undefined;

  constructor(
    private readonly ctx: RequestContext,
    readonly method: Method,
    private readonly routePath: string,
    private readonly opts: RestMountOptions,
  ) {
    this.params = ctx.params;
  }

  get resources(): readonly string[] {
    // The resource path below the base: as many trailing segments as the route has.
    const below = this.routePath.split('/').filter(Boolean).length;
    const segs = this.ctx.path.split('/').filter(Boolean);
    return segs.slice(segs.length - below);
  }

  get identity(): CoreRequest['identity'] {
    const p = this.ctx.principal;
    return p ? { name: p.name, via: p.via, permissions: this.opts.permissionsOf(p.name) ?? [] } : undefined;
  }

  body(o?: { exact?: boolean; limit?: number }): Promise<unknown> {
    return readJsonBody(this.ctx, { limit: o?.limit ?? this.opts.bodyLimit, exact: o?.exact });
  }

  async bytes(o: { mediaTypes: readonly string[]; limit: number }): Promise<Buffer | undefined> {
    const h = this.ctx.req.headers;
    if (h['transfer-encoding'] === undefined && (h['content-length'] === undefined || h['content-length'] === '0')) return undefined;
    const mt = mediaType(this.ctx);
    if (!o.mediaTypes.includes(mt)) {
      this.ctx.req.resume();
      throw new HttpError(415, `${mt === '' ? 'No Content-Type' : `Unsupported content type ${JSON.stringify(mt)}`}: expected ${o.mediaTypes.join(' or ')}`);
    }
    return readBody(this.ctx, o.limit);
  }

  query(name: string): string | undefined {
    const url = this.ctx.req.url ?? '';
    const at = url.indexOf('?');
    return at < 0 ? undefined : (new URLSearchParams(url.slice(at + 1)).get(name) ?? undefined);
  }

  /** No one to notify over REST: the answer is the whole reply. */
  notify(): void {}
}
