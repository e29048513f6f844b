// A start whose runtime listener settings cannot open (docs/configuration-v2.md "Listener settings")
// comes up on the image file's listener settings instead of exiting for ever: each way a listener
// breaks after its change was accepted (a port taken by the time of the restart, a keystore file
// replaced by one that is not PEM or by a key of another certificate, an address the device no
// longer has), with the refusal logged, shown in system/v1 status and reported by check-config;
// once the cause is gone, the next start opens the runtime settings again.
import t from 'tap';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { runCli, startDaemon, type Daemon } from '../helpers/daemon.js';
import { basic } from '../helpers/session-client.js';
import { haveOpenssl, makePki } from '../helpers/certs.js';
import { freePort } from '../helpers/ports.js';

const C = '/services/configuration/v2';
const HTTP = 'org.eclipse.kura.http.server.manager.HttpService';
const READY = /msg="gatewayd ready"/;

t.test('the image file\'s listener settings stand in for runtime ones that cannot open', { skip: !haveOpenssl() && process.env.CI !== 'true' ? 'openssl missing' : false }, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-fallback-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const pki = makePki(fs.mkdtempSync(path.join(dir, 'pki-')));
  const other = pki.client('someone-else');
  let d = await startDaemon(t, { identities: { admin: { password: 'admin', permissions: ['kura.admin'] } }, rest: { 'login.throttle.max.delay': 0 } }, { dir, http: 1, https: 1 });
  const file = JSON.parse(fs.readFileSync(d.configFile, 'utf8'));
  const imageHttp: number = file.http['http.ports'][0];
  const imageHttps: number = file.http['https.ports'][0];

  /** Stops the daemon and starts it again on the same dataDir and file. */
  const restart = async (): Promise<Daemon> => {
    t.equal(await d.stop(), 0, 'stopped');
    d = await startDaemon(t, () => file, { dir, noWait: true });
    await d.waitForLog(READY, 20_000);
    // The file's ports, not the ones startDaemon picked and did not use.
    d.ports.http = [imageHttp];
    d.ports.https = [imageHttps];
    return d;
  };
  const at = (port: number) => basic(d, 'admin', 'admin', { port, tls: false });
  const update = (properties: Record<string, unknown>) =>
    at(imageHttp).request(`${C}/configurableComponents/configurations/_update`, { method: 'PUT', body: { configs: [{ pid: HTTP, properties }], takeSnapshot: false } });
  const status = async (port = imageHttp) => (await at(port).request('/services/system/v1/status')).json();
  const checkConfig = () => runCli(['check-config', '--config', d.configFile]);
  const refusedLine = () => d.logs.find((l) => l.includes('runtime listener settings refused'));
  const S = (value: string) => ({ type: 'STRING', value });

  t.test('a port taken by the time of the restart', async (t) => {
    const runtimePort = await freePort();
    t.equal((await update({ 'http.ports': { type: 'INTEGER', value: [runtimePort] } })).status, 200, 'accepted: the port is free now');
    const squatter = net.createServer();
    await new Promise<void>((r) => squatter.listen(runtimePort, '127.0.0.1', () => r()));
    await restart();
    t.ok(refusedLine(), 'the refusal is logged');
    t.match(refusedLine(), /properties=http\.http\.ports/, 'naming the property');
    t.match(refusedLine(), /EADDRINUSE/);
    t.equal((await at(imageHttp).request('/services/session/v1/authenticationInfo')).status, 200, "reachable on the image file's port");
    const s = await status();
    t.same(s.listenerFallback.properties, ['http.http.ports']);
    t.match(s.listenerFallback.error, /EADDRINUSE/);
    t.ok(s.listeners.some((l: { port: number }) => l.port === imageHttp) && !s.listeners.some((l: { port: number }) => l.port === runtimePort), 'the image port listens, the refused one does not');
    const check = checkConfig();
    t.equal(check.status, 1, 'check-config reports it');
    t.match(check.stdout, /error: http\.http\.ports: runtime configuration: the start of .* could not open its listeners \(.*EADDRINUSE.*\); gatewayd opens the image file's listener settings instead/);

    // Free again: the next start opens the runtime port; the record is gone.
    await new Promise<void>((r) => squatter.close(() => r()));
    await restart();
    t.notOk(refusedLine(), 'no refusal');
    t.equal((await at(runtimePort).request('/services/session/v1/authenticationInfo')).status, 200, 'reachable on the runtime port');
    t.equal((await status(runtimePort)).listenerFallback, null, 'status: no fallback');
    t.equal(checkConfig().status, 0, 'check-config ok again');
    d.ports.http = [runtimePort];
    const back = await at(runtimePort).request(`${C}/configurableComponents/configurations/_update`, { method: 'PUT', body: { configs: [{ pid: HTTP, properties: { 'http.ports': { type: 'INTEGER', value: [imageHttp] } } }], takeSnapshot: false } });
    t.equal(back.status, 200, 'the image port again (for the next cases)');
    await restart();
  });

  // A keystore that worked when it was set, then replaced on disk by something that cannot be used.
  const cert = path.join(dir, 'server.pem');
  const key = path.join(dir, 'server.key');
  fs.copyFileSync(pki.serverCert, cert);
  fs.copyFileSync(pki.serverKey, key);
  for (const [what, replacement, why, named] of [
    ['a keystore key replaced by a file that is not PEM', 'garbage\n', /DECODER|PEM|unsupported/, /is not an unencrypted PEM private key/],
    ['a keystore key replaced by the key of another certificate', fs.readFileSync(other.key, 'utf8'), /key values mismatch/, /is not the private key of the certificate/],
  ] as const) {
    t.test(what, async (t) => {
      fs.copyFileSync(pki.serverKey, key);
      t.equal((await update({ 'https.keystore.cert': S(cert), 'https.keystore.key': S(key) })).status, 200, 'accepted: the keystore works now');
      await restart();
      t.notOk(refusedLine(), 'the runtime keystore opened');
      t.equal((await d.request('/services/session/v1/authenticationInfo', { port: imageHttps, ca: pki.caCert })).status, 200, 'HTTPS with the runtime certificate');
      fs.writeFileSync(key, replacement);
      await restart();
      t.match(refusedLine(), /properties=http\.https\.keystore\.cert,http\.https\.keystore\.key/);
      t.match(refusedLine(), why);
      const r = await d.request('/services/session/v1/authenticationInfo', { port: imageHttps, tls: true });
      t.equal(r.status, 200, "HTTPS on the image file's keystore (the self-signed certificate)");
      t.same((await status()).listenerFallback.properties, ['http.https.keystore.cert', 'http.https.keystore.key']);
      const check = checkConfig();
      t.equal(check.status, 1);
      t.match(check.stdout, new RegExp(`error: http\\.https\\.keystore\\.key: runtime configuration: ${key.replace(/[.]/g, '\\.')} ${named.source}`), 'check-config names the property and why');
      t.match(check.stdout, /error: http\.https\.keystore\.cert, http\.https\.keystore\.key: runtime configuration: the start of/, 'and the refused start');
    });
  }

  t.test('an address the device does not have (a runtime layer written before the checks existed)', async (t) => {
    t.equal(await d.stop(), 0);
    const layerFile = path.join(file.dataDir, 'config', 'runtime.json');
    const layer = JSON.parse(fs.readFileSync(layerFile, 'utf8'));
    layer.components[HTTP] = { props: { 'bind.address': '10.255.255.1' } };
    fs.writeFileSync(layerFile, JSON.stringify(layer));
    const check = runCli(['check-config', '--config', d.configFile]);
    t.equal(check.status, 1, 'check-config reports it before any start');
    t.match(check.stdout, /error: http\.bind\.address: runtime configuration: 10\.255\.255\.1 is not an IP address of this device/);
    d = await startDaemon(t, () => file, { dir, noWait: true });
    await d.waitForLog(READY, 20_000);
    t.match(refusedLine(), /properties=http\.bind\.address/);
    t.match(refusedLine(), /EADDRNOTAVAIL/);
    t.equal((await at(imageHttp).request('/services/session/v1/authenticationInfo')).status, 200, "reachable on the image file's address");
    t.same((await status()).listenerFallback.properties, ['http.bind.address']);
    // A change made meanwhile (here: another property) keeps the image's listeners until the next start.
    t.equal((await update({ 'max.connections': { type: 'INTEGER', value: 100 } })).status, 200);
    t.equal((await at(imageHttp).request('/services/session/v1/authenticationInfo')).status, 200, 'still reachable after a change');
    t.equal(await d.stop(), 0);
  });
});
