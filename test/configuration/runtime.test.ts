// The runtime layer in dataDir/config (docs/configuration-v2.md) against the real daemon: kept across
// restarts, re-applied on SIGHUP over a re-read file, dropped by `gatewayd config reset`, validated
// by check-config together with the file; live changes keep sessions and the polling of untouched
// assets; kill -9 during `_update` and `_rollback` never leaves a torn or mixed configuration.
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { runCli, startDaemon, type Daemon } from '../helpers/daemon.js';
import { basic, login } from '../helpers/session-client.js';

const C = '/services/configuration/v2';
const REST = 'org.eclipse.kura.internal.rest.provider.RestService';
const CONSOLE = 'org.eclipse.kura.web.Console';
const WA = 'org.eclipse.kura.wire.WireAsset';

const image = {
  rest: { 'login.throttle.max.delay': 0 },
  identities: { admin: { password: 'admin', permissions: ['kura.admin'] } },
  drivers: { sim: { factory: 'simulator' } },
  assets: {
    fast: { 'driver.pid': 'sim', 'poll.interval': 50, channels: { n: { type: 'READ', 'value.type': 'INTEGER', simulation: 'counter' } } },
    other: { 'driver.pid': 'sim', channels: { v: { type: 'READ', 'value.type': 'INTEGER', simulation: 'counter' } } },
  },
};

const api = (d: Daemon) => {
  const c = basic(d, 'admin', 'admin');
  const call = async (p: string, body?: unknown, method = 'POST') => c.request(`${C}/${p}`, { method, body: body === undefined ? undefined : JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  return {
    call,
    update: (configs: unknown[], takeSnapshot = false) => call('configurableComponents/configurations/_update', { configs, takeSnapshot }, 'PUT'),
    props: async (pid: string) => (await call('configurableComponents/configurations/byPid', { pids: [pid] })).json().configs[0]?.properties,
    pids: async (): Promise<string[]> => (await c.request(`${C}/configurableComponents`)).json().pids,
  };
};

const channelAsset = (pid: string, k: number) => ({
  factoryPid: WA,
  pid,
  properties: {
    'driver.pid': { type: 'STRING', value: 'sim' },
    'c#+type': { type: 'STRING', value: 'READ' },
    'c#+value.type': { type: 'STRING', value: 'INTEGER' },
    'c#simulation': { type: 'STRING', value: 'constant' },
    'c#initial': { type: 'INTEGER', value: k },
  },
});

t.test('restart, SIGHUP, live apply, config reset, check-config', async (t) => {
  const d = await startDaemon(t, image);
  const a = api(d);
  const browser = await login(d, 'admin', 'admin');
  t.equal((await browser.request('/services/session/v1/currentIdentity')).status, 200, 'a session');

  // Live apply: a change to another asset and to rest re-creates no driver, drops no session, and
  // the counter of the untouched polled asset goes on.
  const attached = () => d.logs.filter((l) => /driver (attached|detached)/.test(l)).length;
  const drivers = attached();
  const before = (await basic(d, 'admin', 'admin').request('/services/assets/fast/_read', { method: 'POST', body: { channels: ['n'] } })).json()[0].value;
  t.equal((await a.update([{ pid: REST, properties: { 'session.inactivity.interval': { type: 'LONG', value: 1200 } } }, { pid: 'other', properties: { 'v#+unit': { type: 'STRING', value: 'u' } } }])).status, 200);
  t.equal((await browser.request('/services/session/v1/currentIdentity')).status, 200, 'the session survived the change');
  t.equal(attached(), drivers, 'no driver re-created for an asset change');
  const after = (await basic(d, 'admin', 'admin').request('/services/assets/fast/_read', { method: 'POST', body: { channels: ['n'] } })).json()[0].value;
  t.ok(after > before, 'the counter of the untouched asset went on');

  t.equal((await a.call('factoryComponents', { configs: [channelAsset('made', 7)], takeSnapshot: false })).status, 200);
  t.equal((await a.call('factoryComponents/byPid', { pids: ['other'], takeSnapshot: false }, 'DELETE')).status, 200);

  // SIGHUP: the file is re-read (a new banner), the runtime layer stays on top.
  const file = JSON.parse(fs.readFileSync(d.configFile, 'utf8'));
  file.console = { 'access.banner.content': 'from the file' };
  file.rest['session.inactivity.interval'] = 600;
  fs.writeFileSync(d.configFile, JSON.stringify(file));
  d.signal('SIGHUP');
  await d.waitForLog(/configuration reloaded/);
  t.same((await a.props(CONSOLE))['access.banner.content'], { value: 'from the file', type: 'STRING' }, 'file change applied');
  t.same((await a.props(REST))['session.inactivity.interval'], { value: 1200, type: 'INTEGER' }, 'runtime value kept over the file');
  t.ok((await a.pids()).includes('made'));
  t.notOk((await a.pids()).includes('other'), 'deleted at run time stays deleted though the file defines it');
  t.equal((await browser.request('/services/session/v1/currentIdentity')).status, 200, 'the session survived SIGHUP');

  // check-config validates the file and the runtime layer together.
  let r = runCli(['check-config', '--config', d.configFile]);
  t.equal(r.status, 0, r.stdout);
  const layerFile = path.join(d.dataDir, 'config', 'runtime.json');
  const layer = JSON.parse(fs.readFileSync(layerFile, 'utf8'));

  // Restart: everything kept.
  t.equal(await d.stop(), 0);
  const d2 = await startDaemon(t, (p) => ({ ...file, http: { 'http.ports': p.http } }), { dir: d.dir });
  t.teardown(() => d2.stop());
  const b = api(d2);
  t.same((await b.props(REST))['session.inactivity.interval'], { value: 1200, type: 'INTEGER' });
  t.ok((await b.pids()).includes('made'));
  t.notOk((await b.pids()).includes('other'));
  t.match((await basic(d2, 'admin', 'admin').request('/services/assets/made/_read', { method: 'POST', body: { channels: ['c'] } })).body, /"value":7/);
  t.equal(await d2.stop(), 0);

  // A runtime layer that does not validate is reported by check-config (and not applied at start).
  fs.writeFileSync(layerFile, JSON.stringify({ ...layer, components: { ...layer.components, [REST]: { props: { 'session.inactivity.interval': -5 } } } }));
  r = runCli(['check-config', '--config', d.configFile]);
  t.equal(r.status, 1);
  t.match(r.stdout, `${REST}, property session.inactivity.interval: must be between 1 and 604800 s (7 days), got -5`);
  fs.writeFileSync(layerFile, JSON.stringify(layer));

  // config reset: back to the image; snapshots kept.
  const snaps = fs.readdirSync(path.join(d.dataDir, 'config')).filter((n) => n.startsWith('snapshot_'));
  r = runCli(['config', 'reset', '--config', d.configFile]);
  t.equal(r.status, 0, r.stdout + r.stderr);
  t.same(fs.readdirSync(path.join(d.dataDir, 'config')).filter((n) => n.startsWith('snapshot_')), snaps, 'snapshots kept');
  const d3 = await startDaemon(t, (p) => ({ ...file, http: { 'http.ports': p.http } }), { dir: d.dir });
  const c = api(d3);
  t.same((await c.props(REST))['session.inactivity.interval'], { value: 600, type: 'INTEGER' }, "the file's value");
  t.notOk((await c.pids()).includes('made'));
  t.ok((await c.pids()).includes('other'));
  t.equal(await d3.stop(), 0);
  fs.rmSync(d.dir, { recursive: true, force: true });
});

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
