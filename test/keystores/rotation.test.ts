// Certificates from a keystore (docs/configuration.md "Certificates from a keystore"): the HTTPS
// listeners and the broker connection name keystore entries instead of files, and a rotated entry
// takes effect without a restart — HTTPS serves the new certificate to new connections (a TLS
// client trusting the CA is accepted after the rotation and not before), the MQTT client
// reconnects with its new identity (Mosquitto, requiring client certificates, sees the new
// subject). Changing an entry in use is kura.admin's, over REST and over MQTT.

import t from 'tap';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import tls from 'node:tls';
import { startDaemon } from '../helpers/daemon.js';
import { clientHandshake, haveOpenssl, makePki } from '../helpers/certs.js';
import { freePort, mosquittoSkip, startMosquitto } from '../helpers/mosquitto.js';
import { Requester, until } from '../helpers/mqtt-fixture.js';
import { encodeKuraPayload, decodeKuraPayload } from '../../src/mqtt/kura-payload.js';

const skipTls = haveOpenssl() || process.env.CI === 'true' ? undefined : 'openssl not installed';
const basic = (u: string, p: string) => ({ authorization: `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}` });
const ADMIN = basic('admin', 'Adm1n-Secret!');
const KS = basic('ks', 'Keyst0re-Secret!');
const identities = {
  admin: { password: 'Adm1n-Secret!', passwordChangeNeeded: false, permissions: ['kura.admin'] },
  ks: { password: 'Keyst0re-Secret!', passwordChangeNeeded: false, permissions: ['rest.keystores'] },
};

function signCsr(caCert: string, caKey: string, dir: string, csrPem: string, name: string, ext?: string): string {
  const csr = path.join(dir, `${name}.csr`);
  const out = path.join(dir, `${name}.crt`);
  fs.writeFileSync(csr, csrPem);
  const extArgs = ext ? ['-extfile', path.join(dir, `${name}.ext`)] : [];
  if (ext) fs.writeFileSync(path.join(dir, `${name}.ext`), ext);
  execFileSync('openssl', ['x509', '-req', '-in', csr, '-CA', caCert, '-CAkey', caKey, '-CAcreateserial', '-out', out, '-days', '30', ...extArgs], { stdio: 'ignore' });
  return fs.readFileSync(out, 'utf8');
}

/** The certificate a new TLS connection is served, and whether a client trusting `ca` accepts it. */
function handshake(port: number, ca?: string): Promise<{ subject: string; authorized: boolean; error?: string }> {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port, servername: 'localhost', ca: ca ? [ca] : undefined, rejectUnauthorized: false }, () => {
      const peer = s.getPeerCertificate();
      resolve({ subject: String(peer.subject?.CN), authorized: s.authorized, error: s.authorizationError?.toString() });
      s.end();
    });
    s.on('error', reject);
  });
}

