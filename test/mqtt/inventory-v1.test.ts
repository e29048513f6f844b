// Bundles and INVENTORY-V1 (docs/mqtt.md "DEPLOY-V2" bundles and "INVENTORY-V1", docs/rest-api.md
// "inventory/v1") against the real daemon and a real Mosquitto, asked as Eclipse Kapua asks: QoS 0
// requests, a negative `request.id`, `requester.client.id` `KapuaPool-…`, replies awaited on exactly
// `$EDC/<account>/<requester>/<APP>-<VER>/REPLY/<id>` with an INT32 `response.code`. Replies are
// decoded as Kapua's classes would: DEPLOY-V2's bundles as the KuraBundles XML (a `<bundle>` is
// required, `id` a long), INVENTORY-V1's JSON as KuraInventory* (ids fit an Integer). A package's
// plug-in driver goes and comes back with stop and start, as an asset using it sees, also across a
// restart; the system bundle is refused; a limited requester and a limited identity are refused;
// the image's package database is a synthetic dpkg status file with hostile content.

import t from 'tap';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { BUNDLE, startDaemon, type Daemon } from '../helpers/daemon.js';
import { mosquittoSkip, startMosquitto } from '../helpers/mosquitto.js';
import { until, watchBirths } from '../helpers/mqtt-fixture.js';
import { buildDp, exampleDriverExtension } from '../helpers/dp.js';
import { MqttClient } from '../../src/mqtt/client.js';
import { decodeKuraPayload, encodeKuraPayload, type KuraMetric, type KuraPayload } from '../../src/mqtt/kura-payload.js';
import { childElements, parseXml, textContent } from '../../src/core/xml.js';
import { silentLogger } from '../../src/log.js';

const ACCOUNT = 'acct';
const DEVICE = 'gw-inv';
const PASSWORD = 'Inv-Test-Pass-1';
const DEPLOY_PID = 'org.eclipse.kura.deployment.agent';
const CLOUD_PID = 'org.eclipse.kura.cloud.CloudService';
const SYSTEM = 'org.eclipse.kura.gatewayd';
const auth = (user: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${PASSWORD}`).toString('base64')}` });

interface Reply {
  topic: string;
  code: unknown;
  codeType: string | undefined;
  message: unknown;
  body: string;
}

/** Eclipse Kapua's side: KuraDeviceCallImpl's request, TranslatorResponseMqttKura's reply check. */
class Kapua {
  readonly client: MqttClient;
  readonly id = `KapuaPool-${Date.now()}-${crypto.randomInt(1e9)}`;
  private readonly replies = new Map<string, { topic: string; payload: KuraPayload }>();

  constructor(url: string) {
    this.client = new MqttClient({ url, clientId: this.id, keepAlive: 30, clean: true, reconnectMin: 50, reconnectMax: 300, log: silentLogger });
    this.client.on('message', (topic: string, raw: Buffer) => {
      const d = decodeKuraPayload(raw);
      if (d.ok) this.replies.set(topic.split('/').pop()!, { topic, payload: d.value });
    });
  }

  async start(): Promise<void> {
    this.client.start();
    await until(() => this.client.isConnected, 5000, 'kapua connect');
    for (const app of ['DEPLOY-V2', 'INVENTORY-V1']) await this.client.subscribe(`$EDC/${ACCOUNT}/${this.id}/${app}/REPLY/#`, 1);
  }

