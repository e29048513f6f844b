// KuraPayload: Kura's protobuf message (kurapayload.proto, proto2, package kuradatatypes), encoded
// and decoded by hand so the daemon carries no protobuf runtime.
//
//   message KuraPayload {
//     optional int64 timestamp = 1;
//     optional KuraPosition position = 2;
//     extensions 3 to 4999;
//     repeated KuraMetric metric = 5000;
//     optional bytes body = 5001;
//   }
//   message KuraMetric {
//     required string name = 1;
//     required ValueType type = 2;   // DOUBLE 0, FLOAT 1, INT64 2, INT32 3, BOOL 4, STRING 5, BYTES 6
//     optional double double_value = 3; optional float float_value = 4; optional int64 long_value = 5;
//     optional int32 int_value = 6; optional bool bool_value = 7; optional string string_value = 8;
//     optional bytes bytes_value = 9;
//   }
//   message KuraPosition { required double latitude = 1; required double longitude = 2;
//     optional double altitude = 3; optional double precision = 4; optional double heading = 5;
//     optional double speed = 6; optional int64 timestamp = 7; optional int32 satellites = 8;
//     optional int32 status = 9; }
//
// One encoder and one decoder per message kind. The decoder never throws: garbage gives
// `{ ok: false, error }` with a message naming what was wrong and where.

import type zlibMod from 'node:zlib';
import { lazyBuiltin } from '../core/builtin.js';
import { METRIC_TYPES, type KuraMetric, type MetricType } from '../core/metrics.js';

export { METRIC_TYPES, type KuraMetric, type MetricType };

// Loaded on first use (gzip'ed payloads and deployment packages are the exception).
const zlib = lazyBuiltin<typeof zlibMod>('node:zlib');

export interface KuraPosition {
  latitude: number;
  longitude: number;
  altitude?: number;
  precision?: number;
  heading?: number;
  speed?: number;
  timestamp?: bigint;
  satellites?: number;
  status?: number;
}

export interface KuraPayload {
  /** Milliseconds since the epoch. */
  timestamp?: bigint;
  position?: KuraPosition;
  metrics: KuraMetric[];
  body?: Buffer;
  /**
   * Set by the decoders when the payload is over a bound (MAX_INFLATED_BYTES, MAX_METRICS): the
   * reason, with only the metrics decoded before the bound, so a reply can still name request.id.
   */
  refused?: string;
}

/** Metrics decoded from one payload; a request carries a handful, Kapua's DEPLOY-V2 about twenty. */
export const MAX_METRICS = 1024;

export type DecodeResult<T> = { ok: true; value: T } | { ok: false; error: string };

// ---- wire primitives ------------------------------------------------------------------------

const WIRE_VARINT = 0;
const WIRE_64 = 1;
const WIRE_LEN = 2;
const WIRE_32 = 5;

/**
 * Protobuf writer into one growing buffer: numbers below 2^53 are written without BigInt, and a
 * nested message or string gets a one-byte length slot that is widened in place in the rare case it
 * is 128 bytes or more (so nothing is encoded twice and no buffer is made per field).
 */
export class Writer {
  protected buf: Buffer;
  protected pos = 0;

  /** `start`: a buffer to write into first (a scratch buffer kept by the caller), or a capacity. */
  constructor(start: number | Buffer = 256) {
    this.buf = typeof start === 'number' ? Buffer.allocUnsafe(start) : start;
  }

