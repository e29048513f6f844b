// The runtime layer in dataDir/config (docs/configuration-v2.md) against the real daemon: kept across
// restarts, re-applied on SIGHUP over a re-read file, dropped by `gatewayd config reset`, validated
// by check-config together with the file; live changes keep sessions and the polling of untouched
// assets. (kill -9 during `_update` and `_rollback`: runtime-kill.test.ts.)
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { runCli, startDaemon } from '../helpers/daemon.js';
import { basic, login } from '../helpers/session-client.js';
import { api, CONSOLE, image, REST, WA } from './runtime-fixture.js';

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
