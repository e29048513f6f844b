// Certificate revocation on client-auth ports (http `https.truststore.crl`): a client certificate
// the operator's CRL revokes is refused in the TLS handshake; the CRL is re-read on SIGHUP (a newly
// revoked certificate is refused from then on); an unusable CRL keeps the previous one in force on a
// reload and keeps the client-auth ports closed at start. Certificates and CRLs made with openssl.

import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { startDaemon, type Daemon } from '../helpers/daemon.js';
import { haveOpenssl, makePki, writeCrl } from '../helpers/certs.js';

const skip = !haveOpenssl() && !process.env.CI ? 'openssl missing' : false;
const identities = { alice: { permissions: ['rest.assets'] }, mallory: { permissions: ['rest.assets'] }, bob: { permissions: ['rest.assets'] } };

/** The status of GET /services/assets with this client certificate, or 'refused' when TLS refused it. */
const get = (d: Daemon, cert: { cert: string; key: string }, ca: string) =>
  d.request('/services/assets', { port: d.ports.clientAuth[0], cert: cert.cert, key: cert.key, ca }).then(
    (r) => r.status,
    () => 'refused',
  );

t.test('a revoked client certificate is refused; the CRL is re-read on reload', { skip }, async (t) => {
  const pki = makePki();
  t.teardown(() => fs.rmSync(pki.dir, { recursive: true, force: true }));
  const [alice, mallory, bob] = ['alice', 'mallory', 'bob'].map((cn) => pki.client(cn));
  const crl = path.join(pki.dir, 'revoked.crl');
  writeCrl(pki, [mallory.cert], crl);
  const d = await startDaemon(t, { identities, http: { 'https.keystore.cert': pki.serverCert, 'https.keystore.key': pki.serverKey, 'https.truststore': pki.caCert, 'https.truststore.crl': crl } }, { http: 1, clientAuth: 1 });
  t.equal(await get(d, alice, pki.caCert), 200, 'a valid certificate is accepted');
  t.equal(await get(d, mallory, pki.caCert), 'refused', 'the revoked certificate is refused');

  writeCrl(pki, [mallory.cert, alice.cert], crl);
  d.signal('SIGHUP');
  await d.waitForLog(/configuration reloaded/);
  t.equal(await get(d, alice, pki.caCert), 'refused', 'a certificate revoked later is refused after the reload');
  t.equal(await get(d, bob, pki.caCert), 200, 'others still accepted');

  fs.writeFileSync(crl, 'not a CRL\n');
  d.signal('SIGHUP');
  await d.waitForLog(/CRL not reloaded: keeping the previous one/);
  t.equal(await get(d, alice, pki.caCert), 'refused', 'an unusable CRL on reload keeps the previous one in force');
  t.equal(await get(d, mallory, pki.caCert), 'refused');
  t.equal(await get(d, bob, pki.caCert), 200);
});

t.test('an unusable CRL at start keeps the client-auth ports closed', { skip }, async (t) => {
  const pki = makePki();
  t.teardown(() => fs.rmSync(pki.dir, { recursive: true, force: true }));
  const crl = path.join(pki.dir, 'broken.crl');
  fs.writeFileSync(crl, 'garbage\n');
  const d = await startDaemon(t, { identities, http: { 'https.keystore.cert': pki.serverCert, 'https.keystore.key': pki.serverKey, 'https.truststore': pki.caCert, 'https.truststore.crl': crl } }, { http: 1, clientAuth: 1 });
  await d.waitForLog(/client-auth ports not opened: CRL unusable/);
  t.equal(await get(d, pki.client('alice'), pki.caCert), 'refused', 'nothing listens on the client-auth port');
  t.equal((await d.request('/services/session/v1/xsrfToken')).status, 401, 'the rest of the daemon serves');
});
