// Cross-site requests (docs/rest-api.md "Cross-site requests") against the real daemon: a request
// that changes state and that the browser marks as another site's (`Sec-Fetch-Site: cross-site` or
// `same-site`, an `Origin` other than the device's own, `Origin: null`) is refused with 403 on every
// family, with the administrator's BASIC credentials or session, before authentication has any
// effect; the family's error style (JSON or text); nothing is changed, no password is checked, no
// session ends. Clients that send neither header, the device's own pages (`same-origin`, an Origin
// equal to the request's scheme and Host) and typed addresses (`none`) are served as before.

import t, { type Test } from 'tap';
import { startDaemon, type Daemon, type RequestOptions, type Response } from '../helpers/daemon.js';
import { buildDp, exampleDriverExtension } from '../helpers/dp.js';

const PASSWORD = 'Xsite-Admin-1';
const BASIC = { authorization: `Basic ${Buffer.from(`admin:${PASSWORD}`).toString('base64')}` };
const REFUSED = 'Cross-site request refused';

const config = {
  'log.level': 'debug',
  identities: { admin: { password: PASSWORD, permissions: ['kura.admin'], passwordChangeNeeded: false } },
  drivers: { sim: { factory: 'simulator' } },
  assets: { demo: { 'driver.pid': 'sim', channels: { setpoint: { type: 'READ_WRITE', 'value.type': 'DOUBLE', simulation: 'memory', initial: 21.5 } } } },
};

/** A multipart form as a browser submits it: the package in the part `file`. */
function multipart(file: Buffer): { body: Buffer; type: string } {
  const boundary = '----formboundaryXsite7';
  const head = `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="evil.dp"\r\nContent-Type: application/octet-stream\r\n\r\n`;
  return { body: Buffer.concat([Buffer.from(head), file, Buffer.from(`\r\n--${boundary}--\r\n`)]), type: `multipart/form-data; boundary=${boundary}` };
}

const evil = multipart(buildDp({ name: 'org.evil.plugin', version: '1.0.0', files: { 'x.js': exampleDriverExtension('evilfactory') }, extensions: ['x.js'] }));

interface Change {
  what: string;
  path: string;
  method: string;
  style: 'json' | 'text';
  body?: Buffer | string | object;
  type?: string;
}

/** One state-changing request of each family (and each method), as a form or a script would send it. */
const CHANGES: Change[] = [
  { what: 'session login', method: 'POST', path: '/services/session/v1/login/password', style: 'json', body: { username: 'admin', password: PASSWORD } },
  { what: 'identity create', method: 'POST', path: '/services/identity/v1/identities', style: 'json', body: { userName: 'mallory', password: 'Mallory-pass-1', permissions: ['kura.admin'] } },
  { what: 'identity update', method: 'PUT', path: '/services/identity/v1/identities', style: 'json', body: { userName: 'admin', permissions: [] } },
  { what: 'asset write', method: 'POST', path: '/services/assets/demo/_write', style: 'text', body: { channels: [{ name: 'setpoint', type: 'DOUBLE', value: '99.5' }] } },
  { what: 'package upload', method: 'POST', path: '/services/deploy/v2/_upload', style: 'text', body: evil.body, type: evil.type },
  { what: 'package uninstall', method: 'DELETE', path: '/services/deploy/v2/org.example.kept', style: 'text' },
  { what: 'configuration reset', method: 'POST', path: '/services/configuration/v2/_reset', style: 'json' },
  { what: 'snapshot write', method: 'POST', path: '/services/configuration/v2/snapshots/_write', style: 'json' },
  { what: 'snapshot rollback', method: 'POST', path: '/services/configuration/v2/snapshots/_rollback', style: 'json' },
];

function send(d: Daemon, c: Change, headers: Record<string, string>, o: RequestOptions = {}): Promise<Response> {
  const h: Record<string, string> = { ...headers };
  if (c.type) h['content-type'] = c.type;
  return d.request(c.path, { method: c.method, body: c.body, headers: h, ...o });
}

function assertRefused(t: Test, r: Response, c: Change, form: string): void {
  const label = `${c.what} (${c.method}) with ${form}`;
  t.equal(r.status, 403, `${label}: 403`);
  if (c.style === 'json') {
    t.match(r.headers['content-type'], /^application\/json/, `${label}: JSON`);
    t.same(r.body && JSON.parse(r.body), { message: REFUSED }, `${label}: the JSON message`);
  } else {
    t.match(r.headers['content-type'], /^text\/plain/, `${label}: text`);
    t.equal(r.body, REFUSED, `${label}: the text message`);
  }
  t.equal(r.headers['www-authenticate'], undefined, `${label}: no Basic challenge`);
  t.equal(r.headers['set-cookie'], undefined, `${label}: no session cookie`);
}

