// A configuration with more channels than the heap bound holds is announced in the log before it
// costs the daemon its garbage-collection time or its start (docs/installation.md "Footprint").
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { BASE_HEAP_BYTES, CHANNEL_HEAP_BYTES, changeRefusal, heapWarning, nodeOptionsWords, oldSpaceBound, servingNeeds, snapshotNeeds, snapshotOf, snapshotRefusal, weigh } from '../../src/configuration/heap.js';
import { startDaemon, type Daemon, type TestLike } from '../helpers/daemon.js';
import { basic } from '../helpers/session-client.js';
import { launcherHeapOptions } from '../helpers/launch.mjs';

const MB = 1048576;

t.test('oldSpaceBound: the last --max-old-space-size among the flags, else the whole heap limit', async (t) => {
  // V8's heap_size_limit under the launcher's flags: 48 MB of old generation, 3 × 2 MB of young.
  const heapLimit = 54 * MB;
  t.equal(oldSpaceBound(heapLimit, ['--max-old-space-size=48', '--max-semi-space-size=2']), 48 * MB);
  t.equal(oldSpaceBound(heapLimit, ['--max_old_space_size=40', '--max-old-space-size=48']), 48 * MB, 'later flags win, either spelling');
  t.equal(oldSpaceBound(heapLimit, ['', '--max-semi-space-size=2', '--enable-source-maps']), heapLimit, 'none given: the whole heap limit');
  t.equal(oldSpaceBound(heapLimit, ['--max-old-space-size=4096']), heapLimit, 'never above the heap limit');
  t.equal(oldSpaceBound(heapLimit, ['--max-old-space-size=48MB', '--max-old-space-sizes=1']), heapLimit, 'not a flag V8 takes: ignored');
  // NODE_OPTIONS as node reads it (a test runner quotes every word it passes on).
  t.same(nodeOptionsWords('--max-old-space-size=48  --enable-source-maps'), ['--max-old-space-size=48', '--enable-source-maps']);
  t.same(nodeOptionsWords('"--max-old-space-size=48" "--import=file:///a b/x.mjs" --x'), ['--max-old-space-size=48', '--import=file:///a b/x.mjs', '--x']);
  t.same(nodeOptionsWords('"--title=a \\"b\\""'), ['--title=a "b"']);
  t.same(nodeOptionsWords(''), []);
  // This process: the flags as node and NODE_OPTIONS gave them, against what V8 reports.
  const v8 = await import('node:v8');
  const bound = oldSpaceBound(v8.getHeapStatistics().heap_size_limit);
  t.ok(bound > 0 && bound <= v8.getHeapStatistics().heap_size_limit);
});

t.test('heapWarning: silent while the channels need at most 64 % of the bound', async (t) => {
  const limit = 48 * MB; // the launcher's --max-old-space-size
  t.equal(heapWarning(0, limit), undefined);
  t.equal(heapWarning(20_000, limit), undefined, '20,000 channels fit the launcher\'s bound');
  const w = heapWarning(60_000, limit)!;
  t.ok(w, '60,000 channels do not');
  t.equal(w.channels, 60_000);
  t.equal(w.heapLimitMB, 48);
  t.equal(w.neededMB, Math.round((BASE_HEAP_BYTES + 60_000 * CHANNEL_HEAP_BYTES) / MB));
  t.match(w.hint, /GATEWAYD_NODE_FLAGS=--max-old-space-size=96 /);
  t.equal(heapWarning(60_000, 96 * MB), undefined, 'the suggested bound is enough');
  t.ok(heapWarning(40_000, limit), '40,000 channels: warned (garbage collection near the bound)');
});

function config(channels: number) {
  const ch: Record<string, unknown> = {};
  for (let i = 0; i < channels; i++) ch[`c${i}`] = { type: 'READ', 'value.type': 'INTEGER', simulation: 'constant' };
  return { drivers: { sim: { factory: 'simulator' } }, assets: { big: { 'driver.pid': 'sim', channels: ch } } };
}

/** The launcher's heap flags. */
const env = { NODE_OPTIONS: launcherHeapOptions() };

