// The command line and configuration (docs/installation.md, docs/configuration.md), against the
// built bundle.
import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { ensureBundle, runCli, startDaemon, ROOT } from '../helpers/daemon.js';
import { BUNDLE_LIMIT } from '../../build/bundle-limit.mjs';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-cli-'));
t.teardown(() => fs.rmSync(tmp, { recursive: true, force: true }));
const write = (name: string, cfg: unknown) => {
  const f = path.join(tmp, name);
  fs.writeFileSync(f, typeof cfg === 'string' ? cfg : JSON.stringify(cfg));
  return f;
};

t.test('--version prints the package version', async (t) => {
  const r = runCli(['--version']);
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  t.equal(r.status, 0);
  t.equal(r.stdout.trim(), `gatewayd ${pkg.version}`);
});

t.test('check-config accepts the development configuration', async (t) => {
  const r = runCli(['check-config', '--config', path.join(ROOT, 'config', 'dev.json')]);
  t.equal(r.status, 0, r.stdout);
  t.match(r.stdout, /: ok$/m);
});

t.test('check-config reports every problem with its key path', async (t) => {
  const f = write('bad.json', {
    'log.levle': 'info',
    http: { 'http.ports': [8080, 'x'], 'https.portz': [] },
    rest: { 'session.inactivity.interval': -5, 'auth.basic.enabled': 'yes' },
    drivers: { sim: { factory: 'simulator', speed: 3 } },
    assets: {
      pump1: {
        'driver.pid': 'sim',
        channels: { speed: { type: 'READ', 'value.type': 'DUBLE', simulation: 'sine' }, ok: { 'value.type': 'INTEGER', typo: 1 } },
      },
    },
    mqtt: { 'keep-alive': 'often', 'payload.encoding': 'xml' },
  });
  const r = runCli(['check-config', '--config', f]);
  t.equal(r.status, 1);
  for (const key of [
    'log.levle: unknown key',
    'http.http.ports[1]: expected a number',
    'http.https.portz: unknown key',
    'rest.session.inactivity.interval: must be between 1 and 604800 s (7 days), got -5',
    'rest.auth.basic.enabled: expected true or false',
    'drivers.sim.speed: unknown key',
    'assets.pump1.channels.speed.value.type: expected one of',
    'assets.pump1.channels.ok.typo: unknown key',
    'mqtt.keep-alive: expected a number',
    'mqtt.payload.encoding: expected one of',
  ]) {
    t.ok(r.stdout.includes(`error: ${key}`), `reports ${key}`);
  }
  t.match(r.stdout, /10 error\(s\)/);
});

t.test('check-config: malformed JSON and missing file are errors, missing TLS files are warnings', async (t) => {
  const r1 = runCli(['check-config', '--config', write('syntax.json', '{"http": ')]);
  t.equal(r1.status, 1);
  t.match(r1.stdout, /not valid JSON/);
  const r2 = runCli(['check-config', '--config', path.join(tmp, 'nope.json')]);
  t.equal(r2.status, 1);
  t.match(r2.stdout, /cannot read .*ENOENT/);
  const r3 = runCli(['check-config', '--config', write('warn.json', { http: { 'https.ports': [8443], 'https.client.auth.ports': [8444], 'https.truststore': 'missing-ca.pem' } })]);
  t.equal(r3.status, 0, r3.stdout);
  t.match(r3.stdout, /warning: http\.https\.truststore: file not found/);
});

