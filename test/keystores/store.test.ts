// The keystore store's files in dataDir (docs/installation.md "Provisioning a fleet's
// certificates"): entries read back after a restart, damaged or foreign files left out with an
// error that names the file and never its content, temporary files of an interrupted write
// removed, key files 0600, and no key material in any error or log line.

import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createLogger } from '../../src/log.js';
import { KeystoreStore } from '../../src/keystores/store.js';
import { RequestError } from '../../src/core/errors.js';

function logged(): { log: ReturnType<typeof createLogger>; lines: string[] } {
  const lines: string[] = [];
  return { log: createLogger('debug', (l) => lines.push(l)), lines };
}

t.test('entries survive a restart; damaged files are left out and named', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-ks-store-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const a = logged();
  const store = new KeystoreStore(dir, a.log);
  await store.createKeyPair('SSLKeystore', 'device', { algorithm: 'EC', size: 256, signatureAlgorithm: 'SHA256withECDSA', attributes: 'CN=device' });
  const pem = store.trustedCertificates('SSLKeystore', 'device');
  await store.addTrustedCertificate('HttpsKeystore', 'peer', pem);
  const keyFile = path.join(dir, 'SSLKeystore', 'device.pem');
  t.equal(fs.statSync(keyFile).mode & 0o777, 0o600);
  const keyText = fs.readFileSync(keyFile, 'utf8');
  const keyLines = keyText.split('-----END PRIVATE KEY-----')[0].split('\n').filter((l) => /^[A-Za-z0-9+/=]{16,}$/.test(l));

  // Foreign and damaged files beside the good ones.
  const ks = path.join(dir, 'SSLKeystore');
  fs.writeFileSync(path.join(ks, 'junk.pem'), 'not pem at all');
  fs.writeFileSync(path.join(ks, 'torn.pem'), keyText.slice(0, keyText.length / 2));
  fs.writeFileSync(path.join(ks, 'keyonly.pem'), keyText.split('-----BEGIN CERTIFICATE-----')[0]);
  fs.writeFileSync(path.join(ks, 'huge.pem'), 'A'.repeat(70_000));
  fs.writeFileSync(path.join(ks, 'bad name!.pem'), pem);
  fs.writeFileSync(path.join(ks, '.device.pem.123.4.tmp'), 'half a write');

  const b = logged();
  const again = new KeystoreStore(dir, b.log);
  t.same([...again.keystore('SSLKeystore').keys()], ['device'], 'only the good entry');
  t.same([...again.keystore('HttpsKeystore').keys()], ['peer']);
  t.equal(again.tlsIdentity('SSLKeystore', 'device').cert, store.tlsIdentity('SSLKeystore', 'device').cert, 'the same chain');
  t.equal(again.tlsIdentity('SSLKeystore', 'device').key, store.tlsIdentity('SSLKeystore', 'device').key, 'the same key');
  t.notOk(fs.existsSync(path.join(ks, '.device.pem.123.4.tmp')), 'the interrupted write is removed');
  const log = b.lines.join('\n');
  for (const f of ['junk', 'torn', 'keyonly', 'huge']) t.match(log, new RegExp(`keystore entry unreadable: left out".* alias=${f} `), `${f} named`);
  t.match(log, /keystore file ignored".* file="bad name!.pem" reason="not an alias"/);
  t.notMatch([...a.lines, ...b.lines].join('\n'), /PRIVATE KEY/);
  for (const l of keyLines) t.notOk(log.includes(l));

  // Errors a request sees: never key material.
  const errors: string[] = [];
  for (const fn of [
    () => again.replaceCertificateChain('SSLKeystore', 'device', [keyText]),
    () => again.addTrustedCertificate('SSLKeystore', 'x', keyText),
    () => again.replaceCertificateChain('SSLKeystore', 'device', keyText.replace(/BEGIN PRIVATE KEY/, 'BEGIN CERTIFICATE').replace(/END PRIVATE KEY/, 'END CERTIFICATE')),
  ]) {
    try {
      await fn();
      t.fail('accepted');
    } catch (err) {
      t.ok(err instanceof RequestError, (err as Error).message);
      errors.push((err as Error).message);
    }
  }
  for (const l of keyLines) t.notOk(errors.join('\n').includes(l), 'no key line in an error');
  t.notMatch(errors.join('\n'), /PRIVATE KEY-----\n/);
});