t.test('the daemon warns at start when the channels are many for its heap bound, and starts', async (t) => {
  const big = await startDaemon(t, config(30_000), { env });
  const line = big.logs.find((l) => /many channels for the heap bound/.test(l));
  t.ok(line, 'warned');
  t.match(line!, /level=warn .*channels=30000 heapLimitMB=\d+ neededMB=\d+ hint="raise the heap bound, e\.g\. GATEWAYD_NODE_FLAGS=--max-old-space-size=\d+/);
  await big.stop();
  const small = await startDaemon(t, config(2_000), { env });
  t.notOk(small.logs.some((l) => /many channels/.test(l)), 'no warning for 2,000 channels');
  await small.stop();
});

/** A configuration as written with `assets` of `n` channels of `props` properties each. */
function written(assets: number, n: number, props: number) {
  const a: Record<string, unknown> = {};
  for (let k = 0; k < assets; k++) {
    const ch: Record<string, unknown> = {};
    for (let i = 0; i < n; i++) ch[`c${i}`] = Object.fromEntries(Array.from({ length: props }, (_, j) => [`p${j}`, j]));
    a[`a${k}`] = { 'driver.pid': 'sim', channels: ch };
  }
  return { drivers: { sim: { factory: 'simulator' } }, assets: a };
}

t.test('weigh counts the channels, every entry and the long texts of a configuration as written', async (t) => {
  // drivers(1) sim(1) factory(1) assets(1) + per asset: a<k>(1) driver.pid(1) channels(1) + per channel: c<i>(1) + its props
  t.same(weigh(written(3, 4, 5)), { channels: 12, entries: 4 + 3 * 3 + 12 * 6, text: 0 });
  t.same(weigh({}), { channels: 0, entries: 0, text: 0 });
  t.same(weigh(null), { channels: 0, entries: 0, text: 0 });
  t.same(weigh({ assets: { a: { channels: [1, 2] }, b: 'x' } }), { channels: 0, entries: 6, text: 0 }, 'a channel list that is no object has no channels (validation answers it)');
  t.same(weigh({ console: { banner: 'b'.repeat(1064), short: 'x'.repeat(64) }, list: ['y'.repeat(100)] }), { channels: 0, entries: 5, text: 1000 + 36 }, 'text beyond the first 64 characters of each string');
  const deep: Record<string, unknown> = {};
  let at = deep;
  for (let i = 0; i < 10_000; i++) at = (at.n = {}) as Record<string, unknown>;
  t.ok(weigh(deep).entries <= 64, 'a deep nesting is not followed to the end (no stack overflow)');
});

// A configuration of n channels of the given kind (entries per channel: the channel and its properties).
const sim = (n: number) => ({ channels: n, entries: 3 * n, text: 0 });
const modbus = (n: number) => ({ channels: n, entries: 6 * n, text: 0 });

t.test('changeRefusal: a change that would not fit, or that makes the configuration heavier to serve than the bound, is refused', async (t) => {
  const limit = 48 * MB; // the launcher's --max-old-space-size
  // Where a rollback to the snapshot of the configuration (the heaviest request) made V8 abort the
  // daemon under this bound (see REQUEST_BASE_BYTES): 49 MB for 40,000 simulator channels, 55 MB for 30,000 Modbus channels.
  t.ok(changeRefusal(sim(40_000), sim(20_000), limit), 'simulator channels: 40,000 refused');
  t.ok(changeRefusal(modbus(30_000), modbus(20_000), limit), 'Modbus channels: 30,000 refused');
  t.ok(changeRefusal({ channels: 1, entries: 100, text: 7 * MB }, sim(0), limit), '7 MB of descriptions refused');
  t.equal(changeRefusal(sim(14_000), sim(10_000), limit), undefined, 'simulator channels: 14,000 accepted');
  t.equal(changeRefusal(modbus(12_000), modbus(10_000), limit), undefined, 'Modbus channels: 12,000 accepted (the documented bound)');
  t.ok(changeRefusal(modbus(14_000), modbus(12_000), limit), 'Modbus channels: 14,000 refused');
  t.equal(changeRefusal({ channels: 1, entries: 100, text: 3 * MB }, sim(0), limit), undefined, '3 MB of descriptions accepted');
  t.equal(changeRefusal(modbus(20_000), modbus(20_000), limit), undefined, 'as heavy as what runs now, and the change fits: accepted (a device past the bound can still be changed)');
  t.equal(changeRefusal(modbus(12_000), modbus(20_000), limit), undefined, 'lighter: accepted');
  t.ok(changeRefusal(modbus(45_000), modbus(45_000), limit), 'as heavy as what runs now, but the change itself would not fit: refused (V8 would abort)');
  t.ok(changeRefusal(modbus(44_000), modbus(46_000), limit), 'lighter, but the change itself would not fit: refused');
  const why = changeRefusal(sim(40_000), sim(0), limit)!;
  t.match(why, /^Configuration too large for this daemon's heap bound: its 40000 channels \(120000 entries in all\) would need about (\d+) MB to change and run, 28 MB of the 48 MB bound are usable; delete channels, assets or long texts first, or raise the heap bound \(GATEWAYD_NODE_FLAGS=--max-old-space-size=(\d+), docs\/installation\.md "Footprint"\)$/);
  t.equal(Number(/about (\d+) MB/.exec(why)![1]), Math.round(servingNeeds(sim(40_000)) / MB));
  const suggested = Number(/max-old-space-size=(\d+)/.exec(why)![1]);
  t.equal(changeRefusal(sim(40_000), sim(0), suggested * MB), undefined, 'the suggested bound is enough');
  t.match(changeRefusal({ channels: 0, entries: 10, text: 7.5 * MB }, sim(0), limit), /its 0 channels \(10 entries in all, 7\.5 MB of long texts\)/);
});

t.test('snapshotRefusal: a snapshot that could not be read whole is refused, with what to do', async (t) => {
  const limit = 48 * MB;
  // A Modbus snapshot holds about 172 bytes per channel (2.0 MB for 12,000 channels).
  t.equal(snapshotRefusal(1, { bytes: 2.0 * MB, channels: 12_000 }, modbus(12_000), true, limit), undefined, 'a rollback to 12,000 Modbus channels');
  t.equal(snapshotRefusal(1, { bytes: 2.0 * MB, channels: 12_000 }, modbus(12_000), false, limit), undefined, 'snapshots/byId of them');
  t.ok(snapshotRefusal(1, { bytes: 5.2 * MB, channels: 30_000 }, modbus(20_000), true, limit), 'a rollback to 30,000 Modbus channels (taken under a larger bound)');
  t.match(snapshotRefusal(7, { bytes: 12 * MB, channels: 70_000 }, modbus(1000), false, limit), /^Snapshot too large for this daemon's heap bound: snapshot 7 \(12\.0 MB, 70000 channels\) would need about \d+ MB to read, 28 MB of the 48 MB bound are usable; raise the heap bound \(GATEWAYD_NODE_FLAGS=--max-old-space-size=\d+, docs\/installation\.md "Footprint"\)$/);
  t.ok(servingNeeds(modbus(20_000)) >= snapshotNeeds(snapshotOf(modbus(20_000)), modbus(20_000), true), 'what a configuration needs to be served covers a rollback to its snapshot');
});

/** A daemon with an administrator and a simulator driver, under the launcher's heap flags (`dir`: start again there). */
const adminDaemon = (t: TestLike, dir?: string) => startDaemon(t, { identities: { admin: { password: 'admin', permissions: ['kura.admin'] } }, drivers: { sim: { factory: 'simulator' } } }, { env, dir });

/** configuration/v2 as the administrator. */
const v2 = (d: Daemon) => {
  const c = basic(d, 'admin', 'admin');
  return (p: string, body: unknown, method = 'POST') => c.request(`/services/configuration/v2/${p}`, { method, body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
};

/** POSTs the factory components `make(k)` makes, k = 0, 1, …, up to `max` of them, until one is not answered 200. */
async function addUntilRefused(call: ReturnType<typeof v2>, max: number, make: (k: number) => { factoryPid: string; pid: string; properties: unknown }): Promise<{ statuses: number[]; message: string | undefined }> {
  const statuses: number[] = [];
  for (let k = 0; k < max; k++) {
    const r = await call('factoryComponents', { configs: [make(k)], takeSnapshot: false });
    statuses.push(r.status);
    if (r.status !== 200) return { statuses, message: r.json().message };
  }
  return { statuses, message: undefined };
}

const WIRE_ASSET = 'org.eclipse.kura.wire.WireAsset';

/** An asset of `n` simulator channels (two properties each). */
const simAsset = (pid: string, n: number) => {
  const properties: Record<string, unknown> = { 'driver.pid': { type: 'STRING', value: 'sim' } };
  for (let i = 0; i < n; i++) {
    properties[`c${i}#+type`] = { type: 'STRING', value: 'READ' };
    properties[`c${i}#+value.type`] = { type: 'STRING', value: 'INTEGER' };
  }
  return { factoryPid: WIRE_ASSET, pid, properties };
};

t.test('under the launcher\'s heap bound, adding channels past it is refused 413 and the daemon keeps running', async (t) => {
  // Past the bound a rollback to the snapshot of what was accepted made V8 abort the daemon
  // ("JavaScript heap out of memory"): 32,000 simulator channels needed 40 MB of the 48.
  const d = await adminDaemon(t);
  const c = basic(d, 'admin', 'admin');
  const call = v2(d);
  const { statuses, message } = await addUntilRefused(call, 7, (k) => simAsset(`a${k}`, 5000));
  t.same(statuses, [200, 200, 200, 413], '15,000 channels taken, the next 5,000 refused');
  t.match(message, /^Configuration too large for this daemon's heap bound: its 20000 channels \(\d+ entries in all\) would need about \d+ MB to change and run, \d+ MB of the \d+ MB bound are usable; delete channels, assets or long texts first, or raise the heap bound \(GATEWAYD_NODE_FLAGS=--max-old-space-size=\d+, docs\/installation\.md "Footprint"\)$/);
  t.equal(d.proc.exitCode, null, 'still running');
  t.same([...(await c.request('/services/assets')).json()].sort(), ['a0', 'a1', 'a2'], 'the refused asset is not there');
  const layer = JSON.parse(fs.readFileSync(path.join(d.dataDir, 'config', 'runtime.json'), 'utf8'));
  t.same(Object.keys(layer.components).sort(), ['a0', 'a1', 'a2'], 'nor stored');
  // A change that adds no channel goes through at this size, and so does a deletion.
  t.equal((await call('configurableComponents/configurations/_update', { configs: [{ pid: 'a0', properties: { 'poll.interval': { type: 'INTEGER', value: 0 }, 'c0#+unit': { type: 'STRING', value: 'u' } } }], takeSnapshot: false }, 'PUT')).status, 200, 'a property changed');
  t.equal((await call('factoryComponents/byPid', { pids: ['a2'], takeSnapshot: false }, 'DELETE')).status, 200, 'an asset deleted');
  t.equal((await call('factoryComponents', { configs: [simAsset('a3', 5000)], takeSnapshot: false })).status, 200, 'and then 5,000 channels fit again');
  await d.stop();
  // What the change path accepted also starts.
  const again = await adminDaemon(t, path.dirname(d.configFile));
  t.same([...(await basic(again, 'admin', 'admin').request('/services/assets')).json()].sort(), ['a0', 'a1', 'a3']);
  await again.stop();
});

t.test('long texts count too: assets with 900 KB descriptions are refused 413 before the heap runs out', async (t) => {
  // Before this check the eighth such request made V8 abort the daemon.
  const d = await adminDaemon(t);
  const call = v2(d);
  const { statuses, message } = await addUntilRefused(call, 10, (k) => ({
    factoryPid: WIRE_ASSET,
    pid: `d${k}`,
    properties: { 'driver.pid': { type: 'STRING', value: 'sim' }, 'asset.desc': { type: 'STRING', value: `${k}`.padEnd(900 * 1024, 'x') } },
  }));
  t.equal(statuses.at(-1), 413, `refused after ${statuses.length - 1} of them`);
  t.ok(statuses.length >= 4 && statuses.slice(0, -1).every((s) => s === 200), `the first ones taken (${statuses.join(' ')})`);
  t.match(message, /^Configuration too large for this daemon's heap bound: its 0 channels \(\d+ entries in all, \d+\.\d MB of long texts\)/);
  t.equal(d.proc.exitCode, null, 'still running');
  t.equal((await call('factoryComponents/byPid', { pids: ['d0'], takeSnapshot: false }, 'DELETE')).status, 200, 'a deletion goes through');
  t.equal((await basic(d, 'admin', 'admin').request('/services/assets')).status, 200, 'and the daemon serves');
});
