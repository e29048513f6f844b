// Time-valued keys (docs/configuration.md "Time-valued keys"): every key measured in time, found in
// the real validators and definitions, is declared with a unit and a maximum a Node timer honours
// (2^31 - 1 ms once converted); a validator cannot even be made with a larger one. And the timer
// helpers that keep other values safe (src/core/timers.ts). Pure units; the paths a configuration
// arrives by are tested against the daemon in test/configuration/time-limits.test.ts.
import t from 'tap';
import { configKeys, maxMs, TIME_NAME, timeKeys } from '../helpers/config-keys.js';
import { duration, section, type Problem } from '../../src/core/schema.js';
import { PropReader } from '../../src/drivers/props.js';
import { hopTimer, TIMER_MAX_MS, timerDelay } from '../../src/core/timers.js';

t.test('every key whose name says it is measured in time is declared time-valued', async (t) => {
  const all = configKeys();
  t.ok(all.length > 50, `${all.length} keys enumerated`);
  const undeclared = all.filter((k) => TIME_NAME.test(k.prop) && k.ad.unit === undefined).map((k) => k.path);
  t.same(undeclared, [], 'each of these needs duration() (or PropReader.duration) with a maximum');
});

t.test('every time-valued key has a range a timer honours, and its default inside it', async (t) => {
  const keys = timeKeys();
  // The enumeration really reaches the sections, the asset, the channels and the drivers.
  for (const p of [
    'http.body.timeout',
    'rest.session.inactivity.interval',
    'rest.login.throttle.max.delay',
    'deploy.download.timeout',
    'deploy.download.deadline',
    'mqtt.keep-alive',
    'assets.a_simulator.poll.interval',
    'assets.a_simulator.publish.max.interval',
    'assets.a_simulator.channels.c.delay',
    'drivers.plc.modbus.timeout',
    'drivers.plc.unit.backoff.max',
  ]) {
    t.ok(keys.some((k) => k.path === p), `${p} is a time-valued key`);
  }
  for (const k of keys) {
    t.equal(k.ad.type, 'INTEGER', `${k.path}: an INTEGER definition`);
    t.ok(Number.isInteger(k.min) && Number.isInteger(k.max) && 0 <= k.min && k.min <= k.max, `${k.path}: range ${k.min}..${k.max}`);
    t.ok(maxMs(k) <= TIMER_MAX_MS, `${k.path}: ${k.max} ${k.unit} fits a timer`);
    t.ok(typeof k.ad.default === 'number' && k.ad.default >= k.min && k.ad.default <= k.max, `${k.path}: default ${k.ad.default} in range`);
  }
  const keepAlive = keys.find((k) => k.path === 'mqtt.keep-alive')!;
  t.same([keepAlive.unit, keepAlive.max], ['s', 65535], 'MQTT keep-alive: seconds, at most what CONNECT carries (MQTT 3.1.1 §3.1.2.10)');
  t.same([keys.find((k) => k.path === 'assets.a_simulator.poll.interval')!.max, keys.find((k) => k.path === 'assets.a_simulator.poll.interval')!.unit], [86_400_000, 'ms'], 'poll.interval: at most 24 h');
});

t.test('a time-valued key cannot be declared with a maximum beyond a timer', async (t) => {
  t.doesNotThrow(() => duration('ms', 0, TIMER_MAX_MS));
  t.doesNotThrow(() => duration('s', 0, Math.floor(TIMER_MAX_MS / 1000)));
  t.throws(() => duration('ms', 0, TIMER_MAX_MS + 1), RangeError);
  t.throws(() => duration('s', 0, Math.floor(TIMER_MAX_MS / 1000) + 1), RangeError, 'seconds × 1000 must fit');
  t.throws(() => new PropReader({}, 'drivers.x').duration('k', 0, 's', 0, 2_147_484), RangeError);
});

t.test('the wording: key path, range, unit, the maximum in words, the value given', async (t) => {
  const v = section<Record<string, number>>({ a: [duration('ms', 0, 86_400_000), 0], b: [duration('s', 1, 604_800), 900], c: [duration('ms', 100, 300_000), 1000] });
  const p: Problem[] = [];
  v({ a: 99999999999, b: 0, c: 300_001 }, 'x', p);
  t.same(
    p.map((e) => `${e.path}: ${e.message}`),
    ['x.a: must be between 0 and 86400000 ms (24 h), got 99999999999', 'x.b: must be between 1 and 604800 s (7 days), got 0', 'x.c: must be between 100 and 300000 ms (5 min), got 300001'],
  );
  const q: Problem[] = [];
  v({ a: 1.5, b: '900', c: 300_000 }, 'x', q);
  t.same(q.map((e) => `${e.path}: ${e.message}`), ['x.a: expected an integer, got 1.5', 'x.b: expected a number, got string'], 'the type is checked first; the maximum itself is accepted');
  const r = new PropReader({ 'modbus.timeout': 600_001, 'x.delay': '5' }, 'drivers.plc');
  t.equal(r.duration('modbus.timeout', 1000, 'ms', 1, 600_000), 1000, 'the default replaces a bad value');
  r.duration('x.delay', 0, 'ms', 0, 60_000);
  t.same(r.problems.map((e) => `${e.path}: ${e.message}`), ['drivers.plc.modbus.timeout: must be between 1 and 600000 ms (10 min), got 600001', 'drivers.plc.x.delay: must be an integer, got "5"']);
});

t.test('timerDelay keeps any value within what a timer honours', async (t) => {
  t.same([99999999999, TIMER_MAX_MS + 1, Infinity, TIMER_MAX_MS, 1000, 0, -5, NaN, -Infinity].map(timerDelay), [TIMER_MAX_MS, TIMER_MAX_MS, TIMER_MAX_MS, TIMER_MAX_MS, 1000, 0, 0, 0, 0]);
});

t.test('hopTimer waits for a delay longer than one timer in hops, and fires once at the end', async (t) => {
  let hops = 0;
  let hopsAtFire = -1;
  let last: NodeJS.Timeout | undefined;
  const fired = new Promise<void>((resolve) =>
    hopTimer(() => ((hopsAtFire = hops), resolve()), 35, false, (h) => ((last = h), hops++), 10),
  );
  t.equal(hops, 1, 'one timer at a time');
  await fired;
  t.equal(hopsAtFire, 4, 'fired on the fourth hop: 10 + 10 + 10 + 5 ms');
  await new Promise((r) => setTimeout(r, 40));
  t.equal(hops, 4, 'and not again');
  t.ok(last, 'each hop handed over (to be cleared)');

  // Repeating: the whole delay again after each call; clearing the current hop stops it.
  let calls = 0;
  let current: NodeJS.Timeout | undefined;
  await new Promise<void>((resolve) =>
    hopTimer(() => {
      if (++calls === 3) {
        clearTimeout(current);
        resolve();
      }
    }, 25, true, (h) => (current = h), 10),
  );
  await new Promise((r) => setTimeout(r, 60));
  t.equal(calls, 3, 'cleared: no call after the third');

  // Infinity never fires: it keeps hopping.
  let infHops = 0;
  let inf: NodeJS.Timeout | undefined;
  hopTimer(() => t.fail('an infinite delay fired'), Infinity, false, (h) => ((inf = h), infHops++), 5);
  await new Promise((r) => setTimeout(r, 40));
  clearTimeout(inf);
  t.ok(infHops >= 2, `still waiting after ${infHops} hops`);
});
