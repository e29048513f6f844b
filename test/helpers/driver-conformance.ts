// Driver conformance suite: the same cases against every driver (simulator, Modbus TCP, Modbus RTU,
// GPIO, or one a deployment package adds), in the spirit of hono's shared router test cases.
//
// Usage, inside a tap test:
//
//   await runDriverConformance(t, {
//     factory: modbusFactory,                     // any DriverFactory
//     instanceProps: { 'access.type': 'TCP', … }, // the properties under drivers.<id>, minus factory
//     readable: [{ channel, expected }, …],       // ≥ 2 readable channels; `expected` checked when given
//     writable: [{ channel, value }, …],          // ≥ 1 writable channel and a value it reads back as
//     bad: channel,                               // optional: a channel that fails on its own
//     prepare: async () => { … },                 // optional: put the device in the expected state
//     stopDevice, startDevice,                    // optional: take the device away and bring it back
//   });
//
// Cases (each a subtest, each with a fresh driver from factory.create, closed afterwards):
//   1. a read of several channels: one result per channel, in input order, typed as configured,
//      equal to `expected`; reading the same list reversed gives the same values reversed;
//   2. write then read back: write results are ok and echo the value; a read returns it;
//   3. a bad channel amid good ones fails alone, with a non-empty message (skipped without `bad`);
//   4. device down: reads and writes resolve with per-channel errors (never hang, never throw
//      out of the driver), then the same driver recovers once the device is back within
//      `recoveryMs` (skipped without stopDevice/startDevice);
//   5. close() is idempotent, and a read after close answers (an error is fine) instead of hanging.
// Channels are ChannelConfig objects (src/assets/types.ts); `channel()` below builds one quickly.

import type { Test } from 'tap';
import os from 'node:os';
import fs from 'node:fs';
import path from 'node:path';
import type { ChannelConfig, ChannelMode, TypedValue, ValueType } from '../../src/assets/types.js';
import type { ChannelResult, Driver, DriverFactory } from '../../src/drivers/driver.js';
import { silentLogger } from '../../src/log.js';

export interface ConformanceOptions {
  factory: DriverFactory;
  instanceProps: Record<string, unknown>;
  readable: { channel: ChannelConfig; expected?: TypedValue }[];
  writable: { channel: ChannelConfig; value: TypedValue }[];
  bad?: ChannelConfig;
  prepare?(): Promise<void>;
  stopDevice?(): Promise<void>;
  startDevice?(): Promise<void>;
  /** How long recovery may take after startDevice (default 10 s). */
  recoveryMs?: number;
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

function describe(r: ChannelResult): string {
  return r.ok ? show(r.value) : `error: ${r.error}`;
}

/** A driver rejecting means "the whole batch failed": per-channel errors for the caller. */
async function settle(p: Promise<ChannelResult[]>, n: number): Promise<ChannelResult[]> {
  try {
    return await p;
  } catch (err) {
    return Array.from({ length: n }, () => ({ ok: false as const, error: (err as Error).message }));
  }
}

export async function runDriverConformance(t: Test, opts: ConformanceOptions): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-conformance-'));
  t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  let seq = 0;
  const create = (t: Test): Driver => {
    const driver = opts.factory.create(opts.instanceProps, { id: `conformance${++seq}`, log: silentLogger, dataDir });
    t.teardown(() => driver.close());
    return driver;
  };
  t.same(opts.factory.validateInstance(opts.instanceProps, 'drivers.x').filter((p) => p.severity !== 'warning'), [], 'instance props are valid');
  if (opts.prepare) await opts.prepare();

