// Properties reserved to kura.admin (docs/configuration-v2.md "Reserved to kura.admin"), against the
// real daemon: an identity with rest.configuration gets 403 `Only kura.admin may change <pid>
// property <key>` for each of them (update, rollback, _reset), nothing of the request is applied,
// sending a value back unchanged is no change; kura.admin passes, over REST and CONF-V2. A request
// over MQTT from a requester without kura.admin is refused with 400 and the same message. A change of
// the trust anchors or unsigned.allowed applies to the very next install.
import t from 'tap';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startDaemon } from '../helpers/daemon.js';
import { basic, type Client } from '../helpers/session-client.js';
import { mosquittoSkip, startMosquitto } from '../helpers/mosquitto.js';
import { Requester } from '../helpers/mqtt-fixture.js';
import { buildZip, manifestText } from '../helpers/dp.js';
import { SIGNATURE_PATH, signedText } from '../../src/deploy/signature.js';
import { ConfigurationService } from '../../src/configuration/service.js';
import { configurationFamily } from '../../src/api/configuration.js';
import { mqttError, RequestError } from '../../src/core/errors.js';
import type { CoreRequest } from '../../src/core/family.js';
import { DriverRegistry } from '../../src/drivers/registry.js';
import { builtinDrivers } from '../../src/drivers/builtin.js';
import { silentLogger } from '../../src/log.js';

const C = '/services/configuration/v2';
const MQTT = 'org.eclipse.kura.core.data.transport.mqtt.MqttDataTransport';
const CLOUD = 'org.eclipse.kura.cloud.CloudService';
const DEPLOY = 'org.eclipse.kura.deployment.agent';
const HTTP = 'org.eclipse.kura.http.server.manager.HttpService';
const REST = 'org.eclipse.kura.internal.rest.provider.RestService';
const CONSOLE = 'org.eclipse.kura.web.Console';

const S = (value: string) => ({ type: 'STRING', value });
const SA = (...value: string[]) => ({ type: 'STRING', value });
const I = (...value: number[]) => ({ type: 'INTEGER', value });
const B = (value: boolean) => ({ type: 'BOOLEAN', value });
const key = crypto.generateKeyPairSync('ed25519');
const anchor = key.publicKey.export({ type: 'spki', format: 'pem' }).toString();

/** Every reserved property, with a value that differs from the one in force. */
const RESERVED: [string, string, unknown][] = [
  [MQTT, 'broker-url', S('mqtt://127.0.0.1:1')],
  [MQTT, 'username', S('someone')],
  [MQTT, 'password', { type: 'PASSWORD', value: 'their-secret' }],
  [MQTT, 'tls.ca', S('/tmp/their-ca.pem')],
  [MQTT, 'tls.cert', S('/tmp/their-cert.pem')],
  [MQTT, 'tls.key', S('/tmp/their-key.pem')],
  [CLOUD, 'requester.permissions', SA('rest.assets')],
  [CLOUD, 'applications.disabled', SA('DEPLOY-V2')],
  [DEPLOY, 'trust.anchors', SA(anchor)],
  [DEPLOY, 'unsigned.allowed', B(false)],
  [DEPLOY, 'system.packages.database', S('dpkg:/etc/shadow')],
  [HTTP, 'http.ports', I(1)],
  [HTTP, 'https.ports', I(2)],
  [HTTP, 'https.client.auth.ports', I(3)],
  [HTTP, 'https.keystore.cert', S('/tmp/their.pem')],
  [HTTP, 'https.keystore.key', S('/tmp/their.key')],
  [HTTP, 'https.truststore', S('/tmp/their-ca.pem')],
  [HTTP, 'https.truststore.crl', S('/tmp/their.crl')],
  [HTTP, 'bind.address', S('0.0.0.0')],
  [REST, 'allowed.ports', I(4)],
  [REST, 'auth.password.enabled', B(false)],
  [REST, 'auth.certificate.enabled', B(false)],
  [REST, 'auth.basic.enabled', B(false)],
  [REST, 'auth.certificate.stateless.enabled', B(false)],
  [REST, 'session.management.enabled', B(false)],
  [REST, 'login.throttle.max.delay', { type: 'INTEGER', value: 1 }],
];

