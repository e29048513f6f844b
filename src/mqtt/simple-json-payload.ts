// Kura's `simple-json` payload encoding (CloudPayloadJsonEncoder/Decoder): the whole MQTT payload is
// `{"sentOn":<ms>,"position":{…},"metrics":{<name>:<value>},"body":"<base64>"}`.
//
// Decoding follows Kura: metric numbers become INT64 when integral and DOUBLE otherwise; strings and
// booleans keep their type. Anything that is not such an object (invalid JSON, another top-level
// key, a wrongly typed member) is taken whole as the body of a payload without metrics, which makes
// a request without `request.id` and therefore gets no reply (as Kura's CloudServiceImpl).

import { HEAD_BYTES, MAX_METRICS, type KuraMetric, type KuraPayload, type KuraPosition } from './kura-payload.js';

const KNOWN_KEYS = new Set(['sentOn', 'position', 'metrics', 'body']);

function bodyOnly(buf: Buffer): KuraPayload {
  return { metrics: [], body: buf };
}

function metricFromJson(name: string, v: unknown): KuraMetric | undefined {
  if (typeof v === 'string') return { name, type: 'STRING', value: v };
  if (typeof v === 'boolean') return { name, type: 'BOOL', value: v };
  if (typeof v === 'number' && Number.isFinite(v)) {
    return Number.isInteger(v) && Number.isSafeInteger(v)
      ? { name, type: 'INT64', value: BigInt(v) }
      : { name, type: 'DOUBLE', value: v };
  }
  return undefined;
}

/** Never throws. */
export function decodeSimpleJsonPayload(buf: Buffer): KuraPayload {
  let obj: unknown;
  try {
    obj = JSON.parse(buf.toString('utf8'));
  } catch {
    return bodyOnly(buf);
  }
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) return bodyOnly(buf);
  const o = obj as Record<string, unknown>;
  if (Object.keys(o).some((k) => !KNOWN_KEYS.has(k))) return bodyOnly(buf);
  const out: KuraPayload = { metrics: [] };
  if (o.sentOn !== undefined) {
    if (typeof o.sentOn !== 'number' || !Number.isSafeInteger(o.sentOn)) return bodyOnly(buf);
    out.timestamp = BigInt(o.sentOn);
  }
  if (o.metrics !== undefined) {
    if (typeof o.metrics !== 'object' || o.metrics === null || Array.isArray(o.metrics)) return bodyOnly(buf);
    const entries = Object.entries(o.metrics as Record<string, unknown>);
    if (entries.length > MAX_METRICS) {
      // Over the bound: keep only what a reply needs (the envelope's request metrics).
      const keep = entries.filter(([n]) => n === 'request.id' || n === 'requester.client.id').map(([n, v]) => metricFromJson(n, v));
      return { metrics: keep.filter((m): m is KuraMetric => !!m), refused: `more than ${MAX_METRICS} metrics` };
    }
    for (const [name, v] of entries) {
      const m = metricFromJson(name, v);
      if (!m) return bodyOnly(buf);
      out.metrics.push(m);
    }
  }
  if (o.body !== undefined) {
    if (typeof o.body !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(o.body)) return bodyOnly(buf);
    out.body = Buffer.from(o.body, 'base64');
  }
  if (o.position !== undefined) {
    const p = o.position as Record<string, unknown>;
    if (typeof p === 'object' && p !== null && typeof p.latitude === 'number' && typeof p.longitude === 'number') {
      out.position = { latitude: p.latitude, longitude: p.longitude } as KuraPosition;
    }
  }
  return out;
}

function metricToJson(m: KuraMetric): string {
  switch (m.type) {
    case 'INT64':
      return m.value.toString();
    case 'DOUBLE':
    case 'FLOAT':
      // JSON has no NaN/Infinity; Kura's encoder would emit invalid JSON, we emit the text instead.
      return Number.isFinite(m.value) ? JSON.stringify(m.value) : JSON.stringify(String(m.value));
    case 'BYTES':
      return JSON.stringify(m.value.toString('base64'));
    default:
      return JSON.stringify(m.value);
  }
}

