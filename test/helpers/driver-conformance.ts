// Driver conformance suite: the same cases against every driver (simulator, Modbus TCP, Modbus RTU,
// GPIO, or one a deployment package adds), in the spirit of hono's shared router test cases. The
// contract is the one written in src/drivers/driver.ts; test/drivers/conformance.test.ts shows the
// suite catches drivers that differ from it (each deviation of a list of mutants must fail it).
//
// Usage, inside a tap test:
//
//   await runDriverConformance(t, {
//     factory: modbusFactory,                     // any DriverFactory
//     instanceProps: { 'access.type': 'TCP', … }, // the properties under drivers.<id>, minus factory
//     readable: [{ channel, expected }, …],       // ≥ 2 readable channels; `expected` checked when given
//     writable: [{ channel, value, alt }, …],     // ≥ 1 writable channel; `alt` another value for it
//     bad: channel,                               // a channel that fails on its own
//     prepare: async () => { … },                 // optional: put the device in the expected state
//     stopDevice, startDevice,                    // optional: take the device away and bring it back
//   });
//
// Cases (each a subtest, each with a fresh driver from factory.create, closed afterwards):
//   1. the factory: a name, key lists; the given properties validate; a value of the wrong kind for
//      any key is a problem at that key's path, and no validator throws;
//   2. a read of several channels: one result per channel, in input order, typed as configured,
//      equal to `expected`, timestamps numbers; the list reversed gives the results reversed; an
//      empty list gives an empty list;
//   3. write then read back: results echo the values; two writes to one channel in one call land
//      in order (the later one is read back);
//   4. a bad channel amid good ones fails alone, with a message, in a read and in a write;
//   5. overlapping calls (poll, REST and MQTT run concurrently) each get their own consistent answer;
//   6. device down: per-channel errors (never a hang or a rejection), then the same driver recovers
//      (only with stopDevice/startDevice);
//   7. close: a call in flight settles, close() is idempotent, and every later read and write
//      resolves with `Driver not attached` for each channel.
// Every driver call is bounded by `callTimeoutMs`: a call that does not settle is a failure.

import os from 'node:os';
import fs from 'node:fs';
import path from 'node:path';
import type { ChannelConfig, ChannelMode, TypedValue, ValueType } from '../../src/channels/types.js';
import { DRIVER_NOT_ATTACHED, type ChannelResult, type Driver, type DriverFactory, type Problem } from '../../src/drivers/driver.js';
import { SharedLines } from '../../src/drivers/lines.js';
import { silentLogger } from '../../src/log.js';

export interface ConformanceOptions {
  factory: DriverFactory;
  instanceProps: Record<string, unknown>;
  readable: { channel: ChannelConfig; expected?: TypedValue }[];
  writable: { channel: ChannelConfig; value: TypedValue; alt: TypedValue }[];
  bad: ChannelConfig;
  prepare?(): Promise<void>;
  stopDevice?(): Promise<void>;
  startDevice?(): Promise<void>;
  /** How long recovery may take after startDevice (default 10 s). */
  recoveryMs?: number;
  /** Longest a single driver call may take before it counts as a hang (default 15 s). */
  callTimeoutMs?: number;
}

/** What the suite needs of a test: tap's Test fits, and so does Recorder below. */
export interface Checker {
  ok(cond: unknown, message: string): unknown;
  teardown(fn: () => unknown): void;
  comment(message: string): void;
  test(name: string, fn: (t: Checker) => Promise<void>): Promise<unknown>;
}

/** A Checker that collects failures instead of reporting them (to test the suite itself). */
export class Recorder implements Checker {
  readonly failures: string[] = [];
  private readonly teardowns: (() => unknown)[] = [];
  constructor(private readonly prefix = '') {}
  ok(cond: unknown, message: string): boolean {
    if (!cond) this.failures.push(this.prefix + message);
    return !!cond;
  }
  teardown(fn: () => unknown): void {
    this.teardowns.push(fn);
  }
  comment(): void {}
  async test(name: string, fn: (t: Checker) => Promise<void>): Promise<void> {
    const child = new Recorder(`${this.prefix}${name}: `);
    try {
      await fn(child);
    } catch (err) {
      child.failures.push(`${child.prefix}threw ${(err as Error).message}`);
    }
    for (const f of child.teardowns.reverse()) await f();
    this.failures.push(...child.failures);
  }
}

