// The envelope of Kura's MQTT applications (ASSET-V1, CONF-V2, DEPLOY-V2, …): where a request came
// from, what it asks, and how the reply is addressed and encoded, for the three `payload.encoding`s
// (docs/mqtt.md).
//
// kura-protobuf / simple-json (Kura's CloudServiceImpl + MessageHandlerCallable):
//   request  <prefix>/<account>/<device>/<APP-ID>/<METHOD>/<resource…>, string metrics
//            `request.id` and `requester.client.id`, JSON in the body;
//   reply    <prefix>/<account>/<requester>/<APP-ID>/REPLY/<request.id>, metric `response.code`
//            (int32) and `response.exception.message` on errors, the JSON as body;
//   notify   <prefix>/<account>/<requester>/<APP-ID>/NOTIFY/<device>/<resource> (DEPLOY-V2 progress).
// json (bare, for local subscribers and shell scripts):
//   request  <prefix>/<account>/<device>/<APP-ID>/<METHOD>/<resource…>/<requester>/<request-id>,
//            the payload is the JSON;
//   reply    same reply topic; the JSON on success, else
//            {"response.code":400,"response.exception.message":"…"} (with the fields of a JSON
//            error body, e.g. "message", merged in).
// Every reply's `response.code` is one Eclipse Kapua reads (200, 400, 404, 500): `encode` maps any
// other an application answers (src/core/errors.ts `mqttResponseCode`, docs/mqtt.md "Response codes").

import { mqttResponseCode } from '../core/errors.js';
import type { PayloadEncoding } from './config.js';
import { HEAD_BYTES, decodeKuraPayload, decodeKuraPayloadHead, encodeKuraPayloadForWire, encodeKuraPayloadGzippedBody, findMetric, gunzippedBody, type GzippedBody, type KuraMetric, type KuraPayload } from './kura-payload.js';
import { decodeSimpleJsonHead, decodeSimpleJsonPayload, encodeSimpleJsonPayload } from './simple-json-payload.js';

export interface MqttRequest {
  appId: string;
  method: string;
  resources: string[];
  requestId: string;
  requester: string;
  /** Undefined when the request carried no body (or an empty one). */
  body?: Buffer;
  /** The request's metrics (none with the bare-JSON encoding). */
  metrics: KuraMetric[];
}

