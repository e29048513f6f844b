// The HTTP edge: listeners on every configured port, the request pipeline and the route table.
//
// Pipeline, in the order of Kura's RestService: route matching (404/405) → pipeline stages
// (allowed ports, the cross-site refusal of cross-site.ts, authentication, authorisation — the
// daemon lists them) → handler → response filters (403→401 rewrite, WWW-Authenticate). Each API
// family brings its own error shape.

import http from 'node:http';
import type https from 'node:https';
import { lazyBuiltin } from '../core/builtin.js';
import type { Socket } from 'node:net';
import type { Logger } from '../log.js';
import { Router, decodePath } from '../core/router.js';
import { RequestError } from '../core/errors.js';
import { BodyGate } from './body.js';
import { AnswerBatch } from './answer-batch.js';
import { ConnectionsCheck } from './conn-check.js';
import { HttpError, RequestContext, addressPrefix, storageError, type ListenerInfo, type ResponseFilter } from './context.js';

// Loaded when an HTTPS listener opens (docs/installation.md "Start-up time").
const httpsModule = lazyBuiltin<typeof https>('node:https');

/** A handler answers through `ctx`, or returns a promise of a value its route's `reply` writes. */
export type Handler = (ctx: RequestContext) => Promise<unknown> | void;

/** How an API family renders its errors (JSON `{message}` for session, text/plain for deploy/assets). */
export interface ApiFamily {
  name: string;
  onError(ctx: RequestContext, err: HttpError): void;
}

export interface Route {
  handler: Handler;
  family: ApiFamily;
  /** Kura's `@RolesAllowed`: permission `rest.<role>` (or kura.admin) is required. */
  role?: string;
  /**
   * Writes the value a handler's promise resolves to (a request-core family's reply): called where
   * the request ends, so an asynchronous answer costs one `then`, not one more for the reply.
   */
  reply?: (ctx: RequestContext, value: unknown) => void;
}

/** A stage runs after matching and before the handler; it may throw HttpError to answer early. */
export type Stage = (ctx: RequestContext, route: Route) => Promise<void> | void;

export const jsonFamily = (name: string): ApiFamily => ({
  name,
  onError(ctx, err) {
    if (err.bodiless) ctx.empty(err.status, err.headers);
    else ctx.json(err.status, { message: err.message }, err.headers);
  },
});

/** Errors as `{"error": message}` (gatewayd's commissioning tools, docs/rest-api.md "drivers"). */
export const errorJsonFamily = (name: string): ApiFamily => ({
  name,
  onError(ctx, err) {
    if (err.bodiless) ctx.empty(err.status, err.headers);
    else ctx.json(err.status, { error: err.message }, err.headers);
  },
});

export const textFamily = (name: string): ApiFamily => ({
  name,
  onError(ctx, err) {
    if (err.bodiless) ctx.empty(err.status, err.headers);
    else ctx.text(err.status, err.message, err.headers);
  },
});

const INTERNAL = 'An internal error occurred';

export interface TlsMaterial {
  cert: string | Buffer;
  key: string | Buffer;
  /** Truststore for client-auth listeners. */
  ca?: string | Buffer;
  /** Revocation lists checked for client certificates (every CA of the chain needs one). */
  crl?: string | Buffer;
}

export interface ListenSpec {
  port: number;
  kind: 'http' | 'https' | 'client-auth';
}

// TLS 1.2 minimum, forward-secret AEAD suites only (TLS 1.3 suites are all strong).
const CIPHERS = [
  'TLS_AES_128_GCM_SHA256',
  'TLS_AES_256_GCM_SHA384',
  'TLS_CHACHA20_POLY1305_SHA256',
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
].join(':');

export interface ServerLimits {
  /** Time to receive the request headers (slowloris). */
  headersTimeoutMs: number;
  /** Time to receive the whole request (uploads included). */
  requestTimeoutMs: number;
  keepAliveTimeoutMs: number;
  /** A connection that moves no byte either way for this long is closed (checked by one sweep, idleSweep()). */
  socketTimeoutMs: number;
  maxHeaderSize: number;
  /** Open connections over all listeners; beyond it the oldest unproven one is dropped (shed()). */
  maxConnections: number;
  /** Time to receive a body read into memory, and reads without a principal at once (BodyGate). */
  bodyTimeoutMs: number;
  maxUnauthenticatedBodies: number;
}

