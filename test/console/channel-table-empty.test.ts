// The asset editor's channel table in Debian's chromium (docs/console.md "Editing an asset's
// channels"), against the real daemon with a Modbus TCP driver configuration:
// - an asset created empty from the Configuration view gets the table at once, built from
//   configuration/v2's channel definitions (docs/configuration-v2.md "Channel definitions"): rows
//   added there carry the definition's defaults and labels, and are saved, visible in byPid;
// - a 1,500-channel asset (two pages): the head's box ticks the page's rows and says so, "Select all
//   1500 channels" ticks every row, a bulk edit and a removal then cover the rows of every page.
// No device is needed to edit: the driver points at a port nobody listens on.

import t from 'tap';
import { startDaemon, type Daemon } from '../helpers/daemon.js';
import { basic } from '../helpers/session-client.js';
import { haveBrowser, launchBrowser, openPage, logIn } from '../helpers/browser.js';
import type { Page } from 'playwright-core';

const BIG = 1500;
const C = '/services/configuration/v2';

async function stored(d: Daemon, pid: string): Promise<Record<string, { type: string; value: unknown }>> {
  const r = await basic(d, 'admin', 'Admin-pass1').request(`${C}/configurableComponents/configurations/byPid`, { method: 'POST', body: JSON.stringify({ pids: [pid] }), headers: { 'content-type': 'application/json' } });
  return r.json().configs[0].properties;
}

const cell = (page: Page, name: string, label: string) => page.locator(`table.channels [aria-label="${label} of ${name}"]`);
const value = (page: Page, name: string, label: string) => cell(page, name, label).evaluate((e) => (e instanceof HTMLInputElement ? e.value : e.firstChild?.textContent ?? ''));
const edit = async (page: Page, name: string, label: string, v: string) => {
  await cell(page, name, label).click();
  await page.locator(`table.channels input[aria-label="${label} of ${name}"]`).fill(v);
};
const rows = (page: Page) => page.locator('table.channels tbody tr:not(.detail)');
const save = async (page: Page) => {
  await page.locator('main form > button[type=submit]').click();
  await page.locator('main p[role=status]', { hasText: 'Saved and applied.' }).waitFor();
  await page.locator('main p[role=status]', { hasText: 'Saved and applied.' }).evaluate((e) => (e.textContent = ''));
};
const channelsOf = (p: Record<string, unknown>) => new Set(Object.keys(p).filter((k) => k.includes('#')).map((k) => k.slice(0, k.indexOf('#'))));