t.test('HTTPS from a keystore entry, rotated without a restart', { skip: skipTls }, async (t) => {
  const pki = makePki();
  t.teardown(() => fs.rmSync(pki.dir, { recursive: true, force: true }));
  const ref = 'keystore:HttpsKeystore/localhost';
  const d = await startDaemon(t, { rest: { 'auth.basic.enabled': true, 'login.throttle.max.delay': 0 }, identities, http: { 'https.keystore.cert': ref, 'https.keystore.key': ref } }, { https: 1 });
  const port = d.ports.https[0];
  const ca = fs.readFileSync(pki.caCert, 'utf8');
  const api = (p: string, body: object, who = ADMIN) => d.request(`/services/keystores/v1${p}`, { method: 'POST', headers: who, body });

  // No entry yet: the self-signed certificate of dataDir, and a warning saying why.
  let h = await handshake(port, ca);
  t.same([h.subject, h.authorized], ['gatewayd', false], 'self-signed until the entry exists');
  await d.waitForLog(/https keystore entry missing: serving the self-signed certificate/);

  // The entry is in use: a keystores-only role may not make it, nor change it; other entries it may.
  const keypair = { keystoreServicePid: 'HttpsKeystore', alias: 'localhost', algorithm: 'EC', size: 256, signatureAlgorithm: 'SHA256withECDSA', attributes: 'CN=localhost, O=Example' };
  let r = await api('/entries/keypair', keypair, KS);
  t.equal(r.status, 403);
  t.equal(r.json().message, 'Only kura.admin may change keystore entry HttpsKeystore/localhost: it is used by http.https.keystore.cert');
  r = await api('/entries/keypair', { ...keypair, alias: 'spare' }, KS);
  t.equal(r.status, 204, 'an entry not in use is rest.keystores business');

  r = await api('/entries/keypair', keypair);
  t.equal(r.status, 204, r.body);
  await d.waitForLog(/https certificate reloaded" entry=HttpsKeystore\/localhost/);
  h = await handshake(port, ca);
  t.same([h.subject, h.authorized], ['localhost', false], 'the new key pair is served at once');

  // Its CSR, signed by the CA with the names a browser checks; the chain installed.
  r = await api('/entries/csr', { keystoreServicePid: 'HttpsKeystore', alias: 'localhost', signatureAlgorithm: 'SHA256withECDSA', attributes: 'CN=localhost, O=Example' });
  const leaf = signCsr(pki.caCert, pki.caKey, pki.dir, r.json().signingRequest, 'https-leaf', 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  // A keep-alive connection opened before the rotation keeps its certificate.
  const before = tls.connect({ host: '127.0.0.1', port, servername: 'localhost', rejectUnauthorized: false });
  await new Promise((res) => before.once('secureConnect', res));
  r = await api('/entries/privatekey', { keystoreServicePid: 'HttpsKeystore', alias: 'localhost', certificateChain: [leaf, ca] }, KS);
  t.equal(r.status, 403, 'installing the chain of an entry in use is kura.admin too');
  r = await api('/entries/privatekey', { keystoreServicePid: 'HttpsKeystore', alias: 'localhost', certificateChain: [leaf, ca] });
  t.equal(r.status, 204, r.body);
  h = await handshake(port, ca);
  t.same([h.subject, h.authorized, h.error], ['localhost', true, undefined], 'a client trusting the CA accepts the rotated certificate');
  const viaApi = await d.request('/services/keystores/v1', { tls: true, port, ca: pki.caCert, headers: ADMIN });
  t.equal(viaApi.status, 200, 'an HTTPS request verifying the server against the CA');
  t.equal(before.getPeerCertificate().subject.CN, 'localhost');
  t.notOk(before.authorized, 'the connection opened before keeps its certificate');
  before.destroy();

  // The CA as a trusted entry: the client-auth truststore of the next start is the keystore's.
  r = await api('/entries/certificate', { keystoreServicePid: 'HttpsKeystore', alias: 'clients-ca', certificate: ca });
  t.equal(r.status, 204);

  // Restarted, the entry is served from the start, and client certificates chain to the keystore.
  await d.stop();
  const clientAuthPort = await freePort();
  const d2 = await startDaemon(t, { rest: { 'auth.basic.enabled': true, 'login.throttle.max.delay': 0 }, identities, http: { 'https.keystore.cert': ref, 'https.keystore.key': ref, 'https.truststore': 'keystore:HttpsKeystore', 'https.ports': [port], 'https.client.auth.ports': [clientAuthPort] } }, { dir: d.dir });
  t.teardown(() => d2.stop());
  h = await handshake(port, ca);
  t.same([h.subject, h.authorized], ['localhost', true], 'after a restart');
  const trusted = pki.client('admin');
  const other = pki.client('admin', { untrusted: true });
  t.equal(await clientHandshake(clientAuthPort, trusted), true, 'a client certificate of the CA in the keystore is accepted');
  t.equal(await clientHandshake(clientAuthPort, other), false, 'one of another CA is not');
  // Adding that CA to the keystore lets its clients in, without a restart.
  r = await d2.request('/services/keystores/v1/entries/certificate', { method: 'POST', headers: ADMIN, body: { keystoreServicePid: 'HttpsKeystore', alias: 'other-ca', certificate: fs.readFileSync(path.join(pki.dir, 'other-ca.pem'), 'utf8') } });
  t.equal(r.status, 204);
  t.equal(await clientHandshake(clientAuthPort, other), true, 'accepted once its CA is in the keystore');
  r = await d2.request('/services/keystores/v1/entries', { method: 'DELETE', headers: ADMIN, body: { keystoreServicePid: 'HttpsKeystore', alias: 'other-ca' } });
  t.equal(r.status, 204);
  t.equal(await clientHandshake(clientAuthPort, other), false, 'refused again once it is deleted');
  t.notMatch([...d.logs, ...d2.logs].join('\n'), /PRIVATE KEY/);
});

/**
 * A broker (`broker.url`: its plain listener) with a TLS listener on `tlsPort` that requires a client certificate from a new test CA and names each client by its
 * certificate's subject (use_identity_as_username), logging to a file line by line: `brokerSaw(cn)`
 * says whether a client of that common name connected.
 */
async function clientCertBroker(t: { teardown(fn: () => unknown): void }) {
  const pki = makePki();
  t.teardown(() => fs.rmSync(pki.dir, { recursive: true, force: true }));
  const brokerLog = path.join(pki.dir, 'mosquitto.log');
  const tlsPort = await freePort();
  const broker = await startMosquitto({
    conf: ['log_type notice', `log_dest file ${brokerLog}`, `listener ${tlsPort} 127.0.0.1`, `cafile ${pki.caCert}`, `certfile ${pki.serverCert}`, `keyfile ${pki.serverKey}`, 'require_certificate true', 'use_identity_as_username true'],
  });
  t.teardown(() => broker.close());
  const brokerSaw = (cn: string) => (fs.existsSync(brokerLog) ? fs.readFileSync(brokerLog, 'utf8') : '').includes(`u'${cn}'`);
  return { pki, broker, tlsPort, brokerSaw };
}

t.test('MQTT client identity from a keystore entry, rotated without a restart', { skip: mosquittoSkip().skip ?? skipTls }, async (t) => {
  const { pki, broker, tlsPort, brokerSaw } = await clientCertBroker(t);
  const certs = { ca: pki.caCert };
  const caKey = pki.caKey;
  const DEVICE = 'gw-rot';
  const d = await startDaemon(t, {
    rest: { 'auth.basic.enabled': true, 'login.throttle.max.delay': 0 },
    identities,
    mqtt: {
      enabled: true,
      'broker-url': `mqtts://127.0.0.1:${tlsPort}`,
      'client-id': DEVICE,
      'topic.context.account-name': 'acct',
      'tls.ca': 'keystore:SSLKeystore/broker-ca',
      'tls.cert': 'keystore:SSLKeystore/device',
      'tls.key': 'keystore:SSLKeystore/device',
      // The requesters of this broker may manage keystores but are not administrators.
      'requester.permissions': ['rest.keystores'],
    },
  });
  await d.waitForLog(/mqtt TLS file cannot be read, not connecting".* key=mqtt.tls.ca file=keystore:SSLKeystore\/broker-ca error="keystore entry SSLKeystore\/broker-ca does not exist"/);
  const api = (p: string, body: object) => d.request(`/services/keystores/v1${p}`, { method: 'POST', headers: ADMIN, body });

  let r = await api('/entries/certificate', { keystoreServicePid: 'SSLKeystore', alias: 'broker-ca', certificate: fs.readFileSync(certs.ca, 'utf8') });
  t.equal(r.status, 204);
  r = await api('/entries/keypair', { keystoreServicePid: 'SSLKeystore', alias: 'device', algorithm: 'RSA', size: 2048, signatureAlgorithm: 'SHA256withRSA', attributes: 'CN=self-signed' });
  t.equal(r.status, 204);
  // Self-signed: the broker refuses it; the daemon keeps trying.
  await d.waitForLog(/mqtt reconnecting".* reason="keystore entry SSLKeystore\/device changed"/);
  const issue = async (cn: string) => {
    r = await api('/entries/csr', { keystoreServicePid: 'SSLKeystore', alias: 'device', signatureAlgorithm: 'SHA256withRSA', attributes: `CN=${cn}` });
    const leaf = signCsr(certs.ca, caKey, pki.dir, r.json().signingRequest, cn, 'extendedKeyUsage=clientAuth\n');
    r = await api('/entries/privatekey', { keystoreServicePid: 'SSLKeystore', alias: 'device', certificateChain: [leaf] });
    t.equal(r.status, 204, r.body);
  };
  const connectsBefore = () => d.logs.filter((l) => /msg="mqtt connected"/.test(l)).length;
  await issue('gw-rot-identity-1');
  await until(() => connectsBefore() >= 1, 15_000, 'connected with the CA-signed certificate');
  await until(() => brokerSaw('gw-rot-identity-1'), 5000, 'the broker saw identity 1');

  // Rotation: a new certificate for the same key, with another subject.
  const n = connectsBefore();
  await issue('gw-rot-identity-2');
  await until(() => connectsBefore() > n, 15_000, 'reconnected');
  await until(() => brokerSaw('gw-rot-identity-2'), 5000, 'the broker saw identity 2');

  // Over KEYS-V1 a requester without kura.admin cannot change the entry the connection uses.
  // (on the broker's plain listener: the same broker, another door)
  const q = new Requester(broker.url, 'kapua-req', 'acct');
  await q.start();
  t.teardown(() => q.end());
  const rid = '-42';
  await q.client.publish(`$EDC/acct/${DEVICE}/KEYS-V1/DEL/keystores/entries`, encodeKuraPayload({ metrics: [{ name: 'requester.client.id', type: 'STRING', value: 'kapua-req' }, { name: 'request.id', type: 'STRING', value: rid }], body: Buffer.from(JSON.stringify({ keystoreServicePid: 'SSLKeystore', alias: 'device' })) }), { qos: 0 });
  await until(() => q.replies.has(rid), 10_000, 'KEYS-V1 reply');
  const dec = decodeKuraPayload(q.replies.get(rid)!.payload);
  t.ok(dec.ok);
  if (dec.ok) {
    t.equal(dec.value.metrics.find((m) => m.name === 'response.code')?.value, 400);
    t.equal(dec.value.metrics.find((m) => m.name === 'response.exception.message')?.value, 'Only kura.admin may change keystore entry SSLKeystore/device: it is used by mqtt.tls.cert');
  }
  t.equal((await d.request('/services/keystores/v1/entries/entry?keystoreServicePid=SSLKeystore&alias=device', { headers: ADMIN })).status, 200, 'still there');
  t.notMatch(d.logs.join('\n'), /PRIVATE KEY/);
});

t.test('with two connections, a rotated entry reconnects the connection that uses it, and only that one', { skip: mosquittoSkip().skip ?? skipTls }, async (t) => {
  const { pki, broker, tlsPort, brokerSaw } = await clientCertBroker(t);
  const d = await startDaemon(t, {
    rest: { 'auth.basic.enabled': true, 'login.throttle.max.delay': 0 },
    identities,
    mqtt: {
      connections: {
        // The plain listener, no keystore entry.
        default: { enabled: true, 'broker-url': broker.url, 'client-id': 'gw-plain' },
        cloud: { enabled: true, 'broker-url': `mqtts://127.0.0.1:${tlsPort}`, 'client-id': 'gw-tls', 'tls.ca': 'keystore:SSLKeystore/broker-ca', 'tls.cert': 'keystore:SSLKeystore/device', 'tls.key': 'keystore:SSLKeystore/device' },
      },
    },
  });
  // The connection's own key path in the message.
  await d.waitForLog(/mqtt TLS file cannot be read, not connecting".* connection=cloud key=mqtt.connections.cloud.tls.ca file=keystore:SSLKeystore\/broker-ca/);
  const api = (p: string, body: object) => d.request(`/services/keystores/v1${p}`, { method: 'POST', headers: ADMIN, body });
  const conns = async () => (await d.request('/services/cloudconnection/v1/connections', { headers: ADMIN })).json() as any[];
  let r = await api('/entries/certificate', { keystoreServicePid: 'SSLKeystore', alias: 'broker-ca', certificate: fs.readFileSync(pki.caCert, 'utf8') });
  t.equal(r.status, 204);
  r = await api('/entries/keypair', { keystoreServicePid: 'SSLKeystore', alias: 'device', algorithm: 'EC', size: 256, signatureAlgorithm: 'SHA256withECDSA', attributes: 'CN=self-signed' });
  t.equal(r.status, 204);
  const issue = async (cn: string) => {
    r = await api('/entries/csr', { keystoreServicePid: 'SSLKeystore', alias: 'device', signatureAlgorithm: 'SHA256withECDSA', attributes: `CN=${cn}` });
    const leaf = signCsr(pki.caCert, pki.caKey, pki.dir, r.json().signingRequest, cn, 'extendedKeyUsage=clientAuth\n');
    r = await api('/entries/privatekey', { keystoreServicePid: 'SSLKeystore', alias: 'device', certificateChain: [leaf] });
    t.equal(r.status, 204, r.body);
  };
  await issue('gw-two-1');
  await until(() => brokerSaw('gw-two-1'), 15_000, 'the broker saw identity 1');
  const reconnecting = () => d.logs.filter((l) => /msg="mqtt reconnecting"/.test(l));
  const n = reconnecting().length;
  await issue('gw-two-2');
  await until(() => brokerSaw('gw-two-2'), 15_000, 'the broker saw identity 2');
  const lines = reconnecting().slice(n);
  t.ok(lines.length > 0 && lines.every((l) => l.includes('connection=cloud')), 'only the connection using the entry reconnected');
  const plain = (await conns()).find((c) => c.name === 'default');
  t.match(plain, { connected: true, reconnects: 0 }, 'the plain connection was not touched');
});
