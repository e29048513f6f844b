// The asset editor's channel table in Debian's chromium (docs/console.md "Editing an asset's
// channels"), against the real daemon with a Modbus TCP driver configuration: a 500-channel asset as
// a table with the definition's labels, descriptions and units; inline edit, add, duplicate and
// remove rows, bulk edit of a column on selected rows, the client's cell checks (out of range, bad
// option) and the server's 400 shown at the cell; every save checked in configuration/v2's GET.
// Also: driver.pid is a choice of the driver instances, the Modbus serial settings are hidden for a
// TCP driver (and the TCP ones for RTU), and at phone width only the table scrolls sideways.
// No device is needed to edit: the driver points at a port nobody listens on.

import t from 'tap';
import { startDaemon, type Daemon } from '../helpers/daemon.js';
import { basic } from '../helpers/session-client.js';
import { haveBrowser, launchBrowser, openPage, screenshot, logIn } from '../helpers/browser.js';
import type { Page } from 'playwright-core';

const CHANNELS = 500;
const C = '/services/configuration/v2';

async function stored(d: Daemon, pid: string): Promise<Record<string, { type: string; value: unknown }>> {
  const r = await basic(d, 'admin', 'Admin-pass1').request(`${C}/configurableComponents/configurations/byPid`, { method: 'POST', body: JSON.stringify({ pids: [pid] }), headers: { 'content-type': 'application/json' } });
  return r.json().configs[0].properties;
}

const row = (page: Page, name: string) => page.locator(`table.channels tbody tr:not(.detail):has(input[data-k="+name"][aria-label="Name of ${name}"])`);
// Queried by CSS inside the table: role and label queries walk the accessibility tree of the whole page.
// A cell shows its value as text and becomes an input when focused: `cell` finds either.
const cell = (page: Page, name: string, label: string) => page.locator(`table.channels [aria-label="${label} of ${name}"]`);
const value = (page: Page, name: string, label: string) => cell(page, name, label).evaluate((e) => (e instanceof HTMLInputElement ? e.value : e.firstChild?.textContent ?? ''));
const edit = async (page: Page, name: string, label: string, v: string) => {
  await cell(page, name, label).click();
  await page.locator(`table.channels input[aria-label="${label} of ${name}"]`).fill(v);
};
const button = (page: Page, label: string) => page.locator(`table.channels button[aria-label="${label}"]`);
const saveButton = (page: Page) => page.locator('main form > button[type=submit]');
const save = async (page: Page) => {
  await saveButton(page).click();
  await page.locator('main p[role=status]', { hasText: 'Saved and applied.' }).waitFor();
};

