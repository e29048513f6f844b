// Built-ins loaded on first use (src/core/builtin.ts): the helper returns Node's own module, and the
// real daemon with plain HTTP listeners, no serial line and no mqtts broker starts without loading
// node:tls, node:https, node:zlib or node:tty (each would add its compile time to every boot). The
// modules the process loaded are read from process.moduleLoadList by a preload when it exits.
import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { lazyBuiltin } from '../../src/core/builtin.js';
import { startDaemon } from '../helpers/daemon.js';

t.test('lazyBuiltin returns the built-in itself, the same object on every call', async (t) => {
  const zlib = lazyBuiltin<typeof import('node:zlib')>('node:zlib');
  t.equal(zlib(), createRequire(import.meta.url)('node:zlib'));
  t.equal(zlib(), zlib());
  t.equal(zlib().gunzipSync(zlib().gzipSync(Buffer.from('x'))).toString(), 'x');
});

t.test('a plain-HTTP daemon starts and serves without node:tls, node:https, node:zlib, node:tty', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-builtin-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const out = path.join(dir, 'modules.txt');
  const preload = path.join(dir, 'preload.cjs');
  fs.writeFileSync(preload, `process.on('exit', () => require('fs').writeFileSync(${JSON.stringify(out)}, process.moduleLoadList.join('\\n')));`);
  const d = await startDaemon(t, {
    identities: { tech: { password: 'Tech-pass-12345', permissions: ['rest.assets'], passwordChangeNeeded: false } },
    drivers: { sim: { factory: 'simulator' } },
    assets: { demo: { 'driver.pid': 'sim', channels: { temperature: { type: 'READ', 'value.type': 'DOUBLE', simulation: 'sine' } } } },
    mqtt: { enabled: false },
  }, { env: { NODE_OPTIONS: `--require ${preload}` } });
  const basic = 'Basic ' + Buffer.from('tech:Tech-pass-12345').toString('base64');
  const r = await d.request('/services/assets/demo/_read', { headers: { authorization: basic } });
  t.equal(r.status, 200, 'the read is served');
  t.equal(await d.stop(), 0);
  const loaded = new Set(fs.readFileSync(out, 'utf8').split('\n').map((l) => l.replace(/^NativeModule /, '')));
  t.ok(loaded.has('http') && loaded.has('crypto'), 'the preload saw the daemon\'s modules');
  for (const m of ['tls', 'https', 'zlib', 'tty']) t.notOk(loaded.has(m), `${m} not loaded`);
});
