// Security pass (README "Robustness", the security pass), against one daemon that goes through a full run: logins (right and
// wrong), a forced password change, BASIC, identity creation and edits, package uploads, MQTT with
// credentials, HTTPS with its generated key. Each point of the pass is a subtest:
//   - `Cache-Control: no-store` and `X-Content-Type-Options: nosniff` on every API answer
//   - path traversal through package names, uploads, file: URLs and asset ids
//   - header (and log line) injection through banner text and names
//   - file permissions of dataDir (0700) and of key and state files (0600), even under umask 000
//   - no password, token, cookie or private key in any log line of the run (last, greps them all)
// TLS versions and suites are in security-tls.test.ts.

import t from 'tap';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startDaemon, type Response } from '../helpers/daemon.js';
import { Browser, basic, login } from '../helpers/session-client.js';
import { buildDp, buildZip } from '../helpers/dp.js';
import { freePort } from '../helpers/ports.js';
import http from 'node:http';

const S = '/services/session/v1';
const DEPLOY = '/services/deploy/v2';
const ASSETS = '/services/assets';
const IDENTITY = '/services/identity/v1';

// Every secret of the run is random, so finding one in a log line cannot be a coincidence.
const secret = (label: string) => `${label}-${crypto.randomBytes(9).toString('base64url')}`;
const ADMIN_PW = secret('Adm1n!pw');
const OP_PW = secret('Op3r!pw');
const OP_PW2 = secret('Op3r!new');
const TECH_PW = secret('T3ch!pw');
const TECH_PW2 = secret('T3ch!new');
const WRONG_PW = secret('Wr0ng!pw');
const MQTT_PW = secret('Mq7t!pw');
const FAKE_COOKIE = secret('fakecookie');
const FAKE_XSRF = secret('fakexsrf');
const INJECT = 'X-Injected: yes';
const BANNER = `Authorised use only.\r\n${INJECT}\r\nSet-Cookie: JSESSIONID=evil\r\n\r\n<script>alert(1)</script>`;
// Unique marker for files a traversal would create outside dataDir.
const MARK = `gw-escape-${crypto.randomBytes(4).toString('hex')}`;

/** Secrets the run used; the log check at the end looks for each of them. */
const used = new Set<string>([ADMIN_PW, OP_PW, OP_PW2, TECH_PW, TECH_PW2, WRONG_PW, MQTT_PW, FAKE_COOKIE, FAKE_XSRF]);
const remember = (b: Browser) => {
  for (const v of b.cookies.values()) used.add(v);
  if (b.headers['x-xsrf-token']) used.add(b.headers['x-xsrf-token']);
};

// Permissions are checked under the most permissive umask: the daemon must not rely on the caller's.
const oldUmask = process.umask(0);
t.teardown(() => process.umask(oldUmask));

const mqttPort = await freePort(); // nothing listens: MQTT keeps retrying with its credentials
let allowedDir = '';
const d = await startDaemon(
  t,
  (_ports, dir) => {
    allowedDir = path.join(dir, 'allowed');
    fs.mkdirSync(allowedDir, { mode: 0o755 });
    return {
      'log.level': 'debug',
      rest: { 'login.throttle.max.delay': 0 },
      console: { 'access.banner.enabled': true, 'access.banner.content': BANNER, 'new.password.min.length': 8 },
      identities: {
        admin: { password: ADMIN_PW, permissions: ['kura.admin'], passwordChangeNeeded: false },
        operator: { password: OP_PW, permissions: ['rest.assets'], passwordChangeNeeded: true },
      },
      deploy: { 'file.allowed.dirs': [allowedDir] },
      mqtt: { enabled: true, 'broker-url': `mqtt://127.0.0.1:${mqttPort}`, username: 'gw', password: MQTT_PW },
    };
  },
  { http: 1, https: 1 },
);
process.umask(oldUmask);
const outsideDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-outside-'));
t.teardown(() => fs.rmSync(outsideDir, { recursive: true, force: true }));

const admin = await login(d, 'admin', ADMIN_PW);
remember(admin);

