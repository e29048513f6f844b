// The console's configuration form of an asset at the documented channel bound
// (docs/configuration-v2.md "How large a configuration can grow": 12,000 Modbus channels under the
// launcher's 48 MB heap bound), in Debian's chromium against the daemon started with the launcher's
// node flags: the form opens with the channels in a table shown a page of rows at a time,
// a property of the asset and one of its last channel are changed and saved, and the daemon keeps running.
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { startDaemon, BUNDLE } from '../helpers/daemon.js';
import { deviceSettings } from '../helpers/launch.mjs';
import { basic } from '../helpers/session-client.js';
import { haveBrowser, launchBrowser, openPage, logIn } from '../helpers/browser.js';

const CHANNELS = Number(process.env.N ?? 12_000);

// A large configuration on a shared machine: minutes rather than tap's default 30 s.
t.setTimeout(600_000);

t.test(`the configuration form of an asset of ${CHANNELS} Modbus channels`, async (t) => {
  if (!haveBrowser(t)) return;
  const channels: Record<string, unknown> = {};
  for (let i = 0; i < CHANNELS; i++) channels[`ch${i}`] = { type: 'READ', 'value.type': 'INTEGER', 'unit.id': 1, 'primary.table': 'HOLDING_REGISTERS', 'memory.address': i + 1 };
  const device = deviceSettings();
  const d = await startDaemon(
    t,
    {
      identities: { admin: { password: 'Admin-pass1', permissions: ['kura.admin'], passwordChangeNeeded: false } },
      // A device that does not answer: the form does not need one, and polls keep failing meanwhile.
      drivers: { plc: { factory: 'modbus', 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': 1 } },
      assets: { big: { 'driver.pid': 'plc', 'poll.interval': 5000, channels } },
    },
    { command: [process.execPath, ...device.flags, BUNDLE], env: device.env },
  );
  const browser = await launchBrowser(t);
  const { page, problems } = await openPage(browser);
  page.setDefaultTimeout(240_000);
  await logIn(page, `http://127.0.0.1:${d.ports.http[0]}`, 'admin', 'Admin-pass1');
  const opened = Date.now();
  await page.goto(`http://127.0.0.1:${d.ports.http[0]}/console/#/config/edit/big`);
  await page.getByRole('heading', { name: 'Asset big' }).waitFor();
  // Queried by CSS: the accessibility tree of a page this size makes role and label queries slow.
  await page.locator('p.pager', { hasText: `${CHANNELS} channels` }).waitFor();
  t.pass(`every channel in the table, a page of rows shown (${Date.now() - opened} ms)`);
  // The last page holds the last channel; the pager jumps to either end.
  const pager = page.locator('p.pager');
  const last = CHANNELS - ((CHANNELS - 1) % 1000);
  await pager.locator('button', { hasText: 'Last rows' }).click();
  await pager.filter({ hasText: `rows ${last}–${CHANNELS}` }).waitFor();
  t.same([await pager.locator('button', { hasText: 'Next rows' }).isDisabled(), await pager.locator('button', { hasText: 'Last rows' }).isDisabled()], [true, true], 'on the last page, nothing further');
  await pager.locator('button', { hasText: 'First rows' }).click();
  await pager.filter({ hasText: 'rows 1–1000' }).waitFor();
  t.ok(await pager.locator('button', { hasText: 'Previous rows' }).isDisabled(), 'back on the first page');
  await pager.locator('button', { hasText: 'Last rows' }).click();
  const unit = page.locator(`table.channels td[aria-label="Unit of ch${CHANNELS - 1}"]`);
  await unit.click();
  await page.locator(`table.channels input[aria-label="Unit of ch${CHANNELS - 1}"]`).fill('kPa');
  await page.locator('main form > .field[data-k="poll.interval"] input').fill('7000');
  await page.locator('main form > button[type=submit]').click();
  await page.locator('main p[role=status]', { hasText: 'Saved and applied.' }).waitFor();
  t.equal((await basic(d, 'admin', 'Admin-pass1').request('/services/assets/big/_status')).json().pollInterval, 7000, 'saved and applied');
  const layer = JSON.parse(fs.readFileSync(path.join(d.dataDir, 'config', 'runtime.json'), 'utf8'));
  t.same(layer.components.big.props, { [`ch${CHANNELS - 1}#+unit`]: 'kPa', 'poll.interval': 7000 }, 'only what was changed is sent');
  t.same(problems, [], 'no error in the page');
  t.equal(d.proc.exitCode, null, 'the daemon is running');
});