export function encodeSimpleJsonPayload(p: KuraPayload): Buffer {
  const parts: string[] = [];
  if (p.timestamp !== undefined) parts.push(`"sentOn":${p.timestamp.toString()}`);
  if (p.metrics.length > 0) {
    parts.push(`"metrics":{${p.metrics.map((m) => `${JSON.stringify(m.name)}:${metricToJson(m)}`).join(',')}}`);
  }
  if (p.body !== undefined) parts.push(`"body":${JSON.stringify(p.body.toString('base64'))}`);
  return Buffer.from(`{${parts.join(',')}}`, 'utf8');
}

const WS = new Set([0x20, 0x09, 0x0a, 0x0d]);

/**
 * Where the JSON value starting at `i` of `b` ends (the index after it), scanning bytes: strings
 * with their escapes, objects and arrays by nesting, anything else up to the next `,` `}` `]` or
 * space. -1 when `b` ends first. UTF-8 never puts a quote or a backslash inside a multi-byte
 * character, so bytes suffice.
 */
function valueEnd(b: Buffer, i: number): number {
  let depth = 0;
  for (; i < b.length; i++) {
    const c = b[i]!;
    if (c === 0x22) {
      for (i++; i < b.length && b[i] !== 0x22; i++) if (b[i] === 0x5c) i++;
      if (i >= b.length) return -1;
      if (depth === 0) return i + 1;
    } else if (c === 0x7b || c === 0x5b) depth++;
    else if (c === 0x7d || c === 0x5d) {
      if (depth === 0) return i; // a primitive's end (the enclosing object's brace)
      if (--depth === 0) return i + 1;
    } else if (depth === 0 && (c === 0x2c || WS.has(c))) return i;
  }
  return -1;
}

/**
 * The request metrics of a simple-json payload too large to serve (src/mqtt/envelope.ts
 * MAX_REQUEST_BYTES), read from its first HEAD_BYTES only, so that it can be refused with a reply:
 * the top-level members are stepped over up to `metrics`, which must end within the head, and its
 * `request.id` and `requester.client.id` are kept; `refused` is `reason`. Kura's encoder writes
 * `sentOn`, `position` and `metrics` before `body`, so they are there unless a sender put them after
 * the body. Anything else (not an object, a member cut by the head's end): no metrics. Never throws.
 */
export function decodeSimpleJsonHead(buf: Buffer, reason: string): KuraPayload {
  const b = buf.subarray(0, HEAD_BYTES);
  const none: KuraPayload = { metrics: [], refused: reason };
  let i = 0;
  const skip = () => {
    while (i < b.length && WS.has(b[i]!)) i++;
  };
  skip();
  if (b[i] !== 0x7b) return none;
  i++;
  for (;;) {
    skip();
    if (b[i] !== 0x22) return none;
    const keyEnd = valueEnd(b, i);
    if (keyEnd < 0) return none;
    let key: unknown;
    try {
      key = JSON.parse(b.toString('utf8', i, keyEnd));
    } catch {
      return none;
    }
    i = keyEnd;
    skip();
    if (b[i] !== 0x3a) return none;
    i++;
    skip();
    const end = valueEnd(b, i);
    if (end < 0 || end === i) return none;
    if (key === 'metrics') {
      let m: unknown;
      try {
        m = JSON.parse(b.toString('utf8', i, end));
      } catch {
        return none;
      }
      if (typeof m !== 'object' || m === null || Array.isArray(m)) return none;
      const metrics = (['request.id', 'requester.client.id'] as const)
        .filter((n) => Object.hasOwn(m as object, n))
        .map((n) => metricFromJson(n, (m as Record<string, unknown>)[n]))
        .filter((x): x is KuraMetric => x !== undefined);
      return { metrics, refused: reason };
    }
    i = end;
    skip();
    if (b[i] !== 0x2c) return none; // the object's end (no metrics), or not JSON
    i++;
  }
}
