// The runtime layer in dataDir/config (docs/configuration-v2.md) against the real daemon: kill -9
// during `_update` and `_rollback` never leaves a torn or mixed configuration. (Its other behaviour:
// runtime.test.ts; a file of its own so that tap runs the two at once.)
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { startDaemon, type Daemon } from '../helpers/daemon.js';
import { api, CONSOLE, image, REST } from './runtime-fixture.js';

// kill -9 at a moment that varies from run to run during a change; after each restart the whole
// configuration is the one before or the one after, never a mix, and every stored file parses.
t.test('kill -9 during _update and _rollback: old or new, never torn or mixed', async (t) => {
  const RUNS = Number(process.env.CONF_KILL_RUNS ?? 20);
  let d = await startDaemon(t, { ...image, rest: { ...image.rest, 'session.inactivity.interval': 1000 }, console: { 'access.banner.content': '0' } });
  const dir = d.dir;
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const config = JSON.parse(fs.readFileSync(d.configFile, 'utf8'));
  // The state k: the REST session interval 1000+k, the console banner "k", asset "k<k>" present.
  const change = (k: number) => [
    { pid: REST, properties: { 'session.inactivity.interval': { type: 'LONG', value: 1000 + k } } },
    { pid: CONSOLE, properties: { 'access.banner.content': { type: 'STRING', value: String(k) } } },
  ];
  const stateOf = async (d: Daemon) => {
    const a = api(d);
    const interval = (await a.props(REST))['session.inactivity.interval'].value - 1000;
    const banner = (await a.props(CONSOLE))['access.banner.content']?.value ?? '';
    return { interval, banner };
  };
  let k = 0;
  const outcomes = { old: 0, new: 0 };
  for (let i = 0; i < RUNS; i++) {
    const rollback = i % 2 === 1;
    const a = api(d);
    const prev = await stateOf(d);
    t.equal(String(prev.interval), prev.banner, `run ${i}: consistent before`);
    let target: number;
    if (rollback) {
      // Roll back to the snapshot two states ago (made by the last update).
      const ids = (await a.call('snapshots', undefined, 'GET')).json().ids;
      const id = ids.at(-2) ?? ids[0];
      const snap = (await a.call('snapshots/byId', { id })).json().configs;
      target = snap.find((c: any) => c.pid === REST).properties['session.inactivity.interval'].value - 1000;
      a.call('snapshots/byId/_rollback', { id }).catch(() => {});
    } else {
      target = ++k;
      a.update(change(k), true).catch(() => {});
    }
    await new Promise((r) => setTimeout(r, [0, 5, 10, 20, 30, 45, 60, 80, 110, 150][i % 10]));
    d.proc.kill('SIGKILL');
    await d.exited;
    for (const n of fs.readdirSync(path.join(d.dataDir, 'config'))) {
      if (n.endsWith('.tmp')) continue;
      t.doesNotThrow(() => JSON.parse(fs.readFileSync(path.join(d.dataDir, 'config', n), 'utf8')), `run ${i}: ${n} parses`);
    }
    // The same port: a rollback may restore the http settings of the snapshot.
    d = await startDaemon(t, () => config, { dir });
    d.ports.http[0] = config.http['http.ports'][0];
    const now = await stateOf(d);
    t.equal(String(now.interval), now.banner, `run ${i}: not mixed (${now.interval}/${now.banner})`);
    t.ok(now.interval === prev.interval || now.interval === target, `run ${i}: old (${prev.interval}) or new (${target}), got ${now.interval}`);
    if (now.interval === target && target !== prev.interval) outcomes.new++;
    else outcomes.old++;
    if (!rollback && now.interval !== target) k = now.interval; // the update was lost: go on from there
  }
  t.comment(`outcomes after kill -9: ${JSON.stringify(outcomes)}`);
  t.equal(await d.stop(), 0);
});
