// A request-core family (src/core/family.ts) as an MQTT application (src/mqtt/applications.ts):
// the topic's method and resource levels select the route, the body goes through the one JSON
// reader, errors are formatted by the family's style (src/core/errors.ts), and a reply beyond
// MAX_REPLY_BYTES becomes an error reply (`Reply too large`, response.code 500) instead of a
// message the broker may refuse.

import type { Logger } from '../log.js';
import type { ApplicationContext, MqttApplication } from './applications.js';
import type { MqttRequest, MqttResponse } from './envelope.js';
import { ReplyTooLargeError, RequestError, mqttError } from '../core/errors.js';
import { readJsonBytes } from '../core/json.js';
import { MAX_REPLY_BYTES } from '../core/limits.js';
import { JsonPieces, METHODS, PayloadReply, replyText, roleOf, routerOf, type CoreRequest, type Family, type Method } from '../core/family.js';

export function familyApplication(family: Family, log: Logger): MqttApplication {
  if (family.appId === undefined) throw new Error(`family ${family.name} has no MQTT application id`);
  const router = routerOf(family);
  const noMatch = family.noMatch ?? (() => new RequestError(404, 'Not found.'));
  const find = (req: MqttRequest) => ((METHODS as readonly string[]).includes(req.method) ? router.find(req.method, `/${req.resources.join('/')}`) : undefined);
  return {
    appId: family.appId,
    // Checked before `handle` for every application (src/mqtt/applications.ts `dispatch`): the
    // route's role; a request no route matches needs the family's before it learns so.
    role: family.role,
    roleOf(req: MqttRequest): string | undefined {
      const m = find(req);
      return m?.kind === 'found' ? roleOf(family, m.handler) : family.role;
    },
    async handle(req: MqttRequest, ctx: ApplicationContext): Promise<MqttResponse> {
      try {
        const m = find(req);
        if (!m || m.kind !== 'found') throw noMatch(req.method, req.resources, m?.kind === 'method-not-allowed' ? m.allowed : []);
        const core: CoreRequest = {
          transport: 'mqtt',
          method: req.method as Method,
          resources: req.resources,
          params: m.params,
          identity: { name: req.requester, via: 'mqtt', permissions: ctx.permissions },
          metrics: req.metrics,
          clientId: ctx.clientId,
          body: async (o) => readJsonBytes(req.body, o),
          bytes: async () => req.body,
          query: () => undefined,
          notify: (resource, message) => ctx.notify(resource, message),
        };
        const result = await m.handler.handler(core);
        const text = result instanceof JsonPieces ? collect(result) : replyText(result);
        if (text !== undefined && text.length > MAX_REPLY_BYTES / 4 && Buffer.byteLength(text) > MAX_REPLY_BYTES) {
          throw new ReplyTooLargeError(`Reply too large: ${Buffer.byteLength(text)} bytes, the limit is ${MAX_REPLY_BYTES}; ask for fewer assets or channels`);
        }
        if (result instanceof PayloadReply) return { code: result.status, metrics: result.metrics.length > 0 ? result.metrics : undefined, body: text };
        return { code: 200, body: text };
      } catch (err) {
        if (err instanceof RequestError) {
          log.debug('MQTT request refused', { app: family.appId, code: err.status, reason: err.detail ?? '' });
          return mqttError(family.errors, err);
        }
        // A bug or an unexpected service failure: 500 without details, as Kura does.
        log.error('MQTT request failed', { app: family.appId, method: req.method, error: (err as Error)?.message ?? String(err) });
        return { code: 500 };
      }
    },
  };
}

/** The text of a reply made in pieces, refused (Reply too large: 500 over MQTT) as soon as it passes the reply bound: never more than the bound in memory. */
function collect(reply: JsonPieces): string {
  let text = '';
  let failed: unknown;
  try {
    for (const piece of reply.pieces) {
      text += piece;
      if (text.length > MAX_REPLY_BYTES) throw new ReplyTooLargeError(`Reply too large: more than ${MAX_REPLY_BYTES} bytes, the limit; ask for fewer components`);
    }
    return text;
  } catch (err) {
    failed = err;
    throw err;
  } finally {
    reply.close(failed instanceof ReplyTooLargeError ? undefined : failed);
  }
}