/** A channel config with Kura's defaults (enabled, scale 1, offset 0). */
export function channel(name: string, valueType: ValueType, driverProps: Record<string, unknown>, mode: ChannelMode = 'READ_WRITE'): ChannelConfig {
  return { name, enabled: true, mode, valueType, scale: 1, offset: 0, deadband: 0, driverProps };
}

/** Comparable form of a typed value (bigint and Buffer included). */
export function show(v: TypedValue | undefined): string {
  if (!v) return 'undefined';
  const value = v.value;
  if (typeof value === 'bigint') return `${v.type}:${value}n`;
  if (Buffer.isBuffer(value)) return `${v.type}:0x${value.toString('hex')}`;
  return `${v.type}:${JSON.stringify(value)}`;
}

function describe(r: ChannelResult | undefined): string {
  if (!r || typeof r !== 'object') return `no result (${String(r)})`;
  return r.ok ? show(r.value) : `error: ${r.error}`;
}

const GARBAGE = { nested: [1] };

export async function runDriverConformance(t: Checker, opts: ConformanceOptions): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-conformance-'));
  t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const bound = opts.callTimeoutMs ?? 15_000;
  let seq = 0;
  const create = (t: Checker): Driver => {
    const driver = opts.factory.create(opts.instanceProps, { id: `conformance${++seq}`, log: silentLogger, dataDir, lines: new SharedLines() });
    t.teardown(() => driver.close());
    return driver;
  };

  /**
   * A driver call as the contract wants it: it resolves, in time (or answers at once, with the list
   * itself), with one result object per channel. Anything else is a failure, reported once; the caller gets per-channel stand-ins.
   */
  const call = async (t: Checker, what: string, n: number, fn: () => ChannelResult[] | Promise<ChannelResult[]>): Promise<ChannelResult[]> => {
    let timer: NodeJS.Timeout | undefined;
    const hung = new Promise<'hung'>((r) => (timer = setTimeout(() => r('hung'), bound)));
    let res: ChannelResult[] | 'hung';
    try {
      res = await Promise.race([fn(), hung]);
    } catch (err) {
      t.ok(false, `${what} rejected (${(err as Error)?.message}) instead of resolving with per-channel results`);
      return Array.from({ length: n }, () => ({ ok: false as const, error: 'rejected' }));
    } finally {
      clearTimeout(timer);
    }
    if (res === 'hung') {
      t.ok(false, `${what} did not settle within ${bound} ms`);
      return Array.from({ length: n }, () => ({ ok: false as const, error: 'hung' }));
    }
    const good = Array.isArray(res) && res.length === n && res.every((r) => r && typeof r === 'object' && (r.ok === true || (r.ok === false && typeof r.error === 'string')));
    t.ok(good, `${what}: ${n} result objects`);
    return good ? res : Array.from({ length: n }, () => ({ ok: false as const, error: 'malformed' }));
  };
  const read = (t: Checker, d: Driver, chs: ChannelConfig[], what = 'read') => call(t, what, chs.length, () => d.read(chs));
  const write = (t: Checker, d: Driver, ws: { channel: ChannelConfig; value: TypedValue }[], what = 'write') => call(t, what, ws.length, () => d.write(ws));

  await t.test('the factory and its validators', async (t) => {
    const f = opts.factory;
    t.ok(typeof f.name === 'string' && f.name !== '', 'a name');
    t.ok(Array.isArray(f.instanceKeys) && f.instanceKeys.every((k) => typeof k === 'string'), 'instanceKeys: strings');
    t.ok(Array.isArray(f.channelKeys) && f.channelKeys.every((k) => typeof k === 'string'), 'channelKeys: strings');
    const errors = (ps: Problem[]) => ps.filter((p) => p.severity !== 'warning').map((p) => `${p.path}: ${p.message}`);
    const base = 'drivers.x';
    t.ok(errors(f.validateInstance(opts.instanceProps, base)).length === 0, `instance props are valid: ${errors(f.validateInstance(opts.instanceProps, base))}`);
    const good = [...opts.readable.map((r) => r.channel), ...opts.writable.map((w) => w.channel)];
    for (const ch of good) {
      const e = errors(f.validateChannel(ch.driverProps, ch.valueType, `assets.a.channels.${ch.name}`, opts.instanceProps));
      t.ok(e.length === 0, `channel ${ch.name} is valid: ${e}`);
    }
    const wellFormed = (ps: unknown, prefix: string) =>
      Array.isArray(ps) && ps.every((p: Problem) => typeof p.path === 'string' && p.path.startsWith(prefix) && typeof p.message === 'string' && p.message !== '' && [undefined, 'error', 'warning'].includes(p.severity));
    const atKey = (ps: Problem[], at: string) => ps.some((p) => p.path === at || p.path.startsWith(`${at}.`));
    for (const k of f.instanceKeys) {
      let ps: Problem[] = [];
      try {
        ps = f.validateInstance({ ...opts.instanceProps, [k]: GARBAGE }, base);
      } catch (err) {
        t.ok(false, `validateInstance threw for a bad ${k}: ${(err as Error).message}`);
        continue;
      }
      t.ok(wellFormed(ps, `${base}.`) && atKey(ps, `${base}.${k}`), `a bad ${k} is a problem at ${base}.${k}: ${JSON.stringify(ps)}`);
    }
    const ch = opts.readable[0].channel;
    const cp = `assets.a.channels.${ch.name}`;
    for (const k of f.channelKeys) {
      let ps: Problem[] = [];
      try {
        ps = f.validateChannel({ ...ch.driverProps, [k]: GARBAGE }, ch.valueType, cp, opts.instanceProps);
      } catch (err) {
        t.ok(false, `validateChannel threw for a bad ${k}: ${(err as Error).message}`);
        continue;
      }
      t.ok(wellFormed(ps, `${cp}.`) && atKey(ps, `${cp}.${k}`), `a bad ${k} is a problem at ${cp}.${k}: ${JSON.stringify(ps)}`);
    }
  });

  if (opts.prepare) await opts.prepare();

  await t.test('reads several channels in input order', async (t) => {
    const driver = create(t);
    const channels = opts.readable.map((r) => r.channel);
    const results = await read(t, driver, channels);
    results.forEach((r, i) => {
      const ch = channels[i];
      t.ok(r.ok, `${ch.name} ok (${describe(r)})`);
      if (!r.ok) return;
      t.ok(r.value?.type === ch.valueType, `${ch.name} typed ${ch.valueType} (${describe(r)})`);
      t.ok(r.timestamp === undefined || (Number.isFinite(r.timestamp) && r.timestamp > 0), `${ch.name} timestamp ${r.timestamp}`);
      const expected = opts.readable[i].expected;
      if (expected) t.ok(show(r.value) === show(expected), `${ch.name} reads ${show(expected)} (got ${describe(r)})`);
    });
    const reversed = await read(t, driver, [...channels].reverse(), 'reversed read');
    t.ok(JSON.stringify(reversed.map(describe)) === JSON.stringify(results.map(describe).reverse()), `reversed input, reversed results: ${reversed.map(describe)}`);
    const none = await read(t, driver, [], 'empty read');
    t.ok(none.length === 0, 'an empty list reads as an empty list');
  });

  await t.test('write then read back, in request order', async (t) => {
    const driver = create(t);
    const results = await write(t, driver, opts.writable);
    results.forEach((r, i) => {
      const { channel, value } = opts.writable[i];
      t.ok(r.ok && show(r.value) === show(value), `write ${channel.name} echoes ${show(value)} (${describe(r)})`);
    });
    const back = await read(t, driver, opts.writable.map((w) => w.channel), 'read back');
    back.forEach((r, i) => t.ok(describe(r) === show(opts.writable[i].value), `${opts.writable[i].channel.name} reads back ${show(opts.writable[i].value)} (${describe(r)})`));
    const w = opts.writable[0];
    const two = await write(t, driver, [{ channel: w.channel, value: w.alt }, { channel: w.channel, value: w.value }], 'two writes to one channel');
    t.ok(two.every((r) => r.ok), `both writes ok: ${two.map(describe)}`);
    const last = await read(t, driver, [w.channel], 'read after two writes');
    t.ok(describe(last[0]) === show(w.value), `the later write wins: ${describe(last[0])}`);
  });

  await t.test('a bad channel fails alone', async (t) => {
    const driver = create(t);
    const [first, second] = opts.readable;
    const results = await read(t, driver, [first.channel, opts.bad, second.channel]);
    t.ok(results[0].ok, `good channel before: ${describe(results[0])}`);
    t.ok(!results[1].ok && /\S/.test(results[1].error), `bad channel fails with a message: ${describe(results[1])}`);
    t.ok(results[2].ok, `good channel after: ${describe(results[2])}`);
    const w = opts.writable[0];
    const wr = await write(t, driver, [{ channel: opts.bad, value: w.value }, { channel: w.channel, value: w.value }]);
    t.ok(!wr[0].ok && /\S/.test(wr[0].error), `writing the bad channel fails with a message: ${describe(wr[0])}`);
    t.ok(wr[1].ok, `the good write lands: ${describe(wr[1])}`);
  });

  await t.test('overlapping calls each get their own answer', async (t) => {
    const driver = create(t);
    const channels = opts.readable.map((r) => r.channel);
    const [a, b, c] = await Promise.all([
      read(t, driver, channels, 'read 1'),
      read(t, driver, [...channels].reverse(), 'read 2'),
      read(t, driver, [channels[1]], 'read 3'),
    ]);
    const expect = opts.readable.map((r, i) => (r.expected ? show(r.expected) : describe(a[i])));
    t.ok(JSON.stringify(a.map(describe)) === JSON.stringify(expect), `read 1: ${a.map(describe)}`);
    t.ok(JSON.stringify(b.map(describe)) === JSON.stringify([...expect].reverse()), `read 2: ${b.map(describe)}`);
    t.ok(describe(c[0]) === expect[1], `read 3: ${describe(c[0])}`);
  });

  if (opts.stopDevice && opts.startDevice) {
    await t.test('device down gives per-channel errors, then recovers', async (t) => {
      const driver = create(t);
      const channels = opts.readable.map((r) => r.channel);
      const before = await read(t, driver, channels, 'read while up');
      t.ok(before.every((r) => r.ok), 'reads while the device is up');
      await opts.stopDevice!();
      let restarted = false;
      t.teardown(async () => {
        if (!restarted) await opts.startDevice!();
      });
      const down = await read(t, driver, channels, 'read while down');
      down.forEach((r, i) => t.ok(!r.ok && /\S/.test(r.error), `${channels[i].name} fails with a message while the device is down: ${describe(r)}`));
      const w = opts.writable[0];
      const wr = await write(t, driver, [{ channel: w.channel, value: w.value }], 'write while down');
      t.ok(!wr[0].ok, `write fails while the device is down: ${describe(wr[0])}`);
      await opts.startDevice!();
      restarted = true;
      if (opts.prepare) await opts.prepare();
      const deadline = Date.now() + (opts.recoveryMs ?? 10_000);
      let after: ChannelResult[] = [];
      do {
        after = await read(t, driver, channels, 'read after restart');
        if (after.every((r) => r.ok)) break;
        await new Promise((r) => setTimeout(r, 100));
      } while (Date.now() < deadline);
      t.ok(after.every((r) => r.ok), `the same driver recovers: ${after.map(describe).join(', ')}`);
    });
  } else t.comment('no stopDevice/startDevice: the device-down case is not run for this driver');

  await t.test('close: in-flight calls settle, later calls answer Driver not attached', async (t) => {
    const driver = create(t);
    const channels = opts.readable.map((r) => r.channel);
    const inflight = read(t, driver, channels, 'read in flight at close');
    await driver.close();
    await inflight;
    await driver.close();
    t.ok(true, 'closed twice');
    const r = await read(t, driver, channels, 'read after close');
    t.ok(r.every((x) => !x.ok && x.error === DRIVER_NOT_ATTACHED), `every channel answers "${DRIVER_NOT_ATTACHED}": ${r.map(describe)}`);
    const w = opts.writable[0];
    const wr = await write(t, driver, [{ channel: w.channel, value: w.value }], 'write after close');
    t.ok(!wr[0].ok && wr[0].error === DRIVER_NOT_ATTACHED, `a write answers "${DRIVER_NOT_ATTACHED}": ${describe(wr[0])}`);
  });
}
