// Cross-site request forgery in a real browser (docs/rest-api.md "Cross-site requests"): a
// technician's chromium holds BASIC credentials for the device; a page of another site (another
// loopback address, 127.0.0.2) and a page of another port of the device's own host (same site,
// another origin) submit a multipart form with a package whose plug-in would run in the daemon, post
// it with fetch, and post a body-less form to a configuration snapshot. None is honoured: the form
// lands on 403 `Cross-site request refused`, no package is installed, no plug-in ran, no snapshot
// was written. The same upload from a page of the device's own origin, with the same cached
// credentials, installs, so the credentials were there to be abused.

import t, { type Test } from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startDaemon, type Daemon } from '../helpers/daemon.js';
import { haveBrowser, launchBrowser } from '../helpers/browser.js';
import { buildDp, exampleDriverExtension } from '../helpers/dp.js';

const PASSWORD = 'Xsite-Browser-1';
const BASIC = { authorization: `Basic ${Buffer.from(`admin:${PASSWORD}`).toString('base64')}` };
const PLUGIN_LINE = /example driver active.*xsitefactory/;

const evilPackage = buildDp({ name: 'org.evil.xsite', version: '6.6.6', files: { 'x.js': exampleDriverExtension('xsitefactory') }, extensions: ['x.js'] });

/** The attacker's page: builds the package in script, puts it in a file input, submits the form on load. */
function attackPage(device: string, how: 'form' | 'fetch' | 'bodiless'): string {
  const pkg = evilPackage.toString('base64');
  const upload = `${device}/services/deploy/v2/_upload`;
  const script =
    how === 'form'
      ? `const bytes = Uint8Array.from(atob('${pkg}'), (c) => c.charCodeAt(0));
         const dt = new DataTransfer(); dt.items.add(new File([bytes], 'update.dp'));
         document.getElementById('file').files = dt.files;
         document.getElementById('f').submit();`
      : how === 'fetch'
        ? `const bytes = Uint8Array.from(atob('${pkg}'), (c) => c.charCodeAt(0));
           const fd = new FormData(); fd.append('file', new File([bytes], 'update.dp'));
           fetch('${upload}', { method: 'POST', body: fd, mode: 'no-cors', credentials: 'include' })
             .then(() => (document.title = 'sent'), (e) => (document.title = 'error ' + e));`
        : `document.getElementById('b').submit();`;
  return `<!doctype html><html><head><title>win a prize</title></head><body>
<form id="f" method="post" enctype="multipart/form-data" action="${upload}"><input type="file" name="file" id="file"></form>
<form id="b" method="post" enctype="text/plain" action="${device}/services/configuration/v2/snapshots/_write"></form>
<script>${script}</script></body></html>`;
}

/** A web server of the attacker's on `host`, serving attackPage at /form, /fetch and /bodiless. */
async function attackerSite(t: Test, host: string, device: string): Promise<string> {
  const server = http.createServer((req, res) => {
    const how = (req.url ?? '').slice(1) as 'form' | 'fetch' | 'bodiless';
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(attackPage(device, how));
  });
  await new Promise<void>((r) => server.listen(0, host, () => r()));
  t.teardown(() => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }));
  return `http://${host}:${(server.address() as AddressInfo).port}`;
}

async function deployState(d: Daemon) {
  return {
    packages: (await d.request('/services/deploy/v2', { headers: BASIC })).body,
    uploads: (await d.request('/services/deploy/v2/_jobs', { headers: BASIC })).json().filter((j: any) => j.kind === 'install').length,
    snapshots: (await d.request('/services/configuration/v2/snapshots', { headers: BASIC })).json().ids.length,
  };
}