t.test('check-config: keystore references are checked against dataDir\'s keystores, each missing one named', async (t) => {
  const dataDir = path.join(tmp, 'ks-data');
  const ks = (name: string) => fs.mkdirSync(path.join(dataDir, 'keystores', name), { recursive: true });
  ks('HttpsKeystore');
  ks('SSLKeystore');
  const key = path.join(tmp, 'ks.key');
  const cert = path.join(tmp, 'ks.crt');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert, '-subj', '/CN=gw', '-days', '2'], { stdio: 'ignore' });
  fs.writeFileSync(path.join(dataDir, 'keystores', 'HttpsKeystore', 'server.pem'), fs.readFileSync(key, 'utf8') + fs.readFileSync(cert, 'utf8'));
  fs.copyFileSync(cert, path.join(dataDir, 'keystores', 'SSLKeystore', 'ca.pem'));
  const f = write('ks.json', {
    dataDir,
    http: { 'https.keystore.cert': 'keystore:HttpsKeystore/server', 'https.keystore.key': 'keystore:HttpsKeystore/gone', 'https.truststore': 'keystore:HttpsKeystore' },
    mqtt: { 'tls.ca': 'keystore:SSLKeystore/ca', 'tls.cert': 'keystore:SSLKeystore/ca', 'tls.key': 'keystore:Nope/x' },
  });
  const r = runCli(['check-config', '--config', f]);
  t.equal(r.status, 0, 'warnings only: a device may be provisioned after its configuration');
  const warnings = r.stdout.split('\n').filter((l) => l.startsWith('warning: '));
  t.match(warnings, [
    /^warning: http\.https\.keystore\.key: keystore:HttpsKeystore\/gone: keystore entry HttpsKeystore\/gone does not exist: HTTPS serves dataDir's self-signed certificate until it is made \(keystores in .*ks-data\/keystores\)$/,
    /^warning: http\.https\.truststore: keystore:HttpsKeystore: keystore HttpsKeystore has no trusted certificate: the client-certificate HTTPS ports stay closed until it is made/,
    /^warning: mqtt\.tls\.cert: keystore:SSLKeystore\/ca: keystore entry SSLKeystore\/ca is a trusted certificate: a certificate chain needs a private key entry/,
    /^warning: mqtt\.tls\.key: keystore:Nope\/x: keystore "Nope" does not exist: the keystores are HttpsKeystore, SSLKeystore/,
  ]);
  t.equal(warnings.length, 4, 'the entries that exist and fit are not mentioned');
  t.same(fs.readdirSync(path.join(dataDir, 'keystores', 'HttpsKeystore')), ['server.pem'], 'nothing written');
});

t.test('GATEWAYD_CONFIG names the file when --config is absent', async (t) => {
  const f = write('env.json', { nonsense: 1 });
  const r = runCli(['check-config'], { env: { GATEWAYD_CONFIG: f } });
  t.equal(r.status, 1);
  t.match(r.stdout, /error: nonsense: unknown key/);
});

t.test('unknown options and arguments are refused with usage', async (t) => {
  const r = runCli(['--frobnicate']);
  t.equal(r.status, 64);
  t.match(r.stderr, /unknown option --frobnicate/);
  t.match(r.stderr, /usage:/);
});

t.test('a configuration error at start is logged with its key and the process exits non-zero', async (t) => {
  const d = await startDaemon(t, { rest: { 'allowed.portz': [] } }, { noWait: true });
  const code = await d.exited;
  t.not(code, 0);
  t.ok(d.logs.some((l) => /level=error msg="configuration error" key=rest.allowed.portz problem="unknown key; did you mean \\"allowed\.ports\\"\?"/.test(l)), d.logs.join('\n'));
});

t.test('the bundle runs alone, without node_modules', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-alone-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.copyFileSync(ensureBundle(), path.join(dir, 'gatewayd.mjs'));
  const { spawnSync } = await import('node:child_process');
  const r = spawnSync(process.execPath, [path.join(dir, 'gatewayd.mjs'), '--version'], { cwd: dir, encoding: 'utf8' });
  t.equal(r.status, 0, r.stderr);
  t.match(r.stdout, /^gatewayd \d+\.\d+\.\d+/);
});

t.test('the bundle stays under its limit (build/bundle-limit.mjs)', async (t) => {
  const size = fs.statSync(ensureBundle()).size;
  t.ok(size < BUNDLE_LIMIT, `bundle is ${size} bytes, limit ${BUNDLE_LIMIT}`);
});

