// ASSET-V1 transport: where a request came from, what it asks, and how the reply is addressed and
// encoded, for the three `payload.encoding`s of contract §3.
//
// kura-protobuf / simple-json (Kura's CloudServiceImpl + MessageHandlerCallable, reference §3.1):
//   request  <prefix>/<account>/<device>/ASSET-V1/<METHOD>/<resource…>, string metrics
//            `request.id` and `requester.client.id`, JSON array in the body;
//   reply    <prefix>/<account>/<requester>/ASSET-V1/REPLY/<request.id>, metric `response.code`
//            (int32) and `response.exception.message` on errors, the JSON array as body.
// json (bare, contract §3):
//   request  <prefix>/<account>/<device>/ASSET-V1/<METHOD>/<resource…>/<requester>/<request-id>,
//            the payload is the JSON array;
//   reply    same reply topic; the JSON array on success, else
//            {"response.code":400,"response.exception.message":"…"}.

import type { PayloadEncoding } from '../config.js';
import { decodeKuraPayload, encodeKuraPayloadForWire, findMetric, type KuraMetric, type KuraPayload } from '../kura-payload.js';
import { decodeSimpleJsonPayload, encodeSimpleJsonPayload } from '../simple-json-payload.js';

export const APP_ID = 'ASSET-V1';

/** An error answered with a response code (Kura's KuraException mapping, reference §3.1). */
export class AssetV1Error extends Error {
  constructor(
    readonly code: 400 | 404 | 500,
    /** Undefined: no `response.exception.message` (Kura's IllegalArgumentException / unknown method). */
    readonly detail?: string,
  ) {
    super(detail ?? `response code ${code}`);
  }
}

/** Kura says `Bad request. {0}` here; contract §4 has us name the problem instead. */
export const badRequest = (reason: string) => new AssetV1Error(400, `Bad request. ${reason}`);

export interface AssetV1Request {
  method: string;
  resources: string[];
  requestId: string;
  requester: string;
  /** Undefined when the request carried no body (or an empty one). */
  body?: Buffer;
}

export interface Reply {
  topic: string;
  payload: Buffer;
}

export interface EnvelopeOptions {
  prefix: string;
  account: string;
  clientId: string;
  encoding: PayloadEncoding;
  gzip: boolean;
}

export type Parsed = { ok: true; request: AssetV1Request } | { ok: false; ignore: boolean; reason: string };

