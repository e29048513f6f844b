// The daemon's life cycle against the built bundle: readiness, HTTPS with a generated certificate,
// provisioning gaps, SIGTERM, SIGHUP with good and bad files, dataDir format versions.

import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import { startDaemon, type Daemon, type RequestOptions } from '../helpers/daemon.js';

// An operator the tests authenticate as with BASIC (the seeded admin must change its password first).
const OPERATOR = { password: 'op-secret-1', permissions: ['rest.assets'], passwordChangeNeeded: false };
const AUTH = `Basic ${Buffer.from(`operator:${OPERATOR.password}`).toString('base64')}`;
const get = (d: Daemon, p: string, o: RequestOptions = {}) => d.request(p, { ...o, headers: { authorization: AUTH, ...o.headers } });

const demo = {
  identities: { operator: OPERATOR },
  drivers: { sim: { factory: 'simulator' } },
  assets: {
    demo: { 'driver.pid': 'sim', channels: { temperature: { type: 'READ', 'value.type': 'DOUBLE', unit: 'C', simulation: 'sine' } } },
  },
};

t.test('ready line after every listener accepts; HTTPS with a self-signed certificate made once', async (t) => {
  const d = await startDaemon(t, demo, { http: 2, https: 1 });
  const ready = d.logs.find((l) => l.includes('msg="gatewayd ready"'))!;
  for (const p of [...d.ports.http, ...d.ports.https]) t.match(ready, new RegExp(`:${p}\\b`), `ready line names port ${p}`);
  for (const p of d.ports.http) t.equal((await get(d, '/services/assets', { port: p })).status, 200);
  const viaTls = await get(d, '/services/assets/demo/_read', { port: d.ports.https[0], tls: true });
  t.equal(viaTls.status, 200);
  t.equal(viaTls.json()[0].name, 'temperature');

  const certFile = path.join(d.dataDir, 'tls', 'selfsigned-cert.pem');
  const keyFile = path.join(d.dataDir, 'tls', 'selfsigned-key.pem');
  const cert = new crypto.X509Certificate(fs.readFileSync(certFile));
  t.match(cert.subjectAltName, /IP Address:127\.0\.0\.1/);
  t.equal(fs.statSync(keyFile).mode & 0o777, 0o600, 'private key is 0600');
  t.equal(fs.statSync(d.dataDir).mode & 0o777, 0o700, 'dataDir is 0700');
  t.notOk(d.logs.some((l) => l.includes('PRIVATE KEY')), 'the key never reaches the log');
  t.equal(await d.stop(), 0);

  // A restart on the same dataDir reuses the certificate.
  const d2 = await startDaemon(t, { ...demo, dataDir: d.dataDir }, { http: 1, https: 1, dir: d.dir });
  t.equal(fs.readFileSync(certFile, 'utf8'), cert.toString(), 'same certificate after restart');
  t.notOk(d2.logs.some((l) => /generated a self-signed certificate/.test(l)));
  await d2.stop();
  fs.rmSync(d.dir, { recursive: true, force: true });
});

t.test('a client-auth port without a truststore is not opened and the daemon still starts', async (t) => {
  const d = await startDaemon(t, demo, { http: 1, clientAuth: 1 });
  t.ok(d.logs.some((l) => /level=warn msg="client-auth ports not opened: truststore missing"/.test(l)));
  t.equal((await get(d, '/services/assets')).status, 200);
  await t.rejects(get(d, '/services/assets', { port: d.ports.clientAuth[0], tls: true }));
});

t.test('a port in use stops the start with a clear error', async (t) => {
  const first = await startDaemon(t, demo);
  const d = await startDaemon(t, { ...demo, http: { 'http.ports': first.ports.http } }, { noWait: true });
  t.not(await d.exited, 0);
  t.ok(d.logs.some((l) => /msg="not starting: cannot listen".*EADDRINUSE/.test(l)), d.logs.join('\n'));
});

t.test('SIGTERM stops gracefully within 5 s, with exit code 0', async (t) => {
  const d = await startDaemon(t, demo);
  const started = Date.now();
  t.equal(await d.stop(), 0);
  t.ok(Date.now() - started < 5000, `stopped in ${Date.now() - started} ms`);
  t.ok(d.logs.some((l) => /msg=stopped/.test(l)));
});

t.test('SIGHUP applies a new configuration; a bad file keeps the old one and says why', async (t) => {
  const d = await startDaemon(t, demo);
  const cfg = JSON.parse(fs.readFileSync(d.configFile, 'utf8'));
  cfg.assets.second = { 'driver.pid': 'sim', channels: { level: { type: 'READ_WRITE', 'value.type': 'INTEGER', initial: 7 } } };
  fs.writeFileSync(d.configFile, JSON.stringify(cfg));
  d.signal('SIGHUP');
  await d.waitForLog(/msg="configuration reloaded"/);
  t.same((await get(d, '/services/assets')).json(), ['demo', 'second']);

  cfg.assets.third = { 'driver.pid': 'nope', channels: {} };
  cfg.rest = { 'auth.basic.enabeld': true };
  fs.writeFileSync(d.configFile, JSON.stringify(cfg));
  d.signal('SIGHUP');
  await d.waitForLog(/msg="reload refused: keeping the running configuration"/);
  t.ok(d.logs.some((l) => /msg="reload refused: configuration problem" key=rest.auth.basic.enabeld problem="unknown key; did you mean \\"auth\.basic\.enabled\\"\?"/.test(l)));
  t.ok(d.logs.some((l) => /key=assets.third.driver.pid/.test(l)));
  t.same((await get(d, '/services/assets')).json(), ['demo', 'second'], 'old configuration still served');

  fs.writeFileSync(d.configFile, '{ not json');
  d.signal('SIGHUP');
  await d.waitForLog(/not valid JSON/);
  t.equal((await get(d, '/services/assets')).status, 200, 'still serving');
});

t.test('an older gatewayd refuses a dataDir written in a newer format', async (t) => {
  const d = await startDaemon(t, demo);
  const marker = path.join(d.dataDir, 'gatewayd-data.json');
  const info = JSON.parse(fs.readFileSync(marker, 'utf8'));
  t.equal(info.formatVersion, 1);
  await d.stop();
  fs.writeFileSync(marker, JSON.stringify({ formatVersion: 99, writtenBy: '9.9.9' }));
  const d2 = await startDaemon(t, { ...demo, dataDir: d.dataDir }, { noWait: true });
  t.not(await d2.exited, 0);
  t.ok(d2.logs.some((l) => /dataDir .* has format 99 \(written by gatewayd 9\.9\.9\); this gatewayd .* understands up to format 1/.test(l)), d2.logs.join('\n'));
  t.equal(JSON.parse(fs.readFileSync(marker, 'utf8')).formatVersion, 99, 'the newer dataDir is left untouched');
});
