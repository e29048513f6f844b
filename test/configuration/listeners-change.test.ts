// A runtime change of the listener settings is checked before it is stored (docs/configuration-v2.md
// "Listener settings"), against the real daemon over REST and CONF-V2: each way to make the next
// start's listeners fail is refused with 400 naming the property, nothing is stored, check-config
// stays ok, and a usable change is accepted.
import t from 'tap';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { runCli, startDaemon } from '../helpers/daemon.js';
import { basic } from '../helpers/session-client.js';
import { haveOpenssl, makePki, writeCrl } from '../helpers/certs.js';
import { freePort } from '../helpers/ports.js';
import { mosquittoSkip, startMosquitto } from '../helpers/mosquitto.js';
import { Requester } from '../helpers/mqtt-fixture.js';

const C = '/services/configuration/v2';
const HTTP = 'org.eclipse.kura.http.server.manager.HttpService';
const REST = 'org.eclipse.kura.internal.rest.provider.RestService';

t.test('listener settings that would not open are refused before they are stored', { skip: !haveOpenssl() && process.env.CI !== 'true' ? 'openssl missing' : false }, async (t) => {
  const d = await startDaemon(t, { identities: { admin: { password: 'admin', permissions: ['kura.admin'] } }, rest: { 'login.throttle.max.delay': 0 } }, { http: 1, https: 1 });
  const admin = basic(d, 'admin', 'admin');
  const pki = makePki(fs.mkdtempSync(path.join(d.dir, 'pki-')));
  const other = pki.client('someone-else'); // a valid key that is not the server certificate's
  const garbage = path.join(d.dir, 'garbage.pem');
  fs.writeFileSync(garbage, 'not a PEM file\n');
  const crl = path.join(d.dir, 'good.crl');
  writeCrl(pki, [], crl);
  const taken = net.createServer();
  await new Promise<void>((r) => taken.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => taken.close());
  const takenPort = (taken.address() as net.AddressInfo).port;
  const spare = await freePort();

  const update = (properties: Record<string, unknown>, pid = HTTP) =>
    admin.request(`${C}/configurableComponents/configurations/_update`, { method: 'PUT', body: { configs: [{ pid, properties }], takeSnapshot: false } });
  const S = (value: string) => ({ type: 'STRING', value });
  const P = (...value: number[]) => ({ type: 'INTEGER', value });
  const layerFile = path.join(d.dataDir, 'config', 'runtime.json');
  const layer = () => (fs.existsSync(layerFile) ? fs.readFileSync(layerFile, 'utf8') : '');

  const cases: [string, Record<string, unknown>, string, RegExp, string?][] = [
    ['an address the device does not have', { 'bind.address': S('10.255.255.1') }, 'bind.address', /10\.255\.255\.1 is not an IP address of this device \(.*127\.0\.0\.1/],
    ['a host name', { 'bind.address': S('gateway.example') }, 'bind.address', /gateway\.example is not an IP address of this device/],
    ['a keystore key that is not PEM', { 'https.keystore.cert': S(pki.serverCert), 'https.keystore.key': S(garbage) }, 'https.keystore.key', /garbage\.pem is not an unencrypted PEM private key/],
    ['a keystore certificate that is not PEM', { 'https.keystore.cert': S(garbage), 'https.keystore.key': S(pki.serverKey) }, 'https.keystore.cert', /garbage\.pem is not a PEM certificate/],
    ['a key that does not match the certificate', { 'https.keystore.cert': S(pki.serverCert), 'https.keystore.key': S(other.key) }, 'https.keystore.key', /is not the private key of the certificate/],
    ['a keystore file that is not there', { 'https.keystore.cert': S(pki.serverCert), 'https.keystore.key': S('/nonexistent/server.key') }, 'https.keystore.key', /\/nonexistent\/server\.key cannot be read: ENOENT/],
    ['half a keystore', { 'https.keystore.cert': S(pki.serverCert) }, 'https.keystore.key', /must be given together/],
    ['a port used twice', { 'https.ports': P(d.ports.http[0]) }, 'https.ports', new RegExp(`port ${d.ports.http[0]} is configured for more than one listener \\(also in http.ports\\)`)],
    ['a port another program holds', { 'http.ports': P(d.ports.http[0], takenPort) }, 'http.ports', new RegExp(`port ${takenPort} on 127.0.0.1 is in use by another program`)],
    ['a port out of range', { 'http.ports': P(65536) }, 'http.ports', /must be at most 65535, got 65536/],
    ['a truststore that is not PEM', { 'https.client.auth.ports': P(spare), 'https.truststore': S(garbage) }, 'https.truststore', /garbage\.pem holds no PEM certificate/],
    ['a truststore that is not there', { 'https.client.auth.ports': P(spare), 'https.truststore': S('/nonexistent/ca.pem') }, 'https.truststore', /cannot be read: ENOENT/],
    ['a CRL that is not PEM', { 'https.client.auth.ports': P(spare), 'https.truststore': S(pki.caCert), 'https.truststore.crl': S(garbage) }, 'https.truststore.crl', /is not a usable PEM revocation list/],
    ['allowed ports that name no listener', { 'allowed.ports': P(spare) }, 'allowed.ports', /none of the ports .* is a listener .*: the REST API would be unreachable/, REST],
  ];
  const before = layer();
  for (const [what, properties, key, why, pid = HTTP] of cases) {
    const r = await update(properties, pid);
    t.equal(r.status, 400, `${what}: 400`);
    t.match(r.json().message, new RegExp(`^Invalid configuration of ${pid.replace(/\./g, '\\.')}, property ${key.replace(/\./g, '\\.')}: `), `${what}: names ${key}`);
    t.match(r.json().message, why, `${what}: ${r.json().message}`);
  }
  t.equal(layer(), before, 'nothing was stored');
  const check = runCli(['check-config', '--config', d.configFile]);
  t.equal(check.status, 0, `check-config: ${check.stdout}`);

  // Usable settings are accepted, for the next start.
  const ok = await update({ 'https.keystore.cert': S(pki.serverCert), 'https.keystore.key': S(pki.serverKey), 'https.client.auth.ports': P(spare), 'https.truststore': S(pki.caCert), 'https.truststore.crl': S(crl), 'bind.address': S('0.0.0.0') });
  t.same([ok.status, ok.json()], [200, { message: 'The http settings were saved; they take effect at the next start of gatewayd.' }]);
  t.equal(runCli(['check-config', '--config', d.configFile]).status, 0, 'check-config ok with them');
  // The daemon's own ports are not "in use by another program".
  t.equal((await update({ 'http.ports': P(d.ports.http[0], await freePort()) })).status, 200, "a port list with the daemon's own port");
});

t.test('the same checks over CONF-V2', mosquittoSkip(), async (t) => {
  const broker = await startMosquitto();
  t.teardown(() => broker.close());
  const d = await startDaemon(t, { identities: { admin: { password: 'admin', permissions: ['kura.admin'] } }, mqtt: { enabled: true, 'broker-url': broker.url, 'client-id': 'dev1', 'topic.context.account-name': 'acct' } });
  await d.waitForLog(/msg="mqtt connected"/);
  const req = new Requester(broker.url, 'kapua');
  await req.start();
  t.teardown(() => req.client.end());
  const body = { configs: [{ pid: HTTP, properties: { 'bind.address': { type: 'STRING', value: '10.255.255.1' } } }], takeSnapshot: false };
  const r = (await req.kura('dev1', 'PUT/configurableComponents/configurations/_update', JSON.stringify(body), { app: 'CONF-V2', wait: 8000 }))!;
  t.equal(r.code, 400);
  t.match(JSON.parse(r.body!).message, `Invalid configuration of ${HTTP}, property bind.address: 10.255.255.1 is not an IP address of this device`);
  t.notOk(fs.existsSync(path.join(d.dataDir, 'config', 'runtime.json')) && fs.readFileSync(path.join(d.dataDir, 'config', 'runtime.json'), 'utf8').includes('10.255.255.1'), 'not stored');
});
