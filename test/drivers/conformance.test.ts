// The driver conformance suite is strict enough to catch a driver that differs from the contract
// of src/drivers/driver.ts: the simulator passes it, and each mutant below (the simulator with one
// deviation) fails it. Run with a Recorder, so the mutants' failures are collected, not reported.
import t from 'tap';
import type { ChannelConfig } from '../../src/channels/types.js';
import type { ChannelResult, Driver, DriverFactory, WriteRequest } from '../../src/drivers/driver.js';
import { simulatorFactory } from '../../src/drivers/simulator/index.js';
import { channel, Recorder, runDriverConformance, type ConformanceOptions } from '../helpers/driver-conformance.js';

const options = (factory: DriverFactory): ConformanceOptions => ({
  factory,
  instanceProps: {},
  readable: [
    { channel: channel('temp', 'DOUBLE', { simulation: 'constant', initial: 21.5 }, 'READ'), expected: { type: 'DOUBLE', value: 21.5 } },
    { channel: channel('n', 'INTEGER', { simulation: 'constant', initial: 7 }, 'READ'), expected: { type: 'INTEGER', value: 7 } },
  ],
  writable: [{ channel: channel('sp', 'INTEGER', {}), value: { type: 'INTEGER', value: 5 }, alt: { type: 'INTEGER', value: 6 } }],
  bad: channel('bad', 'DOUBLE', { simulation: 'wave' }),
  callTimeoutMs: 500,
});

type Hooks = {
  read?(d: Driver, chs: ChannelConfig[], closed: boolean): ChannelResult[] | Promise<ChannelResult[]>;
  write?(d: Driver, ws: WriteRequest[], closed: boolean): Promise<ChannelResult[]>;
  validateChannel?: DriverFactory['validateChannel'];
};

/** The simulator with one behaviour replaced. */
function mutant(h: Hooks): DriverFactory {
  return {
    ...simulatorFactory,
    validateChannel: h.validateChannel ?? simulatorFactory.validateChannel,
    create(props, ctx) {
      const d = simulatorFactory.create(props, ctx);
      let closed = false;
      return {
        read: (chs) => (h.read ? h.read(d, chs, closed) : d.read(chs)),
        write: (ws) => (h.write ? h.write(d, ws, closed) : d.write(ws)),
        close: async () => {
          closed = true;
          await d.close();
        },
      };
    },
  };
}

const MUTANTS: Record<string, Hooks> = {
  'throws when closed': { read: (d, c, closed) => { if (closed) throw new Error('Driver not attached'); return d.read(c); } },
  'rejects when closed': { read: (d, c, closed) => (closed ? Promise.reject(new Error('Driver not attached')) : d.read(c)) },
  'another closed message': { read: async (d, c, closed) => (closed ? c.map(() => ({ ok: false as const, error: 'driver closed' })) : d.read(c)) },
  'hangs when closed': { write: (d, w, closed) => (closed ? new Promise(() => {}) : d.write(w)) },
  'results in another order': { read: async (d, c) => (await d.read(c)).reverse() },
  'one result too few': { read: async (d, c) => (await d.read(c)).slice(1) },
  'writes out of order': { write: async (d, w) => (await d.write([...w].reverse())).reverse() },
  'write echoes nothing': { write: async (d, w) => (await d.write(w)).map((r) => (r.ok ? { ok: true as const, value: { type: 'STRING' as const, value: '' } } : r)) },
  'a bad channel fails the batch': {
    read: async (d, c) => {
      const r = await d.read(c);
      if (r.some((x) => !x.ok)) throw new Error('batch failed');
      return r;
    },
  },
  'a validator that throws': {
    validateChannel(props, vt, path, ip) {
      if (typeof props.delay === 'object') throw new TypeError('cannot read delay');
      return simulatorFactory.validateChannel(props, vt, path, ip);
    },
  },
  'a problem at the wrong path': {
    validateChannel: (props, vt, path, ip) => simulatorFactory.validateChannel(props, vt, path, ip).map((p) => ({ ...p, path: 'somewhere' })),
  },
};

t.test('the simulator passes (control)', async (t) => {
  const r = new Recorder();
  await runDriverConformance(r, options(simulatorFactory));
  t.same(r.failures, []);
});

for (const [name, hooks] of Object.entries(MUTANTS)) {
  t.test(`a driver that differs is caught: ${name}`, async (t) => {
    const r = new Recorder();
    await runDriverConformance(r, options(mutant(hooks)));
    t.ok(r.failures.length > 0, `caught: ${r.failures.slice(0, 2).join(' | ')}`);
  });
}
