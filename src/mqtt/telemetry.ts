// Report-by-exception telemetry (docs/mqtt.md "Telemetry"): each poll cycle of an asset with
// `poll.interval` is compared with what was last published. Channels whose value changed (by at
// least `deadband` for numeric channels) or whose status/error changed are published; every channel
// is published again once `publish.max.interval` has passed since the last publication (a
// heartbeat that lets a subscriber tell "unchanged" from "gone").
//
// The deadband is measured against the last *published* value, so a slow drift is still reported
// once it adds up to the deadband.

import type { ChannelRecord, TypedValue, ValueType } from '../channels/types.js';
import type { AssetConfig, AssetService } from '../assets/types.js';
import type { Logger } from '../log.js';
import { kuraErrorText } from '../assets/records.js';
import type { PayloadEncoding } from './config.js';
import { Writer, gzipIfShorter, writeMetricValue, type KuraMetric, type KuraPayload, type MetricType } from './kura-payload.js';
import { encodeSimpleJsonPayload } from './simple-json-payload.js';
import { numericOf, valueText } from '../channels/values.js';

/**
 * What was last published of a channel: an INTEGER value as the number itself, any other value as
 * its TypedValue, or the error text (failed). No object of its own per channel: 10,000 INTEGER
 * channels keep 10,000 map entries and nothing more.
 */
type Published = number | TypedValue | string;

interface AssetState {
  /** Undefined until the first publication. */
  lastPublishAt?: number;
  channels: Map<string, Published>;
}

/** Equal values of one type (numbers as their text would be: NaN equals NaN, 0 equals -0; bigints and bytes exactly). */
function sameValue(a: TypedValue, b: TypedValue): boolean {
  if (a.type !== b.type) return false;
  if (a.type === 'BYTE_ARRAY') return a.value.equals(b.value as Buffer);
  return a.value === b.value || (typeof a.value === 'number' && Number.isNaN(a.value) && Number.isNaN(b.value));
}

/** What a published record was. */
function kept(r: ChannelRecord): Published {
  const v = r.status === 'SUCCESS' ? r.value : undefined;
  if (v === undefined) return r.error ?? '';
  if (v.type === 'INTEGER') return v.value;
  // Values are not changed after a read; bytes are copied all the same, as they are compared later.
  return v.type === 'BYTE_ARRAY' ? { type: 'BYTE_ARRAY', value: Buffer.from(v.value) } : v;
}

/** The Kura metric type of each channel value type. */
const METRIC_TYPE_OF: Record<ValueType, MetricType> = { BOOLEAN: 'BOOL', INTEGER: 'INT32', LONG: 'INT64', FLOAT: 'FLOAT', DOUBLE: 'DOUBLE', STRING: 'STRING', BYTE_ARRAY: 'BYTES' };

/** Kura metric for a typed value. */
export function valueMetric(name: string, v: TypedValue): KuraMetric {
  return { name, type: METRIC_TYPE_OF[v.type], value: v.value } as KuraMetric;
}

/** json: the bytes of the channel entries' constant parts kept at most (a reload may bring other names). */
const JSON_NAMES_MAX_BYTES = 4 << 20;

/**
 * The name fields (`name`, field 1) of a channel's metrics, encoded once per channel name and reused
 * by every poll: `<channel>`, `<channel>_timestamp` and `<channel>_error` (kura-protobuf), or the
 * start of its entry (json). Only the encoding in use is kept: a json daemon keeps no buffers per
 * channel. json keeps each channel's parts as a span of one byte arena and four numbers, not a
 * Buffer and an object per channel: at 10,000 channels those took about 2.4 MB (V8's Buffer objects
 * and the pool slices behind them), more than the channel history, in make bench's scale section.
 */
export class MetricNames {
  private readonly cache = new Map<string, ChannelNames>();
  private jsonAsset?: { pid: string; head: Buffer };
  /** json: channel name → entry number. */
  private readonly jsonIndex = new Map<string, number>();
  /** json: the unit each entry's unit field was made for. */
  private jsonUnits: (string | undefined)[] = [];
  /** json, per entry: start and end in `jsonBytes` of `{"name":<channel>,"timestamp":`, then of `,"unit":<unit>` (equal: none). */
  jsonSpans = new Int32Array(0);
  /** json: the arena the spans are in (replaced when it grows: read it after json()). */
  jsonBytes: Buffer = Buffer.alloc(0);
  private jsonUsed = 0;

  of(channel: string): ChannelNames {
    let n = this.cache.get(channel);
    if (!n) {
      // Bounded: channel names come from the configuration, but a reload may replace them all.
      if (this.cache.size >= 10_000) this.cache.clear();
      n = { value: nameField(channel), timestamp: nameField(`${channel}_timestamp`), error: nameField(`${channel}_error`) };
      this.cache.set(channel, n);
    }
    return n;
  }

