// Package signatures with deploy.trust.anchors: the documented format, signed by Node and by the
// openssl recipe in src/deploy/signature.ts, and every way a package can fail the check.

import t from 'tap';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { PackageStore } from '../../src/deploy/store.js';
import { SIGNATURE_PATH, signatureCheck, signedText } from '../../src/deploy/signature.js';
import { silentLogger } from '../../src/log.js';
import { buildZip, manifestText } from '../helpers/dp.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-sig-'));
t.teardown(() => fs.rmSync(tmp, { recursive: true, force: true }));
let n = 0;

const ed = crypto.generateKeyPairSync('ed25519');
const ec = crypto.generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
const stranger = crypto.generateKeyPairSync('ed25519');
const pem = (k: crypto.KeyObject) => k.export({ type: 'spki', format: 'pem' }).toString();
const edPubFile = path.join(tmp, 'ed.pub.pem');
fs.writeFileSync(edPubFile, pem(ed.publicKey));

type Files = Record<string, string>;
function sign(files: Files, key: crypto.KeyObject): string {
  const text = signedText(Object.entries(files).map(([name, data]) => ({ name, data: Buffer.from(data) })));
  const digest = key.asymmetricKeyType === 'ed25519' ? null : 'sha256';
  return crypto.sign(digest, text, key).toString('base64');
}
function pkgFile(files: Files, sig?: string): string {
  const f = path.join(tmp, `p${++n}.dp`);
  const entries = Object.entries(files).map(([name, data]) => ({ name, data }));
  if (sig !== undefined) entries.push({ name: SIGNATURE_PATH, data: sig });
  fs.writeFileSync(f, buildZip(entries));
  return f;
}
function store(anchors: string[]): PackageStore {
  const dir = path.join(tmp, `data${++n}`);
  fs.mkdirSync(dir);
  const s = new PackageStore({ dataDir: dir, log: silentLogger, check: signatureCheck(anchors) });
  s.open();
  return s;
}
const files: Files = { 'META-INF/MANIFEST.MF': manifestText({ name: 'signed', version: '1' }), 'lib/a.txt': 'hello', 'b.js': 'export {}' };

t.test('valid signatures by any anchor are accepted', async (t) => {
  const s = store([edPubFile, pem(ec.publicKey)]);
  t.equal((await s.install(pkgFile(files, sign(files, ed.privateKey)))).pkg.name, 'signed', 'Ed25519, anchor given as a file');
  t.equal((await s.install(pkgFile(files, sign(files, ec.privateKey)))).pkg.name, 'signed', 'ECDSA P-256, anchor given as PEM text');
});

t.test('refusals', async (t) => {
  const s = store([edPubFile]);
  const good = sign(files, ed.privateKey);
  const cases: [string, string, RegExp][] = [
    ['unsigned', pkgFile(files), /not signed \(META-INF\/GATEWAYD\.SIG is missing\)/],
    ['signed by a stranger', pkgFile(files, sign(files, stranger.privateKey)), /does not verify/],
    ['a file changed after signing', pkgFile({ ...files, 'lib/a.txt': 'HELLO' }, good), /does not verify/],
    ['a file added after signing', pkgFile({ ...files, 'extra.js': 'x' }, good), /does not verify/],
    ['a file removed after signing', pkgFile({ 'META-INF/MANIFEST.MF': files['META-INF/MANIFEST.MF']! }, good), /does not verify/],
    ['garbage signature', pkgFile(files, '!!!'), /does not verify/],
  ];
  for (const [name, file, re] of cases) {
    await t.rejects(s.install(file), re, name);
  }
  t.same(s.list(), []);
  await t.rejects(store(['/nonexistent/key.pem']).install(pkgFile(files, good)), /trust anchors unusable: deploy\.trust\.anchors\[0\]/, 'fails closed');
});

const hasOpenssl3 = (() => {
  try {
    return /^OpenSSL 3/.test(execFileSync('openssl', ['version'], { encoding: 'utf8' }));
  } catch {
    return false;
  }
})();
if (!hasOpenssl3 && process.env.CI === 'true') t.fail('openssl 3 is required under CI');

t.test('the documented openssl recipe produces a valid signature', { skip: !hasOpenssl3 && 'openssl 3 not installed' }, async (t) => {
  const root = path.join(tmp, 'pkgroot');
  for (const [name, data] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
    fs.writeFileSync(path.join(root, name), data);
  }
  const keyFile = path.join(tmp, 'ed.key.pem');
  fs.writeFileSync(keyFile, ed.privateKey.export({ type: 'pkcs8', format: 'pem' }));
  const script = `set -e
(echo gatewayd-dp-signature-v1; cd pkgroot && find . -type f ! -path ./META-INF/GATEWAYD.SIG \\
   | sed 's|^\\./||' | LC_ALL=C sort | xargs -d '\\n' sha256sum) > signed.txt
openssl pkeyutl -sign -inkey ed.key.pem -rawin -in signed.txt | base64 -w0 > pkgroot/META-INF/GATEWAYD.SIG`;
  execFileSync('bash', ['-c', script], { cwd: tmp });
  const sig = fs.readFileSync(path.join(root, SIGNATURE_PATH), 'utf8');
  const s = store([edPubFile]);
  t.equal((await s.install(pkgFile(files, sig))).pkg.name, 'signed');
});
