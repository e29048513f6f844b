// Recent values of the polled numeric channels, in memory (docs/rest-api.md "History"): what a
// technician looks at to see whether a value moves, sticks or flaps. Fed by the poll cycles of the
// assets with a poll interval (AssetService.onPoll). Bounded per channel (HISTORY_SAMPLES_PER_CHANNEL
// and HISTORY_MAX_AGE_MS) and overall (HISTORY_SAMPLES_TOTAL: with many channels each keeps fewer,
// at least HISTORY_SAMPLES_MIN), so memory stays bounded whatever the configuration.

import type { ChannelRecord } from '../channels/types.js';

export const HISTORY_SAMPLES_PER_CHANNEL = 600;
export const HISTORY_SAMPLES_MIN = 10;
/**
 * Samples kept in all: 1.6 MB of samples (two doubles each) plus about 200 bytes per channel
 * tracked. The configuration's heap bound (src/configuration/heap.ts) is reckoned without the
 * history, so it must stay small beside it: with 200,000 samples in growable arrays a daemon at the
 * documented channel bound ran out of heap during a rollback.
 */
export const HISTORY_SAMPLES_TOTAL = 100_000;
export const HISTORY_MAX_AGE_MS = 10 * 60_000;
/** Channels tracked at most: HISTORY_SAMPLES_TOTAL / HISTORY_SAMPLES_MIN. */
export const HISTORY_MAX_CHANNELS = HISTORY_SAMPLES_TOTAL / HISTORY_SAMPLES_MIN;

const NUMERIC = new Set(['INTEGER', 'LONG', 'FLOAT', 'DOUBLE']);

/**
 * One channel's samples: a ring of exactly `capacity` times and values (typed arrays, no object per
 * sample and no slack); made again at the new size when the capacity changes.
 */
class Samples {
  private times: Float64Array;
  private values: Float64Array;
  /** Index of the oldest sample; `count` samples follow it, wrapping. */
  private start = 0;
  count = 0;

  constructor(capacity: number) {
    this.times = new Float64Array(capacity);
    this.values = new Float64Array(capacity);
  }

  push(time: number, value: number, capacity: number): void {
    if (capacity !== this.times.length) this.resize(capacity);
    const cap = this.times.length;
    const at = (this.start + this.count) % cap;
    this.times[at] = time;
    this.values[at] = value;
    if (this.count < cap) this.count++;
    else this.start = (this.start + 1) % cap;
  }

  /** Keeps the newest samples that fit `capacity`. */
  private resize(capacity: number): void {
    const keep = Math.min(this.count, capacity);
    const times = new Float64Array(capacity);
    const values = new Float64Array(capacity);
    for (let i = 0; i < keep; i++) {
      const from = (this.start + this.count - keep + i) % this.times.length;
      times[i] = this.times[from]!;
      values[i] = this.values[from]!;
    }
    this.times = times;
    this.values = values;
    this.start = 0;
    this.count = keep;
  }

  /** The newest `limit` samples not older than `from`, oldest first. */
  list(from: number, limit: number): { timestamp: number; value: number }[] {
    const cap = this.times.length;
    const out: { timestamp: number; value: number }[] = [];
    for (let i = Math.max(0, this.count - limit); i < this.count; i++) {
      const at = (this.start + i) % cap;
      if (this.times[at]! >= from) out.push({ timestamp: this.times[at]!, value: this.values[at]! });
    }
    return out;
  }
}

export class ChannelHistory {
  private readonly assets = new Map<string, Map<string, Samples>>();
  private channels = 0;

  constructor(private readonly now: () => number = Date.now) {}

  /** Samples each channel keeps now: fewer when many channels are tracked. */
  capacity(): number {
    return Math.max(HISTORY_SAMPLES_MIN, Math.min(HISTORY_SAMPLES_PER_CHANNEL, Math.floor(HISTORY_SAMPLES_TOTAL / Math.max(1, this.channels))));
  }

  /** A poll cycle's records of asset `pid`: the successful numeric ones are kept. */
  record(pid: string, records: readonly ChannelRecord[]): void {
    let byName = this.assets.get(pid);
    if (!byName) this.assets.set(pid, (byName = new Map()));
    const capacity = this.capacity();
    for (const r of records) {
      const v = r.value;
      if (r.status !== 'SUCCESS' || !v || !NUMERIC.has(v.type)) continue;
      let s = byName.get(r.name);
      if (!s) {
        if (this.channels >= HISTORY_MAX_CHANNELS) continue;
        byName.set(r.name, (s = new Samples(capacity)));
        this.channels++;
      }
      s.push(r.timestamp, Number(v.value), capacity);
    }
  }

  /** Forgets what is not in `keep` (asset pid → its numeric channel names): after a reconfiguration. */
  retain(keep: (pid: string, channel: string) => boolean): void {
    for (const [pid, byName] of this.assets) {
      for (const name of byName.keys()) if (!keep(pid, name)) byName.delete(name), this.channels--;
      if (byName.size === 0) this.assets.delete(pid);
    }
  }

  /** A channel's samples within the age bound, oldest first; empty when it has none. */
  samples(pid: string, channel: string): { timestamp: number; value: number }[] {
    const s = this.assets.get(pid)?.get(channel);
    return s ? s.list(this.now() - HISTORY_MAX_AGE_MS, this.capacity()) : [];
  }
}
