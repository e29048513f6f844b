// Report-by-exception telemetry (docs/mqtt.md "Telemetry"): each poll cycle of an asset with
// `poll.interval` is compared with what was last published. Channels whose value changed (by at
// least `deadband` for numeric channels) or whose status/error changed are published; every channel
// is published again once `publish.max.interval` has passed since the last publication (a
// heartbeat that lets a subscriber tell "unchanged" from "gone").
//
// The deadband is measured against the last *published* value, so a slow drift is still reported
// once it adds up to the deadband.

import type { AssetService, ChannelRecord, TypedValue } from '../assets/types.js';
import type { Logger } from '../log.js';
import { kuraErrorText, readEntry } from '../assets/records.js';
import type { PayloadEncoding } from './config.js';
import { encodeKuraPayloadForWire, type KuraMetric, type KuraPayload } from './kura-payload.js';
import { encodeSimpleJsonPayload } from './simple-json-payload.js';
import { numericOf } from '../assets/values.js';

interface Published {
  ok: boolean;
  /** Value identity for equality (exact, bigint-safe). */
  key: string;
  num?: number;
  error?: string;
}

interface AssetState {
  /** Undefined until the first publication. */
  lastPublishAt?: number;
  channels: Map<string, Published>;
}

function identity(v: TypedValue): string {
  switch (v.type) {
    case 'BYTE_ARRAY':
      return `b:${v.value.toString('base64')}`;
    case 'LONG':
      return `l:${v.value.toString()}`;
    default:
      return `${v.type}:${String(v.value)}`;
  }
}

function snapshot(r: ChannelRecord): Published {
  if (r.status === 'SUCCESS' && r.value !== undefined) return { ok: true, key: identity(r.value), num: numericOf(r.value) };
  return { ok: false, key: '', error: r.error ?? '' };
}

/** Kura metric for a typed value. */
export function valueMetric(name: string, v: TypedValue): KuraMetric {
  switch (v.type) {
    case 'BOOLEAN':
      return { name, type: 'BOOL', value: v.value };
    case 'INTEGER':
      return { name, type: 'INT32', value: v.value };
    case 'LONG':
      return { name, type: 'INT64', value: v.value };
    case 'FLOAT':
      return { name, type: 'FLOAT', value: v.value };
    case 'DOUBLE':
      return { name, type: 'DOUBLE', value: v.value };
    case 'STRING':
      return { name, type: 'STRING', value: v.value };
    case 'BYTE_ARRAY':
      return { name, type: 'BYTES', value: v.value };
  }
}

/**
 * The telemetry payload of one asset:
 * - `json`: the element shape of an EXEC/read reply, `{"name":<asset>,"channels":[…]}`;
 * - `kura-protobuf` / `simple-json`: a KuraPayload with metric `assetName`, one typed metric per
 *   channel, `<channel>_timestamp` (INT64 ms) and `<channel>_error` on failure (the metric names of
 *   Kura's WireAsset envelope).
 */
export function encodeTelemetry(pid: string, records: ChannelRecord[], encoding: PayloadEncoding, gzip: boolean): Buffer {
  if (encoding === 'json') return Buffer.from(JSON.stringify({ name: pid, channels: records.map(readEntry) }), 'utf8');
  const p: KuraPayload = { timestamp: BigInt(Date.now()), metrics: [{ name: 'assetName', type: 'STRING', value: pid }] };
  for (const r of records) {
    if (r.status === 'SUCCESS' && r.value !== undefined) p.metrics.push(valueMetric(r.name, r.value));
    else p.metrics.push({ name: `${r.name}_error`, type: 'STRING', value: kuraErrorText(r.error) });
    p.metrics.push({ name: `${r.name}_timestamp`, type: 'INT64', value: BigInt(r.timestamp > 0 ? r.timestamp : Date.now()) });
  }
  return encoding === 'simple-json' ? encodeSimpleJsonPayload(p) : encodeKuraPayloadForWire(p, gzip);
}

export interface TelemetryOptions {
  assets: AssetService;
  log: Logger;
  /** Hands one asset's changed records to the sender (the outbox). */
  publish(pid: string, records: ChannelRecord[]): void;
  now?: () => number;
}

export class Telemetry {
  private state = new Map<string, AssetState>();
  private unsubscribe?: () => void;

  constructor(private readonly opts: TelemetryOptions) {}

  start(): void {
    this.unsubscribe ??= this.opts.assets.onPoll((pid, records) => this.onPoll(pid, records));
  }

  stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
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
    const deadbands = new Map(asset.channels.map((c) => [c.name, c.deadband]));
    const out: ChannelRecord[] = [];
    for (const r of records) {
      const next = snapshot(r);
      const prev = st.channels.get(r.name);
      if (heartbeat || !prev || this.changed(prev, next, deadbands.get(r.name) ?? 0)) {
        out.push(r);
        st.channels.set(r.name, next);
      }
    }
    if (out.length === 0) return;
    st.lastPublishAt = now;
    try {
      this.opts.publish(pid, out);
    } catch (err) {
      this.opts.log.warn('telemetry publish failed', { asset: pid, error: (err as Error).message });
    }
  }

  private changed(prev: Published, next: Published, deadband: number): boolean {
    if (prev.ok !== next.ok) return true;
    if (!next.ok) return prev.error !== next.error;
    if (prev.key === next.key) return false;
    if (deadband > 0 && prev.num !== undefined && next.num !== undefined) return Math.abs(next.num - prev.num) >= deadband;
    return true;
  }
}
