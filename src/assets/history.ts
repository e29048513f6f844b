// Recent values of the polled numeric channels, in memory (docs/rest-api.md "History"): what a
// technician looks at to see whether a value moves, sticks or flaps. Fed by the poll cycles of the
// assets with a poll interval (AssetService.onPoll). Bounded per channel (HISTORY_SAMPLES_PER_CHANNEL
// and HISTORY_MAX_AGE_MS) and overall (HISTORY_SAMPLES_TOTAL: with many channels each keeps fewer,
// at least HISTORY_SAMPLES_MIN), so memory stays bounded whatever the configuration.

import type { ChannelRecord } from '../channels/types.js';

export const HISTORY_SAMPLES_PER_CHANNEL = 600;
export const HISTORY_SAMPLES_MIN = 10;
export const HISTORY_SAMPLES_TOTAL = 200_000;
export const HISTORY_MAX_AGE_MS = 10 * 60_000;
/** Channels tracked at most: HISTORY_SAMPLES_TOTAL / HISTORY_SAMPLES_MIN. */
export const HISTORY_MAX_CHANNELS = HISTORY_SAMPLES_TOTAL / HISTORY_SAMPLES_MIN;

const NUMERIC = new Set(['INTEGER', 'LONG', 'FLOAT', 'DOUBLE']);

/** One channel's samples, oldest first (two parallel arrays of doubles: no object per sample). */
class Samples {
  times: number[] = [];
  values: number[] = [];

  push(time: number, value: number, capacity: number): void {
    this.times.push(time);
    this.values.push(value);
    const over = this.times.length - capacity;
    // Dropped in batches: a shift per sample would move the whole array every poll.
    if (over > 0 && (over >= 32 || over >= capacity / 4)) this.drop(over);
  }

  drop(n: number): void {
    this.times.splice(0, n);
    this.values.splice(0, n);
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
        byName.set(r.name, (s = new Samples()));
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
    if (!s) return [];
    const from = this.now() - HISTORY_MAX_AGE_MS;
    const capacity = this.capacity();
    let first = Math.max(0, s.times.length - capacity);
    while (first < s.times.length && s.times[first]! < from) first++;
    if (first > 0) s.drop(first);
    return s.times.map((timestamp, i) => ({ timestamp, value: s.values[i]! }));
  }
}
