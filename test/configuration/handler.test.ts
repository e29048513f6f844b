// configuration/v2 with a configuration larger than the heap bound can answer at once (issue 17
// item 4): the reply with every definition is refused with 413 naming what to do, the daemon keeps
// serving, and smaller requests are answered (docs/configuration-v2.md).
import t from 'tap';
import { startDaemon } from '../helpers/daemon.js';
import { launcherHeapOptions } from '../helpers/launch.mjs';
import { basic } from '../helpers/session-client.js';

const C = '/services/configuration/v2';

t.test('configurations beyond the heap bound: 413, and the daemon goes on serving', async (t) => {
  const assets: Record<string, unknown> = {};
  for (const a of ['a1', 'a2', 'a3', 'a4']) {
    const channels: Record<string, unknown> = {};
    for (let i = 0; i < 1000; i++) channels[`c${i}`] = { type: 'READ', 'value.type': 'INTEGER', simulation: 'constant' };
    assets[a] = { 'driver.pid': 'sim', channels };
  }
  const d = await startDaemon(
    t,
    { identities: { admin: { password: 'Admin-pass-12', permissions: ['kura.admin'], passwordChangeNeeded: false } }, drivers: { sim: { factory: 'simulator' } }, assets },
    { env: { NODE_OPTIONS: launcherHeapOptions() } }, // the launcher's heap bound
  );
  const admin = basic(d, 'admin', 'Admin-pass-12');
  const post = (p: string, body: unknown) => admin.request(`${C}/${p}`, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });

  const all = await admin.request(`${C}/configurableComponents/configurations`);
  t.equal(all.status, 413);
  t.match(all.json().message, /^Reply too large: about [\d.]+ MB of configurations with their definitions, [\d.]+ MB fit this daemon's heap bound; ask for fewer components with configurableComponents\/configurations\/byPid, or raise the heap bound/);
  t.equal((await post('configurableComponents/configurations/byPid/_default', { pids: ['a1', 'a2', 'a3', 'a4'] })).status, 413, 'definition defaults of all four: the same');

  const one = await post('configurableComponents/configurations/byPid', { pids: ['a2'] });
  t.equal(one.status, 200, 'one asset fits');
  const cfg = one.json().configs;
  t.same(cfg.map((c: { pid: string }) => c.pid), ['a2']);
  t.same(cfg[0].properties['c999#+name'], { value: 'c999', type: 'STRING' });
  t.equal((await admin.request(`${C}/configurableComponents`)).status, 200, 'still serving');
  t.equal(d.proc.exitCode, null);
});
