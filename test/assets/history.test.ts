// Channel history through the real daemon (docs/rest-api.md "History"): the poll cycles' numeric
// values, oldest first, bounded per channel; STRING and BOOLEAN channels have none; unknown asset
// or channel 404, missing channel 400, role assets; the memory the bound allows (first, before any
// other history of this process exists to be collected during the measurement).
import t from 'tap';
import v8 from 'node:v8';
import vm from 'node:vm';
import { startDaemon } from '../helpers/daemon.js';
import { basic } from '../helpers/session-client.js';
import type { ChannelRecord } from '../../src/channels/types.js';
import type { AssetService } from '../../src/assets/types.js';
import { assetHistoryFamily } from '../../src/api/asset-history.js';
import { ChannelHistory, HISTORY_MAX_AGE_MS, HISTORY_SAMPLES_MIN, HISTORY_SAMPLES_TOTAL } from '../../src/assets/history.js';

t.test('memory: 10 assets of 1,000 channels take what docs/rest-api.md "History" says, at most', async (t) => {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  const names = Array.from({ length: 1000 }, (_, i) => `c${String(i + 1).padStart(5, '0')}`);
  // The records of 15 poll cycles made first: only the history's own memory is measured.
  const cycles = Array.from({ length: 15 }, (_, poll) => names.map((name) => ({ name, status: 'SUCCESS' as const, valueType: 'INTEGER' as const, value: { type: 'INTEGER' as const, value: poll }, timestamp: 1000 * poll })));
  gc();
  gc();
  const before = process.memoryUsage();
  const h = new ChannelHistory(() => 15_000);
  for (const records of cycles) for (let a = 0; a < 10; a++) h.record(`dev${a}`, records);
  gc();
  gc();
  const after = process.memoryUsage();
  t.equal(h.samples('dev9', 'c01000').length, HISTORY_SAMPLES_MIN, 'every ring full');
  t.same(h.samples('dev3', 'c00007').map((s) => s.value), [5, 6, 7, 8, 9, 10, 11, 12, 13, 14], 'the newest samples, oldest first');
  // 100,000 samples of 12 bytes plus 200 bytes for each of the 10,000 channels: V8's objects and
  // the typed arrays' backing stores (outside the heap) together.
  const bound = HISTORY_SAMPLES_TOTAL * 12 + 10_000 * 200;
  const used = after.heapUsed - before.heapUsed + (after.arrayBuffers - before.arrayBuffers);
  t.ok(used <= bound, `${(used / 1e6).toFixed(2)} MB for the history (bound ${(bound / 1e6).toFixed(1)} MB)`);
  (globalThis as { keep?: unknown }).keep = h;
});