  /** One request; resolves with the reply, or undefined when none came within `wait` ms. */
  async ask(app: string, methodResource: string, body?: unknown, wait = 8000): Promise<Reply | undefined> {
    // Random.nextLong(), negative on purpose: Kapua's ids are negative half the time.
    const rid = String(-(crypto.randomBytes(8).readBigUInt64BE() >> 2n) - 1n);
    const p: KuraPayload = { metrics: [{ name: 'requester.client.id', type: 'STRING', value: this.id }, { name: 'request.id', type: 'STRING', value: rid }] };
    if (body !== undefined) p.body = Buffer.isBuffer(body) ? body : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
    await this.client.publish(`$EDC/${ACCOUNT}/${DEVICE}/${app}/${methodResource}`, encodeKuraPayload(p), { qos: 0 });
    try {
      await until(() => this.replies.has(rid), wait, `reply to ${app}/${methodResource}`);
    } catch {
      return undefined;
    }
    const { topic, payload } = this.replies.get(rid)!;
    const m = (n: string) => payload.metrics.find((x: KuraMetric) => x.name === n);
    return { topic, code: m('response.code')?.value, codeType: m('response.code')?.type, message: m('response.exception.message')?.value, body: payload.body?.toString('utf8') ?? '' };
  }

  end(): Promise<void> {
    return this.client.end();
  }
}

interface KuraBundle {
  name: string;
  version: string;
  id: bigint;
  state: string;
}

/**
 * DEPLOY-V2's `GET/bundles` body as Kapua's JAXB binding reads it (KuraBundles / KuraBundle): root
 * `bundles` in no namespace, a `bundle` each with `name`, `version`, `id` (a Java long) and `state`.
 */
function kuraBundles(xml: string): KuraBundle[] {
  const root = parseXml(xml);
  if (root.local !== 'bundles' || root.ns !== '') throw new Error(`root ${root.name}`);
  const list = childElements(root, 'bundle', '').map((b) => {
    const field = (n: string) => {
      const els = childElements(b, n, '');
      if (els.length !== 1) throw new Error(`bundle without one <${n}>`);
      return textContent(els[0]!);
    };
    const id = field('id');
    if (!/^-?\d+$/.test(id) || BigInt(id) > 2n ** 63n - 1n) throw new Error(`id ${id} is no long`);
    return { name: field('name'), version: field('version'), id: BigInt(id), state: field('state') };
  });
  // KuraBundles.getBundles() is null without a <bundle>: Kapua's translator then fails.
  if (list.length === 0) throw new Error('no <bundle>: Kapua cannot translate this list');
  return list;
}

/** INVENTORY-V1's bundles as Kapua's KuraInventoryBundle (Jackson; `id` an Integer). */
function inventoryBundles(json: string): { id: number; name: string; version: string; state: string; signed: boolean }[] {
  const list = JSON.parse(json).bundles as any[];
  for (const b of list) if (!Number.isInteger(b.id) || b.id > 2 ** 31 - 1 || typeof b.name !== 'string' || typeof b.state !== 'string' || typeof b.signed !== 'boolean') throw new Error(`not a KuraInventoryBundle: ${JSON.stringify(b)}`);
  return list;
}

/** A dpkg status file: ordinary paragraphs and hostile ones (each must be skipped, never crash or leak). */
function statusFile(): string {
  const p = (fields: string) => `${fields}\n\n`;
  return [
    p('Package: zlib1g\nStatus: install ok installed\nPriority: required\nVersion: 1:1.2.13.dfsg-1\nDescription: compression library\n multi-line description\n .\n more'),
    p('Package: busybox\nStatus: install ok installed\nVersion: 1:1.35.0-4+b3'),
    p('Package: removed-pkg\nStatus: deinstall ok config-files\nVersion: 2.0'),
    p('Package: never-there\nStatus: purge ok not-installed\nVersion: 3.0'),
    p('Package: <script>alert(1)</script>\nStatus: install ok installed\nVersion: 1.0'),
    p('Package: "quoted"\nStatus: install ok installed\nVersion: 1.0'),
    p('Package: nul\u0000byte\nStatus: install ok installed\nVersion: 1.0'),
    p('Package: badversion\nStatus: install ok installed\nVersion: 1.0 <b>bold</b>'),
    p(`Package: longline\nStatus: install ok installed\nVersion: 1.0\nDescription: ${'x'.repeat(2 * 1024 * 1024)}`),
    p(`Package: ${'n'.repeat(300)}\nStatus: install ok installed\nVersion: 1.0`),
    'package: case-insensitive\r\nSTATUS: install ok installed\r\nversion: 0.9~rc1\r\n\r\n',
    p('Package: libc6\nStatus: install ok installed\nVersion: 2.36-9+deb12u4\nArchitecture: armhf'),
  ].join('');
}