export const DEFAULT_LIMITS: ServerLimits = {
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 300_000,
  keepAliveTimeoutMs: 5_000,
  socketTimeoutMs: 120_000,
  maxHeaderSize: 16 * 1024,
  // About 42 KB each over TLS, 6 KB plain (measured): 512 TLS connections take some 21 MB.
  maxConnections: 512,
  bodyTimeoutMs: 20_000,
  maxUnauthenticatedBodies: 8,
};

/** Per-connection state for shed(): whether it has completed a request, and whether one is running. */
interface Conn {
  served: boolean;
  busy: boolean;
  /** The client's address prefix (addressPrefix). */
  from: string;
  /** Bytes read + written at the last idle sweep, and when they last changed (idleSweep()). */
  bytes: number;
  moved: number;
}
const CONN = Symbol('conn');
type Tracked = Socket & { [CONN]?: Conn; _parent?: Tracked };

export class HttpServer {
  readonly routes = new Router<Route>();
  readonly stages: Stage[] = [];
  readonly filters: ResponseFilter[] = [];
  private servers: { server: http.Server; info: ListenerInfo; tls?: https.ServerOptions; checks: ConnectionsCheck }[] = [];
  /** Open connections, oldest first (raw TCP sockets; a TLS request finds its own through `_parent`). */
  private sockets = new Map<Socket, Conn>();
  /** Open connections per address prefix. */
  private perPrefix = new Map<string, number>();
  readonly bodyGate: BodyGate;
  private readonly answers = new AnswerBatch();
  private sweeper: NodeJS.Timeout | undefined;
  private closing = false;

  constructor(
    private readonly log: Logger,
    private readonly limits: ServerLimits = DEFAULT_LIMITS,
  ) {
    this.bodyGate = new BodyGate(limits.bodyTimeoutMs, limits.maxUnauthenticatedBodies);
  }

  /** Adds a pipeline stage: stages run in the order added, after route matching, before the handler. */
  use(stage: Stage): this {
    this.stages.push(stage);
    return this;
  }

  /** Adds a response filter (it may change the status and headers of every response). */
  filter(f: ResponseFilter): this {
    this.filters.push(f);
    return this;
  }

  route(method: string, path: string, family: ApiFamily, handler: Handler, role?: string, reply?: Route['reply']): this {
    this.routes.add(method, path, { handler, family, role, reply });
    return this;
  }

  /**
   * Replaces the revocation lists of the client-auth listeners (reload): new handshakes use them,
   * connections already open keep theirs.
   */
  setCrl(crl: Buffer | undefined): void {
    for (const { server, info, tls } of this.servers) {
      if (!info.clientAuth || !tls) continue;
      if (crl) tls.crl = crl;
      else delete tls.crl;
      (server as https.Server).setSecureContext(tls);
    }
  }

  /**
   * Replaces the certificate and key of every HTTPS listener, and the truststore of the client-auth
   * ones when `ca` is given (a keystore entry they use changed): new handshakes use them,
   * connections already open keep theirs.
   */
  setTlsIdentity(m: { cert: string | Buffer; key: string | Buffer; ca?: string | Buffer }): void {
    for (const { server, info, tls } of this.servers) {
      if (!tls) continue;
      tls.cert = m.cert;
      tls.key = m.key;
      if (info.clientAuth && m.ca !== undefined) tls.ca = m.ca;
      (server as https.Server).setSecureContext(tls);
    }
  }

  /** The ports actually bound (after port 0 was resolved), per listener. */
  listeners(): ListenerInfo[] {
    return this.servers.map((s) => s.info);
  }

  /**
   * Opens a listener per spec, all or none: when one cannot open (a port taken, an address the
   * device does not have, unusable TLS material), those this call opened are closed again before the
   * error is thrown, so the caller may try other settings (docs/configuration-v2.md "Listener settings").
   */
  async listen(specs: ListenSpec[], host: string, tls?: TlsMaterial): Promise<void> {
    const before = this.servers.length;
    try {
      await this.openEach(specs, host, tls);
    } catch (err) {
      const opened = this.servers.splice(before);
      await Promise.all(opened.map(({ server }) => new Promise<void>((r) => server.close(() => r()))));
      throw err;
    }
  }

