// Recent values of the polled numeric channels, in memory (docs/rest-api.md "History"): what a
// technician looks at to see whether a value moves, sticks or flaps. Fed by the poll cycles of the
// assets with a poll interval (AssetService.onPoll). Bounded per channel (HISTORY_SAMPLES_PER_CHANNEL
// and HISTORY_MAX_AGE_MS) and overall (HISTORY_SAMPLES_TOTAL: with many channels each keeps fewer,
// at least HISTORY_SAMPLES_MIN), so memory stays bounded whatever the configuration.

import type { ChannelRecord } from '../channels/types.js';

export const HISTORY_SAMPLES_PER_CHANNEL = 600;
export const HISTORY_SAMPLES_MIN = 10;
/**
 * Samples kept in all: 1.2 MB of samples (12 bytes each) at most, plus about 200 bytes per
 * channel tracked (its Map entry and slot: well under that). The configuration's heap bound (src/configuration/heap.ts) is reckoned without the
 * history, so it must stay small beside it: with 200,000 samples in growable arrays a daemon at the
 * documented channel bound ran out of heap during a rollback.
 */
export const HISTORY_SAMPLES_TOTAL = 100_000;
export const HISTORY_MAX_AGE_MS = 10 * 60_000;
/** Channels tracked at most: HISTORY_SAMPLES_TOTAL / HISTORY_SAMPLES_MIN. */
export const HISTORY_MAX_CHANNELS = HISTORY_SAMPLES_TOTAL / HISTORY_SAMPLES_MIN;

const NUMERIC = new Set(['INTEGER', 'LONG', 'FLOAT', 'DOUBLE']);

/**
 * The samples of every tracked channel live in one pool: a Uint32Array of times (ms after the
 * pool's `epoch`) and a Float64Array of values, in which slot `s` is the ring
 * `[s × ringSize, (s + 1) × ringSize)`, with the ring's oldest index and its count in two
 * Int32Arrays. A time outside the 2^32 ms (49 days) after `epoch` (the wall clock set far back or
 * forward, as at a device's first clock synchronisation) starts the history again around it. Every channel keeps the same number of samples (capacity()), so when
 * that changes the pool is made again at the new ring size, each ring keeping its newest samples,
 * at most once per record() call. A channel costs its Map entry and 8 bytes beside its samples: one
 * typed array pair per channel (10,000 channels) took about 600 bytes per channel in V8's objects
 * and backing stores, and its first poll cycle, with rings made large and then small, left tens of
 * MB of freed backing stores in the process.
 */
export class ChannelHistory {
  /** Asset pid → channel name → slot. */
  private readonly assets = new Map<string, Map<string, number>>();
  private channels = 0;
  /** Samples per ring in the pool now (capacity() when the pool was made). */
  private ringSize = 0;
  /** Slots the pool has room for. */
  private slots = 0;
  /** Slots handed out so far; those of forgotten channels are in `free`. */
  private used = 0;
  private free: number[] = [];
  private epoch = NaN;
  private times = new Uint32Array(0);
  private values = new Float64Array(0);
  private first = new Int32Array(0);
  private count = new Int32Array(0);

  constructor(private readonly now: () => number = Date.now) {}

  /** Samples each channel keeps now: fewer when many channels are tracked. */
  capacity(): number {
    return Math.max(HISTORY_SAMPLES_MIN, Math.min(HISTORY_SAMPLES_PER_CHANNEL, Math.floor(HISTORY_SAMPLES_TOTAL / Math.max(1, this.channels))));
  }