/** Waits until no deployment job is queued or running; returns the job list. */
async function jobsSettled(): Promise<any[]> {
  for (let i = 0; i < 200; i++) {
    const jobs = (await admin.request(`${DEPLOY}/_jobs`)).json<any[]>();
    if (jobs.every((j) => j.state !== 'QUEUED' && j.state !== 'RUNNING')) return jobs;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('deployment jobs did not settle');
}

function multipart(file: Buffer, disposition: string): { body: Buffer; type: string } {
  const boundary = `----gw${crypto.randomBytes(8).toString('hex')}`;
  const body = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; ${disposition}\r\nContent-Type: application/octet-stream\r\n\r\n`),
    file,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return { body, type: `multipart/form-data; boundary=${boundary}` };
}

const upload = (file: Buffer, disposition = 'filename="p.dp"') => {
  const m = multipart(file, disposition);
  return admin.request(`${DEPLOY}/_upload`, { method: 'POST', body: m.body, headers: { 'content-type': m.type } });
};

/** Every path under `root` whose name contains the marker. */
function findMarked(root: string): string[] {
  const out: string[] = [];
  const walk = (dir: string) => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const p = path.join(dir, e.name);
      if (e.name.includes(MARK)) out.push(p);
      if (e.isDirectory() && !e.isSymbolicLink()) walk(p);
    }
  };
  walk(root);
  return out;
}

t.test('every API answer carries no-store and nosniff', async (t) => {
  const cases: [string, () => Promise<Response>, number][] = [
    ['authenticationInfo', () => d.request(`${S}/authenticationInfo`), 200],
    ['wrong password', () => new Browser(d).loginPassword('admin', WRONG_PW), 401],
    ['anonymous resource', () => d.request(ASSETS), 401],
    ['assets list', () => admin.request(ASSETS), 200],
    ['unknown asset', () => admin.request(`${ASSETS}/nope`), 404],
    ['unknown path', () => d.request('/nowhere'), 404],
    ['wrong method', () => d.request(`${S}/login/password`, { method: 'DELETE' }), 405],
    ['malformed JSON', () => d.request(`${S}/login/password`, { method: 'POST', body: '{"username":', headers: { 'content-type': 'application/json' } }), 400],
    ['wrong content type', () => d.request(`${S}/login/password`, { method: 'POST', body: 'x', headers: { 'content-type': 'text/plain' } }), 415],
    ['body too large', () => d.request(`${S}/login/password`, { method: 'POST', body: Buffer.alloc(2 * 1024 * 1024, 0x20), headers: { 'content-type': 'application/json' } }), 413],
    ['deploy list', () => admin.request(`${DEPLOY}/`), 200],
    ['deploy bad request', () => admin.request(`${DEPLOY}/_install`, { method: 'POST', body: {} }), 400],
    ['identity requirements', () => admin.request(`${IDENTITY}/passwordRequirements`), 200],
    ['xsrf token', () => admin.request(`${S}/xsrfToken`), 200],
    ['BASIC', () => basic(d, 'admin', ADMIN_PW).request(ASSETS), 200],
    ['BASIC wrong', () => basic(d, 'admin', WRONG_PW).request(ASSETS), 401],
    ['over HTTPS', () => d.request(`${S}/authenticationInfo`, { port: d.ports.https[0], tls: true }), 200],
    ['HTTPS unknown path', () => d.request('/nowhere', { port: d.ports.https[0], tls: true }), 404],
  ];
  used.add(Buffer.from(`admin:${ADMIN_PW}`).toString('base64'));
  used.add(Buffer.from(`admin:${WRONG_PW}`).toString('base64'));
  for (const [name, send, status] of cases) {
    const r = await send();
    t.equal(r.status, status, `${name}: status`);
    t.match(String(r.headers['cache-control']), /(^|,\s*)no-store(\s*,|$)/, `${name}: Cache-Control no-store`);
    t.equal(r.headers['x-content-type-options'], 'nosniff', `${name}: nosniff`);
  }
});

t.test('keep-alive: an error answer keeps the connection unless a body was left unread (then it says close)', async (t) => {
  // Found by robust/fuzz-http.mjs: a synchronous 404 used to destroy the kept-alive socket without
  // `Connection: close`, so the client's next request on it was reset.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => agent.destroy());
  const get = (p: string, method = 'GET', body?: string) =>
    new Promise<{ status: number; connection?: string; reused: boolean }>((resolve, reject) => {
      const headers: Record<string, string> = body === undefined ? {} : { 'content-type': 'text/plain', 'content-length': String(body.length + 10) };
      const req = http.request({ host: '127.0.0.1', port: d.ports.http[0], path: p, method, agent, headers }, (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, connection: res.headers.connection, reused: req.reusedSocket }));
      });
      req.on('error', reject);
      if (body === undefined) req.end();
      else req.write(body); // declared longer than sent: the daemon answers without reading it all
    });
  for (let i = 0; i < 5; i++) {
    const r = await get('/nowhere');
    t.same([r.status, r.connection], [404, 'keep-alive'], `404 #${i} keeps the connection`);
    if (i > 0) t.ok(r.reused, 'and the socket is reused');
  }
  const refused = await get(`${S}/login/password`, 'POST', '{"username":');
  t.same([refused.status, refused.connection], [415, 'close'], 'an unread body: the answer says Connection: close');
  t.equal((await get(`${S}/authenticationInfo`)).status, 200, 'the next request goes out on a fresh socket');
});