  protected room(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  /** Bytes as they are (e.g. a field prefix computed once). */
  push(b: Buffer): void {
    this.room(b.length);
    b.copy(this.buf, this.pos);
    this.pos += b.length;
  }

  /** An unsigned varint of a non-negative integer below 2^53. */
  uvarint(v: number): void {
    this.room(8);
    while (v >= 0x80) {
      this.buf[this.pos++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.buf[this.pos++] = v;
  }

  varint(v: bigint): void {
    // Negative numbers are sign-extended to 64 bits (10 bytes), as protobuf does for int32/int64.
    if (v >= 0n && v <= 0x1fffffffffffffn) return this.uvarint(Number(v));
    let x = BigInt.asUintN(64, v);
    this.room(10);
    while (x >= 0x80n) {
      this.buf[this.pos++] = Number(x & 0x7fn) | 0x80;
      x >>= 7n;
    }
    this.buf[this.pos++] = Number(x);
  }

  /** An int32 field value: negative ones take 10 bytes (sign-extended), as protobuf writes them. */
  int32(v: number): void {
    v |= 0;
    if (v >= 0) this.uvarint(v);
    else this.varint(BigInt(v));
  }

  tag(field: number, wire: number): void {
    this.uvarint(field * 8 + wire);
  }

  /** Starts a length-delimited field; `end(at)` fills in its length. */
  begin(field: number): number {
    this.tag(field, WIRE_LEN);
    this.room(1);
    return this.pos++;
  }

  end(at: number): void {
    const len = this.pos - at - 1;
    if (len < 0x80) {
      this.buf[at] = len;
      return;
    }
    let n = 1;
    for (let x = len; x >= 0x80; x = Math.floor(x / 0x80)) n++;
    this.room(n - 1);
    this.buf.copy(this.buf, at + n, at + 1, this.pos);
    const end = this.pos + n - 1;
    this.pos = at;
    this.uvarint(len);
    this.pos = end;
  }

  stringField(field: number, s: string): void {
    const at = this.begin(field);
    this.room(s.length * 3);
    this.pos += this.buf.write(s, this.pos, 'utf8');
    this.end(at);
  }

  bytesField(field: number, b: Buffer): void {
    this.tag(field, WIRE_LEN);
    this.uvarint(b.length);
    this.push(b);
  }

  doubleField(field: number, v: number): void {
    this.tag(field, WIRE_64);
    this.room(8);
    this.pos = this.buf.writeDoubleLE(v, this.pos);
  }

  floatField(field: number, v: number): void {
    this.tag(field, WIRE_32);
    this.room(4);
    this.pos = this.buf.writeFloatLE(v, this.pos);
  }

  varintField(field: number, v: bigint): void {
    this.tag(field, WIRE_VARINT);
    this.varint(v);
  }

  /** The bytes written (a view of the writer's buffer: the writer is not used afterwards). */
  finish(): Buffer {
    return this.buf.subarray(0, this.pos);
  }
}

/** What the protobuf Reader throws (a truncated or malformed message); also used by the Sparkplug B codec. */
export class DecodeError extends Error {}

/** Protobuf reader over one message's bytes (nested messages get their own reader). */
export class Reader {
  pos = 0;
  constructor(readonly buf: Buffer) {}

  get done(): boolean {
    return this.pos >= this.buf.length;
  }

  varint(): bigint {
    let result = 0n;
    let shift = 0n;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.buf.length) throw new DecodeError(`truncated varint at byte ${this.pos}`);
      const b = this.buf[this.pos++]!;
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return BigInt.asUintN(64, result);
      shift += 7n;
    }
    throw new DecodeError(`varint longer than 10 bytes at byte ${this.pos}`);
  }

  take(n: number): Buffer {
    if (n < 0 || this.pos + n > this.buf.length) throw new DecodeError(`field of ${n} bytes overruns the message at byte ${this.pos}`);
    const b = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return b;
  }

  lengthDelimited(): Buffer {
    const n = this.varint();
    if (n > BigInt(this.buf.length)) throw new DecodeError(`length ${n} overruns the message at byte ${this.pos}`);
    return this.take(Number(n));
  }

  tag(): { field: number; wire: number } {
    const t = this.varint();
    const field = Number(t >> 3n);
    const wire = Number(t & 7n);
    if (field === 0) throw new DecodeError(`field number 0 at byte ${this.pos}`);
    return { field, wire };
  }

  skip(wire: number): void {
    switch (wire) {
      case WIRE_VARINT:
        this.varint();
        return;
      case WIRE_64:
        this.take(8);
        return;
      case WIRE_LEN:
        this.lengthDelimited();
        return;
      case WIRE_32:
        this.take(4);
        return;
      default:
        // Groups (3, 4) are not used by kurapayload.proto; 6 and 7 do not exist.
        throw new DecodeError(`unsupported wire type ${wire} at byte ${this.pos}`);
    }
  }

  expect(wire: number, want: number, what: string): void {
    if (wire !== want) throw new DecodeError(`${what} has wire type ${wire}, expected ${want}`);
  }
}

const int32 = (v: bigint): number => Number(BigInt.asIntN(32, v));
const int64 = (v: bigint): bigint => BigInt.asIntN(64, v);

function utf8(b: Buffer): string {
  return new TextDecoder('utf-8', { fatal: false }).decode(b);
}

// ---- KuraMetric -----------------------------------------------------------------------------

/** Each metric type's number in KuraMetric.ValueType. */
const TYPE_NUMBER = Object.fromEntries(METRIC_TYPES.map((t, i) => [t, i])) as Record<MetricType, number>;

/** One metric's fields (the inside of a KuraMetric message). */
export function writeMetricFields(w: Writer, m: KuraMetric): void {
  w.stringField(1, m.name);
  writeMetricValue(w, m.type, m.value);
}

/**
 * A metric's type (field 2) and its value field: all of a metric but its name, for writers that
 * encode the name once (telemetry). An INT64 may also be given as a non-negative safe integer.
 */
export function writeMetricValue(w: Writer, type: MetricType, value: KuraMetric['value'] | number): void {
  w.tag(2, WIRE_VARINT);
  w.uvarint(TYPE_NUMBER[type]);
  switch (type) {
    case 'DOUBLE':
      w.doubleField(3, value as number);
      break;
    case 'FLOAT':
      w.floatField(4, value as number);
      break;
    case 'INT64':
      if (typeof value === 'bigint') w.varintField(5, value);
      else w.tag(5, WIRE_VARINT), w.uvarint(value as number);
      break;
    case 'INT32':
      w.tag(6, WIRE_VARINT);
      w.int32(value as number);
      break;
    case 'BOOL':
      w.tag(7, WIRE_VARINT);
      w.uvarint(value ? 1 : 0);
      break;
    case 'STRING':
      w.stringField(8, value as string);
      break;
    case 'BYTES':
      w.bytesField(9, value as Buffer);
      break;
  }
}

export function encodeMetric(m: KuraMetric): Buffer {
  const w = new Writer(64);
  writeMetricFields(w, m);
  return w.finish();
}

function readMetric(buf: Buffer): KuraMetric {
  const r = new Reader(buf);
  let name: string | undefined;
  let typeIndex: number | undefined;
  const values: Partial<Record<MetricType, unknown>> = {};
  while (!r.done) {
    const { field, wire } = r.tag();
    switch (field) {
      case 1:
        r.expect(wire, WIRE_LEN, 'metric name');
        name = utf8(r.lengthDelimited());
        break;
      case 2:
        r.expect(wire, WIRE_VARINT, 'metric type');
        typeIndex = int32(r.varint());
        break;
      case 3:
        r.expect(wire, WIRE_64, 'double_value');
        values.DOUBLE = r.take(8).readDoubleLE(0);
        break;
      case 4:
        r.expect(wire, WIRE_32, 'float_value');
        values.FLOAT = r.take(4).readFloatLE(0);
        break;
      case 5:
        r.expect(wire, WIRE_VARINT, 'long_value');
        values.INT64 = int64(r.varint());
        break;
      case 6:
        r.expect(wire, WIRE_VARINT, 'int_value');
        values.INT32 = int32(r.varint());
        break;
      case 7:
        r.expect(wire, WIRE_VARINT, 'bool_value');
        values.BOOL = r.varint() !== 0n;
        break;
      case 8:
        r.expect(wire, WIRE_LEN, 'string_value');
        values.STRING = utf8(r.lengthDelimited());
        break;
      case 9:
        r.expect(wire, WIRE_LEN, 'bytes_value');
        values.BYTES = Buffer.from(r.lengthDelimited());
        break;
      default:
        r.skip(wire);
    }
  }
  // proto2 `required` fields.
  if (name === undefined) throw new DecodeError('metric without a name');
  if (typeIndex === undefined) throw new DecodeError(`metric ${name} without a type`);
  const type = METRIC_TYPES[typeIndex];
  if (type === undefined) throw new DecodeError(`metric ${name} has unknown type ${typeIndex}`);
  // A metric whose value field is absent carries the type's default, as protobuf reads it in Java.
  switch (type) {
    case 'DOUBLE':
      return { name, type, value: (values.DOUBLE as number | undefined) ?? 0 };
    case 'FLOAT':
      return { name, type, value: (values.FLOAT as number | undefined) ?? 0 };
    case 'INT64':
      return { name, type, value: (values.INT64 as bigint | undefined) ?? 0n };
    case 'INT32':
      return { name, type, value: (values.INT32 as number | undefined) ?? 0 };
    case 'BOOL':
      return { name, type, value: (values.BOOL as boolean | undefined) ?? false };
    case 'STRING':
      return { name, type, value: (values.STRING as string | undefined) ?? '' };
    case 'BYTES':
      return { name, type, value: (values.BYTES as Buffer | undefined) ?? Buffer.alloc(0) };
  }
}

// ---- KuraPosition ---------------------------------------------------------------------------

const POSITION_DOUBLES = ['latitude', 'longitude', 'altitude', 'precision', 'heading', 'speed'] as const;

function encodePosition(p: KuraPosition): Buffer {
  const w = new Writer();
  POSITION_DOUBLES.forEach((k, i) => {
    const v = p[k];
    if (v !== undefined) w.doubleField(i + 1, v);
  });
  if (p.timestamp !== undefined) w.varintField(7, p.timestamp);
  if (p.satellites !== undefined) w.varintField(8, BigInt(p.satellites | 0));
  if (p.status !== undefined) w.varintField(9, BigInt(p.status | 0));
  return w.finish();
}

function readPosition(buf: Buffer): KuraPosition {
  const r = new Reader(buf);
  const p: Partial<KuraPosition> = {};
  while (!r.done) {
    const { field, wire } = r.tag();
    if (field >= 1 && field <= 6) {
      r.expect(wire, WIRE_64, `position.${POSITION_DOUBLES[field - 1]}`);
      p[POSITION_DOUBLES[field - 1]!] = r.take(8).readDoubleLE(0);
    } else if (field === 7) {
      r.expect(wire, WIRE_VARINT, 'position.timestamp');
      p.timestamp = int64(r.varint());
    } else if (field === 8 || field === 9) {
      r.expect(wire, WIRE_VARINT, field === 8 ? 'position.satellites' : 'position.status');
      p[field === 8 ? 'satellites' : 'status'] = int32(r.varint());
    } else {
      r.skip(wire);
    }
  }
  if (p.latitude === undefined || p.longitude === undefined) throw new DecodeError('position without latitude/longitude');
  return p as KuraPosition;
}

// ---- KuraPayload ----------------------------------------------------------------------------

/** Encodes a payload as plain protobuf (no compression). */
export function encodeKuraPayload(p: KuraPayload): Buffer {
  const w = new Writer(64 + 32 * p.metrics.length);
  if (p.timestamp !== undefined) w.varintField(1, p.timestamp);
  if (p.position) w.bytesField(2, encodePosition(p.position));
  for (const m of p.metrics) {
    const at = w.begin(5000);
    writeMetricFields(w, m);
    w.end(at);
  }
  if (p.body !== undefined) w.bytesField(5001, p.body);
  return w.finish();
}

/**
 * Decodes plain protobuf (no gzip handling). Never throws. More than MAX_METRICS metrics, or with
 * `prefix` (the start of a payload cut at a bound) a field cut short, stop the decoding: the result
 * then carries the metrics read so far and `refused`.
 */
export function decodeKuraPayloadRaw(buf: Buffer, prefix?: string): DecodeResult<KuraPayload> {
  const out: KuraPayload = { metrics: [] };
  try {
    const r = new Reader(buf);
    while (!r.done) {
      const { field, wire } = r.tag();
      switch (field) {
        case 1:
          r.expect(wire, WIRE_VARINT, 'timestamp');
          out.timestamp = int64(r.varint());
          break;
        case 2:
          r.expect(wire, WIRE_LEN, 'position');
          out.position = readPosition(r.lengthDelimited());
          break;
        case 5000:
          r.expect(wire, WIRE_LEN, 'metric');
          if (out.metrics.length === MAX_METRICS) return { ok: true, value: { metrics: out.metrics, refused: prefix ?? `more than ${MAX_METRICS} metrics` } };
          out.metrics.push(readMetric(r.lengthDelimited()));
          break;
        case 5001:
          r.expect(wire, WIRE_LEN, 'body');
          out.body = Buffer.from(r.lengthDelimited());
          break;
        default:
          // Unknown fields and extensions (3..4999) are skipped, as protobuf does.
          r.skip(wire);
      }
    }
    return { ok: true, value: prefix ? { metrics: out.metrics, refused: prefix } : out };
  } catch (err) {
    if (prefix) return { ok: true, value: { metrics: out.metrics, refused: prefix } };
    if (err instanceof DecodeError) return { ok: false, error: `invalid KuraPayload: ${err.message}` };
    return { ok: false, error: 'invalid KuraPayload' };
  }
}

/** gzip magic bytes (RFC 1952 §2.3.1). */
export function isGzip(buf: Buffer): boolean {
  return buf.length >= 2 && buf[0] === 0x1f && buf[1] === 0x8b;
}

/** Bound on a gunzipped request, so a small "zip bomb" cannot exhaust memory. */
export const MAX_INFLATED_BYTES = 4 * 1024 * 1024;

/**
 * The start of a gzip stream that inflates beyond the bound: inflated from ever shorter input
 * prefixes (deflate expands at most ~1032:1) until one fits in 256 KB; request.id and
 * requester.client.id sit at the start in practice. Never throws; empty when nothing fits.
 */
function inflatedStart(buf: Buffer): Buffer {
  for (let n = Math.min(buf.length, 65536); n >= 32; n >>= 1) {
    try {
      return zlib().gunzipSync(buf.subarray(0, n), { finishFlush: zlib().constants.Z_SYNC_FLUSH, maxOutputLength: 256 * 1024 });
    } catch {
      // too much output from this prefix (or a broken stream): try a shorter one
    }
  }
  return Buffer.alloc(0);
}

/** Of a payload too large to serve, at most this much is read for its metrics (inflated, when gzipped). */
export const HEAD_BYTES = 64 * 1024;

/**
 * The metrics at the start of a payload too large to serve, so that it can be refused with a reply:
 * the fields up to the body or up to HEAD_BYTES, whichever comes first (of a gzipped payload, what
 * its first 64 KiB inflate to, at most 256 KiB: see inflatedStart); `refused` is `reason`. Protobuf
 * encoders write fields in field-number order, metrics (5000) before the body (5001), so
 * `request.id` and `requester.client.id` are there unless a sender put them after the body.
 */
export function decodeKuraPayloadHead(buf: Buffer, reason: string): KuraPayload {
  const head = isGzip(buf) ? inflatedStart(buf).subarray(0, HEAD_BYTES) : buf.subarray(0, HEAD_BYTES);
  const r = decodeKuraPayloadRaw(head, reason);
  return r.ok ? r.value : { metrics: [], refused: reason };
}

/**
 * Decodes an MQTT payload: gunzips it first when it looks like gzip (Kura's CloudPayloadProtoBufDecoder
 * does the same), then protobuf. Never throws. A payload over MAX_INFLATED_BYTES or MAX_METRICS
 * decodes to `refused` (see decodeKuraPayloadRaw) at the cost of the bound, never more.
 */
export function decodeKuraPayload(buf: Buffer): DecodeResult<KuraPayload> {
  if (isGzip(buf)) {
    let inflated: Buffer;
    try {
      inflated = zlib().gunzipSync(buf, { maxOutputLength: MAX_INFLATED_BYTES });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ERR_BUFFER_TOO_LARGE') return { ok: false, error: 'invalid gzip payload' };
      return decodeKuraPayloadRaw(inflatedStart(buf), `payload inflates to more than ${MAX_INFLATED_BYTES} bytes`);
    }
    return decodeKuraPayloadRaw(inflated);
  }
  return decodeKuraPayloadRaw(buf);
}

/**
 * Encodes for the wire. With `gzip`, the gzip form is sent only when it is shorter (Kura's
 * CloudPayloadProtoBufEncoderImpl with `encode.gzip=true`).
 */
export function encodeKuraPayloadForWire(p: KuraPayload, gzip: boolean): Buffer {
  return gzipIfShorter(encodeKuraPayload(p), gzip);
}

/** A body compressed while it was made: one gzip member (RFC 1952) and the length of what it holds. */
export interface GzippedBody {
  member: Buffer;
  length: number;
}

/**
 * The wire form of `p` with `body` as its body, already compressed: the gzip form of the payload
 * up to the body field's tag and length, then the body's member. A gzip file is a series of
 * members whose contents follow one another (RFC 1952 §2.2), and gzip readers (Java's
 * GZIPInputStream, which Kapua's KuraPayload decoder uses, zlib, Python's gzip) read them all.
 */
export function encodeKuraPayloadGzippedBody(p: KuraPayload, body: GzippedBody): Buffer {
  const w = new Writer(64 + 32 * p.metrics.length);
  w.push(encodeKuraPayload({ ...p, body: undefined }));
  w.tag(5001, WIRE_LEN);
  w.uvarint(body.length);
  return Buffer.concat([zlib().gzipSync(w.finish()), body.member]);
}

/** The text of a GzippedBody (for an encoding that does not compress). */
export const gunzippedBody = (body: GzippedBody): Buffer => zlib().gunzipSync(body.member);

/** `raw`, or its gzip form when `gzip` and that is shorter. */
export function gzipIfShorter(raw: Buffer, gzip: boolean): Buffer {
  if (!gzip) return raw;
  const zipped = zlib().gzipSync(raw);
  return zipped.length < raw.length ? zipped : raw;
}

/** The first metric of that name, if any. */
export function findMetric(p: KuraPayload, name: string): KuraMetric | undefined {
  return p.metrics.find((m) => m.name === name);
}
