// Who may send requests over MQTT (docs/mqtt.md "Who may send requests"): a connection's
// `requester.permissions` are applied as REST applies an identity's roles, to every application
// (ASSET-V1 needs rest.assets, CONF-V2 rest.configuration, DEPLOY-V2 rest.deploy; kura.admin passes
// all), and refused requests answer 400 `Forbidden: requires rest.<role>` and change nothing;
// `applications.disabled` leaves applications off the connection: no subscription, no reply, not
// in BIRTH. Both change at run time (configuration/v2) without a reconnection, BIRTH published
// again. The real daemon, a real Mosquitto, several anonymous requesters at once, Kapua-style.

import t from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startDaemon } from '../helpers/daemon.js';
import { mosquittoSkip, startMosquitto } from '../helpers/mosquitto.js';
import { Requester, until, watchBirths } from '../helpers/mqtt-fixture.js';
import { MqttClient } from '../../src/mqtt/client.js';
import type { KuraMetric } from '../../src/mqtt/kura-payload.js';
import { buildDp } from '../helpers/dp.js';
import { silentLogger } from '../../src/log.js';

const DEVICE = 'gw-pol';
const CLOUD = 'org.eclipse.kura.cloud.CloudService';
const REST_PID = 'org.eclipse.kura.internal.rest.provider.RestService';
const s = (name: string, value: string): KuraMetric => ({ name, type: 'STRING', value });