t.test('a configuration key named __proto__ is an ordinary name, not a prototype change', async (t) => {
  const cfg = '{"identities": {"__proto__": {"password": "proto-pass-1", "permissions": ["rest.assets"]}}, "drivers": {"__proto__": {"factory": "simulator"}}, "assets": {"a": {"driver.pid": "__proto__", "channels": {"c": {"type": "READ", "value.type": "INTEGER", "simulation": "constant", "initial": 42}}}}}';
  const r = runCli(['check-config', '--config', write('proto.json', cfg)]);
  t.equal(r.status, 0, r.stdout);
  const d = await startDaemon(t, JSON.parse(cfg));
  const auth = `Basic ${Buffer.from('__proto__:proto-pass-1').toString('base64')}`;
  const res = await d.request('/services/assets/a/_read', { headers: { authorization: auth } });
  t.equal(res.status, 200, res.body);
  t.equal(res.json()[0].value, 42, 'the driver named __proto__ is attached and read');
});

t.test('check-config: "did you mean" for typos, one error for a bad value.type, JSON syntax errors with line and column', async (t) => {
  const typos = runCli(['check-config', '--config', write('typos.json', {
    'log.levle': 'info',
    http: { 'http.prots': [8080] },
    drivers: { plc: { factory: 'modbus', 'modbus.tcp.ip': '127.0.0.1' } },
    assets: { a: { 'driver.pid': 'plc', chanels: {}, channels: { c: { type: 'READ', 'value.type': 'INTEGER', 'unit.id': 1, 'primary.table': 'HOLDING_REGISTERS', 'memory.adress': 1 } } } },
    zzzzzz: 1,
  })]);
  t.equal(typos.status, 1);
  for (const line of [
    'error: log.levle: unknown key; did you mean "log.level"?',
    'error: http.http.prots: unknown key; did you mean "http.ports"?',
    'error: drivers.plc.modbus.tcp.ip: unknown key; did you mean "modbus.tcp-udp.ip"?',
    'error: assets.a.chanels: unknown key; did you mean "channels"?',
    'error: assets.a.channels.c.memory.adress: unknown key; did you mean "memory.address"?',
    'error: zzzzzz: unknown key',
  ]) t.ok(typos.stdout.split('\n').includes(line), line);

  // A mistyped value.type (or type) is one error: the driver's checks of the channel, which depend on
  // the type, do not add errors about a type nobody wrote.
  const cascade = runCli(['check-config', '--config', write('cascade.json', {
    drivers: { plc: { factory: 'modbus', 'modbus.tcp-udp.ip': '127.0.0.1' }, sim: { factory: 'simulator' } },
    assets: {
      a: { 'driver.pid': 'plc', channels: { c: { type: 'READ', 'value.type': 'DUBLE', 'unit.id': 1, 'primary.table': 'HOLDING_REGISTERS', 'memory.address': 1, 'data.type': 'INT32' } } },
      b: { 'driver.pid': 'sim', channels: { d: { type: 'READ_WRTE', 'value.type': 'INTEGER', simulation: 'memory', initial: 3 } } },
    },
  })]);
  t.equal(cascade.status, 1);
  t.same(cascade.stdout.trim().split('\n'), [
    'error: assets.a.channels.c.value.type: expected one of BOOLEAN, BYTE_ARRAY, DOUBLE, INTEGER, LONG, FLOAT, STRING, got "DUBLE"',
    'error: assets.b.channels.d.type: expected one of READ, WRITE, READ_WRITE, got "READ_WRTE"',
    `${path.join(tmp, 'cascade.json')}: 2 error(s)`,
  ]);

  const syntax = runCli(['check-config', '--config', write('syntax.json', '{\n  "http": {\n    "http.ports": [8080]\n    "bind.address": "127.0.0.1"\n  }\n}\n')]);
  t.equal(syntax.status, 1);
  t.match(syntax.stdout, /^error: .*syntax\.json is not valid JSON: line 4, column 5: /m);
  const cut = runCli(['check-config', '--config', write('cut.json', '{\n "http": {')]);
  t.match(cut.stdout, /is not valid JSON: line 2, column 11: /, 'a file that ends too early: its end');
});
