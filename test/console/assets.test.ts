// The asset view's values and write controls in a real browser against the real daemon
// (docs/console.md "Views"): a BOOLEAN write control presets nothing and its Write waits for a
// choice, so a Write pressed to confirm never switches an output; FLOAT and DOUBLE readings show a
// few significant digits with the exact value in the cell's title.

import t from 'tap';
import { startDaemon } from '../helpers/daemon.js';
import { basic } from '../helpers/session-client.js';
import { haveBrowser, launchBrowser, openPage, logIn } from '../helpers/browser.js';

const PASSWORD = 'Admin-pass1';

t.test('asset view: BOOLEAN writes wait for a choice; decimals are rounded, exact in the title', async (t) => {
  if (!haveBrowser(t)) return;
  const constant = (vt: string, initial: unknown) => ({ type: 'READ', 'value.type': vt, simulation: 'constant', initial });
  const d = await startDaemon(t, {
    identities: { admin: { password: PASSWORD, permissions: ['kura.admin'] } },
    drivers: { sim: { factory: 'simulator' } },
    assets: {
      plant: {
        'driver.pid': 'sim',
        channels: {
          valve: { type: 'READ_WRITE', 'value.type': 'BOOLEAN', simulation: 'memory', initial: false },
          level: constant('DOUBLE', -23.726753928870977),
          total: constant('DOUBLE', 1234567.891),
          trace: constant('DOUBLE', 0.000123456789),
          whole: constant('DOUBLE', 250),
          ratio: constant('FLOAT', 0.1),
          count: constant('INTEGER', 5),
        },
      },
    },
  }, { http: 0, https: 1 });
  const rest = basic(d, 'admin', PASSWORD, { tls: true });
  const valveReads = async () => (await rest.request('/services/assets/plant/_read', { method: 'POST', body: { channels: ['valve'] } })).json()[0].value;

  const browser = await launchBrowser(t);
  const { page, problems } = await openPage(browser);
  const writes: string[] = [];
  page.on('request', (r) => {
    if (r.url().endsWith('/_write')) writes.push(r.postData() ?? '');
  });
  await logIn(page, `https://127.0.0.1:${d.ports.https[0]}`, 'admin', PASSWORD);
  await page.getByRole('link', { name: 'Assets' }).click();
  await page.getByRole('link', { name: 'plant' }).click();
  const row = (name: string) => page.getByRole('row').filter({ has: page.getByRole('rowheader', { name, exact: true }) });

  // Readings: a few significant digits, the whole part kept, the exact value in the title.
  const readings: [string, string, string | null][] = [
    ['level', '-23.7268', '-23.726753928870977'],
    ['total', '1234568', '1234567.891'],
    ['trace', '0.000123457', '0.000123456789'],
    ['whole', '250', '250'],
    ['ratio', '0.1', '0.1'],
    ['count', '5', null],
  ];
  for (const [name, text, title] of readings) {
    const cell = row(name).locator('td.value');
    await cell.filter({ hasNotText: '…' }).waitFor();
    t.equal(await cell.innerText(), text, `${name} shows ${text}`);
    t.equal(await cell.getAttribute('title'), title, title === null ? `${name}: no title (not a decimal)` : `${name}: the exact value ${title} in the title`);
  }

  // A valve reading false: the control presets nothing and Write is disabled until a choice.
  await row('valve').locator('td.value', { hasText: 'false' }).waitFor();
  const control = row('valve').getByLabel('New value for valve');
  const write = row('valve').getByRole('button', { name: 'Write' });
  t.equal(await control.inputValue(), '', 'nothing is preselected');
  t.ok(await write.isDisabled(), 'Write is disabled until a value is chosen');
  // Pressed anyway (a forced click, and the form submitted as Enter would): nothing is sent.
  await write.click({ force: true });
  await row('valve').locator('form').evaluate((f: HTMLFormElement) => f.requestSubmit());
  const result = row('valve').locator('span.result');
  await result.filter({ hasText: /\S/ }).waitFor();
  t.equal(await result.innerText(), 'valve: choose true or false', 'the form asks for a choice');
  // Give a write that should not exist time to leave the page.
  await new Promise((r) => setTimeout(r, 500));
  t.same(writes, [], 'no write was sent');
  t.equal(await valveReads(), false, 'the valve is still off');
  t.equal(await row('valve').locator('td.value').innerText(), 'false', 'and reads false');

  // A chosen value is written, and only that.
  const written = () => page.waitForResponse((r) => r.url().endsWith('/_write'));
  await control.selectOption('true');
  t.notOk(await write.isDisabled(), 'Write is enabled once a value is chosen');
  await Promise.all([written(), write.click()]);
  await row('valve').getByText('Written').waitFor();
  t.equal(await valveReads(), true, 'the chosen true was written');
  await row('valve').locator('td.value', { hasText: 'true' }).waitFor();
  await control.selectOption('false');
  await Promise.all([written(), write.click()]);
  t.equal(await valveReads(), false, 'the chosen false was written');
  t.same(writes.map((b) => JSON.parse(b).channels), [[{ name: 'valve', type: 'BOOLEAN', value: true }], [{ name: 'valve', type: 'BOOLEAN', value: false }]], 'exactly the two chosen writes');
  // Choosing nothing again disables Write again.
  await control.selectOption('');
  t.ok(await write.isDisabled(), 'back to nothing chosen: Write disabled');

  t.same(problems, [], 'no console errors, page errors or CSP violations');
});
