// A request-core family (src/core/family.ts) as an MQTT application (src/mqtt/applications.ts):
// the topic's method and resource levels select the route, the body goes through the one JSON
// reader, errors are formatted by the family's style (src/core/errors.ts), and a reply beyond
// MAX_REPLY_BYTES becomes an error reply (`Reply too large`, response.code 500) instead of a
// message the broker may refuse. A TextPieces reply (CONF-V1's XML) is compressed while it is made
// when the connection gzips its replies, and bounded as sent (MAX_COMPRESSED_REPLY_BYTES).

import type { Logger } from '../log.js';
import type { ApplicationContext, MqttApplication, MqttApplications } from './applications.js';
import type { MqttRequest, MqttResponse } from './envelope.js';
import { ReplyTooLargeError, RequestError, mqttError } from '../core/errors.js';
import { readJsonBytes } from '../core/json.js';
import { MAX_COMPRESSED_REPLY_BYTES, MAX_REPLY_BYTES } from '../core/limits.js';
import { lazyBuiltin } from '../core/builtin.js';
import type { GzippedBody } from './kura-payload.js';
import { JsonPieces, TextPieces, METHODS, PayloadReply, replyText, roleOf, routerOf, type CoreRequest, type Family, type Method } from '../core/family.js';

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
          payload: req.body,
          bytes: async () => req.body,
          query: () => undefined,
          notify: (resource, message) => ctx.notify(resource, message),
        };
        const result = await m.handler.handler(core);
        if (result instanceof TextPieces) {
          if (ctx.gzip) return { code: 200, gzippedBody: await compress(result) };
          return { code: 200, body: collect(result) };
        }
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

const zlib = lazyBuiltin<typeof import('node:zlib')>('node:zlib');
/** Text handed to the compressor at once: few calls, little held. */
const BATCH = 64 * 1024;
/**
 * zlib's level 3, the last of the levels zlib deflates with greedy matching (4 to 9 match lazily):
 * on the XML of every configuration of 100 assets of 50 Modbus channels (24 MB) it deflated in about
 * a third of the CPU of the default level 6 for a third more bytes (1.0 MB instead of 0.8 MB; levels
 * 1 and 2 were no faster and larger), measured by hand with node:zlib on this XML.
 */
const GZIP_LEVEL = 3;

/**
 * A reply made in pieces, compressed while it is made (gzip in the thread pool, while the next
 * pieces are made): only the compressed text is held, refused (Reply too large: 500) as soon as it
 * passes MAX_COMPRESSED_REPLY_BYTES. Waiting for the compressor lets other requests be served meanwhile.
 */
async function compress(reply: TextPieces): Promise<GzippedBody> {
  const gz = zlib().createGzip({ level: GZIP_LEVEL });
  const out: Buffer[] = [];
  let size = 0;
  let length = 0;
  let failure: unknown;
  gz.on('data', (b: Buffer) => {
    out.push(b);
    size += b.length;
  });
  gz.on('error', (err) => (failure ??= err));
  const tooLarge = () => new ReplyTooLargeError(`Reply too large: more than ${MAX_COMPRESSED_REPLY_BYTES} bytes compressed, the limit; ask for fewer components`);
  const send = async (text: string) => {
    const b = Buffer.from(text, 'utf8');
    length += b.length;
    if (!gz.write(b)) await new Promise<void>((resolve) => gz.once('drain', resolve).once('error', () => resolve()));
    if (failure) throw failure;
    if (size > MAX_COMPRESSED_REPLY_BYTES) throw tooLarge();
  };
  let failed: unknown;
  try {
    let batch = '';
    for (const piece of reply.pieces) {
      batch += piece;
      if (batch.length >= BATCH) await send(batch), (batch = '');
    }
    if (batch) await send(batch);
    await new Promise<void>((resolve, reject) => {
      if (failure) return reject(failure);
      gz.once('end', resolve).once('error', reject).end();
    });
    if (size > MAX_COMPRESSED_REPLY_BYTES) throw tooLarge();
    return { member: Buffer.concat(out), length };
  } catch (err) {
    failed = err;
    gz.destroy();
    throw err;
  } finally {
    reply.close(failed instanceof ReplyTooLargeError ? undefined : failed);
  }
}

/**
 * A family with `active` (src/core/family.ts) as an application registered in `apps` only while it
 * is active: `sync()` registers or unregisters it (the daemon calls it after every configuration
 * change; the set's change re-publishes BIRTH), calling the family's `stop` when it turns off.
 * `stop()` unregisters it for good and releases what it holds.
 */
export function switchedApplication(family: Family, apps: MqttApplications, log: Logger): { name: string; sync(): Promise<void>; stop(): Promise<void> } {
  const app = familyApplication(family, log);
  let on = false;
  const sync = async () => {
    const want = family.active?.() ?? true;
    if (want === on) return;
    on = want;
    if (want) {
      apps.register(app);
      log.info('MQTT application switched on', { app: app.appId });
      return;
    }
    apps.unregister(app.appId);
    log.info('MQTT application switched off', { app: app.appId });
    await family.stop?.();
  };
  return {
    name: family.name,
    sync,
    async stop() {
      if (on) apps.unregister(app.appId);
      on = false;
      await family.stop?.();
    },
  };
}

/** The text of a reply made in pieces, refused (Reply too large: 500 over MQTT) as soon as it passes the reply bound: never more than the bound in memory. */
function collect(reply: JsonPieces | TextPieces): string {
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
