// The smoke test of `make arm-check` (build/arm-check.sh): starts the bundle on the armhf node under
// qemu-user, logs in over /services/session/v1, reads the demo asset, stops with SIGTERM and expects
// a clean exit. Plain ESM with node:* only, so it runs without node_modules or a TypeScript loader.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const qemu = process.env.ARM_NODE_QEMU;
const sysroot = process.env.ARM_NODE_SYSROOT;
const bundle = path.resolve(process.env.ARM_BUNDLE ?? 'dist/gatewayd.js');
if (!qemu || !sysroot) {
  console.error('arm-smoke: ARM_NODE_QEMU and ARM_NODE_SYSROOT must be set (run it through build/arm-check.sh)');
  process.exit(2);
}
// Emulated start-up of V8 is slow (tens of seconds on a small CI machine); generous but bounded.
const READY_MS = Number(process.env.ARM_READY_TIMEOUT_MS ?? 180_000);

const freePort = () =>
  new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

function request(port, pathname, { method = 'GET', headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const req = http.request(
      { host: '127.0.0.1', port, path: pathname, method, agent: false, headers: { ...headers, ...(data ? { 'content-type': 'application/json' } : {}) } },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      },
    );
    req.setTimeout(60_000, () => req.destroy(new Error(`${method} ${pathname} timed out`)));
    req.on('error', reject);
    req.end(data);
  });
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-arm-'));
const port = await freePort();
const config = {
  dataDir: path.join(dir, 'data'),
  http: { 'http.ports': [port], 'bind.address': '127.0.0.1' },
  identities: { admin: { password: 'arm-smoke-pass', permissions: ['kura.admin'], passwordChangeNeeded: false } },
  drivers: { sim: { factory: 'simulator' } },
  assets: {
    demo: {
      'driver.pid': 'sim',
      channels: { temperature: { type: 'READ', 'value.type': 'DOUBLE', unit: 'C', simulation: 'sine' } },
    },
  },
  mqtt: { enabled: false },
};
fs.writeFileSync(path.join(dir, 'gatewayd.json'), JSON.stringify(config, null, 2));

const t0 = Date.now();
const libpath = process.env.ARM_NODE_LIBPATH ?? `${sysroot}/lib/arm-linux-gnueabihf:${sysroot}/usr/lib/arm-linux-gnueabihf`;
const proc = spawn(qemu, ['-L', sysroot, '-E', `LD_LIBRARY_PATH=${libpath}`, path.join(sysroot, 'usr/bin/node'), bundle, '--config', path.join(dir, 'gatewayd.json')], {
  stdio: ['ignore', 'pipe', 'pipe'],
});
const exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
let logs = '';
proc.stdout.on('data', (d) => (logs += d));
proc.stderr.on('data', (d) => (logs += d));

let failed = false;
const readyCleanup = [];
function check(ok, what) {
  console.log(`${ok ? 'ok' : 'not ok'} - ${what}`);
  if (!ok) failed = true;
  return ok;
}

try {
  const ready = await new Promise((resolve) => {
    const timer = setInterval(() => {
      if (logs.includes('msg="gatewayd ready"')) resolve(true);
      else if (Date.now() - t0 > READY_MS || proc.exitCode !== null) resolve(false);
    }, 100);
    readyCleanup.push(() => clearInterval(timer));
  });
  readyCleanup.forEach((f) => f());
  if (!check(ready, `started on armhf node (ready after ${Date.now() - t0} ms)`)) throw new Error('not ready');

  const headers = {};
  const login = await request(port, '/services/session/v1/login/password', { method: 'POST', body: { username: 'admin', password: 'arm-smoke-pass' } });
  check(login.status === 200, `login over /services/session/v1/login/password answers 200 (got ${login.status})`);
  const cookie = String(login.headers['set-cookie'] ?? '').split(';')[0];
  check(cookie.startsWith('JSESSIONID='), 'login sets the session cookie');
  headers.cookie = cookie;
  const xsrf = await request(port, '/services/session/v1/xsrfToken', { headers });
  check(xsrf.status === 200, `xsrfToken answers 200 (got ${xsrf.status})`);
  try {
    headers['x-xsrf-token'] = JSON.parse(xsrf.body).xsrfToken;
  } catch {
    check(false, 'xsrfToken body is JSON');
  }
  const denied = await request(port, '/services/assets/demo/_read');
  check(denied.status === 401, `reading without a session is refused with 401 (got ${denied.status})`);

  const read = await request(port, '/services/assets/demo/_read', { headers });
  check(read.status === 200, `GET /services/assets/demo/_read answers 200 (got ${read.status})`);
  let records = [];
  try {
    records = JSON.parse(read.body).channels ?? JSON.parse(read.body);
  } catch {
    check(false, `read body is JSON: ${read.body.slice(0, 200)}`);
  }
  const temp = Array.isArray(records) ? records.find((r) => r.name === 'temperature') : undefined;
  check(temp !== undefined && typeof temp.value === 'number', `temperature channel read a number (${JSON.stringify(temp)})`);
} catch (err) {
  check(false, err.message);
} finally {
  proc.kill('SIGTERM');
  const { code, signal } = await Promise.race([exited, new Promise((r) => setTimeout(() => r({ code: null, signal: 'timeout' }), 60_000))]);
  check(code === 0, `SIGTERM stops cleanly (exit ${code}${signal ? `, ${signal}` : ''})`);
  if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  if (failed) process.stderr.write(`--- gatewayd output ---\n${logs.split('\n').slice(-30).join('\n')}\n`);
  fs.rmSync(dir, { recursive: true, force: true });
}
console.log(failed ? 'arm smoke: FAILED' : `arm smoke: passed in ${Date.now() - t0} ms`);
process.exit(failed ? 1 : 0);