t.test('bundles and INVENTORY-V1 as Kapua drives them', mosquittoSkip(), async (t) => {
  const broker = await startMosquitto();
  t.teardown(() => broker.close());
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-inventory-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const status = path.join(dir, 'status');
  fs.writeFileSync(status, statusFile());
  const dpFile = path.join(dir, 'inv-driver.dp');
  fs.writeFileSync(dpFile, buildDp({ name: 'org.example.inv', version: '1.0.0', files: { 'driver/extension.js': exampleDriverExtension('invdrv') }, extensions: ['driver/extension.js'] }));
  const plainDp = path.join(dir, 'plain.dp');
  fs.writeFileSync(plainDp, buildDp({ name: 'org.example.plain', version: '2.1.0', files: { 'x.txt': 'x' } }));

  // BIRTH's application_ids, as Kapua's console reads them (GwtDevice.hasApplication).
  const births = await watchBirths(t, broker.url, `$EDC/${ACCOUNT}/${DEVICE}/MQTT/#`, 'birth-watcher');

  const config = {
    rest: { 'auth.basic.enabled': true, 'login.throttle.max.delay': 0 },
    identities: {
      admin: { password: PASSWORD, passwordChangeNeeded: false, permissions: ['kura.admin'] },
      inv: { password: PASSWORD, passwordChangeNeeded: false, permissions: ['rest.inventory'] },
      viewer: { password: PASSWORD, passwordChangeNeeded: false, permissions: ['rest.assets', 'rest.configuration'] },
    },
    drivers: { plc: { factory: 'invdrv' } },
    assets: { pump1: { 'driver.pid': 'plc', channels: { speed: { type: 'READ', 'value.type': 'INTEGER', value: 42 } } } },
    deploy: { 'file.allowed.dirs': [dir], 'system.packages.database': `dpkg:${status}` },
    mqtt: { enabled: true, 'broker-url': broker.url, 'client-id': DEVICE, 'topic.context.account-name': ACCOUNT, 'payload.encoding': 'kura-protobuf' },
  };
  let d: Daemon = await startDaemon(t, config, { dir });
  t.teardown(async () => {
    if (d.proc.exitCode === null) d.proc.kill('SIGKILL');
    await d.exited;
  });
  await d.waitForLog(/msg="mqtt connected"/);
  const outer = t;
  const kapua = new Kapua(broker.url);
  await kapua.start();
  t.teardown(() => kapua.end());
  const version = execFileSync(process.execPath, [BUNDLE, '--version'], { encoding: 'utf8' }).trim().replace(/^gatewayd\s+/, '');
  /** Asks until the answer's code is `code` (a configuration change reaches MQTT right after its answer). */
  const settled = async (app: string, mr: string, code: number) => {
    for (let i = 0; i < 50; i++) if ((await kapua.ask(app, mr, undefined, 2000))?.code === code) return;
    throw new Error(`${app} ${mr} never answered ${code}`);
  };

  const ask = async (app: string, mr: string, body?: unknown) => {
    const r = (await kapua.ask(app, mr, body))!;
    // TranslatorKuraKapuaUtils.validateKuraResponseChannel: exactly this topic; an INT32 code Kapua maps.
    t.equal(r.topic.split('/').length, 6, `${mr}: six topic levels`);
    t.match(r.topic, new RegExp(`^\\$EDC/${ACCOUNT}/${kapua.id}/${app}/REPLY/-\\d+$`), `${mr}: reply topic`);
    t.equal(r.codeType, 'INT32', `${mr}: response.code is an INT32`);
    t.ok([200, 400, 404, 500].includes(r.code as number), `${mr}: response.code ${r.code} is one Kapua maps`);
    return r;
  };
  const readSpeed = async () => (await d.request('/services/assets/pump1/_read', { headers: auth('admin') })).json()[0];
  const rest = (p: string, user = 'admin', o: { method?: string; body?: unknown; headers?: Record<string, string> } = {}) =>
    d.request(`/services${p}`, { method: o.method ?? (o.body === undefined ? 'GET' : 'POST'), headers: { ...auth(user), ...o.headers }, body: o.body as object });
  const waitJobs = async (n: number) => {
    for (let i = 0; i < 400; i++) {
      const jobs = (await rest('/deploy/v2/_jobs')).json();
      if (jobs.length >= n && jobs.slice(0, n).every((j: any) => j.state === 'SUCCEEDED' || j.state === 'FAILED')) return jobs;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('jobs did not finish');
  };
  const update = (pid: string, properties: Record<string, unknown>, user = 'admin') =>
    rest('/configuration/v2/configurableComponents/configurations/_update', user, { method: 'PUT', body: { configs: [{ pid, properties }], takeSnapshot: false } });

  await t.test('a device without packages: Kapua parses its bundles', async (t) => {
    await until(() => births.length > 0, 10_000, 'BIRTH');
    t.ok(births.at(-1)!.split(',').includes('INVENTORY-V1'), `INVENTORY-V1 in application_ids (${births.at(-1)})`);
    const xml = await ask('DEPLOY-V2', 'GET/bundles');
    t.equal(xml.code, 200);
    t.same(kuraBundles(xml.body), [{ name: SYSTEM, version, id: 0n, state: 'ACTIVE' }], 'DEPLOY-V2: bundle 0, the daemon itself');
    const inv = await ask('INVENTORY-V1', 'GET/bundles');
    t.same(inventoryBundles(inv.body), [{ name: SYSTEM, version, id: 0, state: 'ACTIVE', signed: false }], 'INVENTORY-V1: the same bundle');
    t.equal(inv.body, `{"bundles":[{"name":"${SYSTEM}","version":"${version}","id":0,"state":"ACTIVE","signed":false}]}`, "Kura's field order");
    t.equal((await ask('INVENTORY-V1', 'GET/deploymentPackages')).body, '{"deploymentPackages":[]}');
    t.equal((await ask('INVENTORY-V1', 'GET/containers')).body, '{"containers":[]}');
    const sys = JSON.parse((await ask('INVENTORY-V1', 'GET/systemPackages')).body);
    t.same(sys, { systemPackages: [
      { name: 'zlib1g', version: '1:1.2.13.dfsg-1', type: 'DEB' },
      { name: 'busybox', version: '1:1.35.0-4+b3', type: 'DEB' },
      { name: 'longline', version: '1.0', type: 'DEB' },
      { name: 'case-insensitive', version: '0.9~rc1', type: 'DEB' },
      { name: 'libc6', version: '2.36-9+deb12u4', type: 'DEB' },
    ] }, 'installed packages only; hostile names, versions and lines skipped');
    const all = JSON.parse((await ask('INVENTORY-V1', 'GET/inventory')).body).inventory;
    t.same(all.map((i: any) => `${i.name} ${i.type}`), ['busybox DEB', 'case-insensitive DEB', 'libc6 DEB', 'longline DEB', `${SYSTEM} BUNDLE`, 'zlib1g DEB'], 'everything, sorted by name');
  });

  await t.test('the system bundle, unknown bundles and bad requests are refused', async (t) => {
    for (const mr of ['EXEC/stop/0', 'EXEC/start/0']) {
      const r = await ask('DEPLOY-V2', mr);
      t.same([r.code, r.message], [400, 'Bad request. Bundle 0 is gatewayd itself (the system bundle): it cannot be started or stopped'], mr);
    }
    t.match(await ask('DEPLOY-V2', 'EXEC/stop/7'), { code: 404, message: 'Not found. No bundle has the id 7' });
    t.match(await ask('DEPLOY-V2', 'EXEC/stop/abc'), { code: 400, message: /is no bundle id/ });
    t.match(await ask('DEPLOY-V2', 'EXEC/start'), { code: 400, message: 'Bad request. No bundle id' });
    t.match(await ask('INVENTORY-V1', 'EXEC/bundles/_stop', { name: SYSTEM }), { code: 400, message: /is gatewayd itself/ });
    t.match(await ask('INVENTORY-V1', 'EXEC/bundles/_stop', { name: 'org.example.none' }), { code: 404, message: 'No bundle org.example.none is installed' });
    t.match(await ask('INVENTORY-V1', 'EXEC/bundles/_start'), { code: 400, message: /missing/ });
    t.match(await ask('INVENTORY-V1', 'EXEC/bundles/_start', '{"name":'), { code: 400, message: /JSON object/ });
    t.match(await ask('INVENTORY-V1', 'EXEC/bundles/_start', { name: 7 }), { code: 400, message: /JSON object/ });
    t.match(await ask('INVENTORY-V1', 'GET/images'), { code: 404 });
    t.match(await ask('INVENTORY-V1', 'GET/nothing'), { code: 404 });
    t.same(kuraBundles((await ask('DEPLOY-V2', 'GET/bundles')).body).map((b) => b.state), ['ACTIVE'], 'still running');
  });

  await t.test("a package's plug-in stopped and started: its driver goes and comes back", async (t) => {
    t.match(await readSpeed(), { channelStatus: { channelFlag: 'FAILURE', exceptionMessage: /Driver not attached/ } }, 'no driver before the package');
    t.equal((await rest('/deploy/v2/_install', 'admin', { body: { url: `file://${dpFile}` } })).status, 200);
    await waitJobs(1);
    t.match(await readSpeed(), { channelStatus: { channelFlag: 'SUCCESS' }, value: 42 }, 'served by the plug-in');
    t.same(kuraBundles((await ask('DEPLOY-V2', 'GET/bundles')).body), [{ name: SYSTEM, version, id: 0n, state: 'ACTIVE' }, { name: 'org.example.inv', version: '1.0.0', id: 1n, state: 'ACTIVE' }]);

    t.equal((await ask('DEPLOY-V2', 'EXEC/stop/1')).code, 200, 'DEPLOY-V2 stop');
    t.match(await readSpeed(), { channelStatus: { channelFlag: 'FAILURE', exceptionMessage: /Driver not attached/ } }, 'the driver is gone');
    t.same(kuraBundles((await ask('DEPLOY-V2', 'GET/bundles')).body).map((b) => b.state), ['ACTIVE', 'RESOLVED']);
    t.equal((await ask('DEPLOY-V2', 'EXEC/stop/1')).code, 200, 'stopping a stopped bundle changes nothing');
    t.same(JSON.parse((await ask('INVENTORY-V1', 'GET/deploymentPackages')).body), { deploymentPackages: [{ name: 'org.example.inv', version: '1.0.0', bundles: [{ name: 'org.example.inv', version: '1.0.0', id: 1, state: 'RESOLVED', signed: false }], signed: false }] });

    // The body Kapua's TranslatorAppInventoryBundleExecKapuaKura writes (Jackson, nulls left out).
    t.equal((await ask('INVENTORY-V1', 'EXEC/bundles/_start', { id: 1, name: 'org.example.inv', version: '1.0.0', state: 'RESOLVED', signed: false })).code, 200, 'INVENTORY-V1 start');
    t.match(await readSpeed(), { channelStatus: { channelFlag: 'SUCCESS' }, value: 42 }, 'the driver is back');
    t.same(inventoryBundles((await ask('INVENTORY-V1', 'GET/bundles')).body).map((b) => `${b.id} ${b.state}`), ['0 ACTIVE', '1 ACTIVE']);
    t.match(await ask('INVENTORY-V1', 'EXEC/bundles/_stop', { name: 'org.example.inv', version: '9.9.9' }), { code: 404 }, 'another version is not this bundle');

    t.equal((await ask('INVENTORY-V1', 'EXEC/bundles/_stop', { name: 'org.example.inv' })).code, 200, 'INVENTORY-V1 stop');
    t.match(await readSpeed(), { channelStatus: { channelFlag: 'FAILURE', exceptionMessage: /Driver not attached/ } });
  });

  await t.test('a stopped plug-in stays stopped across a restart; ids are never given again', async (t) => {
    t.equal(await d.stop(), 0);
    d = await startDaemon(outer, config, { dir });
    await d.waitForLog(/msg="mqtt connected"/);
    t.match(await readSpeed(), { channelStatus: { channelFlag: 'FAILURE', exceptionMessage: /Driver not attached/ } }, 'not started at boot');
    t.same(kuraBundles((await ask('DEPLOY-V2', 'GET/bundles')).body).map((b) => `${b.id} ${b.state}`), ['0 ACTIVE', '1 RESOLVED']);
    t.equal((await ask('DEPLOY-V2', 'EXEC/start/1')).code, 200);
    t.match(await readSpeed(), { channelStatus: { channelFlag: 'SUCCESS' }, value: 42 });

    // A second package takes id 2; uninstalling the first does not free id 1 for the next one.
    t.equal((await rest('/deploy/v2/_install', 'admin', { body: { url: `file://${plainDp}` } })).status, 200);
    await waitJobs(1);
    t.equal((await rest('/deploy/v2/org.example.inv', 'admin', { method: 'DELETE' })).status, 200);
    await waitJobs(2);
    t.equal((await rest('/deploy/v2/_install', 'admin', { body: { url: `file://${dpFile}` } })).status, 200);
    await waitJobs(3);
    t.same(kuraBundles((await ask('DEPLOY-V2', 'GET/bundles')).body).map((b) => `${b.id} ${b.name} ${b.state}`), ['0 org.eclipse.kura.gatewayd ACTIVE', '2 org.example.plain ACTIVE', '3 org.example.inv ACTIVE']);
    t.match(await readSpeed(), { channelStatus: { channelFlag: 'SUCCESS' } });
    const inv = JSON.parse((await ask('INVENTORY-V1', 'GET/inventory')).body).inventory;
    t.same(inv.filter((i: any) => i.type !== 'DEB'), [
      { name: SYSTEM, version, type: 'BUNDLE' },
      { name: 'org.example.inv', version: '1.0.0', type: 'BUNDLE' },
      { name: 'org.example.inv', version: '1.0.0', type: 'DP' },
      { name: 'org.example.plain', version: '2.1.0', type: 'BUNDLE' },
      { name: 'org.example.plain', version: '2.1.0', type: 'DP' },
    ], 'bundles and packages in the inventory, sorted by name');
  });

  await t.test('inventory/v1 over REST: role inventory, Kura\'s JSON', async (t) => {
    const r = await rest('/inventory/v1/bundles', 'inv');
    t.equal(r.status, 200);
    t.match(r.headers['content-type'], /^application\/json/);
    t.same(r.json().bundles.map((b: any) => b.id), [0, 2, 3]);
    t.equal((await rest('/inventory/v1/bundles', 'viewer')).status, 403, 'an identity without rest.inventory');
    t.ok((await d.request('/services/identity/v1/definedPermissions')).json().permissions.includes('rest.inventory'), 'a permission identities can be given');
    t.equal((await d.request('/services/inventory/v1/bundles')).status, 401, 'anonymous');
    t.equal((await rest('/inventory/v1/bundles/_stop', 'viewer', { body: { name: 'org.example.inv' } })).status, 403, 'a limited role cannot stop a bundle');
    t.match(await readSpeed(), { channelStatus: { channelFlag: 'SUCCESS' } }, 'still running');
    // Many clients at once.
    const many = await Promise.all(Array.from({ length: 12 }, (_, i) => rest(`/inventory/v1/${['inventory', 'systemPackages', 'deploymentPackages', 'containers'][i % 4]}`, 'inv')));
    t.same(many.map((x) => x.status), Array(12).fill(200));
    const sys = await rest('/inventory/v1/systemPackages', 'inv');
    t.equal(sys.json().systemPackages.length, 5);
    const stop = await rest('/inventory/v1/bundles/_stop', 'inv', { body: { name: 'org.example.inv', version: '1.0.0' } });
    t.same([stop.status, stop.body], [200, '']);
    t.match(await readSpeed(), { channelStatus: { channelFlag: 'FAILURE', exceptionMessage: /Driver not attached/ } }, 'stopped over REST');
    t.equal((await rest('/inventory/v1/bundles/_start', 'inv', { body: { name: 'org.example.inv' } })).status, 200);
    t.match(await readSpeed(), { channelStatus: { channelFlag: 'SUCCESS' } }, 'started over REST');
    const sysStop = await rest('/inventory/v1/bundles/_stop', 'inv', { body: { name: SYSTEM } });
    t.same([sysStop.status, sysStop.json()], [400, { message: `Bad request. ${SYSTEM} is gatewayd itself (the system bundle): it cannot be started or stopped` }]);
    t.same([(await rest('/inventory/v1/bundles/_stop', 'inv', { body: { name: 'nope' } })).status], [404]);
    t.equal((await rest('/inventory/v1/bundles/_stop', 'inv', { body: 'name=x', headers: { 'content-type': 'text/plain' } })).status, 415);
    const cross = await rest('/inventory/v1/bundles/_stop', 'inv', { body: { name: 'org.example.inv' }, headers: { 'sec-fetch-site': 'cross-site' } });
    t.same([cross.status, cross.json()], [403, { message: 'Cross-site request refused' }], 'a page on another site');
    t.match(await readSpeed(), { channelStatus: { channelFlag: 'SUCCESS' } });
  });

  await t.test('many starts and stops at once, over REST and MQTT: each applied whole, one after the other', async (t) => {
    const body = { name: 'org.example.inv' };
    const stateOf = async () => kuraBundles((await ask('DEPLOY-V2', 'GET/bundles')).body).find((b) => b.id === 3n)!.state;
    for (let round = 0; round < 3; round++) {
      const all = await Promise.all(Array.from({ length: 24 }, (_, i) => (i % 3 === 2
        ? kapua.ask('DEPLOY-V2', `EXEC/${i % 2 ? 'stop' : 'start'}/3`)
        : rest(`/inventory/v1/bundles/${i % 2 ? '_stop' : '_start'}`, 'inv', { body })).then((r) => (r && 'status' in r ? r.status : r?.code))));
      t.same(all, Array(24).fill(200), `round ${round}`);
      const state = await stateOf();
      const speed = await readSpeed();
      t.equal(speed.channelStatus.channelFlag === 'SUCCESS', state === 'ACTIVE', `the driver is there exactly when the bundle is ACTIVE (${state})`);
      // What was recorded is what runs: a restart brings back the same state.
      t.equal(await d.stop(), 0);
      d = await startDaemon(outer, config, { dir });
      await d.waitForLog(/msg="mqtt connected"/);
      t.equal(await stateOf(), state, `round ${round}: the same after a restart`);
    }
    t.equal((await ask('DEPLOY-V2', 'EXEC/start/3')).code, 200);
    t.match(await readSpeed(), { channelStatus: { channelFlag: 'SUCCESS' } });
    t.same(d.logs.filter((l) => /level=(error|warn)/.test(l) && !/configuration warning/.test(l)), [], 'no failed activation or unregistration');
  });

  await t.test('the package database: unreadable, not a file, too large; reserved to kura.admin', async (t) => {
    const fifo = path.join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    const huge = path.join(dir, 'huge');
    fs.closeSync(fs.openSync(huge, 'w'));
    fs.truncateSync(huge, 65 * 1024 * 1024);
    const refused = await update(DEPLOY_PID, { 'system.packages.database': { type: 'STRING', value: `dpkg:${fifo}` } }, 'viewer');
    t.same([refused.status, refused.json()], [403, { message: `Only kura.admin may change ${DEPLOY_PID} property system.packages.database` }]);
    for (const [file, why] of [[fifo, /is not a regular file/], [huge, /is larger than 67108864 bytes/], [path.join(dir, 'missing'), /cannot be read \(ENOENT\)/]] as const) {
      t.equal((await update(DEPLOY_PID, { 'system.packages.database': { type: 'STRING', value: `dpkg:${file}` } })).status, 200);
      const r = await ask('INVENTORY-V1', 'GET/systemPackages');
      t.match([r.code, r.message], [500, why], path.basename(file));
      t.match(await rest('/inventory/v1/systemPackages', 'inv'), { status: 500 });
      const all = await ask('INVENTORY-V1', 'GET/inventory');
      t.equal(all.code, 200, 'the inventory without system packages');
      t.same(JSON.parse(all.body).inventory.filter((i: any) => i.type === 'DEB'), []);
    }
    const bad = await update(DEPLOY_PID, { 'system.packages.database': { type: 'STRING', value: 'rpm:/var/lib/rpm' } });
    t.equal(bad.status, 400, 'an unknown format');
    t.match(bad.json().message, /auto, none, dpkg:<absolute path> or opkg:<absolute path>/);
    t.equal((await update(DEPLOY_PID, { 'system.packages.database': { type: 'STRING', value: 'none' } })).status, 200);
    t.equal((await ask('INVENTORY-V1', 'GET/systemPackages')).body, '{"systemPackages":[]}');
    t.equal((await update(DEPLOY_PID, { 'system.packages.database': { type: 'STRING', value: `opkg:${status}` } })).status, 200);
    t.same(JSON.parse((await ask('INVENTORY-V1', 'GET/systemPackages')).body).systemPackages.map((p: any) => p.type), Array(5).fill('IPK'));
  });

  await t.test('requester permissions and applications.disabled apply', async (t) => {
    t.equal((await update(CLOUD_PID, { 'requester.permissions': { type: 'STRING', value: ['rest.deploy'] } })).status, 200);
    await settled('INVENTORY-V1', 'GET/bundles', 400);
    t.match(await ask('INVENTORY-V1', 'GET/bundles'), { code: 400, message: 'Forbidden: requires rest.inventory' });
    t.match(await ask('INVENTORY-V1', 'EXEC/bundles/_stop', { name: 'org.example.inv' }), { code: 400, message: 'Forbidden: requires rest.inventory' });
    t.match(await readSpeed(), { channelStatus: { channelFlag: 'SUCCESS' } }, 'nothing stopped');
    t.equal((await ask('DEPLOY-V2', 'GET/bundles')).code, 200, 'DEPLOY-V2 bundles need rest.deploy');
    t.equal((await update(CLOUD_PID, { 'requester.permissions': { type: 'STRING', value: ['rest.inventory'] } })).status, 200);
    await settled('DEPLOY-V2', 'GET/bundles', 400);
    t.match(await ask('DEPLOY-V2', 'EXEC/stop/3'), { code: 400, message: 'Forbidden: requires rest.deploy' });
    t.match(await readSpeed(), { channelStatus: { channelFlag: 'SUCCESS' } }, 'nothing stopped');
    const before = births.length;
    t.equal((await update(CLOUD_PID, { 'requester.permissions': { type: 'STRING', value: ['kura.admin'] }, 'applications.disabled': { type: 'STRING', value: ['INVENTORY-V1'] } })).status, 200);
    await until(() => births.length > before, 10_000, 'BIRTH again');
    t.notOk(births.at(-1)!.split(',').includes('INVENTORY-V1'), `out of application_ids (${births.at(-1)})`);
    t.equal(await kapua.ask('INVENTORY-V1', 'GET/bundles', undefined, 2000), undefined, 'no reply');
    t.equal((await ask('DEPLOY-V2', 'GET/bundles')).code, 200);
  });
});
