// The asset runtime in process: single-flight reads, polling, drivers that hang, throw or lie,
// factories that come and go (a deployment package's driver), and Kura's mode rules on writes.
import t from 'tap';
import { AssetRuntime } from '../../src/assets/service.js';
import { DriverPool } from '../../src/assets/driver-pool.js';
import { DRIVER_NOT_ATTACHED } from '../../src/drivers/driver.js';
import { DriverRegistry } from '../../src/drivers/registry.js';
import type { ChannelResult, Driver, DriverFactory, WriteRequest } from '../../src/drivers/driver.js';
import { type ChannelConfig } from '../../src/channels/types.js';
import { AssetNotFoundError, type AssetConfig } from '../../src/assets/types.js';
import { silentLogger } from '../../src/log.js';
import { channel, show } from '../helpers/driver-conformance.js';
import { watchTimers } from '../helpers/timer-fires.js';

/** A driver whose behaviour the test steers, counting its calls. */
class ScriptedDriver implements Driver {
  reads: string[][] = [];
  writes: WriteRequest[][] = [];
  mode: 'ok' | 'hang' | 'reject' | 'short' | 'hole' = 'ok';
  gate: Promise<void> = Promise.resolve();
  /** 'list': answers read() with the list itself, as a driver with its values in memory may. */
  answer: 'promise' | 'list' = 'promise';
  read(channels: ChannelConfig[]): ChannelResult[] | Promise<ChannelResult[]> {
    if (this.answer === 'promise') return this.readLater(channels);
    this.reads.push(channels.map((c) => c.name));
    if (this.mode === 'reject') throw new Error('device file vanished');
    if (this.mode === 'short') return [];
    return this.results(channels);
  }
  private results(channels: ChannelConfig[]): ChannelResult[] {
    const out: ChannelResult[] = channels.map(() => ({ ok: true, value: { type: 'INTEGER', value: this.reads.length } as const, timestamp: 1000 }));
    if (this.mode === 'hole') (out as unknown[])[0] = null;
    return out;
  }
  private async readLater(channels: ChannelConfig[]): Promise<ChannelResult[]> {
    this.reads.push(channels.map((c) => c.name));
    await this.gate;
    if (this.mode === 'hang') return new Promise(() => {});
    if (this.mode === 'reject') throw new Error('connect ECONNREFUSED 127.0.0.1:502');
    if (this.mode === 'short') return [];
    return this.results(channels);
  }
  async write(requests: WriteRequest[]): Promise<ChannelResult[]> {
    this.writes.push(requests);
    return requests.map((r) => ({ ok: true, value: r.value }));
  }
  async close(): Promise<void> {}
}

function setup(t: { teardown(fn: () => unknown): void }, timeoutMs = 30_000) {
  const drivers: ScriptedDriver[] = [];
  const factory: DriverFactory = {
    name: 'scripted', instanceKeys: [], channelKeys: [], validateInstance: () => [], validateChannel: () => [],
    create: () => {
      const d = new ScriptedDriver();
      drivers.push(d);
      return d;
    },
  };
  const registry = new DriverRegistry([factory]);
  const rt = new AssetRuntime(new DriverPool(registry, silentLogger, '/nonexistent'), silentLogger, { driverCallTimeoutMs: timeoutMs });
  t.teardown(() => rt.close());
  const asset = (pid: string, driverPid: string, channels: ChannelConfig[], pollInterval = 0): AssetConfig => ({ pid, driverPid, description: '', pollInterval, publishMaxInterval: 0, channels });
  return { rt, registry, factory, drivers, asset };
}

const ints = (...names: string[]) => names.map((n) => channel(n, 'INTEGER', {}, 'READ_WRITE'));

t.test('identical concurrent reads share one driver call; others do not', async (t) => {
  const { rt, drivers, asset } = setup(t);
  rt.configure([asset('a', 'd1', ints('x', 'y'))], { d1: { id: 'd1', factory: 'scripted', props: {} } });
  const d = drivers[0];
  let open!: () => void;
  d.gate = new Promise((r) => (open = r));
  const p1 = rt.read('a');
  const p2 = rt.read('a', ['x', 'y']);
  const p3 = rt.read('a', ['y', 'x']);
  await new Promise((r) => setImmediate(r));
  open();
  const [r1, r2, r3] = await Promise.all([p1, p2, p3]);
  t.same(d.reads, [['x', 'y'], ['y', 'x']], 'one call for the two identical reads, one for the other order');
  t.same(r1.map((r) => show(r.value)), r2.map((r) => show(r.value)));
  t.equal(r3.length, 2);
  await rt.read('a');
  t.equal(d.reads.length, 3, 'a later read is a new call');
});

