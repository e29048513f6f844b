// Nothing in gatewayd sets a timer beyond what Node honours (docs/configuration.md "Time-valued
// keys"): Node fires a delay over 2^31 - 1 ms after 1 ms and prints a TimeoutOverflowWarning, so a
// poll interval of 99999999999 ms polled the device as fast as it answered. Against the built
// daemon: an asset polled at the maximum interval is not polled at all in the meantime; a value
// past it, over configuration/v2 or a reload, is refused and changes nothing; a plug-in's long
// timers (docs/packages.md, plug-in API) wait as asked. Never a TimeoutOverflowWarning.
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { startDaemon, type Daemon } from '../helpers/daemon.js';
import { basic } from '../helpers/session-client.js';
import { buildDp } from '../helpers/dp.js';

const MAX_POLL = 86_400_000;
const C = '/services/configuration/v2';

const overflowWarnings = (d: Daemon) => d.logs.filter((l) => /TimeoutOverflowWarning|TimeoutNegativeWarning/.test(l));

async function until<T>(what: string, get: () => Promise<T>, ok: (v: T) => boolean, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await get();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

t.test('a poll interval at the maximum: no poll storm, no TimeoutOverflowWarning; one past it is refused', async (t) => {
  const counter = { type: 'READ', 'value.type': 'INTEGER', simulation: 'counter' };
  const d = await startDaemon(t, {
    identities: { admin: { password: 'admin', permissions: ['kura.admin'] } },
    rest: { 'login.throttle.max.delay': 0 },
    drivers: { sim: { factory: 'simulator' } },
    assets: {
      daily: { 'driver.pid': 'sim', 'poll.interval': MAX_POLL, channels: { n: counter } },
      // A clock for the test: polled every 50 ms, so the daemon has demonstrably been polling.
      tick: { 'driver.pid': 'sim', 'poll.interval': 50, channels: { n: counter } },
    },
  });
  const admin = basic(d, 'admin', 'admin');
  const status = async (pid: string) => (await admin.request(`/services/assets/${pid}/_status`)).json();
  const ticksSoFar = async (n: number) => until(`${n} polls of tick`, () => status('tick'), (s) => s.polls >= n);

  await ticksSoFar(10);
  t.match(await status('daily'), { pollInterval: MAX_POLL, polls: 0, lastPoll: 0 }, 'at the maximum: not polled (a storm would be hundreds)');

  // configuration/v2: one past the maximum is refused and the asset keeps its schedule.
  const r = await admin.request(`${C}/configurableComponents/configurations/_update`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ configs: [{ pid: 'daily', properties: { 'poll.interval': { type: 'LONG', value: 99999999999 } } }], takeSnapshot: false }),
  });
  t.same([r.status, r.body], [400, JSON.stringify({ message: 'Invalid configuration of daily, property poll.interval: must be between 0 and 86400000 ms (24 h), got 99999999999' })]);
  const ticks = (await status('tick')).polls;
  await ticksSoFar(ticks + 10);
  t.match(await status('daily'), { pollInterval: MAX_POLL, polls: 0 }, 'still not polled after the refused change');

  // A reload of a file that asks for it: refused, the running configuration kept.
  const cfg = JSON.parse(fs.readFileSync(d.configFile, 'utf8'));
  cfg.assets.daily['poll.interval'] = 99999999999;
  fs.writeFileSync(d.configFile, JSON.stringify(cfg));
  d.signal('SIGHUP');
  t.match(await d.waitForLog(/msg="reload refused: configuration problem"/), /key=assets\.daily\.poll\.interval problem="must be between 0 and 86400000 ms \(24 h\), got 99999999999"/);
  const after = (await status('tick')).polls;
  await ticksSoFar(after + 10);
  t.match(await status('daily'), { pollInterval: MAX_POLL, polls: 0 }, 'still not polled after the refused reload');

  t.same(overflowWarnings(d), [], 'no TimeoutOverflowWarning');
  t.equal(await d.stop(), 0);
});

// A package's timers with delays past what Node honours, and one short one to show time passed.
const EXTENSION = `
const fired = { long: 0, interval: 0, infinite: 0, short: 0 };
export function activate(api) {
  api.setTimeout(() => fired.long++, 2 ** 31);
  api.setInterval(() => fired.interval++, 99999999999);
  api.setTimeout(() => fired.infinite++, Infinity);
  api.setTimeout(() => fired.short++, 200);
  api.registerDriverFactory({
    name: 'timers',
    instanceKeys: [],
    channelKeys: [],
    validateInstance: () => [],
    validateChannel: () => [],
    create() {
      return {
        read: (channels) => channels.map((c) => ({ ok: true, value: { type: 'INTEGER', value: fired[c.name] } })),
        async write(requests) { return requests.map((r) => ({ ok: true, value: r.value })); },
        async close() {},
      };
    },
  });
}
`;

t.test("a plug-in's timers past 2^31 - 1 ms wait as asked, without a TimeoutOverflowWarning", async (t) => {
  const ch = { type: 'READ', 'value.type': 'INTEGER' };
  const d = await startDaemon(t, (_p, dir) => ({
    identities: { admin: { password: 'admin', permissions: ['kura.admin'] } },
    rest: { 'login.throttle.max.delay': 0 },
    deploy: { 'file.allowed.dirs': [dir] },
    drivers: { tm: { factory: 'timers' } },
    assets: { timers: { 'driver.pid': 'tm', channels: { long: ch, interval: ch, infinite: ch, short: ch } } },
  }));
  const admin = basic(d, 'admin', 'admin');
  const dp = path.join(d.dir, 'timers.dp');
  fs.writeFileSync(dp, buildDp({ name: 'org.example.timers', version: '1.0.0', files: { 'timers/extension.js': EXTENSION }, extensions: ['timers/extension.js'] }));
  t.equal((await admin.request('/services/deploy/v2/_install', { method: 'POST', body: { url: `file://${dp}` } })).status, 200);
  const read = async () => {
    const records = (await admin.request('/services/assets/timers/_read')).json();
    return Array.isArray(records) && records.every((r: any) => r.channelStatus?.channelFlag === 'SUCCESS') ? Object.fromEntries(records.map((r: any) => [r.name, r.value])) : {};
  };
  const short = await until('the short timer', read, (v) => v.short === 1);
  t.same(short, { long: 0, interval: 0, infinite: 0, short: 1 }, 'after the 200 ms timer fired, none of the long ones has');
  // Ten times the short delay more: a delay set to 1 ms by Node would have fired long ago.
  await new Promise((r) => setTimeout(r, 2000));
  t.same(await read(), { long: 0, interval: 0, infinite: 0, short: 1 }, 'still none of the long timers');
  t.same(overflowWarnings(d), [], 'no TimeoutOverflowWarning');
  t.equal(await d.stop(), 0, 'stops cleanly with the timers pending');
});