t.test('a full session life: forced password change, identity edits, wrong tokens and cookies', async (t) => {
  const op = new Browser(d);
  t.equal((await op.loginPassword('operator', OP_PW)).status, 200);
  await op.fetchToken();
  remember(op);
  t.equal((await op.request(`${S}/changePassword`, { method: 'POST', body: { currentPassword: OP_PW, newPassword: OP_PW2 } })).status, 204);
  const op2 = await login(d, 'operator', OP_PW2);
  remember(op2);
  t.equal((await op2.request(ASSETS)).status, 200);

  t.equal((await admin.request(`${IDENTITY}/identities`, { method: 'POST', body: { userName: 'tech', password: TECH_PW, permissions: ['rest.deploy'], passwordAuthEnabled: true } })).status, 200);
  t.equal((await admin.request(`${IDENTITY}/identities`, { method: 'PUT', body: { userName: 'tech', password: TECH_PW2 } })).status, 200);
  const tech = await login(d, 'tech', TECH_PW2);
  remember(tech);
  t.equal((await tech.request(`${DEPLOY}/`)).status, 200);

  const forged = await d.request(ASSETS, { headers: { cookie: `JSESSIONID=${FAKE_COOKIE}`, 'x-xsrf-token': FAKE_XSRF } });
  t.equal(forged.status, 401);
  const wrongToken = await op2.request(ASSETS, { headers: { 'x-xsrf-token': FAKE_XSRF } });
  t.equal(wrongToken.status, 401);
  t.equal((await new Browser(d).loginPassword('tech', TECH_PW)).status, 401, 'old password refused');
  t.equal((await op2.request(`${S}/logout`, { method: 'POST' })).status, 204);
});