/** What an application answers: a response code, an optional exception message, body and metrics. */
export interface MqttResponse {
  code: number;
  /** `response.exception.message`. */
  message?: string;
  body?: string | Buffer;
  /**
   * The body compressed while it was made (src/core/family.ts TextPieces), for a connection whose
   * replies are gzip-compressed; instead of `body`.
   */
  gzippedBody?: GzippedBody;
  metrics?: KuraMetric[];
  /** An error because the reply would exceed a size bound: sent as 500 (a 413 over REST). */
  replyTooLarge?: boolean;
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

export type Parsed =
  | { ok: true; request: MqttRequest }
  /** `refused`: a request over a decoding bound, answered with `response` instead of being served. */
  | { ok: false; ignore: boolean; reason: string; refused?: { request: MqttRequest; response: MqttResponse } };

/**
 * A request payload beyond this is not served: it is answered 400 `Request too large` when its
 * requester and request id can be read without reading it whole (docs/mqtt.md "Requests too
 * large"); the client reads packets up to MAX_PACKET_BYTES (src/mqtt/client.ts), a little more.
 */
export const MAX_REQUEST_BYTES = 4 * 1024 * 1024;

/** A topic level a reply can be published to: non-empty, no separator or wildcard [MQTT-4.7.1]. */
const TOPIC_LEVEL = /^[^/+#\u0000]+$/;

function stringMetric(p: KuraPayload, name: string): string | undefined {
  const m: KuraMetric | undefined = findMetric(p, name);
  // Kura casts the metric to String: another type is a ClassCastException, i.e. silence.
  return m && m.type === 'STRING' ? m.value : undefined;
}

export class Envelope {
  constructor(readonly opts: EnvelopeOptions) {}

  /** The subscription that receives every request to the application `appId` of this device. */
  subscription(appId: string): string {
    const o = this.opts;
    return `${o.prefix}/${o.account}/${o.clientId}/${appId}/#`;
  }

  /**
   * Decodes an incoming message. `ignore` marks messages that are not requests at all (replies,
   * other devices); the others are dropped with a log line, as Kura drops them without a reply.
   */
  parse(topic: string, payload: Buffer): Parsed {
    const o = this.opts;
    const levels = topic.split('/');
    if (levels.length < 5 || levels[0] !== o.prefix || levels[1] !== o.account || levels[2] !== o.clientId) {
      return { ok: false, ignore: true, reason: 'not a request topic of this device' };
    }
    const appId = levels[3]!;
    let app = levels.slice(4);
    if (app[0] === 'REPLY' || app[0] === 'NOTIFY') return { ok: false, ignore: true, reason: 'reply topic' };
    // Java's String.split drops trailing empty strings: `GET/assets/` is ["GET","assets"].
    while (app.length > 0 && app[app.length - 1] === '') app = app.slice(0, -1);
    if (app.length === 0) return { ok: false, ignore: false, reason: 'no method in topic' };

    const tooLarge = payload.length > MAX_REQUEST_BYTES ? `${payload.length} bytes, the limit is ${MAX_REQUEST_BYTES}` : undefined;

    if (o.encoding === 'json') {
      if (app.length < 3) return { ok: false, ignore: false, reason: 'bare-JSON request without <requester>/<request-id> topic levels' };
      const requestId = app[app.length - 1]!;
      const requester = app[app.length - 2]!;
      if (!TOPIC_LEVEL.test(requester) || !TOPIC_LEVEL.test(requestId)) return { ok: false, ignore: false, reason: 'empty requester or request id' };
      const request: MqttRequest = { appId, method: app[0]!, resources: app.slice(1, -2), requester, requestId, body: payload.length > 0 ? payload : undefined, metrics: [] };
      if (tooLarge) return { ok: false, ignore: false, reason: `payload of ${tooLarge}`, refused: { request: { ...request, body: undefined }, response: { code: 413, message: `Request too large: ${tooLarge}` } } };
      return { ok: true, request };
    }

    let kp: KuraPayload;
    if (tooLarge) {
      // Only the head is read (HEAD_BYTES), for the request metrics.
      kp = o.encoding === 'simple-json' ? decodeSimpleJsonHead(payload, tooLarge) : decodeKuraPayloadHead(payload, tooLarge);
    } else if (o.encoding === 'simple-json') {
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
      if (tooLarge) return { ok: false, ignore: false, reason: `payload of ${tooLarge}, without string metrics request.id and requester.client.id in its first ${HEAD_BYTES} bytes` };
      return { ok: false, ignore: false, reason: 'request without string metrics request.id and requester.client.id' };
    }
    if (!TOPIC_LEVEL.test(requester) || !TOPIC_LEVEL.test(requestId)) {
      return { ok: false, ignore: false, reason: 'request.id or requester.client.id cannot be a topic level' };
    }
    const body = kp.body && kp.body.length > 0 ? kp.body : undefined;
    const request: MqttRequest = { appId, method: app[0]!, resources: app.slice(1), requester, requestId, body, metrics: kp.metrics };
    // Over a decoding bound (MAX_REQUEST_BYTES, MAX_INFLATED_BYTES, MAX_METRICS, docs/mqtt.md "ASSET-V1"): answered 413, not served.
    if (kp.refused) return { ok: false, ignore: false, reason: kp.refused, refused: { request, response: { code: 413, message: `Request too large: ${kp.refused}` } } };
    return { ok: true, request };
  }

  /** The reply to `req`. */
  reply(req: MqttRequest, res: MqttResponse): Reply {
    const o = this.opts;
    return { topic: `${o.prefix}/${o.account}/${req.requester}/${req.appId}/REPLY/${req.requestId}`, payload: this.encode(res) };
  }

  /** A notification to the requester of `req` about `resource` (Kura's NOTIFY, e.g. DEPLOY-V2 progress). */
  notification(req: MqttRequest, resource: string, res: Omit<MqttResponse, 'code'>): Reply {
    const o = this.opts;
    const p: KuraPayload = { timestamp: BigInt(Date.now()), metrics: res.metrics ?? [] };
    if (res.body !== undefined) p.body = Buffer.from(res.body);
    return { topic: `${o.prefix}/${o.account}/${req.requester}/${req.appId}/NOTIFY/${o.clientId}/${resource}`, payload: this.payload(p) };
  }

  private encode(res: MqttResponse): Buffer {
    const o = this.opts;
    const code = mqttResponseCode(res.code, res.replyTooLarge);
    if (res.gzippedBody && o.encoding === 'kura-protobuf') {
      const p: KuraPayload = { timestamp: BigInt(Date.now()), metrics: [{ name: 'response.code', type: 'INT32', value: code }, ...(res.metrics ?? [])] };
      return encodeKuraPayloadGzippedBody(p, res.gzippedBody);
    }
    const body = res.gzippedBody ? gunzippedBody(res.gzippedBody) : typeof res.body === 'string' ? Buffer.from(res.body, 'utf8') : res.body;
    if (o.encoding === 'json') {
      // Bare JSON has no metrics: a reply made of metrics (DEPLOY-V2's GET/download) is their object.
      const metrics = res.metrics?.length ? `,${res.metrics.map((m) => `${JSON.stringify(m.name)}:${m.type === 'INT64' ? String(m.value) : JSON.stringify(m.type === 'BYTES' ? m.value.toString('base64') : m.value)}`).join(',')}` : '';
      if (code === 200) return body ?? Buffer.from(metrics ? `{${metrics.slice(1)}}` : '', 'utf8');
      let text = JSON.stringify({ 'response.code': code, 'response.exception.message': res.message }).slice(0, -1) + metrics + '}';
      // A JSON error body (Kura's REST-proxy applications: {"message": …}) keeps its fields.
      const extra = body?.toString('utf8');
      if (extra && extra.startsWith('{') && extra !== '{}') text = `${text.slice(0, -1)},${extra.slice(1)}`;
      return Buffer.from(text, 'utf8');
    }
    const p: KuraPayload = { timestamp: BigInt(Date.now()), metrics: [{ name: 'response.code', type: 'INT32', value: code }] };
    if (res.message !== undefined) p.metrics.push({ name: 'response.exception.message', type: 'STRING', value: res.message });
    if (res.metrics) p.metrics.push(...res.metrics);
    if (body !== undefined) p.body = body;
    return this.payload(p);
  }

  private payload(p: KuraPayload): Buffer {
    const o = this.opts;
    if (o.encoding === 'kura-protobuf') return encodeKuraPayloadForWire(p, o.gzip);
    // Bare JSON has no metrics: a notification is the simple-json form, like lifecycle messages.
    return encodeSimpleJsonPayload(p);
  }
}
