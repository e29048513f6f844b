// Polling in the asset runtime: a fixed period (not a pause after each cycle), overruns counted and
// never two cycles at once, the poll statistics of `_status`, and error texts that stay the same
// while a device stays down (so report-by-exception telemetry publishes them like unchanged values).
// Rates are compared as ratios measured in the same run, never against the wall clock.
import t from 'tap';
import net from 'node:net';
import { AssetRuntime } from '../../src/assets/service.js';
import { DriverPool } from '../../src/assets/driver-pool.js';
import { pollHealth } from '../../src/assets/poll-scheduler.js';
import { DriverRegistry } from '../../src/drivers/registry.js';
import { simulatorFactory } from '../../src/drivers/simulator/index.js';
import { modbusFactory } from '../../src/drivers/modbus/index.js';
import type { ChannelResult, DriverFactory } from '../../src/drivers/driver.js';
import type { ChannelConfig, ChannelRecord } from '../../src/channels/types.js';
import type { AssetConfig } from '../../src/assets/types.js';
import { silentLogger } from '../../src/log.js';
import { Telemetry } from '../../src/mqtt/telemetry.js';
import { channel } from '../helpers/driver-conformance.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A driver that takes `ms` per read and records how many reads ran at once. */
function slowFactory(ms: number, seen: { now: number; max: number }): DriverFactory {
  return {
    name: 'slow', instanceKeys: [], channelKeys: [], validateInstance: () => [], validateChannel: () => [],
    create: () => ({
      async read(chs: ChannelConfig[]): Promise<ChannelResult[]> {
        seen.max = Math.max(seen.max, ++seen.now);
        await sleep(ms);
        seen.now--;
        return chs.map(() => ({ ok: true, value: { type: 'INTEGER', value: 1 } }));
      },
      write: async (ws) => ws.map((w) => ({ ok: true, value: w.value })),
      close: async () => {},
    }),
  };
}

function runtime(t: { teardown(fn: () => unknown): void }, factories: DriverFactory[]) {
  const rt = new AssetRuntime(new DriverPool(new DriverRegistry(factories), silentLogger, '/nonexistent'), silentLogger);
  t.teardown(() => rt.close());
  return rt;
}

const asset = (pid: string, driverPid: string, channels: ChannelConfig[], pollInterval: number): AssetConfig =>
  ({ pid, driverPid, description: '', pollInterval, publishMaxInterval: 0, channels });

t.test('poll.interval is a period: a read taking 60 % of it does not lower the poll rate', async (t) => {
  const period = 100;
  const rt = runtime(t, [simulatorFactory]);
  rt.configure([
    asset('fast', 'sim', [channel('x', 'INTEGER', {}, 'READ')], period),
    asset('slow', 'sim', [channel('y', 'INTEGER', { delay: 60 }, 'READ')], period),
  ], { sim: { id: 'sim', factory: 'simulator', props: {} } });
  await sleep(3000);
  const fast = rt.pollStatus('fast').polls;
  const slow = rt.pollStatus('slow').polls;
  // As a pause after each cycle the slow asset would poll 100/160 = 62 % as often as the fast one.
  t.ok(fast >= 5 && slow / fast >= 0.85, `slow ${slow} polls vs fast ${fast} (ratio ${(slow / fast).toFixed(2)})`);
});

t.test('a cycle longer than the period is an overrun: counted, the next starts at once, never two at once', async (t) => {
  const seen = { now: 0, max: 0 };
  const rt = runtime(t, [slowFactory(120, seen)]);
  rt.configure([asset('a', 'd', [channel('x', 'INTEGER', {}, 'READ')], 50)], { d: { id: 'd', factory: 'slow', props: {} } });
  await sleep(1500);
  const st = rt.pollStatus('a');
  t.ok(st.polls >= 3, `${st.polls} polls`);
  t.ok(st.overruns >= st.polls - 2, `${st.overruns} overruns in ${st.polls} polls`);
  t.equal(seen.max, 1, 'never two reads of the asset at once');
});

t.test('_status figures: last poll, last success, consecutive failures', async (t) => {
  const rt = runtime(t, [simulatorFactory]);
  const good = channel('x', 'INTEGER', { simulation: 'counter' }, 'READ');
  rt.configure([
    asset('ok', 'sim', [good], 50),
    asset('bad', 'sim', [good, channel('y', 'INTEGER', { simulation: 'wave' }, 'READ')], 50),
    asset('manual', 'sim', [good], 0),
  ], { sim: { id: 'sim', factory: 'simulator', props: {} } });
  const before = Date.now();
  await sleep(600);
  const ok = rt.pollStatus('ok');
  t.match(ok, { pollInterval: 50, consecutiveFailures: 0, devices: [] });
  t.ok(ok.lastPoll >= before && ok.lastSuccess >= before, 'timestamps of this run');
  const bad = rt.pollStatus('bad');
  t.equal(bad.lastSuccess, 0, 'a poll with a failed channel is not a success');
  t.ok(bad.consecutiveFailures >= 3 && bad.consecutiveFailures === bad.polls, `${bad.consecutiveFailures} failures in a row`);
  t.match(ok, { driver: 'sim', driverAttached: true, state: 'ok' }, 'a well asset');
  t.match(bad, { driver: 'sim', driverAttached: true, state: 'failing' }, 'a failing channel makes the asset failing');
  t.same(rt.pollStatus('manual'), { pollInterval: 0, lastPoll: 0, lastSuccess: 0, consecutiveFailures: 0, polls: 0, overruns: 0, devices: [], driver: 'sim', driverAttached: true, state: 'notPolled' });
  t.throws(() => rt.pollStatus('nope'), { message: 'Asset not found: nope' });
});