t.test('a page of another site or port cannot make the browser upload a package or write a snapshot', async (t) => {
  if (!haveBrowser(t)) return;
  const d = await startDaemon(t, {
    'log.level': 'debug',
    identities: { admin: { password: PASSWORD, permissions: ['kura.admin'], passwordChangeNeeded: false } },
  });
  const device = `http://127.0.0.1:${d.ports.http[0]}`;
  const sites = [
    ['another site (127.0.0.2)', await attackerSite(t, '127.0.0.2', device)],
    ['another port of the same host (same site, another origin)', await attackerSite(t, '127.0.0.1', device)],
  ] as const;
  const browser = await launchBrowser(t);
  // The technician's browser: it answered the device's Basic challenge, so it holds the credentials.
  const context = await browser.newContext({ httpCredentials: { username: 'admin', password: PASSWORD, origin: device } });
  context.setDefaultTimeout(20_000);
  t.teardown(() => context.close());
  const page = await context.newPage();
  // What chromium sent with each post to the device (the headers as they went out).
  // (Playwright may report a no-cors fetch with its provisional headers only, without Sec-Fetch-*.)
  const seen: Promise<{ origin?: string; site?: string }>[] = [];
  page.on('request', (r) => {
    if (r.url().startsWith(device) && r.method() === 'POST') seen.push(r.allHeaders().then((h) => ({ origin: h.origin, site: h['sec-fetch-site'] })));
  });
  const visit = await page.goto(`${device}/services/deploy/v2`);
  t.equal(visit?.status(), 200, 'the technician opened the device with BASIC credentials');
  t.equal(await page.innerText('body'), '[]');
  const before = await deployState(d);

  for (const [what, site] of sites) {
    await t.test(`${what}: a multipart form submitted on load`, async (t) => {
      const landed = page.waitForURL(`${device}/services/deploy/v2/_upload`);
      await page.goto(`${site}/form`);
      await landed;
      t.equal(await page.innerText('body'), 'Cross-site request refused', 'the browser shows the refusal');
    });
    await t.test(`${what}: the same upload posted with fetch (no-cors, credentials included)`, async (t) => {
      await page.goto(`${site}/fetch`);
      await page.waitForFunction(() => document.title !== 'win a prize');
      t.equal(await page.title(), 'sent', 'the browser sent it');
    });
    await t.test(`${what}: a body-less form to snapshots/_write`, async (t) => {
      const landed = page.waitForURL(`${device}/services/configuration/v2/snapshots/_write`);
      await page.goto(`${site}/bodiless`);
      await landed;
      t.match(await page.innerText('body'), /Cross-site request refused/);
    });
  }
  const marks = await Promise.all(seen);
  t.same(marks.map((m) => m.origin), [sites[0][1], sites[0][1], sites[0][1], sites[1][1], sites[1][1], sites[1][1]], 'chromium sent each post with the attacker\'s Origin');
  t.same(marks.filter((m) => m.site !== undefined).map((m) => m.site), ['cross-site', 'cross-site', 'same-site', 'same-site'], 'and the form posts with Sec-Fetch-Site');
  await d.request('/services/deploy/v2', { headers: BASIC }); // one round trip more for a job to show
  t.same(await deployState(d), before, 'no package installed, no install job, no snapshot written');
  t.notOk(d.logs.some((l) => PLUGIN_LINE.test(l)), 'the package\'s plug-in never ran');

  await t.test('the same upload from a page of the device\'s own origin installs (the credentials were cached)', async (t) => {
    await page.goto(`${device}/services/deploy/v2`);
    const r = await page.evaluate(async (b64) => {
      const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
      const fd = new FormData();
      fd.append('file', new File([bytes], 'update.dp'));
      const res = await fetch('/services/deploy/v2/_upload', { method: 'POST', body: fd });
      return { status: res.status, body: await res.text() };
    }, evilPackage.toString('base64'));
    t.same(r, { status: 200, body: '"REQUEST_RECEIVED"' });
    await d.waitForLog(PLUGIN_LINE, 15_000);
    t.equal((await d.request('/services/deploy/v2', { headers: BASIC })).body, '[{"name":"org.evil.xsite","version":"6.6.6"}]');
  });
});