t.test('path traversal through package names, uploads and file: URLs', async (t) => {
  const marker = path.join(d.dataDir, 'gatewayd-data.json');
  t.ok(fs.existsSync(marker));
  for (const name of ['..%2F..%2Fgatewayd-data.json', '..%2Fgatewayd-data.json', '%2e%2e', '..', `..%2F..%2F..%2Ftmp%2F${MARK}`]) {
    const r = await admin.request(`${DEPLOY}/${name}`, { method: 'DELETE' });
    t.ok(r.status < 500, `DELETE ${name}: ${r.status} ${r.body}`);
  }
  const raw = await admin.request(`${DEPLOY}/../../gatewayd-data.json`, { method: 'DELETE' });
  t.ok(raw.status < 500, `unencoded ../ is not a route: ${raw.status}`);
  await jobsSettled();
  t.ok(fs.existsSync(marker), 'dataDir marker still there');

  const escapes = [`../../../../${outsideDir.slice(1)}/${MARK}-name`, `..%2F${MARK}`, `/${outsideDir.slice(1)}/${MARK}`];
  for (const name of escapes) {
    const r = await upload(buildDp({ name, version: '1.0.0' }));
    t.equal(r.status, 200, `upload of a package named ${JSON.stringify(name)} is accepted for checking`);
  }
  for (const entry of [`../../../../${outsideDir.slice(1)}/${MARK}-entry.txt`, `${outsideDir}/${MARK}-abs.txt`, `a/../../${MARK}-dotdot.txt`]) {
    const dp = buildDp({ name: 'evil.entries', version: '1.0.0', files: { [entry]: 'owned' } });
    t.equal((await upload(dp)).status, 200);
  }
  const filename = `filename="../../../../${outsideDir.slice(1)}/${MARK}-upload.dp"`;
  t.equal((await upload(buildDp({ name: 'named.upload', version: '1.0.0' }), filename)).status, 200);
  const jobs = await jobsSettled();
  const installs = jobs.filter((j) => j.kind === 'install');
  t.ok(installs.length >= escapes.length + 3);
  for (const j of installs) {
    if (j.name === 'named.upload') t.equal(j.state, 'SUCCEEDED', 'a hostile upload file name does not matter: the file is stored under our own name');
    else t.equal(j.state, 'FAILED', `install ${j.url} refused: ${j.error}`);
  }
  const names = (await admin.request(`${DEPLOY}/`)).json<{ name: string }[]>().map((p) => p.name);
  t.same(names, ['named.upload'], 'only the harmless package is installed');
  t.same([...findMarked(d.dir), ...findMarked(outsideDir), ...findMarked(os.tmpdir())], [], 'nothing written outside the package folders');

  const outsideFile = path.join(outsideDir, `${MARK}-outside.dp`);
  fs.writeFileSync(outsideFile, buildDp({ name: 'outside', version: '1.0.0' }));
  for (const url of [`file:${allowedDir}/../../${path.relative(path.dirname(path.dirname(allowedDir)), outsideFile)}`, `file://${allowedDir}/%2e%2e/%2e%2e/${MARK}-outside.dp`, 'file:///etc/passwd', `file:${outsideFile}`]) {
    const r = await admin.request(`${DEPLOY}/_install`, { method: 'POST', body: { url } });
    t.equal(r.status, 400, `file: URL outside the allowed dirs refused: ${url} → ${r.body}`);
  }
  t.ok(fs.existsSync(outsideFile), 'the outside file is untouched');
  fs.rmSync(outsideFile);
});

t.test('path traversal through asset ids', async (t) => {
  for (const id of ['..', '%2e%2e', '..%2F..%2F..%2Fetc%2Fpasswd', '%2e%2e%2f%2e%2e%2fgatewayd-data.json', 'demo%2F..%2F..', '%00', 'demo%00.json']) {
    for (const [method, suffix] of [['GET', ''], ['GET', '/_read'], ['POST', '/_read'], ['POST', '/_write']] as const) {
      const r = await admin.request(`${ASSETS}/${id}${suffix}`, { method, body: method === 'POST' ? [] : undefined });
      t.ok(r.status === 404 || r.status === 400, `${method} ${id}${suffix}: ${r.status} ${r.body.slice(0, 80)}`);
      t.notMatch(r.body, /root:|formatVersion/, 'no file content leaks');
    }
  }
});