t.test('requester permissions and disabled applications', mosquittoSkip(), async (t) => {
  const broker = await startMosquitto();
  t.teardown(() => broker.close());
  // A package server that counts what the device asks of it.
  const hits: string[] = [];
  const dp = buildDp({ name: 'org.example.pol', version: '1.0.0', files: { 'x.txt': 'x' } });
  const server = http.createServer((req, res) => {
    hits.push(req.url!);
    res.writeHead(200, { 'content-length': dp.length }).end(dp);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const pkgUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/pol.dp`;

  // BIRTH's application_ids, as Kapua reads them.
  const births = await watchBirths(t, broker.url, `$EDC/acct/${DEVICE}/MQTT/#`, 'birth-watcher');

  const d = await startDaemon(t, {
    rest: { 'auth.basic.enabled': true, 'login.throttle.max.delay': 0 },
    identities: { admin: { password: 'Adm1n-Secret!', passwordChangeNeeded: false, permissions: ['kura.admin'] } },
    assets: { demo: { 'driver.pid': 'sim', channels: { setpoint: { type: 'READ_WRITE', 'value.type': 'DOUBLE', simulation: 'memory', initial: 20 } } } },
    mqtt: { enabled: true, 'broker-url': broker.url, 'client-id': DEVICE, 'topic.context.account-name': 'acct', 'payload.encoding': 'kura-protobuf', 'requester.permissions': ['rest.assets'] },
  });
  await d.waitForLog(/msg="mqtt connected"/);
  await until(() => births.length > 0, 10_000, 'BIRTH');
  t.same(births.at(-1)!.split(',').sort(), ['ASSET-V1', 'CONF-V1', 'CONF-V2', 'DEPLOY-V2', 'INVENTORY-V1', 'KEYS-V1'], 'every application announced');
  const admin = { authorization: `Basic ${Buffer.from('admin:Adm1n-Secret!').toString('base64')}` };
  const rest = (p: string, body?: unknown, method = body === undefined ? 'GET' : 'POST') => d.request(`/services${p}`, { method, headers: admin, body: body as object });
  const conf = (p: string, body?: unknown, method?: string) => rest(`/configuration/v2/${p}`, body, method);

  // Anonymous clients of the broker, several at once.
  const requesters = await Promise.all(['anon-1', 'anon-2', 'anon-3'].map(async (id) => {
    const r = new Requester(broker.url, id, 'acct');
    await r.start();
    t.teardown(() => r.end());
    return r;
  }));
  const [q] = requesters;
  const ask = (r: Requester, app: string, mr: string, body?: unknown, o: { metrics?: KuraMetric[]; wait?: number } = {}) => {
    const rid = r.nextId();
    const metrics = o.metrics && [s('request.id', rid), s('requester.client.id', r.id), ...o.metrics];
    return r.kura(DEVICE, mr, body === undefined ? undefined : JSON.stringify(body), { app, wait: o.wait ?? 8000, metrics, requestId: rid });
  };
  const write = (value: string) => [{ name: 'demo', channels: [{ name: 'setpoint', type: 'DOUBLE', value }] }];

  await t.test('rest.assets: GET/assets, EXEC/read and EXEC/write are served', async (t) => {
    const all = await Promise.all(requesters.map((r) => ask(r, 'ASSET-V1', 'GET/assets')));
    t.same(all.map((x) => x?.code), [200, 200, 200]);
    t.match(JSON.parse(all[0]!.body!), [{ name: 'demo' }]);
    t.equal((await ask(q!, 'ASSET-V1', 'EXEC/read', [{ name: 'demo' }]))?.code, 200);
    const w = await ask(q!, 'ASSET-V1', 'EXEC/write', write('42.5'));
    t.equal(w?.code, 200);
    t.match((await rest('/assets/demo/_read')).json(), [{ name: 'setpoint', value: 42.5 }], 'written, as REST reads it');
  });

  await t.test('CONF-V2: 400 Forbidden, nothing changed', async (t) => {
    const snapshots = (await conf('snapshots')).json().ids;
    const before = (await conf('configurableComponents/configurations/byPid', { pids: [REST_PID] })).body;
    const refused = await Promise.all(requesters.map((r) => ask(r, 'CONF-V2', 'GET/snapshots')));
    for (const r of refused) t.same([r?.code, r?.message], [400, 'Forbidden: requires rest.configuration']);
    const u = await ask(q!, 'CONF-V2', 'PUT/configurableComponents/configurations/_update', { configs: [{ pid: REST_PID, properties: { 'session.inactivity.interval': { type: 'LONG', value: 60 } } }] });
    t.same([u?.code, u?.message], [400, 'Forbidden: requires rest.configuration']);
    const reset = await ask(q!, 'CONF-V2', 'EXEC/_reset');
    t.equal(reset?.code, 400, 'nor a reset');
    t.equal((await conf('configurableComponents/configurations/byPid', { pids: [REST_PID] })).body, before, 'configuration unchanged');
    t.same((await conf('snapshots')).json().ids, snapshots, 'no snapshot taken');
  });

  await t.test('DEPLOY-V2: 400 Forbidden, no download, no job', async (t) => {
    const dl = await ask(q!, 'DEPLOY-V2', 'EXEC/download', undefined, {
      metrics: [s('dp.uri', pkgUrl), s('dp.name', 'org.example.pol'), s('dp.version', '1.0.0'), s('dp.download.protocol', 'HTTP'), { name: 'job.id', type: 'INT64', value: 7n }, { name: 'dp.install.system.update', type: 'BOOL', value: false }],
    });
    t.same([dl?.code, dl?.message], [400, 'Forbidden: requires rest.deploy']);
    t.same([(await ask(q!, 'DEPLOY-V2', 'GET/packages'))?.code, (await ask(q!, 'DEPLOY-V2', 'EXEC/uninstall'))?.code], [400, 400]);
    await new Promise((r) => setTimeout(r, 1000));
    t.same(hits, [], 'the package server was never asked');
    t.same((await rest('/deploy/v2/_jobs')).json(), [], 'no job');
    t.same((await rest('/deploy/v2')).json(), [], 'nothing installed');
  });

  await t.test('at run time: applications.disabled and requester.permissions through configuration/v2', async (t) => {
    const connects = () => d.logs.filter((l) => /msg="mqtt connected"/.test(l)).length;
    const before = connects();
    const birthsBefore = births.length;
    const set = (properties: Record<string, unknown>) => conf('configurableComponents/configurations/_update', { configs: [{ pid: CLOUD, properties }], takeSnapshot: false }, 'PUT');
    t.equal((await set({ 'applications.disabled': { type: 'STRING', value: ['ASSET-V1'] } })).status, 200);
    await until(() => births.length > birthsBefore, 10_000, 'BIRTH published again');
    t.same(births.at(-1)!.split(',').sort(), ['CONF-V1', 'CONF-V2', 'DEPLOY-V2', 'INVENTORY-V1', 'KEYS-V1'], 'ASSET-V1 out of BIRTH');
    t.equal(await ask(q!, 'ASSET-V1', 'GET/assets', undefined, { wait: 2000 }), undefined, 'a disabled application: no reply');
    t.equal(await ask(q!, 'ASSET-V1', 'EXEC/write', write('1'), { wait: 1500 }), undefined);
    t.match((await rest('/assets/demo/_read')).json(), [{ name: 'setpoint', value: 42.5 }], 'nothing written');

    t.equal((await set({ 'applications.disabled': { type: 'STRING', value: [] }, 'requester.permissions': { type: 'STRING', value: ['rest.assets', 'rest.configuration'] } })).status, 200);
    await until(() => births.at(-1)!.includes('ASSET-V1'), 10_000, 'ASSET-V1 back in BIRTH');
    t.equal((await ask(q!, 'CONF-V2', 'GET/snapshots'))?.code, 200, 'rest.configuration now serves CONF-V2');
    t.equal((await ask(q!, 'ASSET-V1', 'GET/assets'))?.code, 200, 'and ASSET-V1 is back');
    t.equal((await ask(q!, 'DEPLOY-V2', 'GET/packages'))?.message, 'Forbidden: requires rest.deploy', 'DEPLOY-V2 still refused');
    t.equal(connects(), before, 'no reconnection for these keys');

    // With rest.configuration over MQTT a requester still cannot widen its own permissions or point
    // the connection at another broker: those properties are kura.admin's
    // (docs/configuration-v2.md "Reserved to kura.admin").
    const widen = await ask(q!, 'CONF-V2', 'PUT/configurableComponents/configurations/_update', { configs: [{ pid: CLOUD, properties: { 'requester.permissions': { type: 'STRING', value: ['kura.admin'] } } }] });
    // CONF-V2 carries its error in the body, as Kura's REST-over-MQTT proxy does.
    t.same([widen?.code, JSON.parse(widen?.body ?? '{}').message], [400, `Only kura.admin may change ${CLOUD} property requester.permissions`]);
    const TRANSPORT = 'org.eclipse.kura.core.data.transport.mqtt.MqttDataTransport';
    const redirect = await ask(q!, 'CONF-V2', 'PUT/configurableComponents/configurations/_update', { configs: [{ pid: TRANSPORT, properties: { 'broker-url': { type: 'STRING', value: 'mqtt://127.0.0.1:1' } } }] });
    t.same([redirect?.code, JSON.parse(redirect?.body ?? '{}').message], [400, `Only kura.admin may change ${TRANSPORT} property broker-url`]);
    t.same((await conf('configurableComponents/configurations/byPid', { pids: [CLOUD] })).json().configs[0].properties['requester.permissions'].value, ['rest.assets', 'rest.configuration'], 'permissions unchanged');
    t.equal(connects(), before, 'still on the same broker');
  });

  await t.test('both keys are CloudService properties with definitions', async (t) => {
    const c = (await conf('configurableComponents/configurations/byPid', { pids: [CLOUD] })).json().configs[0];
    const ads = Object.fromEntries(c.definition.ad.map((a: { id: string }) => [a.id, a]));
    t.match(ads['requester.permissions'], { type: 'STRING', cardinality: 1000, defaultValue: 'kura.admin' });
    t.match(ads['applications.disabled'], { type: 'STRING', cardinality: 1000 });
    t.same(c.properties['requester.permissions'], { value: ['rest.assets', 'rest.configuration'], type: 'STRING' });
  });
});

t.test('applications disabled at start: not subscribed, not in BIRTH, no reply', mosquittoSkip(), async (t) => {
  const broker = await startMosquitto();
  t.teardown(() => broker.close());
  const births: string[] = [];
  const watcher = new MqttClient({ url: broker.url, clientId: 'birth-watcher-2', keepAlive: 30, clean: true, reconnectMin: 50, reconnectMax: 300, log: silentLogger });
  watcher.on('message', (topic: string, raw: Buffer) => {
    const p = JSON.parse(raw.toString());
    if (topic.endsWith('/MQTT/BIRTH')) births.push(p.metrics.application_ids);
  });
  watcher.start();
  await until(() => watcher.isConnected, 5000, 'watcher');
  await watcher.subscribe('$EDC/acct/gw-off/MQTT/#', 1);
  t.teardown(() => watcher.end());
  const d = await startDaemon(t, {
    mqtt: { enabled: true, 'broker-url': broker.url, 'client-id': 'gw-off', 'topic.context.account-name': 'acct', 'payload.encoding': 'json', 'applications.disabled': ['DEPLOY-V2', 'CONF-V2', 'CONF-V1'] },
  });
  await d.waitForLog(/msg="mqtt connected"/);
  await until(() => births.length > 0, 10_000, 'BIRTH');
  t.equal(births[0], 'ASSET-V1,INVENTORY-V1,KEYS-V1');
  const r = new Requester(broker.url, 'anon', 'acct');
  await r.start();
  t.teardown(() => r.end());
  t.equal((await r.json('gw-off', 'GET/assets', '[]'))?.code, 200, 'ASSET-V1 served (default permissions: kura.admin)');
  t.equal(await r.json('gw-off', 'GET/packages', '', 2000, 'DEPLOY-V2'), undefined, 'DEPLOY-V2: no reply');
  t.equal(await r.json('gw-off', 'GET/snapshots', '', 1500, 'CONF-V2'), undefined, 'CONF-V2: no reply');
  t.equal(await r.json('gw-off', 'GET/snapshots', '', 1500, 'CONF-V1'), undefined, 'CONF-V1: no reply');
});