t.test('state changes a browser marks as cross-site are refused on every family, before authentication', async (t) => {
  const d = await startDaemon(t, config, { https: 1 });
  const port = d.ports.http[0]!;
  const host = `127.0.0.1:${port}`;
  const auth = (extra: Record<string, string>) => ({ ...BASIC, ...extra });

  // An installed package the uninstall would remove, and one snapshot more than the first, so a
  // rollback would change something.
  const kept = multipart(buildDp({ name: 'org.example.kept', version: '1.0.0' }));
  t.equal((await d.request('/services/deploy/v2/_upload', { method: 'POST', body: kept.body, headers: { ...BASIC, 'content-type': kept.type } })).status, 200);
  for (let i = 0; i < 50 && (await d.request('/services/deploy/v2', { headers: BASIC })).body === '[]'; i++) await new Promise((r) => setTimeout(r, 50));
  t.equal((await d.request('/services/configuration/v2/snapshots/_write', { method: 'POST', headers: BASIC })).status, 200);
  const state = async () => ({
    packages: (await d.request('/services/deploy/v2', { headers: BASIC })).body,
    jobs: (await d.request('/services/deploy/v2/_jobs', { headers: BASIC })).json().length,
    identities: (await d.request('/services/identity/v1/identities', { headers: BASIC })).body,
    setpoint: (await d.request('/services/assets/demo/_read', { headers: BASIC })).json()[0].value,
    snapshots: (await d.request('/services/configuration/v2/snapshots', { headers: BASIC })).body,
  });
  const before = await state();
  t.equal(before.packages, '[{"name":"org.example.kept","version":"1.0.0"}]');

  // A session, to show that a refused logout leaves it alive.
  const login = await d.request('/services/session/v1/login/password', { method: 'POST', body: { username: 'admin', password: PASSWORD } });
  t.equal(login.status, 200);
  const cookie = String(login.headers['set-cookie']).split(';')[0]!;
  const xsrf = (await d.request('/services/session/v1/xsrfToken', { headers: { cookie } })).json().xsrfToken;
  const session = { cookie, 'x-xsrf-token': xsrf };

  const FORMS: [string, Record<string, string>][] = [
    ['Sec-Fetch-Site: cross-site', { 'sec-fetch-site': 'cross-site' }],
    ['Sec-Fetch-Site: same-site (another port of the same host)', { 'sec-fetch-site': 'same-site' }],
    ['an unknown Sec-Fetch-Site value', { 'sec-fetch-site': 'elsewhere' }],
    ['Origin of another host', { origin: 'http://127.0.0.2:8000' }],
    ['Origin of another port', { origin: `http://127.0.0.1:${port + 1}` }],
    ['Origin with the other scheme', { origin: `https://${host}` }],
    ['Origin: null', { origin: 'null' }],
    ['a foreign Origin with Sec-Fetch-Site: same-origin', { origin: 'http://evil.example', 'sec-fetch-site': 'same-origin' }],
    ['Sec-Fetch-Site: cross-site with the device\'s own Origin', { origin: `http://${host}`, 'sec-fetch-site': 'cross-site' }],
  ];
  const logsBefore = d.logs.length;
  await t.test('every family, every header form, with BASIC credentials', async (t) => {
    for (const [form, headers] of FORMS) {
      for (const c of CHANGES) assertRefused(t, await send(d, c, auth(headers)), c, form);
    }
  });
  await t.test('with the session cookie and its XSRF token: logout refused, the session lives on', async (t) => {
    const logout = { what: 'session logout', method: 'POST', path: '/services/session/v1/logout', style: 'json' } as const;
    assertRefused(t, await send(d, logout, { ...session, 'sec-fetch-site': 'cross-site' }), logout, 'a session and Sec-Fetch-Site: cross-site');
    assertRefused(t, await send(d, logout, { ...session, origin: 'null' }), logout, 'a session and Origin: null');
    const w = CHANGES.find((c) => c.what === 'asset write')!;
    assertRefused(t, await send(d, w, { ...session, origin: 'http://127.0.0.2:8000' }), w, 'a session and a foreign Origin');
    t.equal((await d.request('/services/session/v1/currentIdentity', { headers: session })).status, 200, 'the session still authenticates');
  });
  await t.test('wrong passwords sent cross-site are never checked nor counted', async (t) => {
    const wrong = { authorization: `Basic ${Buffer.from('admin:wrong-password').toString('base64')}` };
    for (let i = 0; i < 20; i++) {
      const r = await d.request('/services/session/v1/login/password', { method: 'POST', body: { username: 'admin', password: `wrong-${i}` }, headers: { 'sec-fetch-site': 'cross-site' } });
      t.equal(r.status, 403);
      t.equal((await d.request('/services/assets/demo/_write', { method: 'POST', body: {}, headers: { ...wrong, origin: 'null' } })).status, 403);
    }
    const lines = d.logs.slice(logsBefore);
    t.same(lines.filter((l) => /password (authentication failed|attempt refused|hash computed)|session (created|ended)|identity (created|updated)|package installed|example driver active/.test(l)), [], 'no password check, throttle, session, identity or package event');
    const r = await d.request('/services/session/v1/login/password', { method: 'POST', body: { username: 'admin', password: PASSWORD }, headers: { 'sec-fetch-site': 'same-origin', origin: `http://${host}` } });
    t.equal(r.status, 200, 'the right password from the device\'s own page logs in (not throttled)');
  });
  const after = await state();
  t.same(after, before, 'nothing changed: packages, jobs, identities, asset value, snapshots');
  t.notOk(d.logs.some((l) => /evilfactory|org\.evil\.plugin/.test(l)), 'the uploaded plug-in never ran');

  await t.test('safe methods are served whatever the marks', async (t) => {
    for (const [form, headers] of FORMS) {
      const r = await d.request('/services/deploy/v2', { headers: auth(headers) });
      t.equal(r.status, 200, `GET with ${form}`);
    }
    const head = await d.request('/services/deploy/v2', { method: 'HEAD', headers: auth({ 'sec-fetch-site': 'cross-site' }) });
    t.not(head.status, 403, 'HEAD is not refused');
  });

  await t.test('non-browser clients, the device\'s own pages and typed addresses are served', async (t) => {
    const write = CHANGES.find((c) => c.what === 'snapshot write')!;
    const ALLOWED: [string, Record<string, string>][] = [
      ['no Origin and no Sec-Fetch-*', {}],
      ['Sec-Fetch-Site: same-origin', { 'sec-fetch-site': 'same-origin' }],
      ['Sec-Fetch-Site: none', { 'sec-fetch-site': 'none' }],
      ['the device\'s own Origin', { origin: `http://${host}` }],
      ['own Origin and same-origin', { origin: `http://${host}`, 'sec-fetch-site': 'same-origin' }],
      ['own Origin, Host in capitals', { origin: 'http://localhost', host: 'LOCALHOST' }],
      ['own Origin without the default port, Host with it', { origin: 'http://device.example', host: 'device.example:80' }],
      ['own Origin with the default port, Host without it', { origin: 'http://device.example:80', host: 'device.example' }],
    ];
    for (const [form, headers] of ALLOWED) {
      const r = await send(d, write, auth(headers));
      t.equal(r.status, 200, `snapshot write with ${form}: ${r.body}`);
    }
    const w = CHANGES.find((c) => c.what === 'asset write')!;
    t.equal((await send(d, w, auth({ 'sec-fetch-site': 'same-origin', origin: `http://${host}` }))).status, 200, 'asset write from the device\'s own page');
    t.equal((await d.request('/services/assets/demo/_read', { headers: BASIC })).json()[0].value, 99.5);
    // Another port is another origin, even with the same Host name; the default port of the other
    // scheme is not this one's.
    t.equal((await send(d, write, auth({ origin: 'http://device.example:443', host: 'device.example' }))).status, 403, 'http Origin on :443 against Host without a port');
    // The upload the attack tried, from the device's own page, installs: the refusal above was the stage, not a broken upload.
    const up = CHANGES.find((c) => c.what === 'package upload')!;
    t.equal((await send(d, up, auth({ 'sec-fetch-site': 'same-origin', origin: `http://${host}` }))).status, 200);
    await d.waitForLog(/example driver active.*evilfactory/, 15_000);
  });

  await t.test('over HTTPS the device\'s origin is https://host', async (t) => {
    const tls = { port: d.ports.https[0]!, tls: true };
    const own = `https://127.0.0.1:${d.ports.https[0]}`;
    const write = CHANGES.find((c) => c.what === 'snapshot write')!;
    t.equal((await send(d, write, auth({ origin: own, 'sec-fetch-site': 'same-origin' }), tls)).status, 200, 'own https Origin');
    assertRefused(t, await send(d, write, auth({ origin: `http://127.0.0.1:${d.ports.https[0]}` }), tls), write, 'an http Origin on the HTTPS port');
    assertRefused(t, await send(d, write, auth({ origin: `https://127.0.0.1:${port}` }), tls), write, 'the HTTP port\'s origin on the HTTPS port');
  });
});