  /** A poll cycle's records of asset `pid`: the successful numeric ones are kept. */
  record(pid: string, records: readonly ChannelRecord[]): void {
    let byName = this.assets.get(pid);
    if (!byName) this.assets.set(pid, (byName = new Map()));
    // Channels forgotten since the pool was made leave more room to the others.
    if (this.ringSize !== 0 && this.capacity() !== this.ringSize) this.layout(this.channels);
    let fresh: ChannelRecord[] | undefined;
    for (const r of records) {
      const v = r.value;
      if (r.status !== 'SUCCESS' || !v || !NUMERIC.has(v.type)) continue;
      const slot = byName.get(r.name);
      if (slot === undefined) (fresh ??= []).push(r);
      else this.push(slot, r.timestamp, Number(v.value));
    }
    if (!fresh) return;
    // New channels: the pool is made for all of them at once (the ring size of every channel may
    // change), then each takes a slot.
    const names = new Set<string>();
    for (const r of fresh) if (names.size < HISTORY_MAX_CHANNELS - this.channels) names.add(r.name);
    if (names.size === 0) return;
    this.channels += names.size;
    if (this.capacity() !== this.ringSize || this.channels > this.slots) this.layout(this.channels);
    for (const r of fresh) {
      let slot = byName.get(r.name);
      if (slot === undefined) {
        if (!names.has(r.name)) continue;
        slot = this.free.pop() ?? this.used++;
        this.first[slot] = 0;
        this.count[slot] = 0;
        byName.set(r.name, slot);
      }
      this.push(slot, r.timestamp, Number(r.value!.value));
    }
  }

  private push(slot: number, time: number, value: number): void {
    const t = Math.floor(time) - this.epoch;
    if (!(t >= 0 && t < 2 ** 32)) return this.restart(slot, time, value);
    const size = this.ringSize;
    const n = this.count[slot]!;
    const at = slot * size + ((this.first[slot]! + n) % size);
    this.times[at] = t;
    this.values[at] = value;
    if (n < size) this.count[slot] = n + 1;
    else this.first[slot] = (this.first[slot]! + 1) % size;
  }

  /** A time the pool cannot hold: every ring emptied, the epoch 2^31 ms before `time`. */
  private restart(slot: number, time: number, value: number): void {
    if (!Number.isFinite(time)) return;
    this.epoch = Math.floor(time) - 2 ** 31;
    this.count.fill(0);
    this.push(slot, time, value);
  }

  /**
   * Makes the pool again for `channels` channels at capacity(): room for twice as many (new
   * channels then rarely make it again) but never more than HISTORY_SAMPLES_TOTAL samples in all;
   * the tracked channels take slots 0… in order, each with its newest samples.
   */
  private layout(channels: number): void {
    const size = this.capacity();
    const slots = Math.max(channels, Math.min(Math.floor(HISTORY_SAMPLES_TOTAL / size), Math.max(16, 2 * channels)));
    const times = new Uint32Array(slots * size);
    const values = new Float64Array(slots * size);
    const first = new Int32Array(slots);
    const count = new Int32Array(slots);
    let next = 0;
    for (const byName of this.assets.values()) {
      for (const [name, slot] of byName) {
        const n = this.count[slot]!;
        const keep = Math.min(n, size);
        for (let i = 0; i < keep; i++) {
          const from = slot * this.ringSize + ((this.first[slot]! + n - keep + i) % this.ringSize);
          times[next * size + i] = this.times[from]!;
          values[next * size + i] = this.values[from]!;
        }
        count[next] = keep;
        byName.set(name, next++);
      }
    }
    Object.assign(this, { times, values, first, count, ringSize: size, slots, used: next, free: [] });
  }

  /** Forgets what is not in `keep` (asset pid → its numeric channel names): after a reconfiguration. */
  retain(keep: (pid: string, channel: string) => boolean): void {
    for (const [pid, byName] of this.assets) {
      for (const [name, slot] of byName) {
        if (keep(pid, name)) continue;
        byName.delete(name);
        this.free.push(slot);
        this.channels--;
      }
      if (byName.size === 0) this.assets.delete(pid);
    }
  }

  /** A channel's samples within the age bound, oldest first; empty when it has none. */
  samples(pid: string, channel: string): { timestamp: number; value: number }[] {
    const slot = this.assets.get(pid)?.get(channel);
    if (slot === undefined) return [];
    const from = this.now() - HISTORY_MAX_AGE_MS;
    const size = this.ringSize;
    const n = this.count[slot]!;
    const out: { timestamp: number; value: number }[] = [];
    for (let i = Math.max(0, n - this.capacity()); i < n; i++) {
      const at = slot * size + ((this.first[slot]! + i) % size);
      const t = this.epoch + this.times[at]!;
      if (t >= from) out.push({ timestamp: t, value: this.values[at]! });
    }
    return out;
  }
}
