// Security pass (README "Robustness", the security pass): TLS 1.2 is the minimum and only forward-secret AEAD suites are
// negotiated. Every TLS 1.2 suite this Node/OpenSSL knows is offered alone; the daemon must refuse
// all but ECDHE with AES-GCM or ChaCha20-Poly1305. Old protocol versions are checked against a
// control server first, so a client that cannot speak them does not make the test pass vacuously.

import t from 'tap';
import tls from 'node:tls';
import type { AddressInfo } from 'node:net';
import { startDaemon } from '../helpers/daemon.js';
import fs from 'node:fs';
import { haveOpenssl, makePki } from '../helpers/certs.js';

type Outcome = { ok: true; protocol: string; cipher: string } | { ok: false; error: string };

function handshake(port: number, opts: tls.ConnectionOptions): Promise<Outcome> {
  return new Promise((resolve) => {
    const s = tls.connect({ host: '127.0.0.1', port, servername: 'localhost', rejectUnauthorized: false, ...opts });
    const timer = setTimeout(() => {
      s.destroy();
      resolve({ ok: false, error: 'timeout' });
    }, 5000);
    s.once('secureConnect', () => {
      clearTimeout(timer);
      const out: Outcome = { ok: true, protocol: s.getProtocol() ?? '', cipher: s.getCipher().name };
      s.end();
      resolve(out);
    });
    s.once('error', (err) => {
      clearTimeout(timer);
      s.destroy();
      resolve({ ok: false, error: err.message });
    });
  });
}

// The only TLS 1.2 suites we accept: ECDHE key exchange (forward secrecy) with an AEAD cipher.
const STRONG_TLS12 = /^ECDHE-(RSA|ECDSA)-(AES(128|256)-GCM-SHA(256|384)|CHACHA20-POLY1305)$/;

t.test('TLS on the HTTPS port', async (t) => {
  const d = await startDaemon(t, {}, { http: 1, https: 1 });
  const port = d.ports.https[0]!;

  t.test('TLS 1.3 and TLS 1.2 handshakes succeed', async (t) => {
    const v13 = await handshake(port, {});
    t.match(v13, { ok: true, protocol: 'TLSv1.3' });
    const v12 = await handshake(port, { maxVersion: 'TLSv1.2' });
    t.match(v12, { ok: true, protocol: 'TLSv1.2' });
    if (v12.ok) t.match(v12.cipher, STRONG_TLS12, `negotiated ${v12.cipher}`);
  });

  // The control server's certificate is made with openssl (the daemon's own needs none).
  const noOpenssl = haveOpenssl() ? false : 'openssl not installed';
  if (noOpenssl && process.env.CI === 'true') t.fail('openssl is required under CI');
  t.test('TLS 1.0 and 1.1 are refused', { skip: noOpenssl }, async (t) => {
    // Control: a permissive local server proves this client can still speak the old versions.
    const pki = makePki();
    t.teardown(() => fs.rmSync(pki.dir, { recursive: true, force: true }));
    const cert = fs.readFileSync(pki.serverCert);
    const key = fs.readFileSync(pki.serverKey);
    for (const version of ['TLSv1', 'TLSv1.1'] as const) {
      const client: tls.ConnectionOptions = { minVersion: version, maxVersion: version, ciphers: 'ALL:@SECLEVEL=0' };
      const control = tls.createServer({ cert, key, minVersion: 'TLSv1', ciphers: 'ALL:@SECLEVEL=0' }, (s) => s.end());
      await new Promise<void>((r) => control.listen(0, '127.0.0.1', r));
      const c = await handshake((control.address() as AddressInfo).port, client);
      control.close();
      if (!c.ok) {
        t.comment(`this OpenSSL cannot speak ${version} at all (${c.error}); nothing to check`);
        continue;
      }
      const r = await handshake(port, client);
      t.notOk(r.ok, `${version} refused by gatewayd${r.ok ? ` (negotiated ${r.cipher})` : `: ${r.error}`}`);
    }
  });

  t.test('every weak TLS 1.2 suite is refused, each offered alone', async (t) => {
    const suites = tls
      .getCiphers()
      .map((c) => c.toUpperCase())
      .filter((c) => !c.startsWith('TLS_'));
    t.ok(suites.length > 20, `${suites.length} TLS 1.2 suites to try`);
    const accepted: string[] = [];
    for (const suite of suites) {
      const r = await handshake(port, { maxVersion: 'TLSv1.2', ciphers: `${suite}:@SECLEVEL=0` });
      if (r.ok) accepted.push(r.cipher);
    }
    t.ok(accepted.length > 0, `accepted: ${accepted.join(', ')}`);
    t.same(accepted.filter((c) => !STRONG_TLS12.test(c)), [], 'no accepted suite lacks forward secrecy or AEAD');
    for (const weak of ['AES128-SHA', 'AES256-SHA256', 'DES-CBC3-SHA', 'ECDHE-RSA-AES128-SHA', 'ECDHE-ECDSA-AES256-SHA384']) {
      t.notOk(accepted.includes(weak), `${weak} refused`);
    }
  });
});