  /** json: the entry number of the channel's parts in jsonSpans (its unit field made for `unit`). */
  json(channel: string, unit: string | undefined): number {
    // Bounded: channel names come from the configuration, but a reload may replace them all.
    if (this.jsonUsed > JSON_NAMES_MAX_BYTES) this.clearJson();
    let k = this.jsonIndex.get(channel);
    if (k !== undefined && this.jsonUnits[k] === unit) return k;
    if (k === undefined) {
      if (this.jsonIndex.size >= 10_000) this.clearJson();
      k = this.jsonIndex.size;
      this.jsonIndex.set(channel, k);
      if (4 * k + 4 > this.jsonSpans.length) {
        const spans = new Int32Array(Math.max(64, 2 * this.jsonSpans.length));
        spans.set(this.jsonSpans);
        this.jsonSpans = spans;
      }
      this.jsonSpans[4 * k] = this.jsonUsed;
      this.jsonSpans[4 * k + 1] = this.append(`{"name":${JSON.stringify(channel)},"timestamp":`);
    }
    this.jsonUnits[k] = unit;
    // `unit` only when non-blank (records.ts readEntry).
    const from = this.jsonUsed;
    this.jsonSpans[4 * k + 2] = from;
    this.jsonSpans[4 * k + 3] = unit !== undefined && unit.trim() !== '' ? this.append(`,"unit":${JSON.stringify(unit)}`) : from;
    return k;
  }

  /** Adds `text` as UTF-8 to the arena; returns where it ends. */
  private append(text: string): number {
    const len = Buffer.byteLength(text);
    if (this.jsonUsed + len > this.jsonBytes.length) {
      const bytes = Buffer.allocUnsafeSlow(Math.max(4096, 2 * this.jsonBytes.length, this.jsonUsed + len));
      this.jsonBytes.copy(bytes, 0, 0, this.jsonUsed);
      this.jsonBytes = bytes;
    }
    this.jsonUsed += this.jsonBytes.write(text, this.jsonUsed);
    return this.jsonUsed;
  }

  private clearJson(): void {
    this.jsonIndex.clear();
    this.jsonUnits = [];
    this.jsonUsed = 0;
  }

  /** json: `{"name":<asset>,"channels":[` of the last asset asked for. */
  jsonHead(pid: string): Buffer {
    if (this.jsonAsset?.pid !== pid) this.jsonAsset = { pid, head: Buffer.from(`{"name":${JSON.stringify(pid)},"channels":[`) };
    return this.jsonAsset.head;
  }
}

interface ChannelNames {
  /** kura-protobuf: the name field of `<channel>`, `<channel>_timestamp`, `<channel>_error`. */
  value: Buffer;
  timestamp: Buffer;
  error: Buffer;
}

function nameField(name: string): Buffer {
  const w = new Writer(name.length * 3 + 8);
  w.stringField(1, name);
  return Buffer.from(w.finish());
}

/** The constant parts of json telemetry, as bytes. */
const J = {
  valueQuote: Buffer.from(',"value":"'),
  value: Buffer.from(',"value":'),
  error: Buffer.from(',"error":'),
  // `","type":"<TYPE>"` after a quoted value, `,"type":"<TYPE>"` after a JSON string.
  typeAfterQuote: Object.fromEntries(Object.keys(METRIC_TYPE_OF).map((t) => [t, Buffer.from(`","type":"${t}"`)])) as Record<ValueType, Buffer>,
  type: Object.fromEntries(Object.keys(METRIC_TYPE_OF).map((t) => [t, Buffer.from(`,"type":"${t}"`)])) as Record<ValueType, Buffer>,
  true: Buffer.from('true'),
  false: Buffer.from('false'),
};

/**
 * The bytes of a json payload, written in place: no string per part, no joined text to flatten and
 * encode again. Those were about a fifth of the main thread's instructions per poll of 50 channels;
 * writing in place costs much of that back while the code is not optimised, and what remains is a
 * net saving (bench/profile-poll --callgrind measures it). The protobuf Writer with text and numbers added; one scratch
 * buffer, reused, the payload copied out of it.
 */
class JsonBytes extends Writer {
  private static scratch: Buffer = Buffer.allocUnsafeSlow(8192);

  constructor() {
    super(JsonBytes.scratch);
  }

  byte(c: number): void {
    this.room(1);
    this.buf[this.pos++] = c;
  }

  /** Bytes `from`…`to` of `src`, copied one by one (a Buffer.copy of a part makes a view object per call). */
  span(src: Uint8Array, from: number, to: number): void {
    this.room(to - from);
    const b = this.buf;
    let p = this.pos;
    for (let i = from; i < to; i++) b[p++] = src[i]!;
    this.pos = p;
  }

