// The configuration view in a real browser (configuration/v2): create a Modbus driver instance and
// an asset with a channel on a pymodbus device, see its value live, get a validation message next
// to the field it names, download a snapshot and roll back to one.

import t from 'tap';
import { startDaemon } from '../helpers/daemon.js';
import { havePeers, startPyModbusTcp } from '../helpers/pymodbus.js';
import { haveBrowser, launchBrowser, openPage, screenshot, logIn } from '../helpers/browser.js';

t.test('drivers, assets and snapshots through the configuration view', async (t) => {
  if (!haveBrowser(t) || !havePeers(t, 'pymodbus')) return;
  // Chromium starts while the device and the daemon do: none of them waits for another.
  const launching = launchBrowser(t);
  const dev = await startPyModbusTcp(t);
  await dev.set(1, 'hr', 2, [4321]);
  const d = await startDaemon(t, {
    identities: { admin: { password: 'Admin-pass1', permissions: ['kura.admin'] } },
    drivers: {},
    assets: {},
  }, { http: 0, https: 1 });
  const browser = await launching;
  const { page, problems } = await openPage(browser);
  const origin = `https://127.0.0.1:${d.ports.https[0]}`;
  await logIn(page, `${origin}`, 'admin', 'Admin-pass1');
  await page.getByRole('link', { name: 'Configuration' }).click();
  await page.getByText('No driver instances.').waitFor();

  // A Modbus TCP driver instance from the factory's definition.
  await page.getByLabel('Driver', { exact: true }).selectOption({ label: 'modbus' });
  await page.getByRole('button', { name: 'Continue' }).click();
  await page.getByLabel('Instance name').fill('plc');
  await page.getByLabel('Host', { exact: true }).fill('127.0.0.1');
  await page.getByLabel('TCP port', { exact: true }).fill(String(dev.port));
  await page.getByRole('button', { name: 'Create driver instance' }).click();
  await page.getByRole('rowheader', { name: 'plc' }).waitFor();
  t.pass('driver instance plc created');

  // An asset on it, with one channel.
  await page.getByLabel('Asset name').fill('tank');
  await page.getByRole('button', { name: 'Create asset' }).click();
  await page.getByRole('heading', { name: 'Asset tank' }).waitFor();
  // An empty asset's channels are a table too (docs/console.md "Editing an asset's channels").
  await page.getByRole('button', { name: 'Add a channel' }).click();
  const set = async (name: string, label: string, v: string) => {
    await page.locator(`table.channels [aria-label="${label} of ${name}"]`).click();
    await page.locator(`table.channels input[aria-label="${label} of ${name}"]`).fill(v);
  };
  await set('Channel-1', 'Name', 'level');
  await page.getByRole('heading', { name: 'Asset tank' }).click(); // the name is taken when the cell is left
  await set('level', 'Address', '3');
  await set('level', 'Data type', 'INT16');
  await page.getByRole('button', { name: 'Save', exact: true }).click();
  await page.getByText('Saved and applied.').waitFor();
  const address = page.locator('table.channels [aria-label="Address of level"]');
  t.pass('channel level saved');

  // A bad value: the message under the cell it names; nothing applied.
  await address.click();
  await page.locator('table.channels input[aria-label="Address of level"]').fill('0');
  await page.getByRole('button', { name: 'Save', exact: true }).click();
  const cellError = address.locator('xpath=..').locator('small.cell-error');
  await cellError.waitFor();
  t.match(await cellError.innerText(), /out of range/, `message under the cell: ${await cellError.innerText()}`);
  t.equal(await page.locator('table.channels small.cell-error').count(), 1, 'only that cell is marked');
  await screenshot(page, 'configuration');
  await page.locator('table.channels input[aria-label="Address of level"]').fill('3');
  await page.getByRole('button', { name: 'Save', exact: true }).click();
  await page.getByText('Saved and applied.').or(page.getByRole('status').filter({ hasText: /\S/ })).first().waitFor();

  // Its value, live.
  await page.getByRole('link', { name: 'Live values of this asset' }).click();
  await page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: 'level' }) }).locator('td.value', { hasText: '4321' }).waitFor();
  t.pass('the new asset reads 4321 from the device');

  // Snapshots: download one, roll back to the first (before the driver existed).
  await page.getByRole('link', { name: 'Configuration' }).click();
  await page.getByRole('heading', { name: 'Snapshots' }).waitFor();
  const downloads = page.getByRole('button', { name: /^Download snapshot/ });
  t.ok((await downloads.count()) >= 3, 'a snapshot per change');
  const [download] = await Promise.all([page.waitForEvent('download'), downloads.first().click()]);
  const saved = JSON.parse(await (await import('node:fs/promises')).readFile((await download.path())!, 'utf8'));
  t.ok(saved.configs.some((c: { pid: string }) => c.pid === 'tank'), 'the newest snapshot holds the asset');
  page.once('dialog', (dlg) => dlg.accept());
  await page.getByRole('button', { name: /^Roll back to snapshot/ }).last().click();
  await page.getByText(/^Rolled back to snapshot/).waitFor();
  await page.getByText('No assets.').waitFor();
  t.pass('rolled back: the asset is gone');
  t.same(problems.filter((p) => !/status of 4\d\d/.test(p)), [], 'no console errors');
});