t.test('the channel table of an empty asset, and selection across pages', async (t) => {
  if (!haveBrowser(t)) return;
  const launching = launchBrowser(t);
  const channels: Record<string, unknown> = {};
  for (let i = 0; i < BIG; i++) channels[`ch${i}`] = { type: 'READ', 'value.type': 'INTEGER', 'unit.id': 1, 'primary.table': 'HOLDING_REGISTERS', 'memory.address': i + 1 };
  const d = await startDaemon(t, {
    identities: { admin: { password: 'Admin-pass1', permissions: ['kura.admin'], passwordChangeNeeded: false } },
    drivers: { plc: { factory: 'modbus', 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': 1 } },
    assets: { big: { 'driver.pid': 'plc', 'poll.interval': 0, channels } },
  }, { http: 1, https: 1 });
  const browser = await launching;
  const { page, problems } = await openPage(browser);
  const origin = `https://127.0.0.1:${d.ports.https[0]}`;
  await logIn(page, `${origin}`, 'admin', 'Admin-pass1');
  await page.getByRole('link', { name: 'Configuration' }).waitFor();

  t.test('an asset created empty gets its channels in the table', async (t) => {
    await page.goto(`${origin}/console/#/config`);
    await page.getByLabel('Asset name').fill('fresh');
    await page.getByRole('button', { name: 'Create asset' }).click();
    await page.getByRole('heading', { name: 'Asset fresh' }).waitFor();
    await page.locator('table.channels').waitFor();
    t.equal(await rows(page).count(), 0, 'no rows yet');
    t.equal(await page.locator('main textarea').count(), 0, 'no key=value form');
    const heads = await page.locator('table.channels thead th').allInnerTexts();
    for (const h of ['Name', 'Enabled', 'Mode', 'Value type', 'Unit id', 'Table', 'Address', 'Data type', 'Unit', 'Scale', 'Offset']) t.ok(heads.includes(h), `column ${h} from the definition`);
    t.match(await page.locator('table.channels thead th', { hasText: /^Address$/ }).getAttribute('title'), /1-based/, 'a head carries its description');
    await page.locator('button[data-act=add]').click();
    await page.locator('button[data-act=add]').click();
    await cell(page, 'Channel-2', 'Address').waitFor();
    t.equal(await value(page, 'Channel-1', 'Table'), 'HOLDING_REGISTERS', "a new row has the driver's defaults");
    t.equal(await value(page, 'Channel-1', 'Address'), '1');
    t.equal(await value(page, 'Channel-1', 'Mode'), 'READ', 'and the generic ones');
    t.equal(await value(page, 'Channel-1', 'Value type'), 'INTEGER');
    t.equal(await value(page, 'Channel-1', 'Scale'), '1.0');
    t.ok(await cell(page, 'Channel-1', 'Enabled').isChecked(), 'enabled');
    await edit(page, 'Channel-2', 'Address', '70000');
    t.match(await cell(page, 'Channel-2', 'Address').locator('xpath=..').locator('small.cell-error').innerText(), /70000 is out of range \(1\.\.65536\)/, "checked against the definition's bounds");
    await edit(page, 'Channel-2', 'Address', '40');
    await edit(page, 'Channel-2', 'Unit', 'kPa');
    await save(page);
    const p = await stored(d, 'fresh');
    t.same(['Channel-1#+type', 'Channel-1#+value.type', 'Channel-1#primary.table', 'Channel-1#memory.address', 'Channel-1#+enabled'].map((k) => p[k]?.value), ['READ', 'INTEGER', 'HOLDING_REGISTERS', 1, true], 'the first channel saved with the defaults');
    t.same([p['Channel-2#memory.address']?.value, p['Channel-2#+unit']?.value], [40, 'kPa'], 'the second with its edits');
    // Opened again, the asset's own definition now carries the channels.
    await page.goto(`${origin}/console/#/config`);
    await page.goto(`${origin}/console/#/config/edit/fresh`);
    await cell(page, 'Channel-2', 'Address').waitFor();
    t.equal(await value(page, 'Channel-2', 'Address'), '40', 'read back from the daemon');
  });

  t.test(`select all across the pages of a ${BIG}-channel asset`, async (t) => {
    await page.goto(`${origin}/console/#/config`);
    await page.goto(`${origin}/console/#/config/edit/big`);
    await page.getByRole('heading', { name: 'Asset big' }).waitFor();
    await page.locator('.pager', { hasText: `${BIG} channels` }).waitFor();
    t.equal(await rows(page).count(), 1000, 'a page of 1,000 rows');
    const head = page.locator('table.channels thead input[type=checkbox]');
    t.equal(await head.getAttribute('aria-label'), 'Select the 1000 rows of this page', "the head's box says it ticks the page");
    await head.check();
    const info = page.locator('.channel-editor .sel-info');
    t.match(await info.innerText(), /1000 of 1500 selected/, 'the page selected');
    await info.getByRole('button', { name: `Select all ${BIG} channels` }).click();
    t.match(await info.innerText(), /1500 of 1500 selected/, 'every row selected');
    await page.locator('select[aria-label="Column to set"]').selectOption({ label: 'Unit' });
    await page.locator('input[aria-label="Value to set"]').fill('bar');
    await page.locator('button[data-act=bulk]').click();
    await page.locator('.channel-editor p[role=status]', { hasText: `Unit set on ${BIG} channels.` }).waitFor();
    await page.locator('button[data-act=next]').click();
    await cell(page, 'ch1499', 'Unit').waitFor();
    t.equal(await value(page, 'ch1499', 'Unit'), 'bar', 'a row of the second page took the bulk edit');
    t.ok(await page.locator('table.channels input[aria-label="Select ch1499"]').isChecked(), 'and is shown selected');
    await save(page);
    let p = await stored(d, 'big');
    t.equal([...channelsOf(p)].filter((c) => p[`${c}#+unit`]?.value === 'bar').length, BIG, 'every channel saved with the new unit');

    // Remove the rows of both pages: a selection spanning the page boundary.
    await info.getByRole('button', { name: 'Clear selection' }).click();
    t.notMatch(await info.innerText(), /selected/, 'nothing selected');
    await head.check(); // the 500 rows of the second page
    await page.locator('button[data-act=prev]').click();
    await cell(page, 'ch999', 'Unit').waitFor();
    await page.locator('table.channels input[aria-label="Select ch999"]').check();
    t.match(await info.innerText(), /501 of 1500 selected/);
    await page.locator('button[data-act=remove-selected]').click();
    await page.locator('.pager', { hasText: '999 channels' }).waitFor();
    t.equal(await rows(page).count(), 999, 'one page left');
    await save(page);
    p = await stored(d, 'big');
    const left = channelsOf(p);
    t.equal(left.size, 999, 'the removed channels are gone');
    t.ok(left.has('ch998') && !left.has('ch999') && !left.has('ch1000') && !left.has('ch1499'), 'the ones selected on either page');
  });

  t.test('no errors in the page', async (t) => {
    t.same(problems, []);
  });
});
