// Health at a glance over REST (docs/rest-api.md "Poll status", "drivers", "deploy/v2"): an asset's
// `_status` names its driver, whether it is attached and its state (ok, not polled, stale, driver
// missing); `GET /services/drivers` lists the instances with their tools; a package's `_drivers`
// says which instances and assets uninstalling it leaves without a driver.
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { startDaemon } from '../helpers/daemon.js';
import { basic } from '../helpers/session-client.js';
import { buildDp, exampleDriverExtension } from '../helpers/dp.js';

const until = async (what: string, fn: () => Promise<boolean>, ms = 15_000) => {
  const end = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
};

t.test('asset health, driver list, and what an uninstall leaves without a driver', async (t) => {
  const d = await startDaemon(t, (_p, dir) => ({
    identities: {
      admin: { password: 'Admin-pass1', permissions: ['kura.admin'] },
      operator: { password: 'Oper-pass1', permissions: ['rest.assets'] },
      viewer: { password: 'View-pass1', permissions: ['rest.system'] },
    },
    deploy: { 'file.allowed.dirs': [dir] },
    drivers: { sim: { factory: 'simulator' }, bus: { factory: 'exdrv' }, plc: { factory: 'modbus', 'access.type': 'RTU', 'modbus.rtu.port.name': '/dev/null-nonexistent' } },
    assets: {
      well: { 'driver.pid': 'sim', 'poll.interval': 200, channels: { n: { type: 'READ', 'value.type': 'INTEGER', simulation: 'counter' } } },
      manual: { 'driver.pid': 'sim', channels: { n: { type: 'READ', 'value.type': 'INTEGER', simulation: 'counter' } } },
      // The longest delay (60 s), so that the first poll is still under way when the state is read.
      hung: { 'driver.pid': 'sim', 'poll.interval': 300, channels: { n: { type: 'READ', 'value.type': 'INTEGER', simulation: 'counter', delay: 60_000 } } },
      gadget: { 'driver.pid': 'bus', 'poll.interval': 200, channels: { v: { type: 'READ', 'value.type': 'INTEGER' } } },
    },
  }));
  const admin = basic(d, 'admin', 'Admin-pass1');
  const op = basic(d, 'operator', 'Oper-pass1');
  const status = async (pid: string) => (await op.request(`/services/assets/${pid}/_status`)).json();

  await until('well polled', async () => (await status('well')).state === 'ok');
  t.match(await status('well'), { driver: 'sim', driverAttached: true, state: 'ok', consecutiveFailures: 0 }, 'polled without errors: ok');
  t.ok((await status('well')).lastSuccess > 0, 'with its last success');
  t.match(await status('manual'), { driver: 'sim', driverAttached: true, state: 'notPolled' });
  t.match(await status('gadget'), { driver: 'bus', driverAttached: false, state: 'driverMissing' }, 'factory not installed');
  await until('hung stale', async () => (await status('hung')).state === 'stale');
  t.match(await status('hung'), { state: 'stale', polls: 1 }, 'a poll that does not end makes the asset stale');

  // The instances with their factory, attachment, tools and (Modbus) access type.
  let list = (await op.request('/services/drivers')).json();
  t.same(list, [
    { pid: 'sim', factory: 'simulator', attached: true, tools: [] },
    { pid: 'bus', factory: 'exdrv', attached: false, tools: [] },
    { pid: 'plc', factory: 'modbus', attached: true, tools: ['probe', 'scan', 'identification', 'log'], 'access.type': 'RTU' },
  ]);
  t.equal((await basic(d, 'viewer', 'View-pass1').request('/services/drivers')).status, 403, 'the list needs the assets role');
  t.equal((await basic(d, 'viewer', 'View-pass1').request('/services/assets/well/_status')).status, 403, 'so does the status');

  // A package that provides the factory: installed, the asset gets its driver.
  const dp = path.join(d.dir, 'ex.dp');
  fs.writeFileSync(dp, buildDp({ name: 'org.example.exdrv', version: '1.0.0', files: { 'driver/extension.js': exampleDriverExtension('exdrv', 7) }, extensions: ['driver/extension.js'] }));
  t.equal((await admin.request('/services/deploy/v2/_install', { method: 'POST', body: { url: `file://${dp}` } })).status, 200);
  await until('gadget attached', async () => (await status('gadget')).state === 'ok');
  list = (await op.request('/services/drivers')).json();
  t.match(list[1], { pid: 'bus', attached: true });

  // What its uninstall would leave without a driver, asked before.
  let r = await admin.request('/services/deploy/v2/org.example.exdrv/_drivers');
  t.equal(r.status, 200, r.body);
  t.same(r.json(), { factories: ['exdrv'], instances: ['bus'], assets: ['gadget'] });
  r = await admin.request('/services/deploy/v2/org.example.nothere/_drivers');
  t.same([r.status, r.body], [404, 'Package not found: org.example.nothere']);
  r = await op.request('/services/deploy/v2/org.example.exdrv/_drivers');
  t.equal(r.status, 403, 'deploy role needed');

  t.equal((await admin.request('/services/deploy/v2/org.example.exdrv', { method: 'DELETE' })).status, 200);
  await until('gadget detached', async () => (await status('gadget')).state === 'driverMissing');
  t.pass('after the uninstall the asset is driverMissing');
});