t.test('while a Modbus device is down, every poll carries the same error text', async (t) => {
  const closed = net.createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
  const port = (closed.address() as net.AddressInfo).port;
  await new Promise((r) => closed.close(r));
  const rt = runtime(t, [modbusFactory]);
  const errors: string[] = [];
  rt.onPoll((_pid, records: ChannelRecord[]) => errors.push(records[0].error ?? 'ok'));
  rt.configure([asset('plc', 'mb', [channel('x', 'INTEGER', { 'memory.address': 1 }, 'READ')], 50)], {
    mb: { id: 'mb', factory: 'modbus', props: { 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': port, 'modbus.timeout': 200 } },
  });
  await sleep(1500);
  t.ok(errors.length >= 5, `${errors.length} polls`);
  t.same([...new Set(errors)], [`Modbus TCP 127.0.0.1:${port}: connect failed: ECONNREFUSED`], 'one text, however long the back-off');
});

t.test('report by exception: an unchanged error is published like an unchanged value', async (t) => {
  const rt = runtime(t, [modbusFactory]);
  const published: string[] = [];
  const tel = new Telemetry({ assets: rt, log: silentLogger, publish: (_pid, records) => published.push(records[0].error ?? 'ok') });
  tel.start();
  t.teardown(() => tel.stop());
  // A unit that never answers: timeouts, then the unit's back-off, with one text throughout.
  const sockets = new Set<net.Socket>();
  const mute = net.createServer((s) => sockets.add(s.on('error', () => {})));
  await new Promise<void>((r) => mute.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => {
    for (const s of sockets) s.destroy();
    return new Promise((r) => mute.close(r));
  });
  const port = (mute.address() as net.AddressInfo).port;
  rt.configure([{ ...asset('plc', 'mb', [channel('x', 'INTEGER', { 'memory.address': 1 }, 'READ')], 50), publishMaxInterval: 1000 }], {
    mb: { id: 'mb', factory: 'modbus', props: { 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': port, 'modbus.timeout': 100, 'modbus.transaction.retry': 0 } },
  });
  await sleep(2500);
  const polls = rt.pollStatus('plc').polls;
  t.ok(polls >= 10, `${polls} polls`);
  t.ok(published.length >= 1 && published.length <= 4, `${published.length} publications in ${polls} polls: the first, then at publish.max.interval`);
  t.same([...new Set(published)], [`Modbus TCP 127.0.0.1:${port}: no response from unit 1 within 100 ms`]);
});

t.test('health in one word: driver missing, not polled, pending, stale, failing, ok', async (t) => {
  const st = (lastPoll: number, consecutiveFailures = 0) => ({ lastPoll, lastSuccess: 0, consecutiveFailures, polls: 1, overruns: 0 });
  const now = 1_000_000;
  t.equal(pollHealth(st(now), 1000, false, now), 'driverMissing');
  t.equal(pollHealth(st(0), 0, true, now), 'notPolled');
  t.equal(pollHealth(st(0), 1000, true, now), 'pending');
  t.equal(pollHealth(st(now - 3000), 1000, true, now), 'ok', 'three intervals late is still in time');
  t.equal(pollHealth(st(now - 3001), 1000, true, now), 'stale', 'more than three intervals late');
  t.equal(pollHealth(st(now - 2000), 100, true, now), 'ok', 'a short interval gets at least 2 s more');
  t.equal(pollHealth(st(now - 2101), 100, true, now), 'stale');
  t.equal(pollHealth(st(now - 100, 2), 1000, true, now), 'failing');
  t.equal(pollHealth(st(now - 5000, 2), 1000, true, now), 'stale', 'a stalled poll is stale, whatever the last one said');
});

t.test('an asset whose driver instance is missing or not attached is driverMissing', async (t) => {
  const rt = runtime(t, [simulatorFactory]);
  const good = channel('x', 'INTEGER', { simulation: 'counter' }, 'READ');
  rt.configure([asset('orphan', 'nosuch', [good], 50), asset('ghost', 'g', [good], 50)], { g: { id: 'g', factory: 'notinstalled', props: {} } });
  t.match(rt.pollStatus('orphan'), { driver: 'nosuch', driverAttached: false, state: 'driverMissing' });
  t.match(rt.pollStatus('ghost'), { driver: 'g', driverAttached: false, state: 'driverMissing' });
});
