// The simulator driver: the reference implementation of the driver interface (drivers/driver.ts),
// and what the demo asset runs on. State (memory, counters) is per driver instance and channel
// name, as a device's registers are per address: two assets naming the same channel share it.
// One call = one "transaction": a `counter` channel advances once per call, so callers can see
// that concurrent reads were shared; a batch waits for its slowest `delay`, once.

import type { ChannelConfig, TypedValue } from '../../channels/types.js';
import { fromNumber } from '../../channels/values.js';
import { closedResults, type ChannelResult, type Driver, type WriteRequest } from '../driver.js';
import { channelSpecs, SpecError } from '../props.js';
import { parseChannel, type SimulatorChannelSpec } from './config.js';

const wait = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class SimulatorDriver implements Driver {
  private memory = new Map<string, TypedValue>();
  private counters = new Map<string, number>();
  private closed = false;
  private readonly started = Date.now();
  private readonly spec = channelSpecs((ch, path) => parseChannel(ch.driverProps, ch.valueType, path));

  /** The value of a channel at `now` (the batch's timestamp). */
  private produce(ch: ChannelConfig, s: SimulatorChannelSpec, now: number): TypedValue {
    const t = ch.valueType;
    switch (s.simulation) {
      case 'constant':
        return s.initial;
      case 'counter': {
        const n = (this.counters.get(ch.name) ?? 0) + 1;
        this.counters.set(ch.name, n);
        return t === 'BOOLEAN' ? { type: t, value: n % 2 === 1 } : fromNumber(t, n);
      }
      case 'sine': {
        const x = Math.sin(((now - this.started) / 60_000) * 2 * Math.PI) * 50 + 20;
        return t === 'BOOLEAN' ? { type: t, value: x > 20 } : fromNumber(t, x);
      }
      case 'random':
        return t === 'BOOLEAN' ? { type: t, value: Math.random() < 0.5 } : fromNumber(t, Math.random() * 100);
      case 'memory':
        return this.memory.get(ch.name) ?? s.initial;
    }
  }

  /** The slowest `delay` of the batch's channels, like a slow device on a bus (0: none, or closed). */
  private delayOf(channels: readonly ChannelConfig[]): number {
    let ms = 0;
    if (this.closed) return ms;
    for (const ch of channels) {
      const s = this.spec(ch);
      if (!(s instanceof SpecError) && s.delay > ms) ms = s.delay;
    }
    return ms;
  }

  /**
   * Not an async function: a batch without a `delay` (the demo asset, every REST read of it) is
   * answered in one pass with the list itself, no promise (src/drivers/driver.ts).
   */
  read(channels: ChannelConfig[]): ChannelResult[] | Promise<ChannelResult[]> {
    const ms = this.delayOf(channels);
    return ms > 0 ? this.delayedRead(channels, ms) : this.sample(channels);
  }

  private async delayedRead(channels: ChannelConfig[], ms: number): Promise<ChannelResult[]> {
    await wait(ms);
    return this.sample(channels);
  }

  /** One result per channel, all stamped with the same time. */
  private sample(channels: ChannelConfig[]): ChannelResult[] {
    if (this.closed) return closedResults(channels.length);
    const timestamp = Date.now();
    const out: ChannelResult[] = new Array(channels.length);
    for (let i = 0; i < channels.length; i++) {
      const ch = channels[i]!;
      const s = this.spec(ch);
      out[i] = s instanceof SpecError ? { ok: false, error: `Invalid simulator channel configuration: ${s.error}` } : { ok: true, value: this.produce(ch, s, timestamp), timestamp };
    }
    return out;
  }

  async write(requests: WriteRequest[]): Promise<ChannelResult[]> {
    const ms = this.delayOf(requests.map((r) => r.channel));
    if (ms > 0) await wait(ms);
    if (this.closed) return closedResults(requests.length);
    const timestamp = Date.now();
    return requests.map((r) => {
      const s = this.spec(r.channel);
      if (s instanceof SpecError) return { ok: false, error: `Invalid simulator channel configuration: ${s.error}` };
      if (s.simulation !== 'memory') return { ok: false, error: `Simulated channel ${r.channel.name} (${s.simulation}) is not writable` };
      this.memory.set(r.channel.name, r.value);
      return { ok: true, value: r.value, timestamp };
    });
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}