t.test(`the channel table of a ${CHANNELS}-channel Modbus asset`, async (t) => {
  if (!haveBrowser(t)) return;
  const launching = launchBrowser(t);
  const channels: Record<string, unknown> = {};
  for (let i = 0; i < CHANNELS; i++) channels[`ch${i}`] = { type: 'READ', 'value.type': 'INTEGER', 'unit.id': 1, 'primary.table': 'HOLDING_REGISTERS', 'memory.address': i + 1, unit: 'kPa' };
  const d = await startDaemon(t, {
    identities: { admin: { password: 'Admin-pass1', permissions: ['kura.admin'], passwordChangeNeeded: false } },
    drivers: {
      plc: { factory: 'modbus', 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': 1 },
      plc2: { factory: 'modbus', 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': 2 },
      sim: { factory: 'simulator' },
    },
    assets: { line: { 'driver.pid': 'plc', 'poll.interval': 0, channels } },
  }, { http: 1, https: 1 });
  const browser = await launching;
  const { page, problems } = await openPage(browser);
  const origin = `https://127.0.0.1:${d.ports.https[0]}`;
  await logIn(page, `${origin}`, 'admin', 'Admin-pass1');
  await page.getByRole('link', { name: 'Configuration' }).waitFor();
  await page.goto(`${origin}/console/#/config/edit/line`);
  await page.getByRole('heading', { name: 'Asset line' }).waitFor();

  t.test('500 rows with the definition\'s labels, descriptions and units', async (t) => {
    t.equal(await page.locator('table.channels tbody tr:not(.detail)').count(), CHANNELS, 'one row per channel');
    const heads = await page.locator('table.channels thead th').allInnerTexts();
    for (const h of ['Name', 'Enabled', 'Mode', 'Value type', 'Unit id', 'Table', 'Address', 'Data type', 'Word order', 'Unit', 'Scale', 'Offset']) t.ok(heads.includes(h), `column ${h}`);
    t.notOk(heads.some((h) => h.includes('#') || h.includes('+')), 'no raw property ids as column heads');
    t.match(await page.locator('table.channels thead th', { hasText: /^Address$/ }).getAttribute('title'), /1-based/, 'a column head carries its description');
    t.equal(await value(page, 'ch7', 'Address'), '8', 'values shown');
    t.equal(await value(page, 'ch7', 'Unit'), 'kPa');
    const pollBox = page.locator('main form > .field[data-k="poll.interval"]');
    t.equal(await pollBox.locator('label').innerText(), 'Poll interval (ms)');
    const poll = pollBox.locator('input');
    t.equal(await poll.inputValue(), '0', 'an asset field labelled with its unit');
    const about = await page.locator(`#${(await poll.getAttribute('aria-describedby'))!.split(' ')[0]}`).innerText();
    t.match(about, /reads only on request.*Default: 0\./, `with its description and default: ${about}`);
    await button(page, 'Details of ch0').click();
    t.ok(await cell(page, 'ch0', 'Deadband').isVisible(), "the rest in the row's details");
    t.ok(await page.locator('table.channels tr.detail label', { hasText: 'Length (registers)' }).isVisible(), 'with units');
    await button(page, 'Details of ch0').click();
    t.equal(await page.locator('table.channels tr.detail').count(), 0, 'and folded again');
    await page.locator('details.help > summary').click();
    t.match(await page.locator('details.help').innerText(), /Address\s+Address of the first register or bit.*Default: 1\./s, 'every column explained, with its default');
    await page.locator('details.help > summary').click();
  });

  t.test('driver.pid chooses among the driver instances', async (t) => {
    const box = page.locator('main form > .field[data-k="driver.pid"]');
    t.equal(await box.locator('label').innerText(), 'Driver instance');
    const sel = box.locator('select');
    t.equal(await sel.evaluate((e) => e.tagName), 'SELECT');
    t.same(await sel.locator('option').allInnerTexts(), ['plc', 'plc2', 'sim']);
    t.equal(await sel.inputValue(), 'plc');
  });

  t.test('inline edit, add, duplicate and remove, saved to the daemon', async (t) => {
    await edit(page, 'ch10', 'Address', '777');
    await page.locator('button[data-act=add]').click();
    const added = `Channel-${CHANNELS + 1}`;
    await row(page, added).waitFor();
    t.equal(await value(page, added, 'Scale'), '1.0', 'a new channel gets the default scale');
    t.equal(await value(page, added, 'Offset'), '0.0', 'and offset');
    t.ok(await cell(page, added, 'Enabled').isChecked(), 'and is enabled');
    t.equal(await value(page, added, 'Table'), 'HOLDING_REGISTERS', "and the driver's defaults");
    await edit(page, added, 'Address', '900');
    await edit(page, added, 'Unit', 'bar');
    await button(page, 'Duplicate ch3').click();
    const dup = 'ch3-2';
    await row(page, dup).waitFor();
    await edit(page, dup, 'Address', '1003');
    await edit(page, 'ch11', 'Name', 'flow');
    await page.locator('details.help > summary').focus(); // the name is taken when the cell is left
    await cell(page, 'flow', 'Address').waitFor();
    await button(page, 'Remove ch499').click();
    t.equal(await row(page, 'ch499').count(), 0, 'removed from the table');
    await save(page);
    const p = await stored(d, 'line');
    t.same(p['ch10#memory.address'], { value: 777, type: 'INTEGER' }, 'the edited cell');
    t.same([p[`${added}#memory.address`]?.value, p[`${added}#+scale`]?.value, p[`${added}#+offset`]?.value, p[`${added}#+enabled`]?.value, p[`${added}#+unit`]?.value, p[`${added}#+type`]?.value], [900, 1, 0, true, 'bar', 'READ'], 'the added channel, with its defaults');
    t.same([p[`${dup}#memory.address`]?.value, p[`${dup}#+unit`]?.value, p[`${dup}#primary.table`]?.value], [1003, 'kPa', 'HOLDING_REGISTERS'], 'the duplicate, with the copied values');
    t.notOk(Object.keys(p).some((k) => k.startsWith('ch499#')), 'the removed channel is gone');
    t.same([p['flow#memory.address']?.value, p['flow#+unit']?.value, Object.keys(p).some((k) => k.startsWith('ch11#'))], [12, 'kPa', false], 'the renamed channel, under its new name only');
    t.equal(await page.locator('table.channels tbody tr:not(.detail)').count(), CHANNELS + 1, 'the table after the save');
  });

  t.test('bulk edit of one column on the selected rows', async (t) => {
    for (const n of ['ch1', 'ch2', 'ch5']) await page.locator(`table.channels input[aria-label="Select ${n}"]`).check();
    await page.locator('select[aria-label="Column to set"]').selectOption({ label: 'Data type' });
    await page.locator('input[aria-label="Value to set"]').fill('UINT16');
    await page.locator('button[data-act=bulk]').click();
    await page.locator('.channel-editor p[role=status]', { hasText: 'Data type set on 3 channels.' }).waitFor();
    t.equal(await value(page, 'ch2', 'Data type'), 'UINT16');
    await save(page);
    const p = await stored(d, 'line');
    t.same(['ch1', 'ch2', 'ch5', 'ch0', 'ch3'].map((n) => p[`${n}#data.type`]?.value), ['UINT16', 'UINT16', 'UINT16', undefined, undefined], 'only the selected rows changed');
  });

  t.test('messages at the cell: the client checks, and the server 400', async (t) => {
    await edit(page, 'ch20', 'Address', '70000');
    const address = cell(page, 'ch20', 'Address');
    t.equal(await address.getAttribute('aria-invalid'), 'true', 'marked as typed');
    t.match(await address.locator('xpath=..').locator('small.cell-error').innerText(), /70000 is out of range \(1\.\.65536\)/, 'out of range, under the cell');
    await edit(page, 'ch21', 'Word order', 'MIDDLE_ENDIAN');
    const order = cell(page, 'ch21', 'Word order');
    t.match(await order.locator('xpath=..').locator('small.cell-error').innerText(), /unknown value "MIDDLE_ENDIAN" \(expected one of BIG_ENDIAN/, 'a bad option');
    await saveButton(page).click();
    await page.locator('main form p.error', { hasText: 'Not saved: see the messages in the channel table.' }).waitFor();
    t.equal((await stored(d, 'line'))['ch20#memory.address']?.value, 21, 'nothing sent while a cell is wrong');
    await edit(page, 'ch20', 'Address', '21');
    await edit(page, 'ch21', 'Word order', 'BIG_ENDIAN');
    t.equal(await address.getAttribute('aria-invalid'), null, 'cleared when fixed');
    t.equal(await page.locator('table.channels small.cell-error').count(), 0, 'no message left');
    // A value only the daemon refuses: FLOAT32 does not fit an INTEGER channel.
    await edit(page, 'ch30', 'Data type', 'FLOAT32');
    await saveButton(page).click();
    const dt = cell(page, 'ch30', 'Data type');
    await page.locator('table.channels small.cell-error').first().waitFor();
    t.equal(await dt.getAttribute('aria-invalid'), 'true', "the server's message marks the cell it names");
    t.match(await dt.locator('xpath=..').locator('small.cell-error').innerText(), /data\.type FLOAT32 does not fit value\.type INTEGER/, 'and is shown under it');
    t.equal(await page.locator('table.channels small.cell-error').count(), 1, 'only that cell');
    await screenshot(page, 'channel-editor');
    t.equal((await stored(d, 'line'))['ch30#data.type'], undefined, 'nothing applied');
    await edit(page, 'ch30', 'Data type', 'INT16');
    await save(page);
  });

  t.test('Modbus fields that do not apply are hidden', async (t) => {
    await page.goto(`${origin}/console/#/config/edit/plc`);
    await page.getByRole('heading', { name: 'Component plc' }).waitFor();
    t.ok(await page.getByLabel('Host', { exact: true }).isVisible(), 'TCP: the host is shown');
    t.notOk(await page.getByLabel('Serial port', { exact: true }).isVisible(), 'TCP: the serial port is hidden');
    t.notOk(await page.getByLabel('Baud rate (bit/s)', { exact: true }).isVisible(), 'TCP: the baud rate is hidden');
    t.ok(await page.getByLabel('Response timeout (ms)', { exact: true }).isVisible(), 'a field of every transport stays');
    await page.getByLabel('Transport', { exact: true }).selectOption('RTU');
    t.ok(await page.getByLabel('Serial port', { exact: true }).isVisible(), 'RTU: the serial port is shown');
    t.ok(await page.getByLabel('Parity', { exact: true }).isVisible(), 'RTU: the parity is shown');
    t.notOk(await page.getByLabel('Host', { exact: true }).isVisible(), 'RTU: the host is hidden');
  });

  t.test('phone width: the table scrolls in its box, the page does not', async (t) => {
    const phone = await openPage(browser, { width: 390, height: 844 });
    await logIn(phone.page, `${origin}`, 'admin', 'Admin-pass1');
    await phone.page.getByRole('link', { name: 'Configuration' }).waitFor();
    await phone.page.goto(`${origin}/console/#/config/edit/line`);
    await phone.page.locator('table.channels tbody tr').first().waitFor();
    const m = await phone.page.evaluate(() => {
      const box = document.querySelector('.table-box')!;
      return { page: document.scrollingElement!.scrollWidth, inner: innerWidth, box: box.scrollWidth, boxShown: box.clientWidth, row: getComputedStyle(document.querySelector('table.channels tbody tr')!).display };
    });
    t.ok(m.page <= m.inner, `the page does not overflow (${m.page} <= ${m.inner})`);
    t.ok(m.box > m.boxShown, `the table scrolls inside its box (${m.box} > ${m.boxShown})`);
    t.equal(m.row, 'table-row', 'rows stay rows');
    await screenshot(phone.page, 'channel-editor-phone');
    t.same(phone.problems, []);
  });

  t.test('no errors in the page', async (t) => {
    t.same(problems.filter((p) => !/status of 400/.test(p)), [], 'none but the refused save');
  });
});
