// The simulator driver: the reference implementation of the driver interface (drivers/driver.ts),
// and what the demo asset runs on. State (memory, counters) is per driver instance and channel
// name, as a device's registers are per address: two assets naming the same channel share it.
// Channel property `simulation`:
// constant (with `initial`), counter, sine, random, memory (the default: holds the last written value).
// Extension: channel property `delay` (ms, default 0) makes a batch that contains the channel take
// that long, like a slow device on a bus (the batch waits for its slowest channel, once).
//
// As the reference driver it shows the contract of drivers/driver.ts: one result per channel in
// input order, per-channel failures as results, one call = one "transaction" (a `counter` channel
// advances once per call, so callers can see that concurrent reads were shared), and close().

import type { ChannelConfig, TypedValue, ValueType } from '../../assets/types.js';
import { fromJsonValue, fromNumber, zeroValue } from '../../assets/values.js';
import type { ChannelResult, Driver, DriverFactory, Problem, WriteRequest } from '../driver.js';

const SIMULATIONS = ['constant', 'counter', 'sine', 'random', 'memory'] as const;
type Simulation = (typeof SIMULATIONS)[number];
const NUMERIC: ValueType[] = ['INTEGER', 'LONG', 'FLOAT', 'DOUBLE'];

class SimulatorDriver implements Driver {
  private memory = new Map<string, TypedValue>();
  private counters = new Map<string, number>();
  private closed = false;
  private readonly started = Date.now();

  private produce(ch: ChannelConfig): TypedValue {
    const sim = (ch.driverProps.simulation as Simulation | undefined) ?? 'memory';
    const t = ch.valueType;
    switch (sim) {
      case 'constant': {
        const v = ch.driverProps.initial === undefined ? zeroValue(t) : fromJsonValue(t, ch.driverProps.initial);
        return typeof v === 'string' ? zeroValue(t) : v;
      }
      case 'counter': {
        const n = (this.counters.get(ch.name) ?? 0) + 1;
        this.counters.set(ch.name, n);
        return t === 'BOOLEAN' ? { type: t, value: n % 2 === 1 } : fromNumber(t, n);
      }
      case 'sine': {
        const x = Math.sin(((Date.now() - this.started) / 60_000) * 2 * Math.PI) * 50 + 20;
        return t === 'BOOLEAN' ? { type: t, value: x > 20 } : fromNumber(t, x);
      }
      case 'random':
        return t === 'BOOLEAN' ? { type: t, value: Math.random() < 0.5 } : fromNumber(t, Math.random() * 100);
      case 'memory':
      default: {
        const m = this.memory.get(ch.name);
        if (m) return m;
        const init = ch.driverProps.initial === undefined ? zeroValue(t) : fromJsonValue(t, ch.driverProps.initial);
        return typeof init === 'string' ? zeroValue(t) : init;
      }
    }
  }

  private async latency(channels: ChannelConfig[]): Promise<void> {
    const ms = Math.max(0, ...channels.map((c) => (typeof c.driverProps.delay === 'number' ? c.driverProps.delay : 0)));
    if (ms > 0) await new Promise((r) => setTimeout(r, ms));
  }

  async read(channels: ChannelConfig[]): Promise<ChannelResult[]> {
    if (this.closed) throw new Error('Driver not attached');
    await this.latency(channels);
    if (this.closed) throw new Error('Driver not attached');
    const now = Date.now();
    return channels.map((ch) => ({ ok: true, value: this.produce(ch), timestamp: now }));
  }

  async write(requests: WriteRequest[]): Promise<ChannelResult[]> {
    if (this.closed) throw new Error('Driver not attached');
    await this.latency(requests.map((r) => r.channel));
    if (this.closed) throw new Error('Driver not attached');
    const now = Date.now();
    return requests.map((r) => {
      const sim = (r.channel.driverProps.simulation as Simulation | undefined) ?? 'memory';
      if (sim !== 'memory') return { ok: false, error: `Simulated channel ${r.channel.name} (${sim}) is not writable` };
      this.memory.set(r.channel.name, r.value);
      return { ok: true, value: r.value, timestamp: now };
    });
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}

export const simulatorFactory: DriverFactory = {
  name: 'simulator',
  instanceKeys: [],
  channelKeys: ['simulation', 'initial', 'delay'],
  validateInstance: () => [],
  validateChannel(props, valueType, path) {
    const problems: Problem[] = [];
    const sim = props.simulation;
    if (sim !== undefined && !(SIMULATIONS as readonly unknown[]).includes(sim)) {
      problems.push({ path: `${path}.simulation`, message: `expected one of ${SIMULATIONS.join(', ')}, got ${JSON.stringify(sim)}` });
    }
    if ((sim === 'sine' || sim === 'counter' || sim === 'random') && !NUMERIC.includes(valueType) && valueType !== 'BOOLEAN') {
      problems.push({ path: `${path}.simulation`, message: `${sim} needs a numeric or BOOLEAN value.type, not ${valueType}` });
    }
    const delay = props.delay;
    if (delay !== undefined && (typeof delay !== 'number' || !Number.isInteger(delay) || delay < 0 || delay > 60_000)) {
      problems.push({ path: `${path}.delay`, message: 'expected milliseconds, an integer 0-60000' });
    }
    if (props.initial !== undefined) {
      const v = fromJsonValue(valueType, props.initial);
      if (typeof v === 'string') problems.push({ path: `${path}.initial`, message: v });
    }
    return problems;
  },
  create: () => new SimulatorDriver(),
};