const api = (c: Client) => {
  const call = (p: string, body?: unknown, method = 'POST') => c.request(`${C}/${p}`, { method, body: body === undefined ? undefined : JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  return {
    call,
    update: (configs: unknown[], takeSnapshot = false) => call('configurableComponents/configurations/_update', { configs, takeSnapshot }, 'PUT'),
    props: async (pid: string) => (await call('configurableComponents/configurations/byPid', { pids: [pid] })).json().configs[0].properties,
    ids: async (): Promise<number[]> => (await c.request(`${C}/snapshots`)).json().ids,
  };
};

t.test('reserved properties over REST and CONF-V2, rollback and _reset', mosquittoSkip(), async (t) => {
  const broker = await startMosquitto();
  t.teardown(() => broker.close());
  const d = await startDaemon(t, {
    identities: {
      admin: { password: 'admin', permissions: ['kura.admin'] },
      conf: { password: 'conf', permissions: ['rest.configuration'] },
    },
    rest: { 'login.throttle.max.delay': 0 },
    mqtt: { enabled: true, 'broker-url': broker.url, 'client-id': 'dev1', 'topic.context.account-name': 'acct', username: 'device', password: 'device-secret' },
  });
  await d.waitForLog(/msg="mqtt connected"/);
  const admin = api(basic(d, 'admin', 'admin'));
  const conf = api(basic(d, 'conf', 'conf'));
  const layerFile = path.join(d.dataDir, 'config', 'runtime.json');
  const layer = () => (fs.existsSync(layerFile) ? fs.readFileSync(layerFile, 'utf8') : '');

  t.test('403 naming the property for rest.configuration; nothing of the request applied', async (t) => {
    const before = layer();
    for (const [pid, k, value] of RESERVED) {
      const r = await conf.update([{ pid: CONSOLE, properties: { 'access.banner.content': S('changed alongside') } }, { pid, properties: { [k]: value } }]);
      t.same([r.status, r.json()], [403, { message: `Only kura.admin may change ${pid} property ${k}` }], `${pid} ${k}`);
    }
    t.equal(layer(), before, 'nothing stored');
    // Removing a reserved value the administrator set is a change as well.
    t.equal((await admin.update([{ pid: REST, properties: { 'session.management.enabled': B(true) } }])).status, 200);
    t.equal((await conf.update([{ pid: REST, properties: { 'login.throttle.max.delay': { type: 'INTEGER' } } }])).status, 403, 'removing a reserved value');
    const now = layer();
    t.notOk(now.includes('changed alongside'), 'the banner of the refused requests was not applied');
    t.equal((await conf.props(CONSOLE))['access.banner.content']?.value ?? '', '', 'banner unchanged');
  });

  t.test('kura.admin passes; values sent back unchanged and other properties are no reserved change', async (t) => {
    // Not switched off here: the administrator's own BASIC requests need them.
    const keep = new Set(['auth.password.enabled', 'auth.basic.enabled']);
    for (const [pid, k, value] of RESERVED) {
      if (keep.has(k)) continue;
      const original = (await admin.props(pid))[k];
      const r = await admin.update([{ pid, properties: { [k]: value } }]);
      t.not(r.status, 403, `admin: ${pid} ${k} (${r.status} ${r.body})`);
      if (r.status !== 200) continue;
      const back = k === 'password' ? { type: 'PASSWORD', value: 'device-secret' } : original ?? { type: (value as { type: string }).type };
      t.equal((await admin.update([{ pid, properties: { [k]: back } }])).status, 200, `admin: ${k} back as it was`);
    }
    // A Kura client sends back every property it read, the password as placeholder.
    for (const pid of [MQTT, DEPLOY, HTTP, REST]) {
      const props = await conf.props(pid);
      for (const k of ['kura.service.pid', 'service.factoryPid']) delete props[k];
      const r = await conf.update([{ pid, properties: props }]);
      t.equal(r.status, 200, `rest.configuration sends ${pid} back as read: ${r.body}`);
    }
    const r = await conf.update([
      { pid: MQTT, properties: { 'keep-alive': { type: 'INTEGER', value: 25 } } },
      { pid: REST, properties: { 'session.inactivity.interval': { type: 'LONG', value: 1200 } } },
      { pid: DEPLOY, properties: { 'download.timeout': { type: 'INTEGER', value: 30000 } } },
      { pid: HTTP, properties: { 'max.connections': { type: 'INTEGER', value: 300 } } },
    ]);
    t.equal(r.status, 200, `non-reserved properties of the same components: ${r.body}`);
    // Driver instances and assets carry no reserved property: created and deleted by rest.configuration.
    const mk = await conf.call('factoryComponents', { configs: [{ factoryPid: 'org.eclipse.kura.driver.simulator', pid: 'sim2', properties: {} }], takeSnapshot: false });
    t.equal(mk.status, 200);
    t.equal((await conf.call('factoryComponents/byPid', { pids: ['sim2'], takeSnapshot: false }, 'DELETE')).status, 200);
  });

  t.test('a rollback or _reset that would change a reserved property is the administrator\'s', async (t) => {
    const start = (await admin.ids()).at(-1)!;
    t.equal((await admin.update([{ pid: DEPLOY, properties: { 'unsigned.allowed': B(false) } }], true)).status, 200);
    t.equal((await conf.update([{ pid: CONSOLE, properties: { 'access.banner.content': S('hello') } }], true)).status, 200);
    const r = await conf.call('snapshots/byId/_rollback', { id: start });
    t.same([r.status, r.json()], [403, { message: `Only kura.admin may change ${DEPLOY} property unsigned.allowed` }], 'rollback past the administrator\'s change');
    t.same((await conf.props(DEPLOY))['unsigned.allowed'], { value: false, type: 'BOOLEAN' }, 'not rolled back');
    t.equal((await conf.call('snapshots/_rollback')).status, 200, 'rolling back only its own change is allowed');
    t.equal((await conf.props(CONSOLE))['access.banner.content']?.value ?? '', '', 'the banner is back');
    const reset = await conf.call('_reset', { takeSnapshot: false });
    t.equal(reset.status, 403, '_reset would drop the administrator\'s changes');
    t.equal((await admin.call('snapshots/byId/_rollback', { id: start })).status, 200, 'the administrator may');
    t.same((await conf.props(DEPLOY))['unsigned.allowed'], { value: true, type: 'BOOLEAN' });
  });

  t.test('over CONF-V2 the requester is kura.admin (the broker\'s ACL decides, as in Kura)', async (t) => {
    const req = new Requester(broker.url, 'kapua');
    await req.start();
    t.teardown(() => req.client.end());
    const body = { configs: [{ pid: DEPLOY, properties: { 'download.max.redirects': { type: 'INTEGER', value: 3 }, 'unsigned.allowed': B(false) } }], takeSnapshot: false };
    const r = (await req.kura('dev1', 'PUT/configurableComponents/configurations/_update', JSON.stringify(body), { app: 'CONF-V2', wait: 8000 }))!;
    t.same([r.code, r.body], [200, undefined]);
    t.same((await conf.props(DEPLOY))['unsigned.allowed'], { value: false, type: 'BOOLEAN' });
    t.equal((await admin.update([{ pid: DEPLOY, properties: { 'unsigned.allowed': B(true) } }])).status, 200);
  });

});

t.test('trust anchors and unsigned.allowed apply to the next install', async (t) => {
  const pkgDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-anchors-'));
  t.teardown(() => fs.rmSync(pkgDir, { recursive: true, force: true }));
  const d = await startDaemon(t, { identities: { admin: { password: 'admin', permissions: ['kura.admin'] } }, rest: { 'login.throttle.max.delay': 0 }, deploy: { 'file.allowed.dirs': [pkgDir] } });
  const admin = api(basic(d, 'admin', 'admin'));
  let n = 0;
  const pkg = (signed: boolean) => {
    const files: Record<string, string> = { 'META-INF/MANIFEST.MF': manifestText({ name: `p${++n}`, version: '1.0.0' }), 'data.txt': `package ${n}` };
    const entries = Object.entries(files).map(([name, data]) => ({ name, data }));
    if (signed) entries.push({ name: SIGNATURE_PATH, data: crypto.sign(null, signedText(entries.map((e) => ({ name: e.name, data: Buffer.from(e.data) }))), key.privateKey).toString('base64') });
    const file = path.join(pkgDir, `p${n}.dp`);
    fs.writeFileSync(file, buildZip(entries));
    return file;
  };
  const deploy = basic(d, 'admin', 'admin');
  const install = async (file: string) => {
    const r = await deploy.request('/services/deploy/v2/_install', { method: 'POST', body: { url: `file://${file}` } });
    t.equal(r.status, 200, `install of ${path.basename(file)} requested`);
    for (const end = Date.now() + 15_000; Date.now() < end; await new Promise((r) => setTimeout(r, 50))) {
      const jobs = (await deploy.request('/services/deploy/v2/_jobs')).json() as { state: string; error?: string; url: string }[];
      const job = jobs.filter((j) => j.url.endsWith(`/${path.basename(file)}`)).at(-1);
      if (job && !['QUEUED', 'RUNNING'].includes(job.state)) return job;
    }
    throw new Error(`the install of ${file} did not end`);
  };
  t.equal((await install(pkg(false))).state, 'SUCCEEDED', 'unsigned accepted while there are no anchors');

  const set = await admin.update([{ pid: DEPLOY, properties: { 'trust.anchors': SA(anchor) } }]);
  t.equal(set.status, 200, `anchors set: ${set.body}`);
  t.match(await install(pkg(false)), { state: 'FAILED', error: /not signed/ }, 'at once: an unsigned package is refused');
  t.equal((await install(pkg(true))).state, 'SUCCEEDED', 'a package signed by the new anchor is installed');

  t.equal((await admin.update([{ pid: DEPLOY, properties: { 'trust.anchors': { type: 'STRING', value: [] }, 'unsigned.allowed': B(false) } }])).status, 200);
  t.match(await install(pkg(true)), { state: 'FAILED', error: /unsigned packages are refused/ }, 'no anchors and unsigned.allowed false: every package is refused');
  t.equal((await admin.update([{ pid: DEPLOY, properties: { 'unsigned.allowed': B(true) } }])).status, 200);
  t.equal((await install(pkg(false))).state, 'SUCCEEDED', 'unsigned.allowed true again: accepted');

  // An anchor given as a file is read at each install: replacing the file counts from the next one.
  const anchorFile = path.join(pkgDir, 'anchor.pem');
  fs.writeFileSync(anchorFile, anchor);
  t.equal((await admin.update([{ pid: DEPLOY, properties: { 'trust.anchors': SA(anchorFile) } }])).status, 200);
  t.equal((await install(pkg(true))).state, 'SUCCEEDED', 'signed by the key in the anchor file');
  fs.writeFileSync(anchorFile, crypto.generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' }).toString());
  t.match(await install(pkg(true)), { state: 'FAILED', error: /does not verify/ }, 'the anchor file replaced by another key');
  t.equal((await admin.update([{ pid: DEPLOY, properties: { 'trust.anchors': { type: 'STRING', value: [] } } }])).status, 200);

  // Anchors that cannot be loaded are refused, not stored to fail every install later.
  for (const bad of ['/nonexistent/anchor.pem', '-----BEGIN PUBLIC KEY-----\nbm90IGEga2V5\n-----END PUBLIC KEY-----\n']) {
    const r = await admin.update([{ pid: DEPLOY, properties: { 'trust.anchors': SA(bad) } }]);
    t.equal(r.status, 400, `unusable anchor ${bad.slice(0, 24)}`);
    t.match(r.json().message, new RegExp(`^Invalid configuration of ${DEPLOY.replace(/\./g, '\\.')}, property trust\\.anchors: `));
  }
});

t.test('a requester over MQTT without kura.admin is refused with 400 and the message', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-reserved-unit-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'gatewayd.json');
  fs.writeFileSync(file, JSON.stringify({ dataDir: path.join(dir, 'data'), identities: { admin: { password: 'admin', permissions: ['kura.admin'] } } }));
  const svc = await ConfigurationService.start({ file, registry: new DriverRegistry(builtinDrivers()), log: silentLogger, apply: async () => {} });
  const route = configurationFamily(svc).routes.find((r) => r.method === 'PUT' && r.path === 'configurableComponents/configurations/_update')!;
  const ask = (permissions: string[], transport: 'rest' | 'mqtt', properties: Record<string, unknown>) =>
    route.handler({
      transport,
      method: 'PUT',
      resources: route.path.split('/'),
      params: {},
      identity: { name: 'requester', via: transport, permissions },
      metrics: transport === 'mqtt' ? [] : undefined,
      clientId: transport === 'mqtt' ? 'device' : undefined,
      body: async () => ({ configs: [{ pid: MQTT, properties }], takeSnapshot: false }),
      bytes: async () => undefined,
      query: () => undefined,
      notify: () => {},
    } satisfies CoreRequest) as Promise<unknown>;
  const err = (await ask(['rest.configuration'], 'mqtt', { 'broker-url': S('mqtt://attacker.example:1883') }).catch((e) => e)) as RequestError;
  t.ok(err instanceof RequestError);
  t.same(mqttError('json', err), { code: 400, body: JSON.stringify({ message: `Only kura.admin may change ${MQTT} property broker-url` }) }, 'the MQTT reply');
  t.equal(((await ask(['rest.configuration'], 'rest', { username: S('x') }).catch((e) => e)) as RequestError).status, 403, 'over REST 403');
  t.equal(await ask(['rest.configuration'], 'mqtt', { 'keep-alive': { type: 'INTEGER', value: 20 } }), undefined, 'another property is changed');
  t.equal(await ask(['kura.admin'], 'mqtt', { username: S('x') }), undefined, 'kura.admin changes it');
});