  text(s: string): void {
    this.room(Buffer.byteLength(s));
    this.pos += this.buf.write(s, this.pos);
  }

  /** A number as String() writes it; safe integers (timestamps, INTEGER values) digit by digit. */
  number(v: number): void {
    if (!Number.isSafeInteger(v)) return this.text(String(v));
    this.room(17);
    const b = this.buf;
    if (v < 0) {
      b[this.pos++] = 0x2d;
      v = -v;
    }
    let digits = 1;
    for (let x = v; x >= 10; x = Math.floor(x / 10)) digits++;
    let at = (this.pos += digits);
    do {
      const q = Math.floor(v / 10);
      b[--at] = 0x30 + (v - q * 10);
      v = q;
    } while (v > 0);
  }

  /**
   * The payload: a copy the size of what was written. The scratch buffer is kept as it grew, up to
   * 1 MB: one buffer for the whole process, as large as the largest payload, instead of a chain of
   * doublings per poll of a 1,000-channel asset (memory churn that showed as RSS in make bench's
   * scale section).
   */
  payload(): Buffer {
    const out = Buffer.allocUnsafe(this.pos);
    this.buf.copy(out, 0, 0, this.pos);
    if (this.buf.length <= 1 << 20) JsonBytes.scratch = this.buf;
    return out;
  }
}

/**
 * `{"name":<asset>,"channels":[…]}` with the entries of records.ts readEntry(), key for key, written
 * as UTF-8 bytes (the channel's own parts encoded once in `names`).
 */
function jsonTelemetry(pid: string, records: ChannelRecord[], names: MetricNames, now: number): Buffer {
  const w = new JsonBytes();
  w.push(names.jsonHead(pid));
  for (let i = 0; i < records.length; i++) {
    const r = records[i]!;
    if (i > 0) w.byte(0x2c);
    const v = r.status === 'SUCCESS' ? r.value : undefined;
    const k = 4 * names.json(r.name, r.unit);
    const spans = names.jsonSpans;
    const bytes = names.jsonBytes;
    w.span(bytes, spans[k]!, spans[k + 1]!);
    w.number(r.timestamp > 0 ? r.timestamp : now);
    if (v !== undefined) {
      if (v.type === 'INTEGER') {
        w.push(J.valueQuote);
        w.number(v.value);
        w.push(J.typeAfterQuote.INTEGER);
      } else if (v.type === 'BOOLEAN') {
        w.push(J.valueQuote);
        w.push(v.value ? J.true : J.false);
        w.push(J.typeAfterQuote.BOOLEAN);
      } else if (v.type === 'STRING' || v.type === 'BYTE_ARRAY') {
        // Strings and base64 go through JSON.stringify; number texts need no escaping.
        w.push(J.value);
        w.text(JSON.stringify(valueText(v)));
        w.push(J.type[v.type]);
      } else {
        w.push(J.valueQuote);
        w.text(valueText(v));
        w.push(J.typeAfterQuote[v.type]);
      }
      w.span(bytes, spans[k + 2]!, spans[k + 3]!);
    } else {
      w.push(J.error);
      w.text(JSON.stringify(kuraErrorText(r.error)));
    }
    w.byte(0x7d);
  }
  w.byte(0x5d);
  w.byte(0x7d);
  return w.payload();
}

/**
 * The telemetry payload of one asset:
 * - `json`: the element shape of an EXEC/read reply, `{"name":<asset>,"channels":[…]}`;
 * - `kura-protobuf` / `simple-json`: a KuraPayload with metric `assetName`, one typed metric per
 *   channel, `<channel>_timestamp` (INT64 ms) and `<channel>_error` on failure (the metric names of
 *   Kura's WireAsset envelope).
 * kura-protobuf is written straight into one buffer (the same bytes encodeKuraPayload writes for
 * that payload), with the metric names encoded once per channel in `names`.
 */