t.test('a driver that hangs, rejects or answers short gives per-channel failures; other assets go on', async (t) => {
  const { rt, drivers, asset } = setup(t, 150);
  rt.configure([asset('a', 'd1', ints('x', 'y')), asset('b', 'd2', ints('z'))], {
    d1: { id: 'd1', factory: 'scripted', props: {} },
    d2: { id: 'd2', factory: 'scripted', props: {} },
  });
  const [d1, d2] = drivers;
  d1.mode = 'hang';
  const hung = rt.read('a');
  const other = await rt.read('b');
  t.equal(other[0].status, 'SUCCESS', 'asset b answers while a hangs');
  const r = await hung;
  t.same(r.map((x) => [x.status, x.error]), [['FAILURE', 'Driver d1 did not answer within 150 ms'], ['FAILURE', 'Driver d1 did not answer within 150 ms']]);
  d1.mode = 'reject';
  t.same((await rt.read('a')).map((x) => x.error), ['connect ECONNREFUSED 127.0.0.1:502', 'connect ECONNREFUSED 127.0.0.1:502']);
  d1.mode = 'short';
  t.same((await rt.read('a', ['x'])).map((x) => x.error), ['Driver d1 returned a malformed result']);
  t.equal(d2.reads.length, 1);
  await t.rejects(rt.read('nope'), { name: 'Error', message: 'Asset not found: nope' });
});

t.test('the call watchdog wakes once per timeout, not on a period, and fails a hung call at its deadline', async (t) => {
  const { rt, drivers, asset } = setup(t, 400);
  rt.configure([asset('a', 'd1', ints('x'))], { d1: { id: 'd1', factory: 'scripted', props: {} } });
  const timers = watchTimers(t);
  // A read every 10 ms for 1.2 s, each answered at once: the watchdog fires about every 400 ms
  // (the oldest call's deadline, none due). On a period of a quarter timeout it fired ~12 times.
  const until = performance.now() + 1200;
  let reads = 0;
  while (performance.now() < until) {
    t.equal((await rt.read('a'))[0].status, 'SUCCESS');
    reads++;
    await timers.sleep(10);
  }
  t.ok(timers.fires() <= 5, `${timers.fires()} watchdog wakes during ${reads} reads in 1.2 s (timeout 400 ms)`);
  // A hung call: failed at its deadline, not before.
  drivers[0].mode = 'hang';
  const start = performance.now();
  const r = await rt.read('a');
  const took = performance.now() - start;
  t.equal(r[0].error, 'Driver d1 did not answer within 400 ms');
  t.ok(took >= 399, `failed after ${took.toFixed(0)} ms`);
});

t.test("a package's factory attaches and detaches its drivers", async (t) => {
  const { rt, registry, factory, asset } = setup(t);
  const late: DriverFactory = { ...factory, name: 'late' };
  rt.configure([asset('a', 'd1', ints('x'))], { d1: { id: 'd1', factory: 'late', props: {} } });
  t.same((await rt.read('a')).map((r) => r.error), [DRIVER_NOT_ATTACHED]);
  registry.register(late);
  t.same((await rt.read('a')).map((r) => r.status), ['SUCCESS']);
  registry.unregister('late');
  t.same((await rt.read('a')).map((r) => r.error), [DRIVER_NOT_ATTACHED]);
});

t.test("writes: Kura's refusals, conversion to the channel type, one batch to the driver", async (t) => {
  const { rt, drivers, asset } = setup(t);
  const chans = [
    channel('ro', 'INTEGER', {}, 'READ'),
    channel('off', 'INTEGER', {}, 'WRITE'),
    channel('dbl', 'DOUBLE', {}, 'WRITE'),
    channel('int', 'INTEGER', {}, 'READ_WRITE'),
  ];
  chans[1].enabled = false;
  rt.configure([asset('a', 'd1', chans)], { d1: { id: 'd1', factory: 'scripted', props: {} } });
  const r = await rt.write('a', [
    { name: 'ro', value: { type: 'INTEGER', value: 1 } },
    { name: 'off', value: { type: 'INTEGER', value: 1 } },
    { name: 'nope', value: { type: 'STRING', value: 'x' } },
    { name: 'dbl', value: { type: 'INTEGER', value: 3 } },
    { name: 'int', value: { type: 'DOUBLE', value: 2.5 } },
    { name: 'int', value: { type: 'LONG', value: 7n } },
  ]);
  t.same(r.map((x) => x.error ?? show(x.value)), [
    'Channel type not within expected types (WRITE or READ_WRITE)',
    'Channel is not enabled',
    'Channel not available',
    'DOUBLE:3',
    '2.5 does not fit a INTEGER channel',
    'INTEGER:7',
  ]);
  t.same(r.map((x) => !!x.refused), [true, true, true, false, false, false]);
  t.equal(drivers[0].writes.length, 1, 'one batch');
  t.same(drivers[0].writes[0].map((w) => `${w.channel.name}=${show(w.value)}`), ['dbl=DOUBLE:3', 'int=INTEGER:7']);
});

