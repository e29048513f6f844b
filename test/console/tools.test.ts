// The console's commissioning tools (docs/console.md "Tools") in Debian's chromium against the real
// daemon and a pymodbus TCP device: probe (raw registers beside the decoded value; a write only
// after the explicit confirmation), scan with its progress bar, cancel, the found units with their
// identification and "Read identification", the RTU sweep fields and a refused scan, and the live
// request log, polled while the view is open and no longer once it is left.

import t from 'tap';
import { startDaemon } from '../helpers/daemon.js';
import { haveBrowser, launchBrowser, openPage, screenshot, logIn } from '../helpers/browser.js';
import { havePeers, startPyModbusTcp } from '../helpers/pymodbus.js';

const PASSWORD = 'Admin-pass1';
const IDENTITY = { VendorName: 'Acme Pumps', ProductCode: 'P-7', MajorMinorRevision: '2.4' };

t.test('tools: probe, confirmed write, scan with progress and cancel, identification, request log', async (t) => {
  if (!haveBrowser(t) || !havePeers(t, 'pymodbus')) return;
  const dev = await startPyModbusTcp(t, { units: [1, 7], identity: IDENTITY });
  await dev.set(1, 'hr', 9, [0x4148, 0x0000]); // 12.5 as FLOAT32 at memory.address 10
  const d = await startDaemon(t, {
    identities: { admin: { password: PASSWORD, permissions: ['kura.admin'] } },
    drivers: {
      plc: { factory: 'modbus', 'access.type': 'TCP', 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': dev.port, 'modbus.timeout': 150, 'modbus.transaction.retry': 0 },
      line2: { factory: 'modbus', 'access.type': 'RTU', 'modbus.rtu.port.name': '/dev/gatewayd-test-no-such-port' },
      sim: { factory: 'simulator' },
    },
  }, { http: 0, https: 1 });

  const browser = await launchBrowser(t);
  const { page, problems } = await openPage(browser);
  const probes: string[] = [];
  let logCalls = 0;
  page.on('request', (r) => {
    if (r.url().endsWith('/_probe')) probes.push(r.postData() ?? '');
    if (/\/_log(\?|$)/.test(r.url())) logCalls++;
  });
  await logIn(page, `https://127.0.0.1:${d.ports.https[0]}`, 'admin', PASSWORD);
  await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Tools' }).click();
  const instances = page.getByRole('table', { name: 'Driver instances' });
  await instances.waitFor();
  t.match(await instances.innerText(), /plc\s+modbus \(TCP\)\s+attached\s+probe, scan, identification, log/, 'the Modbus instance with its tools');
  t.match(await instances.innerText(), /sim\s+simulator\s+attached\s+none/, 'the simulator has none');
  t.equal(await instances.getByRole('link', { name: 'sim' }).count(), 0, 'and no link to tools it does not have');
  await instances.getByRole('link', { name: 'plc' }).click();

  // Probe: raw registers beside the decoded value.
  const probe = page.getByRole('region', { name: 'Probe' });
  await probe.getByLabel('Unit id').fill('1');
  await probe.getByLabel('Table').selectOption('HOLDING_REGISTERS');
  await probe.getByLabel('Address (1-based)').fill('10');
  await probe.getByLabel('Data type').selectOption('FLOAT32');
  await probe.getByRole('button', { name: 'Read' }).click();
  await probe.getByText('Decoded value:').waitFor();
  t.equal(await probe.locator('.probe-value').innerText(), 'Decoded value: 12.5 (FLOAT)');
  const regs = probe.getByRole('table', { name: 'Raw registers' });
  t.same(await regs.locator('tbody tr').allInnerTexts(), ['10\t16712\t0x4148', '11\t0\t0x0000'], 'each raw register with its address and hex');

  // A device exception shows the gateway's message.
  await probe.getByLabel('Address (1-based)').fill('5000');
  await probe.getByRole('button', { name: 'Read' }).click();
  await probe.getByText(/Modbus exception 2 \(ILLEGAL DATA ADDRESS\)/).waitFor();
  t.pass('a Modbus exception is shown');

  // A write waits for its confirmation, and Cancel sends nothing.
  await probe.getByLabel('Address (1-based)').fill('200');
  await probe.getByLabel('Data type').selectOption('INT32');
  await probe.getByLabel('Value').fill('70000');
  const before = await dev.get(1, 'hr', 199, 2);
  const sentBefore = probes.length;
  await probe.getByRole('button', { name: 'Write…' }).click();
  const confirmBox = probe.getByRole('alert');
  await confirmBox.waitFor();
  t.match(await confirmBox.innerText(), /Write 70000 as INT32 \(BIG_ENDIAN\) to HOLDING_REGISTERS 200 on unit 1\?/, 'the confirmation names what goes where');
  await screenshot(page, 'tools-probe');
  await probe.getByRole('button', { name: 'Cancel' }).click();
  await probe.getByText('Nothing was written.').waitFor();
  t.equal(probes.length, sentBefore, 'no request before the confirmation, none after Cancel');
  t.same(await dev.get(1, 'hr', 199, 2), before, 'the device is unchanged');
  await probe.getByRole('button', { name: 'Write…' }).click();
  await Promise.all([page.waitForResponse((r) => r.url().endsWith('/_probe')), probe.getByRole('button', { name: 'Confirm write' }).click()]);
  await probe.getByText('Written:').waitFor();
  t.same(await dev.get(1, 'hr', 199, 2), [1, 4464], '70000 written as INT32 after the confirmation');
  t.match(JSON.parse(probes.at(-1)!), { 'memory.address': 200, 'data.type': 'INT32', value: '70000', confirm: true }, 'sent with confirm: true');
  // Input registers cannot be written: the button is disabled.
  await probe.getByLabel('Table').selectOption('INPUT_REGISTERS');
  t.ok(await probe.getByRole('button', { name: 'Write…' }).isDisabled(), 'no write on a read-only table');

  // Scan 1..8 with identification: progress, the two units, their identification.
  const scan = page.getByRole('region', { name: 'Scan for units' });
  t.equal(await scan.getByText('Baud rates to try').count(), 0, 'no RTU sweep fields on a TCP line');
  await scan.getByLabel('First unit').fill('1');
  await scan.getByLabel('Last unit').fill('8');
  await scan.getByLabel('Also read the identification of each unit found').check();
  const seen = new Set<string>();
  const watch = setInterval(() => void scan.getByRole('progressbar').getAttribute('value').then((v) => v !== null && seen.add(v), () => {}), 100);
  await scan.getByRole('button', { name: 'Start scan' }).click();
  await scan.getByText(/^Done: 100 %, 2 units found\.$/).waitFor({ timeout: 30_000 });
  clearInterval(watch);
  t.equal(await scan.getByRole('progressbar').evaluate((b: HTMLProgressElement) => b.value), 100, 'the bar is full');
  const found = scan.getByRole('table', { name: 'Units found' });
  t.same(await found.locator('tbody th').allInnerTexts(), ['1', '7'], 'the units that answer');
  t.match(await found.locator('tbody tr').first().innerText(), /Acme Pumps · P-7 · 2\.4/, 'with the identification the scan read');
  await screenshot(page, 'tools-scan');
  await found.getByRole('button', { name: 'Read identification of unit 7' }).click();
  const ident = found.getByRole('definition').filter({ hasText: 'Acme Pumps' });
  await ident.waitFor();
  t.same(await found.locator('tbody tr').nth(1).getByRole('term').allInnerTexts(), ['VendorName', 'ProductCode', 'MajorMinorRevision'], '"Read identification" shows the objects by name');
  // The standalone form, and a unit that does not answer.
  const idSection = page.getByRole('region', { name: 'Device identification' });
  await idSection.getByLabel('Unit id').fill('1');
  await idSection.getByRole('button', { name: 'Read identification' }).click();
  await idSection.getByRole('definition').filter({ hasText: 'P-7' }).waitFor();
  await idSection.getByLabel('Unit id').fill('9');
  await idSection.getByRole('button', { name: 'Read identification' }).click();
  await idSection.locator('.error').waitFor();
  t.pass('a unit without an answer shows the error');

  // A long scan: the bar moves, Cancel stops it (DELETE) and the gateway says CANCELLED.
  await scan.getByLabel('Also read the identification of each unit found').uncheck();
  await scan.getByLabel('Last unit').fill('200');
  const started = page.waitForResponse((r) => r.url().endsWith('/_scan') && r.request().method() === 'POST');
  await scan.getByRole('button', { name: 'Start scan' }).click();
  const { id } = await (await started).json();
  await page.waitForFunction(() => {
    const b = document.querySelector('progress[aria-label="Scan progress"]') as HTMLProgressElement | null;
    return !!b && !b.hidden && b.value > 0 && b.value < 100;
  }, undefined, { timeout: 20_000 });
  await Promise.all([page.waitForResponse((r) => r.request().method() === 'DELETE'), scan.getByRole('button', { name: 'Cancel scan' }).click()]);
  await scan.getByText(/^Cancelled: \d+ %/).waitFor();
  const after = await d.request(`/services/drivers/plc/_scan/${id}`, { tls: true, port: d.ports.https[0], headers: { authorization: `Basic ${Buffer.from(`admin:${PASSWORD}`).toString('base64')}` } });
  t.equal(after.json().state, 'CANCELLED', 'the gateway cancelled the scan');
  t.ok(after.json().progress < 1, `stopped part way (${after.json().progress})`);
  t.ok(await scan.getByRole('button', { name: 'Cancel scan' }).isHidden(), 'Cancel goes away');
  t.ok(seen.size >= 1, `progress values shown while scanning: ${[...seen].join(', ')}`);

  // The request log: the exchanges of this session, newest first, exceptions named; raw frames on demand.
  const log = page.getByRole('region', { name: 'Request log' });
  const logTable = log.getByRole('table', { name: 'Request log, newest first' });
  await logTable.waitFor();
  await logTable.locator('tr[data-result="exception"]').first().waitFor();
  t.match(await logTable.locator('tr[data-result="exception"]').first().innerText(), /\t1\t3 read holding registers\t5000\t2\texception 2\t/, 'the exception of the probe at 5000');
  t.match(await logTable.locator('tr[data-result="ok"]').filter({ hasText: 'read holding registers' }).first().innerText(), /\t3 read holding registers\t1\t1\tok\t[\d.]+ ms$/, 'an answered scan request');
  t.match(await logTable.locator('tr[data-result="ok"]').filter({ hasText: 'device identification' }).first().innerText(), /\t43 device identification\t—\t—\tok\t/, 'an identification read');
  t.ok(await logTable.locator('tr[data-result="timeout"]').count() > 0, 'the units that did not answer are timeouts');
  await log.getByLabel('Show raw frames (PDUs in hex)').check();
  await log.getByRole('columnheader', { name: 'Request PDU' }).waitFor();
  await logTable.locator('tr[data-result="exception"] td.frame').first().filter({ hasText: '0313870002' }).waitFor();
  t.equal(await logTable.locator('tr[data-result="exception"] td.frame').nth(1).innerText(), '8302', 'the exception response PDU');
  await screenshot(page, 'tools-log');

  // Polled every second while open; not once the view is left.
  const n0 = logCalls;
  await page.waitForTimeout(2200);
  t.ok(logCalls - n0 >= 1, `polled while open (${logCalls - n0} calls in 2.2 s)`);
  await page.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Status' }).click();
  await page.getByRole('heading', { name: 'Status', level: 1 }).waitFor();
  await page.waitForTimeout(300);
  const n1 = logCalls;
  await page.waitForTimeout(2200);
  t.equal(logCalls, n1, 'no request log call after the view was left');

  // An RTU line: the sweep fields, sent; a range the server refuses is shown as its 400.
  await page.goto(`https://127.0.0.1:${d.ports.https[0]}/console/#/tools/line2`);
  const rtuScan = page.getByRole('region', { name: 'Scan for units' });
  await rtuScan.getByText('Baud rates to try').waitFor();
  await rtuScan.getByLabel('19200').check();
  await rtuScan.getByLabel('even', { exact: true }).check();
  await rtuScan.getByLabel('First unit').fill('0');
  await rtuScan.getByLabel('Last unit').fill('3');
  const refused = page.waitForResponse((r) => r.url().endsWith('/_scan') && r.request().method() === 'POST');
  await rtuScan.getByRole('button', { name: 'Start scan' }).click();
  const answer = await refused;
  t.same(JSON.parse(answer.request().postData()!), { units: [0, 3], baudRates: [19200], parities: ['even'] }, 'the sweep fields are sent');
  t.equal(answer.status(), 400, 'unit 0 is not on an RTU line');
  const { error } = await answer.json();
  await rtuScan.getByText(`Scan refused: ${error}`, { exact: true }).waitFor();
  t.ok(await rtuScan.getByRole('button', { name: 'Start scan' }).isEnabled(), 'the form stays usable');
  t.ok(await rtuScan.getByRole('progressbar').isHidden(), 'no progress bar for a refused scan');

  t.same(problems.filter((p) => !/status of 40\d|status of 50\d/.test(p)), [], 'no console errors, page errors or CSP violations');
});