t.test('header and log-line injection through banner text and names', async (t) => {
  const noInjection = (r: Response, what: string) => {
    t.notOk('x-injected' in r.headers, `${what}: no injected header`);
    t.notMatch(String(r.headers['set-cookie'] ?? ''), /evil/, `${what}: no injected cookie`);
  };
  const info = await d.request(`${S}/authenticationInfo`);
  t.equal(info.status, 200);
  t.equal(info.json().message, BANNER, 'the banner comes back verbatim inside the JSON body');
  noInjection(info, 'banner');

  const r1 = await new Browser(d).loginPassword(`admin\r\n${INJECT}`, ADMIN_PW);
  t.equal(r1.status, 401);
  noInjection(r1, 'login name');
  const r2 = await admin.request(`${IDENTITY}/identities`, { method: 'POST', body: { userName: `eve\r\n${INJECT}`, password: TECH_PW } });
  t.equal(r2.status, 400, 'identity names with control characters are refused');
  noInjection(r2, 'identity name');
  const r3 = await admin.request(`${DEPLOY}/x%0D%0A${encodeURIComponent(INJECT)}`, { method: 'DELETE' });
  t.ok(r3.status < 500);
  noInjection(r3, 'package name');
  const r4 = await upload(buildDp({ name: 'crlf', version: '1.0.0' }), `filename*=UTF-8''a%0D%0A${encodeURIComponent(INJECT)}.dp`);
  t.ok(r4.status < 500);
  noInjection(r4, 'upload file name');
  const r5 = await admin.request(`${ASSETS}/x%0D%0A${encodeURIComponent(INJECT)}`);
  t.equal(r5.status, 404);
  noInjection(r5, 'asset id');
  await jobsSettled();

  // A raw CR/LF in a logged value would start a forged log line.
  const bad = d.logs.filter((l) => !/^time=\S+ level=(error|warn|info|debug) msg=/.test(l));
  t.same(bad, [], 'every log line is a whole logfmt record: no value broke out of its line');
});

t.test('file permissions in dataDir, even under umask 000', async (t) => {
  await jobsSettled();
  const st = fs.statSync(d.dataDir);
  t.equal(st.mode & 0o777, 0o700, 'dataDir is 0700');
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      const mode = fs.lstatSync(p).mode & 0o777;
      const rel = path.relative(d.dataDir, p);
      if (e.isDirectory()) {
        t.equal(mode & 0o077, 0, `folder ${rel} (${mode.toString(8)}) is private`);
        walk(p);
      } else {
        files.push(rel);
        // A certificate is public by nature; everything else here is state or a secret.
        if (/cert|\.crt$/.test(e.name) && !/key/.test(e.name)) t.equal(mode & 0o022, 0, `certificate ${rel} (${mode.toString(8)}) is not writable by others`);
        else t.equal(mode & 0o077, 0, `${rel} (${mode.toString(8)}) is private`);
      }
    }
  };
  walk(d.dataDir);
  t.comment(`files: ${files.join(', ')}`);
  const keys = files.filter((f) => /key/i.test(path.basename(f)));
  t.ok(keys.length > 0, `the generated TLS key is in dataDir: ${keys.join(', ')}`);
  for (const k of keys) t.equal(fs.statSync(path.join(d.dataDir, k)).mode & 0o777, 0o600, `${k} is 0600`);
});

t.test('no password, token, cookie or private key in any log line of the run', async (t) => {
  // Private key material: every base64 line of every key file in dataDir.
  for (const f of fs.readdirSync(d.dataDir, { recursive: true }) as string[]) {
    if (!/key/i.test(path.basename(f))) continue;
    const text = fs.readFileSync(path.join(d.dataDir, f), 'utf8');
    for (const line of text.split('\n')) if (/^[A-Za-z0-9+/=]{16,}$/.test(line)) used.add(line);
  }
  t.ok(used.size > 15, `${used.size} secrets to look for`);
  t.ok(d.logs.length > 30, `${d.logs.length} log lines (debug level)`);
  t.ok(d.logs.some((l) => /identity=tech/.test(l)), 'the logs do describe the run (identity names are not secret)');
  const leaks: string[] = [];
  for (const line of d.logs) {
    for (const s of used) {
      if (line.includes(s) || line.includes(encodeURIComponent(s)) || line.includes(JSON.stringify(s).slice(1, -1))) leaks.push(`${s.slice(0, 12)}… in: ${line.slice(0, 160)}`);
    }
  }
  t.same(leaks, [], 'no secret in the logs');
  t.equal(await d.stop(), 0);
  const afterStop = d.logs.filter((l) => [...used].some((s) => l.includes(s)));
  t.same(afterStop, [], 'nor in the shutdown lines');
});
