// Built-ins loaded on first use (src/core/builtin.ts): the helper returns Node's own module, and the
// real daemon with plain HTTP listeners, no serial line and no mqtts broker starts without loading
// node:tls, node:https, node:zlib or node:tty (each would add its compile time to every boot), and a
// later boot reaches its ready line without node:crypto, which the first login then loads. The
// modules the process loaded are read from process.moduleLoadList by a preload when it exits.
import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { lazyBuiltin } from '../../src/core/builtin.js';
import { startDaemon, type TestLike } from '../helpers/daemon.js';
import { BUNDLE } from '../helpers/launch.mjs';

t.test('lazyBuiltin returns the built-in itself, the same object on every call', async (t) => {
  const zlib = lazyBuiltin<typeof import('node:zlib')>('node:zlib');
  t.equal(zlib(), createRequire(import.meta.url)('node:zlib'));
  t.equal(zlib(), zlib());
  t.equal(zlib().gunzipSync(zlib().gzipSync(Buffer.from('x'))).toString(), 'x');
});

const CONFIG = {
  identities: { tech: { password: 'Tech-pass-12345', permissions: ['rest.assets'], passwordChangeNeeded: false } },
  drivers: { sim: { factory: 'simulator' } },
  assets: { demo: { 'driver.pid': 'sim', channels: { temperature: { type: 'READ', 'value.type': 'DOUBLE', simulation: 'sine' } } } },
  mqtt: { enabled: false },
};

/** A directory for a daemon, a preload that writes its loaded modules there at exit, and their reader. */
function moduleWatch(t: TestLike): { dir: string; preload: string; modules(): Set<string> } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-builtin-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const out = path.join(dir, 'modules.txt');
  const preload = path.join(dir, 'preload.cjs');
  fs.writeFileSync(preload, `process.on('exit', () => require('fs').writeFileSync(${JSON.stringify(out)}, process.moduleLoadList.join('\\n')));`);
  return { dir, preload, modules: () => new Set(fs.readFileSync(out, 'utf8').split('\n').map((l) => l.replace(/^NativeModule /, ''))) };
}

t.test('a plain-HTTP daemon starts and serves without node:tls, node:https, node:zlib, node:tty', async (t) => {
  const w = moduleWatch(t);
  const d = await startDaemon(t, CONFIG, { env: { NODE_OPTIONS: `--require ${w.preload}` } });
  const basic = 'Basic ' + Buffer.from('tech:Tech-pass-12345').toString('base64');
  const r = await d.request('/services/assets/demo/_read', { headers: { authorization: basic } });
  t.equal(r.status, 200, 'the read is served');
  t.equal(await d.stop(), 0);
  const loaded = w.modules();
  t.ok(loaded.has('http') && loaded.has('crypto'), 'the preload saw the daemon\'s modules');
  for (const m of ['tls', 'https', 'zlib', 'tty']) t.notOk(loaded.has(m), `${m} not loaded`);
});

t.test('a later boot is ready without node:crypto; the first login loads it and works', async (t) => {
  const { dir, preload, modules } = moduleWatch(t);
  // Through a shell that sets NODE_OPTIONS itself: the test runner adds its own process tracking to
  // the NODE_OPTIONS of every node it spawns, and that loads node:crypto into the daemon.
  const command = ['/bin/sh', '-c', 'NODE_OPTIONS="--require $0" exec "$@"', preload, process.execPath, BUNDLE];
  // First boot: the seeded password is hashed (scrypt), so node:crypto is loaded.
  const first = await startDaemon(t, CONFIG, { dir, command });
  t.equal(await first.stop(), 0);
  t.ok(modules().has('crypto'), 'the first boot hashed the seeded password with node:crypto');
  // A later boot, stopped without a request.
  const later = await startDaemon(t, CONFIG, { dir, command });
  t.equal(await later.stop(), 0);
  const seen = modules();
  t.ok(seen.has('http'), 'the preload saw the daemon\'s modules');
  t.notOk(seen.has('crypto'), 'node:crypto not loaded to reach the ready line');
  // The same, then a login, a session read and BASIC reads: each needs node:crypto, loaded then.
  const d = await startDaemon(t, CONFIG, { dir, command });
  const login = await d.request('/services/session/v1/login/password', { method: 'POST', body: { username: 'tech', password: 'Tech-pass-12345' } });
  t.equal(login.status, 200, 'the login verifies the password');
  const cookie = String(login.headers['set-cookie']).split(';')[0];
  t.match(cookie, /^JSESSIONID=[A-Za-z0-9_-]{22}$/, 'the session id is 16 random bytes, base64url');
  const x = await d.request('/services/session/v1/xsrfToken', { headers: { cookie } });
  t.equal(x.status, 200);
  const xsrf = JSON.parse(x.body.toString()).xsrfToken as string;
  t.match(xsrf, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, 'the XSRF token is a random UUID');
  t.equal((await d.request('/services/assets/demo/_read', { headers: { cookie, 'x-xsrf-token': xsrf } })).status, 200, 'the session read is served');
  const basic = 'Basic ' + Buffer.from('tech:Tech-pass-12345').toString('base64');
  for (let i = 0; i < 2; i++) t.equal((await d.request('/services/assets/demo/_read', { headers: { authorization: basic } })).status, 200, `BASIC read ${i + 1} (the second from the cache)`);
  t.equal((await d.request('/services/assets/demo/_read', { headers: { authorization: 'Basic ' + Buffer.from('tech:wrong-password').toString('base64') } })).status, 401, 'a wrong password is still refused');
  t.equal(await d.stop(), 0);
  t.ok(modules().has('crypto'), 'node:crypto was loaded for them');
});