  private async openEach(specs: ListenSpec[], host: string, tls?: TlsMaterial): Promise<void> {
    for (const spec of specs) {
      const info: ListenerInfo = { port: spec.port, secure: spec.kind !== 'http', clientAuth: spec.kind === 'client-auth' };
      // Node checks header/request timeouts only every `connectionsCheckingInterval` (30 s by default),
      // which would let a slowloris client hold a socket far past headersTimeout.
      const opts: http.ServerOptions = {
        maxHeaderSize: this.limits.maxHeaderSize,
        connectionsCheckingInterval: Math.max(100, Math.min(1000, this.limits.headersTimeoutMs / 4)),
      };
      let server: http.Server;
      let tlsOpts: https.ServerOptions | undefined;
      if (spec.kind === 'http') {
        server = http.createServer(opts);
      } else {
        if (!tls) throw new Error(`port ${spec.port}: HTTPS listener without a certificate`);
        tlsOpts = {
          ...opts,
          cert: tls.cert,
          key: tls.key,
          minVersion: 'TLSv1.2',
          ciphers: CIPHERS,
          honorCipherOrder: true,
          // A TLS handshake gets the time of a request's headers (Node's default is 120 s).
          handshakeTimeout: this.limits.headersTimeoutMs,
        };
        if (spec.kind === 'client-auth') {
          tlsOpts.requestCert = true;
          tlsOpts.rejectUnauthorized = true;
          tlsOpts.ca = tls.ca;
          if (tls.crl) tlsOpts.crl = tls.crl;
        } else {
          // No client certificates are asked for here, so no trust store is needed: without `ca`
          // Node would parse its ~140 built-in root certificates, a third of the CPU of a start-up
          // with HTTPS (docs/installation.md "Start-up time").
          tlsOpts.ca = [];
        }
        server = httpsModule().createServer(tlsOpts);
        server.on('tlsClientError', (err: Error) => {
          this.log.debug('TLS handshake failed', { port: info.port, error: err.message });
        });
      }
      server.headersTimeout = this.limits.headersTimeoutMs;
      server.requestTimeout = this.limits.requestTimeoutMs;
      server.keepAliveTimeout = this.limits.keepAliveTimeoutMs;
      // Set once listening: Node's own check of header and request timeouts, stopped while this
      // listener has no connection (conn-check.ts).
      let checks: ConnectionsCheck | undefined;
      let open = 0;
      server.on('request', (req, res) => this.handle(req, res, info));
      server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
        // Malformed request lines/headers, header timeouts: answer 400/408/431 if we still can, then
        // close as for an unread body (lingerClose): a client still sending its oversized headers
        // would otherwise get a reset instead of the 431.
        if (socket.writableEnded) return; // answered already, and closing
        if (socket.writable && !socket.destroyed) {
          const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
          socket.write(`HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
          lingerClose(socket);
        } else socket.destroy();
      });
      server.on('connection', (s: Tracked) => {
        s.setNoDelay(true);
        if (this.sockets.size >= this.limits.maxConnections) this.shed();
        const c: Conn = { served: false, busy: false, from: addressPrefix(s.remoteAddress ?? ''), bytes: 0, moved: Date.now() };
        s[CONN] = c;
        this.sockets.set(s, c);
        this.perPrefix.set(c.from, (this.perPrefix.get(c.from) ?? 0) + 1);
        if (open++ === 0) checks?.resume();
        this.armSweeper();
        s.once('close', () => {
          if (--open === 0) checks?.pause();
          this.sockets.delete(s);
          const n = this.perPrefix.get(c.from)! - 1;
          if (n > 0) this.perPrefix.set(c.from, n);
          else this.perPrefix.delete(c.from);
        });
      });
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen({ port: spec.port, host }, () => {
          server.off('error', reject);
          resolve();
        });
      });
      server.on('error', (err) => this.log.error('listener error', { port: info.port, error: err.message }));
      const addr = server.address();
      if (addr && typeof addr === 'object') info.port = addr.port;
      checks = new ConnectionsCheck(server);
      if (open === 0) checks.pause();
      this.servers.push({ server, info, tls: tlsOpts, checks });
      this.log.info('listening', { port: info.port, tls: info.secure, clientAuth: info.clientAuth, host });
    }
  }

  /**
   * The timers that run while the daemon has no HTTP connection (none: an idle daemon is not woken
   * by its listeners): how many listeners' timeout checks run, whether the idle sweep does.
   */
  timersRunning(): { connectionChecks: number; controlled: number; sweeper: boolean } {
    let connectionChecks = 0;
    let controlled = 0;
    for (const { checks } of this.servers) {
      if (checks.active) connectionChecks++;
      if (checks.controlled) controlled++;
    }
    return { connectionChecks, controlled, sweeper: this.sweeper !== undefined };
  }

  /**
   * No per-socket idle timer (server.setTimeout): Node would make a new timer for every request and
   * move it on every read and write; idleSweep() looks at all connections a few times per period,
   * and only while there are connections.
   */
  private armSweeper(): void {
    if (this.sweeper || this.closing) return;
    this.sweeper = setInterval(() => this.idleSweep(), Math.max(50, this.limits.socketTimeoutMs / 4)).unref();
  }

  /**
   * Closes connections that moved no byte either way for `socketTimeoutMs` (a client that stopped
   * reading its answer or sending its request, a handler that never answers), within a quarter of
   * that period. Idle keep-alive connections and unfinished headers have Node's own, shorter limits.
   * Stops itself when no connection is left.
   */
  private idleSweep(): void {
    if (this.sockets.size === 0) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
      return;
    }
    const now = Date.now();
    for (const [s, c] of this.sockets) {
      const bytes = s.bytesRead + s.bytesWritten;
      if (bytes !== c.bytes) (c.bytes = bytes), (c.moved = now);
      else if (now - c.moved >= this.limits.socketTimeoutMs) s.destroy();
    }
  }

  /**
   * Makes room for a new connection at `maxConnections`, taken from the address prefix holding the
   * most connections (from any address when each holds one): its oldest connection that has not sent
   * a request yet (slowloris, a stalled TLS handshake), else its oldest idle one, else its oldest busy
   * one. A flood from some addresses cannot keep a prompt client from elsewhere out, nor end its
   * request.
   */
  private shed(): void {
    let top = '';
    let most = 0;
    for (const [p, n] of this.perPrefix) if (n > most) (top = p), (most = n);
    let idle: Socket | undefined;
    let busy: Socket | undefined;
    for (const [s, c] of this.sockets) {
      if (s.destroyed || (most > 1 && c.from !== top)) continue;
      if (!c.served && !c.busy) return void s.destroy();
      if (c.busy) busy ??= s;
      else idle ??= s;
    }
    (idle ?? busy)?.destroy();
  }

  /**
   * Not an async function: a request whose stages and handler answer synchronously costs no
   * promise, and one whose handler returns a promise (an asset read) one `then` (an async frame
   * here was the largest allocation of a read).
   */
  private handle(req: http.IncomingMessage, res: http.ServerResponse, info: ListenerInfo): void {
    const path = decodePath(req.url ?? '');
    const ctx = new RequestContext(req, res, info, path ?? '/', this.filters, this.answers);
    ctx.bodyGate = this.bodyGate;
    const sock = req.socket as Tracked;
    const conn = sock[CONN] ?? sock._parent?.[CONN];
    if (conn) conn.busy = true;
    let route: Route | undefined;
    try {
      if (path === undefined) throw new HttpError(400, 'Malformed request target', true);
      const m = this.routes.find(req.method ?? 'GET', path);
      if (m.kind === 'not-found') throw new HttpError(404, 'Not found', true);
      if (m.kind === 'method-not-allowed') throw new HttpError(405, 'Method not allowed', true, { allow: m.allowed.join(', ') });
      route = m.handler;
      ctx.params = m.params;
      // Stages are often synchronous: await only what is a promise (each await costs a microtask hop).
      for (let i = 0; i < this.stages.length; i++) {
        const r = this.stages[i](ctx, route);
        if (r) return void this.resume(r, i + 1, ctx, route, conn);
      }
      const h = route.handler(ctx);
      if (h) {
        const rt = route;
        h.then(
          (value) => this.answered(ctx, rt, conn, value),
          (err) => this.finish(ctx, rt, conn, err, true),
        );
        return;
      }
    } catch (err) {
      return this.finish(ctx, route, conn, err, true);
    }
    this.finish(ctx, route, conn, undefined, false);
  }

  /** The rest of a request once a stage returned a promise (stages from `next` on, then the handler). */
  private async resume(pending: Promise<void>, next: number, ctx: RequestContext, route: Route, conn: Conn | undefined): Promise<void> {
    try {
      await pending;
      for (let i = next; i < this.stages.length; i++) {
        const r = this.stages[i](ctx, route);
        if (r) await r;
      }
      const h = route.handler(ctx);
      if (h) {
        const value = await h;
        if (route.reply) route.reply(ctx, value);
      }
    } catch (err) {
      return this.finish(ctx, route, conn, err, true);
    }
    this.finish(ctx, route, conn, undefined, false);
  }

  /** A handler's promise resolved: its route's reply writes the value, then the request ends. */
  private answered(ctx: RequestContext, route: Route, conn: Conn | undefined, value: unknown): void {
    if (route.reply) {
      try {
        route.reply(ctx, value);
      } catch (err) {
        return this.finish(ctx, route, conn, err, true);
      }
    }
    this.finish(ctx, route, conn, undefined, false);
  }

  /** Ends a request: 204 when the handler did not answer, the family's error answer when it failed. */
  private finish(ctx: RequestContext, route: Route | undefined, conn: Conn | undefined, err: unknown, failed: boolean): void {
    if (failed) this.fail(ctx, route, err);
    else if (!ctx.responded) {
      try {
        ctx.empty(204);
      } catch (e) {
        this.fail(ctx, route, e);
      }
    }
    if (conn) {
      conn.busy = false;
      conn.served = true;
    }
  }

  private fail(ctx: RequestContext, route: Route | undefined, err: unknown): void {
    if (ctx.responded || ctx.res.headersSent) {
      ctx.res.destroy();
      return;
    }
    let httpErr: HttpError;
    if (err instanceof HttpError) {
      httpErr = err;
    } else if (err instanceof RequestError) {
      // A request-core error (src/core/errors.ts): no detail means a bare status.
      httpErr = new HttpError(err.status, err.detail ?? '', err.detail === undefined);
    } else {
      // Never a stack trace to the client; one log line with the route for the operator.
      this.log.error('request failed', { method: ctx.method, path: ctx.path, error: (err as Error)?.message ?? String(err) });
      httpErr = storageError(err) ?? new HttpError(500, INTERNAL);
    }
    // A body we refused to read must not be parsed as the next request on this connection: close it,
    // and say so, or a keep-alive client sends its next request into a dying socket. A bodiless
    // request is not yet `complete` when a synchronous 404/405 lands here: keep that one alive.
    const unread = !ctx.req.complete && (ctx.req.headers['transfer-encoding'] !== undefined || Number(ctx.req.headers['content-length'] ?? 0) !== 0);
    if (unread) {
      ctx.res.setHeader('connection', 'close');
      // Node ends the socket of a `Connection: close` answer with destroySoon(), which closes it as
      // soon as the answer is out, with the body still arriving: linger instead (lingerClose).
      const socket = ctx.req.socket as Socket & { destroySoon?: () => void };
      socket.destroySoon = () => lingerClose(socket);
    }
    if (route) route.family.onError(ctx, httpErr);
    else if (httpErr.bodiless) ctx.empty(httpErr.status, httpErr.headers);
    else ctx.text(httpErr.status, httpErr.message, httpErr.headers);
  }

  /**
   * Stops accepting, lets in-flight requests finish (up to `graceMs`), then closes every socket.
   * No per-request bookkeeping: a closed server's callback fires once its last connection ends, and
   * connections that go idle after their response are closed as they do.
   */
  async close(graceMs = 3000): Promise<void> {
    const servers = this.servers.map((s) => s.server);
    this.servers = [];
    this.closing = true;
    clearInterval(this.sweeper);
    this.sweeper = undefined;
    const allClosed = Promise.all(servers.map((server) => new Promise<void>((r) => server.close(() => r()))));
    const sweep = () => {
      for (const server of servers) server.closeIdleConnections?.();
    };
    sweep();
    const sweeper = setInterval(sweep, 25);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([allClosed, new Promise<void>((r) => (timer = setTimeout(r, graceMs)))]);
    clearInterval(sweeper);
    clearTimeout(timer);
    for (const s of this.sockets.keys()) s.destroy();
  }
}

/** How long a connection closed with its request unread still takes (and drops) input. */
const LINGER_MS = 500;

/**
 * Closes a connection whose request was not read whole (a body left unread, a malformed or
 * oversized head), after its answer: FIN first, then the socket a moment later. Closing at once
 * with the client's bytes still arriving makes the kernel answer with a reset, which can destroy
 * the answer before the client has read it (the "lingering close" of RFC 9112 §9.6); the delay is
 * short, so a slow sender is still cut.
 */
function lingerClose(socket: Socket): void {
  socket.end();
  setTimeout(() => socket.destroy(), LINGER_MS).unref();
}