export function encodeTelemetry(pid: string, records: ChannelRecord[], encoding: PayloadEncoding, gzip: boolean, names = new MetricNames()): Buffer {
  const now = Date.now();
  if (encoding === 'json') return jsonTelemetry(pid, records, names, now);
  if (encoding === 'kura-protobuf') {
    const w = new Writer(64 + 48 * records.length);
    w.tag(1, 0);
    w.uvarint(now);
    let at = w.begin(5000);
    w.stringField(1, 'assetName');
    writeMetricValue(w, 'STRING', pid);
    w.end(at);
    for (const r of records) {
      const n = names.of(r.name);
      at = w.begin(5000);
      if (r.status === 'SUCCESS' && r.value !== undefined) {
        w.push(n.value);
        writeMetricValue(w, METRIC_TYPE_OF[r.value.type], r.value.value);
      } else {
        w.push(n.error);
        writeMetricValue(w, 'STRING', kuraErrorText(r.error));
      }
      w.end(at);
      at = w.begin(5000);
      w.push(n.timestamp);
      writeMetricValue(w, 'INT64', r.timestamp > 0 ? r.timestamp : now);
      w.end(at);
    }
    return gzipIfShorter(w.finish(), gzip);
  }
  const p: KuraPayload = { timestamp: BigInt(now), metrics: [{ name: 'assetName', type: 'STRING', value: pid }] };
  for (const r of records) {
    if (r.status === 'SUCCESS' && r.value !== undefined) p.metrics.push(valueMetric(r.name, r.value));
    else p.metrics.push({ name: `${r.name}_error`, type: 'STRING', value: kuraErrorText(r.error) });
    p.metrics.push({ name: `${r.name}_timestamp`, type: 'INT64', value: BigInt(r.timestamp > 0 ? r.timestamp : now) });
  }
  return encodeSimpleJsonPayload(p);
}

export interface TelemetryOptions {
  /** The assets' configurations and poll cycles (a connection may pass a view of some of them). */
  assets: Pick<AssetService, 'get' | 'onPoll'>;
  log: Logger;
  /** Hands one asset's changed records to the sender (the outbox). */
  publish(pid: string, records: ChannelRecord[]): void;
  now?: () => number;
}

export class Telemetry {
  private state = new Map<string, AssetState>();
  /** Each asset configuration's deadbands by channel name (a reload brings a new configuration object). */
  private deadbands = new WeakMap<AssetConfig, Map<string, number>>();
  private unsubscribe?: () => void;

  constructor(private readonly opts: TelemetryOptions) {}

  start(): void {
    this.unsubscribe ??= this.opts.assets.onPoll((pid, records) => this.onPoll(pid, records));
  }

  stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
  }

  /** Forgets what was published of an asset: its next poll is published whole (a Sparkplug DBIRTH). */
  forget(pid: string): void {
    this.state.delete(pid);
  }

  /** Decides what of a poll cycle is published; exposed for tests. */
  onPoll(pid: string, records: ChannelRecord[]): void {
    const asset = this.opts.assets.get(pid);
    if (!asset) return;
    const now = (this.opts.now ?? Date.now)();
    let st = this.state.get(pid);
    if (!st) {
      st = { channels: new Map() };
      this.state.set(pid, st);
    }
    const heartbeat =
      st.lastPublishAt === undefined || (asset.publishMaxInterval > 0 && now - st.lastPublishAt >= asset.publishMaxInterval);
    let deadbands = this.deadbands.get(asset);
    // Only the channels with a deadband: most have none.
    if (!deadbands) this.deadbands.set(asset, (deadbands = new Map(asset.channels.filter((c) => c.deadband > 0).map((c) => [c.name, c.deadband]))));
    // The poll's own list is published when every record is (a heartbeat, or every value moved):
    // a copy is made only from the first record left out, not one array per poll grown push by push.
    let out: ChannelRecord[] | undefined;
    let n = 0;
    const channels = st.channels;
    for (let i = 0; i < records.length; i++) {
      const r = records[i]!;
      const prev = channels.get(r.name);
      if (prev !== undefined && !heartbeat && !this.changed(prev, r, deadbands.get(r.name) ?? 0)) {
        out ??= records.slice(0, i);
        continue;
      }
      channels.set(r.name, kept(r));
      if (out) out.push(r);
      n++;
    }
    if (n === 0) return;
    out ??= records;
    st.lastPublishAt = now;
    try {
      this.opts.publish(pid, out);
    } catch (err) {
      this.opts.log.warn('telemetry publish failed', { asset: pid, error: (err as Error).message });
    }
  }

  private changed(prev: Published, r: ChannelRecord, deadband: number): boolean {
    const v = r.status === 'SUCCESS' ? r.value : undefined;
    if ((typeof prev !== 'string') !== (v !== undefined)) return true;
    if (!v) return prev !== (r.error ?? '');
    let a: number | undefined;
    if (typeof prev === 'number') {
      if (v.type === 'INTEGER' && (v.value === prev || (Number.isNaN(prev) && Number.isNaN(v.value)))) return false;
      a = prev;
    } else {
      const p = prev as TypedValue;
      if (sameValue(p, v)) return false;
      a = numericOf(p);
    }
    if (deadband <= 0) return true;
    const b = numericOf(v);
    return a === undefined || b === undefined || Math.abs(b - a) >= deadband;
  }
}
