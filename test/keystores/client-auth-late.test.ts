// A client-certificate HTTPS port whose truststore is a keystore with no trusted certificate yet
// (docs/configuration.md "Certificates from a keystore"): closed at the start, with a warning; it
// opens once a CA is added to that keystore over keystores/v1, without a restart, and then accepts
// client certificates of that CA and refuses others. The daemon was never restarted (one pid).

import t from 'tap';
import fs from 'node:fs';
import net from 'node:net';
import { startDaemon } from '../helpers/daemon.js';
import { clientHandshake, haveOpenssl, makePki } from '../helpers/certs.js';
import { freePort } from '../helpers/mosquitto.js';

const skip = haveOpenssl() || process.env.CI === 'true' ? undefined : 'openssl not installed';
const ADMIN = { authorization: `Basic ${Buffer.from('admin:Adm1n-Secret!').toString('base64')}` };

/** Whether something listens on `port`. */
const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port }, () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });

t.test('client-auth ports open when their empty truststore keystore gets a CA', { skip }, async (t) => {
  const pki = makePki();
  t.teardown(() => fs.rmSync(pki.dir, { recursive: true, force: true }));
  const port = await freePort();
  const d = await startDaemon(t, {
    rest: { 'auth.basic.enabled': true, 'login.throttle.max.delay': 0 },
    identities: { admin: { password: 'Adm1n-Secret!', passwordChangeNeeded: false, permissions: ['kura.admin'] } },
    http: { 'https.client.auth.ports': [port], 'https.truststore': 'keystore:HttpsKeystore' },
  });
  t.ok(d.logs.some((l) => /level=warn msg="client-auth ports not opened: truststore missing"/.test(l)), 'a warning at the start');
  t.equal(await listening(port), false, 'closed while the keystore has no trusted certificate');

  const r = await d.request('/services/keystores/v1/entries/certificate', { method: 'POST', headers: ADMIN, body: { keystoreServicePid: 'HttpsKeystore', alias: 'clients-ca', certificate: fs.readFileSync(pki.caCert, 'utf8') } });
  t.equal(r.status, 204, r.body);
  await d.waitForLog(/msg="client-auth ports opened: their truststore has a certificate now"/, 10_000);
  t.equal(await listening(port), true, 'open, without a restart');
  t.equal(await clientHandshake(port, pki.client('admin')), true, 'a client certificate of that CA is accepted');
  t.equal(await clientHandshake(port, pki.client('admin', { untrusted: true })), false, 'one of another CA is not');
  const me = await d.request('/services/keystores/v1', { tls: true, port, cert: pki.client('admin').cert, key: pki.client('admin').key });
  t.equal(me.status, 200, 'a request over the client-certificate port, authenticated by the certificate (admin)');
  const seen = d.logs.length;

  // A second certificate added: the open ports stay as they are (no second listener on the port).
  const r2 = await d.request('/services/keystores/v1/entries/certificate', { method: 'POST', headers: ADMIN, body: { keystoreServicePid: 'HttpsKeystore', alias: 'other-ca', certificate: fs.readFileSync(pki.caCert, 'utf8') } });
  t.equal(r2.status, 204);
  await new Promise((res) => setTimeout(res, 300));
  t.notMatch(d.logs.slice(seen).join('\n'), /client-auth ports|listener error|msg=listening/, 'no second opening');
  t.equal(d.logs.filter((l) => /msg=listening .*clientAuth=true/.test(l)).length, 1, 'one client-auth listener');
  t.equal(d.proc.exitCode, null, 'never restarted');
});
