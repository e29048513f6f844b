// inventory/v1's `signed` (docs/rest-api.md "inventory/v1", src/api/inventory.ts): true for a package
// whose signature was verified with a trust anchor when it was installed, over the real daemon; false
// for gatewayd itself, and for a package that carries a signature no anchor checked (the store alone).

import t from 'tap';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PackageStore } from '../../src/deploy/store.js';
import { SIGNATURE_PATH, signedText } from '../../src/deploy/signature.js';
import { silentLogger } from '../../src/log.js';
import { buildZip, manifestText } from '../helpers/dp.js';
import { startDaemon } from '../helpers/daemon.js';

const PASSWORD = 'Inv-Signed-Pass-1';
const auth = { authorization: `Basic ${Buffer.from(`admin:${PASSWORD}`).toString('base64')}` };
const key = crypto.generateKeyPairSync('ed25519');
const files: Record<string, string> = { 'META-INF/MANIFEST.MF': manifestText({ name: 'org.example.signed', version: '1.0.0' }), 'lib/a.txt': 'hello' };
const signature = crypto.sign(null, signedText(Object.entries(files).map(([name, data]) => ({ name, data: Buffer.from(data) }))), key.privateKey).toString('base64');
const pkg = buildZip([...Object.entries(files).map(([name, data]) => ({ name, data })), { name: SIGNATURE_PATH, data: signature }]);

t.test('a package verified at install is signed', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-inv-signed-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'signed.dp');
  fs.writeFileSync(file, pkg);
  const d = await startDaemon(t, {
    rest: { 'auth.basic.enabled': true, 'login.throttle.max.delay': 0 },
    identities: { admin: { password: PASSWORD, passwordChangeNeeded: false, permissions: ['kura.admin'] } },
    deploy: { 'file.allowed.dirs': [dir], 'trust.anchors': [key.publicKey.export({ type: 'spki', format: 'pem' }).toString()] },
  });
  t.equal((await d.request('/services/deploy/v2/_install', { method: 'POST', headers: auth, body: { url: `file://${file}` } })).status, 200);
  let dps: any[] = [];
  for (let i = 0; i < 100 && dps.length === 0; i++) {
    dps = (await d.request('/services/inventory/v1/deploymentPackages', { headers: auth })).json().deploymentPackages;
    if (dps.length === 0) await new Promise((r) => setTimeout(r, 100));
  }
  t.same(dps, [{ name: 'org.example.signed', version: '1.0.0', bundles: [{ name: 'org.example.signed', version: '1.0.0', id: 1, state: 'ACTIVE', signed: true }], signed: true }]);
  const bundles = (await d.request('/services/inventory/v1/bundles', { headers: auth })).json().bundles;
  t.same(bundles.map((b: any) => [b.id, b.signed]), [[0, false], [1, true]], 'gatewayd itself is not signed');
});

t.test('a signature no anchor checked does not make a package signed', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-inv-unchecked-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'p.dp');
  fs.writeFileSync(file, pkg);
  const store = new PackageStore({ dataDir: dir, log: silentLogger });
  store.open();
  const { pkg: installed } = await store.install(file);
  t.equal(installed.signed, undefined);
});
