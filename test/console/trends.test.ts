// An asset's trends and its channels as CSV in the console (docs/console.md "Trends", "Channels as
// CSV") in Debian's chromium against the real daemon and a pymodbus TCP device: the sparkline of a
// numeric channel is drawn from the polls' real history (and follows a changed register); the CSV
// download is the gateway's file; an upload with a bad row shows the row and column and changes
// nothing; a merge upload adds a channel; leaving the asset stops its refreshes.

import t from 'tap';
import fs from 'node:fs';
import { startDaemon } from '../helpers/daemon.js';
import { basic } from '../helpers/session-client.js';
import { haveBrowser, launchBrowser, openPage, screenshot, logIn } from '../helpers/browser.js';
import { havePeers, startPyModbusTcp } from '../helpers/pymodbus.js';
import { until } from '../helpers/mqtt-fixture.js';

const PASSWORD = 'Admin-pass1';

t.test('trends from history; CSV download, a refused upload, a merge upload', async (t) => {
  if (!haveBrowser(t) || !havePeers(t, 'pymodbus')) return;
  const dev = await startPyModbusTcp(t, { units: [1] });
  await dev.set(1, 'hr', 0, [10, 500]);
  await dev.set(1, 'hr', 9, [0x6869, 0x0000]);
  const d = await startDaemon(t, {
    identities: { admin: { password: PASSWORD, permissions: ['kura.admin'] } },
    drivers: { plc: { factory: 'modbus', 'access.type': 'TCP', 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': dev.port, 'modbus.timeout': 300 } },
    assets: {
      pump: {
        'driver.pid': 'plc',
        'poll.interval': 200,
        channels: {
          level: { type: 'READ', 'value.type': 'INTEGER', 'unit.id': 1, 'memory.address': 1 },
          speed: { type: 'READ_WRITE', 'value.type': 'LONG', 'unit.id': 1, 'memory.address': 2, 'data.type': 'UINT16' },
          label: { type: 'READ', 'value.type': 'STRING', 'unit.id': 1, 'memory.address': 10, 'data.type': 'STRING', 'array.data.length': 2 },
        },
      },
    },
  }, { http: 1, https: 1 });
  const admin = basic(d, 'admin', PASSWORD);
  const csvOf = async () => (await admin.request('/services/assets/pump/_channels.csv')).body;

  const browser = await launchBrowser(t);
  const { page, problems } = await openPage(browser);
  await logIn(page, `https://127.0.0.1:${d.ports.https[0]}`, 'admin', PASSWORD);
  await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Assets' }).click();
  await page.getByRole('link', { name: 'pump' }).click();

  // Trends: one per numeric readable channel, drawn from _history.
  const spark = (ch: string) => page.getByRole('img', { name: new RegExp(`^Trend of ${ch}:`) });
  await spark('level').and(page.locator('[data-points]:not([data-points="0"])')).waitFor({ timeout: 15_000 });
  t.equal(await page.locator('svg.spark').count(), 2, 'level and speed have a trend, the STRING label none');
  t.match(await spark('speed').getAttribute('aria-label'), /min 500, max 500, last 500/, 'speed from its history');
  // The register rises: the line follows, its last point at the top.
  await dev.set(1, 'hr', 0, [30]);
  await page.waitForFunction(() => /last 30$/.test(document.querySelector('svg.spark')?.getAttribute('aria-label') ?? ''), undefined, { timeout: 15_000 });
  const label = (await spark('level').getAttribute('aria-label'))!;
  t.match(label, /min 10, max 30, last 30$/, 'the trend spans the old and the new value');
  const points = (await spark('level').locator('polyline').getAttribute('points'))!.split(' ').map((p) => p.split(',').map(Number));
  const history = (await admin.request('/services/assets/pump/_history?channel=level')).json() as { value: number }[];
  t.equal(Number(await spark('level').getAttribute('data-points')), points.length, 'one point per sample');
  t.ok(points.length >= 2 && Math.abs(points.length - history.length) <= 30, `${points.length} points drawn, ${history.length} samples in the history now`);
  t.equal(points[0]![1], 26, 'the first sample (10, the lowest) at the bottom');
  t.equal(points.at(-1)![1], 2, 'the last (30, the highest) at the top');
  t.ok(points.every((p, i) => i === 0 || p[0]! >= points[i - 1]![0]!), 'time runs left to right');
  await screenshot(page, 'asset-trends');

  // Download: the gateway's CSV, as a file.
  const csv = await csvOf();
  const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download channels (CSV)' }).click()]);
  t.equal(download.suggestedFilename(), 'pump.channels.csv');
  t.equal(fs.readFileSync((await download.path())!, 'utf8'), csv, 'the downloaded file is the gateway\'s CSV');

  // A bad row: the row and column are shown, nothing is applied.
  const lines = csv.trimEnd().split(/\r?\n/);
  const head = lines[0]!.split(',');
  const addrCol = head.indexOf('memory.address');
  t.ok(addrCol > 0, 'the CSV has a memory.address column');
  const rowOf = (name: string) => lines.findIndex((l) => l.split(',')[0] === name);
  const bad = lines.map((l, i) => (i === rowOf('speed') ? l.split(',').map((v, j) => (j === addrCol ? '70000' : v)).join(',') : l));
  const upload = page.getByLabel('Channels file (.csv)');
  await upload.setInputFiles({ name: 'bad.csv', mimeType: 'text/csv', buffer: Buffer.from(bad.join('\r\n') + '\r\n') });
  await page.getByLabel(/Replace:/).check();
  const refused = page.waitForResponse((r) => r.url().includes('_channels.csv?mode=replace'));
  await page.getByRole('button', { name: 'Upload CSV' }).click();
  t.equal((await refused).status(), 400);
  const note = page.locator('.csv-note.error');
  await note.waitFor();
  const col = String.fromCharCode(65 + addrCol);
  t.match(await note.innerText(), new RegExp(`The file was not applied:[\\s\\S]*row ${rowOf('speed') + 1}, column ${col} \\(memory\\.address\\): 70000`), 'the row and column of the problem');
  t.equal(await csvOf(), csv, 'the asset is unchanged');
  t.same((await admin.request('/services/assets/pump')).json().map((c: { name: string }) => c.name), ['level', 'speed', 'label'], 'its channels too');
  await screenshot(page, 'asset-csv-refused');

  // A merge adding a channel: applied, the view shows it.
  const added = lines.concat(lines[rowOf('level')]!.replace(/^level,/, 'level2,'));
  await upload.setInputFiles({ name: 'more.csv', mimeType: 'text/csv', buffer: Buffer.from(added.join('\r\n') + '\r\n') });
  await page.getByLabel(/Merge:/).check();
  await page.getByRole('button', { name: 'Upload CSV' }).click();
  await page.getByText('Applied more.csv (merge): the asset now has 4 channels.').waitFor();
  await page.getByRole('rowheader', { name: 'level2', exact: true }).waitFor();
  t.same((await admin.request('/services/assets/pump')).json().map((c: { name: string }) => c.name), ['level', 'speed', 'label', 'level2'], 'the channel was added');

  // Leaving the asset stops its refreshes: no _read, _status or _history of it afterwards.
  const polls: { at: number; url: string }[] = [];
  page.on('request', (r) => {
    if (/\/assets\/pump\/_(read|status|history)/.test(r.url())) polls.push({ at: Date.now(), url: r.url() });
  });
  await until(() => polls.some((p) => p.url.includes('_history')), 12_000, 'the trends refresh while the asset is shown');
  // (Packages: the Status view and the assets list ask for each asset's _status themselves.)
  await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Packages' }).click();
  const left = Date.now();
  await new Promise((r) => setTimeout(r, 6500));
  t.same(polls.filter((p) => p.at > left + 300).map((p) => p.url), [], 'nothing of the asset asked for after leaving it (its values every 2 s, its trends every 5 s)');

  t.same(problems.filter((p) => !/status of 400/.test(p)), [], 'no console errors, page errors or CSP violations');
});