  await t.test('reads several channels in input order', async (t) => {
    const driver = create(t);
    const channels = opts.readable.map((r) => r.channel);
    const results = await driver.read(channels);
    t.equal(results.length, channels.length, 'one result per channel');
    results.forEach((r, i) => {
      const ch = channels[i];
      t.ok(r.ok, `${ch.name} ok (${describe(r)})`);
      if (!r.ok) return;
      t.equal(r.value.type, ch.valueType, `${ch.name} typed ${ch.valueType}`);
      const expected = opts.readable[i].expected;
      if (expected) t.equal(show(r.value), show(expected), `${ch.name} value`);
    });
    const reversed = await driver.read([...channels].reverse());
    t.same(reversed.map(describe), results.map(describe).reverse(), 'reversed input, reversed results');
  });

  await t.test('write then read back', async (t) => {
    const driver = create(t);
    const results = await driver.write(opts.writable.map(({ channel, value }) => ({ channel, value })));
    t.equal(results.length, opts.writable.length);
    results.forEach((r, i) => {
      const { channel, value } = opts.writable[i];
      t.ok(r.ok, `write ${channel.name} ok (${describe(r)})`);
      if (r.ok) t.equal(show(r.value), show(value), `write ${channel.name} echoes the value`);
    });
    const back = await driver.read(opts.writable.map((w) => w.channel));
    back.forEach((r, i) => t.equal(describe(r), show(opts.writable[i].value), `${opts.writable[i].channel.name} reads back`));
  });

  await t.test('a bad channel fails alone', { skip: opts.bad ? false : 'no bad channel given' }, async (t) => {
    const driver = create(t);
    const [first, second] = opts.readable;
    const results = await driver.read([first.channel, opts.bad!, second.channel]);
    t.equal(results.length, 3);
    t.ok(results[0].ok, `good channel before: ${describe(results[0])}`);
    t.notOk(results[1].ok, `bad channel fails: ${describe(results[1])}`);
    if (!results[1].ok) t.match(results[1].error, /\S/, 'with a message');
    t.ok(results[2].ok, `good channel after: ${describe(results[2])}`);
  });

  const canStop = !!(opts.stopDevice && opts.startDevice);
  await t.test('device down gives per-channel errors, then recovers', { skip: canStop ? false : 'no stop/start hooks' }, async (t) => {
    const driver = create(t);
    const channels = opts.readable.map((r) => r.channel);
    const before = await driver.read(channels);
    t.ok(before.every((r) => r.ok), 'reads while the device is up');
    await opts.stopDevice!();
    let restarted = false;
    t.teardown(async () => {
      if (!restarted) await opts.startDevice!();
    });
    const down = await settle(driver.read(channels), channels.length);
    t.equal(down.length, channels.length, 'one result per channel');
    for (const [i, r] of down.entries()) {
      t.notOk(r.ok, `${channels[i].name} fails while the device is down`);
      if (!r.ok) t.match(r.error, /\S/, `with a message: ${r.error}`);
    }
    const w = opts.writable[0];
    const wr = await settle(driver.write([{ channel: w.channel, value: w.value }]), 1);
    t.notOk(wr[0].ok, `write fails while the device is down: ${describe(wr[0])}`);
    await opts.startDevice!();
    restarted = true;
    if (opts.prepare) await opts.prepare();
    const deadline = Date.now() + (opts.recoveryMs ?? 10_000);
    let after: ChannelResult[] = [];
    do {
      after = await settle(driver.read(channels), channels.length);
      if (after.every((r) => r.ok)) break;
      await new Promise((r) => setTimeout(r, 100));
    } while (Date.now() < deadline);
    t.ok(after.every((r) => r.ok), `the same driver recovers: ${after.map(describe).join(', ')}`);
  });

  await t.test('close is idempotent and later calls do not hang', async (t) => {
    const driver = opts.factory.create(opts.instanceProps, { id: 'conformance-close', log: silentLogger, dataDir });
    await driver.read([opts.readable[0].channel]);
    await driver.close();
    await driver.close();
    t.pass('closed twice');
    const r = await settle(driver.read([opts.readable[0].channel]), 1);
    t.equal(r.length, 1, `a read after close answers: ${describe(r[0])}`);
  });
}