/** A topic level a reply can be published to: non-empty, no separator or wildcard [MQTT-4.7.1]. */
const TOPIC_LEVEL = /^[^/+#\u0000]+$/;

function stringMetric(p: KuraPayload, name: string): string | undefined {
  const m: KuraMetric | undefined = findMetric(p, name);
  // Kura casts the metric to String: another type is a ClassCastException, i.e. silence.
  return m && m.type === 'STRING' ? m.value : undefined;
}

export class Envelope {
  constructor(readonly opts: EnvelopeOptions) {}

  /** The subscription that receives every request to this device. */
  get subscription(): string {
    const o = this.opts;
    return `${o.prefix}/${o.account}/${o.clientId}/${APP_ID}/#`;
  }

  /**
   * Decodes an incoming message. `ignore` marks messages that are not requests at all (replies,
   * other devices); the others are dropped with a log line, as Kura drops them without a reply.
   */
  parse(topic: string, payload: Buffer): Parsed {
    const o = this.opts;
    const levels = topic.split('/');
    if (levels.length < 5 || levels[0] !== o.prefix || levels[1] !== o.account || levels[2] !== o.clientId || levels[3] !== APP_ID) {
      return { ok: false, ignore: true, reason: 'not an ASSET-V1 request topic' };
    }
    let app = levels.slice(4);
    if (app[0] === 'REPLY') return { ok: false, ignore: true, reason: 'reply topic' };
    // Java's String.split drops trailing empty strings: `GET/assets/` is ["GET","assets"].
    while (app.length > 0 && app[app.length - 1] === '') app = app.slice(0, -1);
    if (app.length === 0) return { ok: false, ignore: false, reason: 'no method in topic' };

    if (o.encoding === 'json') {
      if (app.length < 3) return { ok: false, ignore: false, reason: 'bare-JSON request without <requester>/<request-id> topic levels' };
      const requestId = app[app.length - 1]!;
      const requester = app[app.length - 2]!;
      if (!TOPIC_LEVEL.test(requester) || !TOPIC_LEVEL.test(requestId)) return { ok: false, ignore: false, reason: 'empty requester or request id' };
      return {
        ok: true,
        request: { method: app[0]!, resources: app.slice(1, -2), requester, requestId, body: payload.length > 0 ? payload : undefined },
      };
    }

    let kp: KuraPayload;
    if (o.encoding === 'simple-json') {
      kp = decodeSimpleJsonPayload(payload);
    } else {
      const d = decodeKuraPayload(payload);
      // Kura wraps an undecodable payload as the body of an empty KuraPayload: no metrics, no reply.
      if (!d.ok) return { ok: false, ignore: false, reason: d.error };
      kp = d.value;
    }
    const requestId = stringMetric(kp, 'request.id');
    const requester = stringMetric(kp, 'requester.client.id');
    if (requestId === undefined || requester === undefined) {
      return { ok: false, ignore: false, reason: 'request without string metrics request.id and requester.client.id' };
    }
    if (!TOPIC_LEVEL.test(requester) || !TOPIC_LEVEL.test(requestId)) {
      return { ok: false, ignore: false, reason: 'request.id or requester.client.id cannot be a topic level' };
    }
    // Over a decoding bound (MAX_INFLATED_BYTES, MAX_METRICS): not a request to act on.
    if (kp.refused) return { ok: false, ignore: false, reason: kp.refused };
    const body = kp.body && kp.body.length > 0 ? kp.body : undefined;
    return { ok: true, request: { method: app[0]!, resources: app.slice(1), requester, requestId, body } };
  }

  replyTopic(req: AssetV1Request): string {
    const o = this.opts;
    return `${o.prefix}/${o.account}/${req.requester}/${APP_ID}/REPLY/${req.requestId}`;
  }

  /** A success reply carrying a JSON body. */
  ok(req: AssetV1Request, json: string): Reply {
    return { topic: this.replyTopic(req), payload: this.encode(200, undefined, json) };
  }

  error(req: AssetV1Request, err: AssetV1Error): Reply {
    return { topic: this.replyTopic(req), payload: this.encode(err.code, err.detail, undefined) };
  }

  private encode(code: number, message: string | undefined, json: string | undefined): Buffer {
    const o = this.opts;
    if (o.encoding === 'json') {
      if (code === 200) return Buffer.from(json ?? '[]', 'utf8');
      const obj: Record<string, unknown> = { 'response.code': code };
      if (message !== undefined) obj['response.exception.message'] = message;
      return Buffer.from(JSON.stringify(obj), 'utf8');
    }
    const p: KuraPayload = { timestamp: BigInt(Date.now()), metrics: [{ name: 'response.code', type: 'INT32', value: code }] };
    if (message !== undefined) p.metrics.push({ name: 'response.exception.message', type: 'STRING', value: message });
    if (json !== undefined) p.body = Buffer.from(json, 'utf8');
    return o.encoding === 'simple-json' ? encodeSimpleJsonPayload(p) : encodeKuraPayloadForWire(p, o.gzip);
  }
}

/**
 * Parses a request body as strict JSON (RFC 8259, contract §5). `undefined` for no body.
 * Bodies are JSON arrays of objects; the verb checks the shape.
 */
export function parseBody(body: Buffer | undefined): unknown {
  if (body === undefined) return undefined;
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    throw badRequest('The body is not UTF-8 text.');
  }
  try {
    return JSON.parse(text);
  } catch {
    throw badRequest('The body is not valid JSON.');
  }
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