t.test('polling: one driver call per cycle, listeners told, restarted on reconfigure, stopped on close', async (t) => {
  const { rt, drivers, asset } = setup(t);
  const seen: string[] = [];
  rt.onPoll((pid, records) => seen.push(`${pid}:${records.map((r) => r.name).join(',')}`));
  const chans = ints('x', 'y');
  chans.push(channel('w', 'INTEGER', {}, 'WRITE'));
  rt.configure([asset('p', 'd1', chans, 20)], { d1: { id: 'd1', factory: 'scripted', props: {} } });
  const d = drivers[0];
  for (let i = 0; i < 100 && seen.length < 3; i++) await new Promise((r) => setTimeout(r, 10));
  t.ok(seen.length >= 3, 'polled repeatedly');
  t.equal(seen[0], 'p:x,y', 'readable channels only');
  t.ok(d.reads.every((r) => r.join() === 'x,y'), 'one call per cycle with every readable channel');
  // A hanging device: the next cycle waits for this one instead of piling up.
  let open!: () => void;
  d.gate = new Promise((r) => (open = r));
  const calls = d.reads.length;
  await new Promise((r) => setTimeout(r, 150));
  t.ok(d.reads.length <= calls + 1, 'no pile-up while the device is slow');
  open();
  rt.configure([asset('p', 'd1', chans, 0)], { d1: { id: 'd1', factory: 'scripted', props: {} } });
  const stopped = d.reads.length;
  await new Promise((r) => setTimeout(r, 100));
  t.equal(d.reads.length, stopped, 'poll.interval 0 stops polling');
});

t.test('a driver answering with the list itself: readAll answers in the same step, without a promise; failures as for a promise', async (t) => {
  const { rt, drivers, asset } = setup(t);
  rt.configure([asset('a', 'd1', ints('x', 'y'))], { d1: { id: 'd1', factory: 'scripted', props: {} } });
  const d = drivers[0];
  d.answer = 'list';
  const shown = (records: { name: string; status: string; value?: unknown; error?: string }[]) => records.map((r) => `${r.name}:${r.status}:${r.error ?? show(r.value as never)}`);
  const v = rt.readAll('a', shown);
  t.ok(Array.isArray(v), 'the mapped value itself, not a promise');
  t.same(v, ['x:SUCCESS:INTEGER:1', 'y:SUCCESS:INTEGER:1']);
  t.same(shown(await rt.read('a')), ['x:SUCCESS:INTEGER:2', 'y:SUCCESS:INTEGER:2'], 'read(pid) still answers with a promise');
  t.same(shown(await rt.read('a', ['y', 'nope'])), ['y:SUCCESS:INTEGER:3', 'nope:FAILURE:Channel not available'], 'a read by name');
  t.equal(d.reads.length, 3, 'one driver call per read: nothing is kept between them');
  for (const [mode, want] of [
    ['reject', ['x:FAILURE:device file vanished', 'y:FAILURE:device file vanished']],
    ['short', ['x:FAILURE:Driver d1 returned a malformed result', 'y:FAILURE:Driver d1 returned a malformed result']],
    ['hole', ['x:FAILURE:Driver d1 returned no result', 'y:SUCCESS:INTEGER:6']],
  ] as const) {
    d.mode = mode;
    t.same(rt.readAll('a', shown), want, `${mode}: a driver that throws or answers a wrong list fails its channels, at once`);
  }
  d.answer = 'promise';
  t.same(shown(await rt.read('a')), ['x:FAILURE:Driver d1 returned no result', 'y:SUCCESS:INTEGER:7'], 'a promise answering with a hole: the same failure');
  d.mode = 'ok';
  t.same(shown(await rt.write('a', [{ name: 'x', value: { type: 'INTEGER', value: 5 } }])), ['x:SUCCESS:INTEGER:5'], 'writes go on as before');
});

t.test('readAll maps what read(pid) gives, in the same step; an asset without readable channels maps []; an unknown asset rejects', async (t) => {
  const { rt, asset } = setup(t);
  rt.configure(
    [asset('a', 'd1', ints('x', 'y')), asset('w', 'd1', [channel('only', 'INTEGER', {}, 'WRITE')])],
    { d1: { id: 'd1', factory: 'scripted', props: {} } },
  );
  const seen: string[][] = [];
  const mapped = await rt.readAll('a', (records) => {
    seen.push(records.map((r) => `${r.name}:${r.status}:${show(r.value)}`));
    return records.length;
  });
  t.equal(mapped, 2);
  const plain = await rt.read('a');
  t.same(seen, [plain.map((r) => `${r.name}:${r.status}:${show({ type: 'INTEGER', value: 1 })}`)], 'the records read(pid) gives (first call: value 1)');
  t.same(plain.map((r) => [r.name, r.status]), [['x', 'SUCCESS'], ['y', 'SUCCESS']]);
  t.same(await rt.readAll('w', (records) => records), [], 'no readable channel: map gets []');
  const err = await Promise.resolve(rt.readAll('nope', () => 1)).then(() => undefined, (e: unknown) => e);
  t.ok(err instanceof AssetNotFoundError, 'an unknown asset rejects with AssetNotFoundError');
});