t.test('history of polled channels', async (t) => {
  const d = await startDaemon(t, {
    identities: {
      operator: { password: 'secret123', permissions: ['rest.assets'], passwordChangeNeeded: false },
      viewer: { password: 'secret123', permissions: ['rest.system'], passwordChangeNeeded: false },
    },
    drivers: { sim: { factory: 'simulator' } },
    assets: {
      fast: {
        'driver.pid': 'sim',
        'poll.interval': 5,
        channels: {
          count: { type: 'READ', 'value.type': 'INTEGER', simulation: 'counter', scale: 2 },
          label: { type: 'READ', 'value.type': 'STRING', simulation: 'constant', initial: 'x' },
          on: { type: 'READ', 'value.type': 'BOOLEAN' },
        },
      },
      idle: { 'driver.pid': 'sim', channels: { v: { type: 'READ', 'value.type': 'DOUBLE' } } },
    },
  });
  const op = basic(d, 'operator', 'secret123');
  const history = async (pid: string, channel: string) => op.request(`/services/assets/${pid}/_history?channel=${encodeURIComponent(channel)}`);

  let samples: { timestamp: number; value: number }[] = [];
  for (let i = 0; i < 100 && samples.length < 5; i++) {
    await new Promise((r) => setTimeout(r, 50));
    samples = (await history('fast', 'count')).json();
  }
  t.ok(samples.length >= 5, `samples kept (${samples.length})`);
  for (let i = 1; i < samples.length; i++) {
    if (!(samples[i]!.timestamp >= samples[i - 1]!.timestamp && samples[i]!.value > samples[i - 1]!.value)) t.fail(`sample ${i} out of order`);
  }
  t.equal(samples[1]!.value - samples[0]!.value, 2, 'values as the asset reads them (scaled)');

  // 600 per channel at most: wait for more polls than that.
  for (let i = 0; i < 200; i++) {
    const st = (await op.request('/services/assets/fast/_status')).json();
    if (st.polls > 700) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  samples = (await history('fast', 'count')).json();
  t.equal(samples.length, 600, 'at most 600 samples per channel');

  t.same((await history('idle', 'v')).json(), [], 'an asset without polling has none');
  let r = await history('fast', 'label');
  t.equal(r.status, 400);
  t.match(r.body, /STRING: history is kept for INTEGER, LONG, FLOAT and DOUBLE channels/);
  t.equal((await history('fast', 'on')).status, 400, 'BOOLEAN has none');
  r = await history('fast', 'nope');
  t.equal(r.status, 404);
  t.equal(r.body, 'Channel not found: nope');
  t.equal((await history('gone', 'count')).status, 404);
  r = await op.request('/services/assets/fast/_history');
  t.equal(r.status, 400);
  t.match(r.body, /channel is required/);
  t.equal((await basic(d, 'viewer', 'secret123').request('/services/assets/fast/_history?channel=count')).status, 403);
  t.equal((await d.request('/services/assets/fast/_history?channel=count')).status, 401);
});

t.test('the bounds: fewer samples per channel when many are tracked, and an age bound', async (t) => {
  let now = 1_000_000;
  const h = new ChannelHistory(() => now);
  const record = (pid: string, names: string[], value: number) =>
    h.record(pid, names.map((name) => ({ name, status: 'SUCCESS' as const, valueType: 'DOUBLE' as const, value: { type: 'DOUBLE' as const, value }, timestamp: now })));
  // 10 assets of 1,000 channels, 100 polls each (the scale of docs/rest-api.md "History").
  const names = Array.from({ length: 1000 }, (_, i) => `c${i}`);
  for (let poll = 0; poll < 100; poll++) {
    now += 1000;
    for (let a = 0; a < 10; a++) record(`a${a}`, names, poll);
  }
  t.equal(h.capacity(), Math.max(HISTORY_SAMPLES_MIN, HISTORY_SAMPLES_TOTAL / 10_000));
  let total = 0;
  for (let a = 0; a < 10; a++) for (const n of names) total += h.samples(`a${a}`, n).length;
  t.ok(total <= HISTORY_SAMPLES_TOTAL, `${total} samples in all`);
  t.equal(h.samples('a0', 'c0').length, h.capacity(), 'each channel keeps its share');
  now += HISTORY_MAX_AGE_MS + 1;
  t.same(h.samples('a0', 'c0'), [], 'older than ten minutes: gone');
  h.retain((pid) => pid === 'a1');
  record('a2', ['x'], 1);
  t.equal(h.capacity(), Math.min(600, Math.floor(HISTORY_SAMPLES_TOTAL / 1001)), 'forgotten channels free their share');
});

t.test("the periodic pass that forgets unconfigured channels walks each asset's channels once, not once per channel", async (t) => {
  // The family over an asset service whose channel lists count the reads of their elements: the
  // pass (every thousandth poll cycle) must cost a number of reads proportional to the channels.
  const reads = (channels: number): { reads: number; kept: number } => {
    let n = 0;
    const list = Array.from({ length: channels }, (_, i) => ({ name: `c${i}`, valueType: i % 2 ? 'INTEGER' : 'STRING' }));
    const counted = new Proxy(list, {
      get(target, key, receiver) {
        if (typeof key === 'string' && /^\d+$/.test(key)) n++;
        return Reflect.get(target, key, receiver);
      },
    });
    let poll: ((pid: string, records: ChannelRecord[]) => void) | undefined;
    const assets = { onPoll: (fn: typeof poll) => void (poll = fn), get: (pid: string) => (pid === 'plc' ? { channels: counted } : undefined) } as unknown as AssetService;
    const family = assetHistoryFamily(assets);
    // Every channel polled as numeric; the configuration now says half of them are STRING.
    const records = list.map((c, i) => ({ name: c.name, status: 'SUCCESS' as const, valueType: 'INTEGER' as const, value: { type: 'INTEGER' as const, value: i }, timestamp: Date.now() }));
    for (let i = 1; i < 1000; i++) poll!('plc', records);
    n = 0;
    poll!('plc', records.slice(0, 1)); // the thousandth cycle: the pass, then one record
    const seen = n;
    const handler = family.routes[0]!.handler as (req: unknown) => unknown;
    const history = (name: string) => handler({ params: { pid: 'plc' }, query: () => name });
    let kept = 0;
    for (const c of list) if (c.valueType === 'INTEGER' && (history(c.name) as unknown[]).length > 0) kept++;
    return { reads: seen, kept };
  };
  const small = reads(1000);
  const large = reads(4000);
  t.equal(small.kept, 500, 'the numeric channels of the configuration are kept');
  t.equal(large.kept, 2000);
  t.ok(small.reads <= 2 * 1000, `${small.reads} channel reads for 1,000 channels`);
  t.ok(large.reads <= 2 * 4000, `${large.reads} channel reads for 4,000 channels: linear, not quadratic`);
});

t.test('times are kept to the millisecond, and a wall clock set far back or forward starts the history again', async (t) => {
  let now = 1_795_527_301_022;
  const h = new ChannelHistory(() => now);
  const rec = (name: string, value: number, timestamp = now) => ({ name, status: 'SUCCESS' as const, valueType: 'DOUBLE' as const, value: { type: 'DOUBLE' as const, value }, timestamp });
  h.record('a', [rec('x', 1), rec('y', 2, now - 1)]);
  now += 1000;
  h.record('a', [rec('x', 1.5), rec('y', 2.5)]);
  t.same(h.samples('a', 'x'), [{ timestamp: now - 1000, value: 1 }, { timestamp: now, value: 1.5 }]);
  t.same(h.samples('a', 'y'), [{ timestamp: now - 1001, value: 2 }, { timestamp: now, value: 2.5 }]);
  // 30 days back (a clock synchronised at last): what was kept lies in the future, it is dropped.
  now -= 30 * 86_400_000;
  h.record('a', [rec('x', 3)]);
  t.same(h.samples('a', 'x'), [{ timestamp: now, value: 3 }]);
  t.same(h.samples('a', 'y'), [], 'every channel starts again');
  // 20 days on: within the range the pool holds, the samples stay.
  now += 20 * 86_400_000;
  h.record('a', [rec('x', 4), rec('y', 5)]);
  t.same(h.samples('a', 'x'), [{ timestamp: now, value: 4 }], 'the sample 20 days old is past the age bound');
  now += 1;
  t.same(h.samples('a', 'y'), [{ timestamp: now - 1, value: 5 }]);
  // Far forward: a year on.
  now += 365 * 86_400_000;
  h.record('a', [rec('y', 6)]);
  t.same(h.samples('a', 'y'), [{ timestamp: now, value: 6 }]);
});
