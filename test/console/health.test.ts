// Health at a glance (docs/console.md "Views") in Debian's chromium against the real daemon and a
// pymodbus TCP device: the assets list shows each asset's driver, state, last success and failures
// in a row (ok, failing once the device is stopped, stale, driver missing, not polled); the Status
// view counts the assets per state; uninstalling a package whose driver is in use names the assets
// it leaves without a driver and asks again, and a package without drivers is asked as before.

import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { startDaemon } from '../helpers/daemon.js';
import { basic } from '../helpers/session-client.js';
import { haveBrowser, launchBrowser, openPage, screenshot, logIn } from '../helpers/browser.js';
import { havePeers, startPyModbusTcp } from '../helpers/pymodbus.js';
import { buildDp, exampleDriverExtension } from '../helpers/dp.js';

const PASSWORD = 'Admin-pass1';

t.test('health: asset states, status summary, uninstall warning', async (t) => {
  if (!haveBrowser(t) || !havePeers(t, 'pymodbus')) return;
  const dev = await startPyModbusTcp(t, { units: [1] });
  await dev.set(1, 'hr', 0, [42]);
  const d = await startDaemon(t, (_p, dir) => ({
    identities: { admin: { password: PASSWORD, permissions: ['kura.admin'] }, viewer: { password: PASSWORD, permissions: ['rest.system'] } },
    deploy: { 'file.allowed.dirs': [dir] },
    drivers: {
      plc: { factory: 'modbus', 'access.type': 'TCP', 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': dev.port, 'modbus.timeout': 200, 'modbus.transaction.retry': 0, 'unit.backoff.max': 0 },
      sim: { factory: 'simulator' },
      bus: { factory: 'exdrv' },
    },
    assets: {
      pump: { 'driver.pid': 'plc', 'poll.interval': 200, channels: { level: { type: 'READ', 'value.type': 'INTEGER', 'unit.id': 1, 'memory.address': 1 } } },
      // The simulator's longest delay (60 s): its first poll must not end while the test looks (a run
      // under load took 20 s to reach the Status view, and the 20 s delay had ended: "1 ok").
      hung: { 'driver.pid': 'sim', 'poll.interval': 300, channels: { n: { type: 'READ', 'value.type': 'INTEGER', simulation: 'counter', delay: 60_000 } } },
      gadget: { 'driver.pid': 'bus', 'poll.interval': 200, channels: { v: { type: 'READ', 'value.type': 'INTEGER' } } },
      manual: { 'driver.pid': 'sim', channels: { n: { type: 'READ', 'value.type': 'INTEGER', simulation: 'counter' } } },
    },
  }), { http: 1, https: 1 });
  const admin = basic(d, 'admin', PASSWORD);

  const browser = await launchBrowser(t);
  const { page, problems } = await openPage(browser);
  const deletes: string[] = [];
  page.on('request', (r) => {
    if (r.method() === 'DELETE') deletes.push(r.url());
  });
  await logIn(page, `https://127.0.0.1:${d.ports.https[0]}`, 'admin', PASSWORD);
  await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Assets' }).click();
  const list = page.getByRole('table', { name: 'Assets and their health' });
  const row = (name: string) => list.getByRole('row').filter({ has: page.getByRole('rowheader', { name, exact: true }) });
  const cells = async (name: string) => (await row(name).locator('td').allInnerTexts());

  await row('pump').locator('td', { hasText: /^ok$/ }).waitFor();
  await row('hung').locator('td', { hasText: /^stale$/ }).waitFor({ timeout: 15_000 });
  let c = await cells('pump');
  t.same([c[0], c[1], c[3]], ['plc', 'ok', '0'], 'pump: its driver, ok, no failure');
  t.not(c[2], 'never', `pump: a last success (${c[2]})`);
  c = await cells('hung');
  t.same([c[0], c[1]], ['sim', 'stale'], 'a poll that does not end: stale');
  c = await cells('gadget');
  t.same(c.slice(0, 3), ['bus', 'driver missing', 'never'], 'a factory not installed: driver missing');
  t.match(c[3], /^\d+$/, 'its polls fail (Driver not attached) and are counted');
  t.same(await cells('manual'), ['sim', 'not polled', 'never', '0']);

  // The device stops answering: failing, with the failures counted.
  await dev.stop();
  await row('pump').locator('td', { hasText: /^failing$/ }).waitFor({ timeout: 15_000 });
  c = await cells('pump');
  t.ok(Number(c[3]) > 0, `failures in a row counted (${c[3]})`);
  t.not(c[2], 'never', 'the last success is still shown');
  await screenshot(page, 'assets-health');

  // The Status view counts the assets per state.
  await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Status' }).click();
  const summary = page.getByRole('list', { name: 'Assets per state' });
  await summary.waitFor();
  const count = async (state: string) => summary.locator(`li[data-state="${state}"] strong`).innerText();
  t.same(await summary.locator('li').allInnerTexts(), ['1 failing', '1 stale', '1 driver missing', '1 not polled'], 'one asset in each state, in the order of severity');
  t.equal(await count('failing'), '1');
  await screenshot(page, 'status-devices');

  // The device answers again; the package that provides the driver is installed: both ok.
  await dev.start();
  const dp = path.join(d.dir, 'ex.dp');
  fs.writeFileSync(dp, buildDp({ name: 'org.example.exdrv', version: '1.0.0', files: { 'driver/extension.js': exampleDriverExtension('exdrv', 7) }, extensions: ['driver/extension.js'] }));
  const plain = path.join(d.dir, 'plain.dp');
  fs.writeFileSync(plain, buildDp({ name: 'org.example.plain', version: '2.0.0', files: { 'readme.txt': 'no code' } }));
  for (const f of [dp, plain]) t.equal((await admin.request('/services/deploy/v2/_install', { method: 'POST', body: { url: `file://${f}` } })).status, 200);
  await page.waitForFunction(() => document.querySelectorAll('ul.summary li').length === 3, undefined, { timeout: 15_000 });
  t.same(await summary.locator('li').allInnerTexts(), ['2 ok', '1 stale', '1 not polled'], 'pump and gadget ok again');

  // Uninstalling the driver's package: a warning naming the asset, asked again; "Keep it" keeps it.
  await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Packages' }).click();
  await page.getByRole('button', { name: 'Uninstall org.example.exdrv' }).click();
  const warning = page.getByRole('alert').filter({ hasText: 'without a driver' });
  await warning.waitFor();
  t.match(await warning.innerText(), /Uninstalling org\.example\.exdrv 1\.0\.0 leaves this asset without a driver: gadget\./, 'names the asset');
  t.match(await warning.innerText(), /driver factory exdrv, used by the driver instance bus/, 'and the factory and instance');
  await screenshot(page, 'packages-uninstall-warning');
  await page.getByRole('button', { name: 'Keep it' }).click();
  await page.getByText('org.example.exdrv was kept.').waitFor();
  t.same(deletes, [], 'nothing was uninstalled');
  t.ok((await admin.request('/services/deploy/v2/')).json().some((p: { name: string }) => p.name === 'org.example.exdrv'), 'still installed');

  // Asked again and confirmed: uninstalled, and the asset is left without its driver.
  await page.getByRole('button', { name: 'Uninstall org.example.exdrv' }).click();
  await page.getByRole('button', { name: 'Uninstall org.example.exdrv anyway' }).click();
  await page.getByText(/Uninstall requested: REQUEST_RECEIVED/).waitFor();
  t.equal(deletes.length, 1, 'one DELETE');
  t.match(deletes[0], /\/services\/deploy\/v2\/org\.example\.exdrv$/);
  await page.getByRole('button', { name: 'Uninstall org.example.exdrv' }).waitFor({ state: 'detached', timeout: 15_000 });
  await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Assets' }).click();
  await row('gadget').locator('td', { hasText: /^driver missing$/ }).waitFor({ timeout: 15_000 });
  t.pass('gadget: driver missing after the confirmed uninstall');

  // A package without drivers: no warning, the usual question.
  await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Packages' }).click();
  let asked = '';
  page.once('dialog', (dlg) => {
    asked = dlg.message();
    void dlg.accept();
  });
  await page.getByRole('button', { name: 'Uninstall org.example.plain' }).click();
  await page.getByText(/Uninstall requested/).waitFor();
  t.equal(asked, 'Uninstall org.example.plain 2.0.0?', 'the plain question');
  t.equal(await page.getByRole('alert').filter({ hasText: 'without a driver' }).count(), 0, 'no warning');

  // Without rest.assets the Status view has no devices summary (and no error for it).
  const other = await openPage(browser);
  await logIn(other.page, `https://127.0.0.1:${d.ports.https[0]}`, 'viewer', PASSWORD);
  await other.page.getByRole('heading', { name: 'Gateway', level: 2 }).waitFor();
  t.equal(await other.page.getByRole('heading', { name: 'Devices' }).count(), 0, 'no devices summary without rest.assets');
  t.equal(await other.page.locator('.error').count(), 0, 'and no error');

  t.same(problems, [], 'no console errors, page errors or CSP violations');
  t.same(other.problems, [], 'none for the viewer either');
});
