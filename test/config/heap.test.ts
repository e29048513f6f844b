// A configuration with more channels than the heap bound holds is announced in the log before it
// costs the daemon its garbage-collection time or its start (docs/installation.md "Footprint").
import t from 'tap';
import { BASE_HEAP_BYTES, CHANNEL_HEAP_BYTES, heapWarning } from '../../src/config/heap.js';
import { startDaemon } from '../helpers/daemon.js';
import { launcherHeapOptions } from '../helpers/launch.mjs';

const MB = 1048576;

t.test('heapWarning: silent while the channels need at most 60 % of the bound', async (t) => {
  const limit = 51 * MB; // what --max-old-space-size=48 gives
  t.equal(heapWarning(0, limit), undefined);
  t.equal(heapWarning(20_000, limit), undefined, '20,000 channels fit the launcher\'s bound');
  const w = heapWarning(60_000, limit)!;
  t.ok(w, '60,000 channels do not');
  t.equal(w.channels, 60_000);
  t.equal(w.heapLimitMB, 51);
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

t.test('the daemon warns at start when the channels are many for its heap bound, and starts', async (t) => {
  const env = { NODE_OPTIONS: launcherHeapOptions() }; // the launcher's heap flags
  const big = await startDaemon(t, config(30_000), { env });
  const line = big.logs.find((l) => /many channels for the heap bound/.test(l));
  t.ok(line, 'warned');
  t.match(line!, /level=warn .*channels=30000 heapLimitMB=\d+ neededMB=\d+ hint="raise the heap bound, e\.g\. GATEWAYD_NODE_FLAGS=--max-old-space-size=\d+/);
  await big.stop();
  const small = await startDaemon(t, config(2_000), { env });
  t.notOk(small.logs.some((l) => /many channels/.test(l)), 'no warning for 2,000 channels');
  await small.stop();
});
