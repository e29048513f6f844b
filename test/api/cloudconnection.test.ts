// cloudconnection/v1 over REST (docs/rest-api.md "cloudconnection/v1"), through the real daemon and
// two real Mosquitto brokers: the list's shape (no secret of a broker URL), `_disconnect` and
// `_connect` answer 204 and really disconnect (DC on the broker, telemetry held in that
// connection's outbox) and connect again (BIRTH, the outbox delivered), an unknown name is 404, an
// identity without `rest.cloudconnection` gets 403 and one with it (or kura.admin) gets the answers;
// `lastError` tells a refused CONNECT and a closed port for both connection types; Kura's resources
// (instances, cloudEndpoint/connect, disconnect, isConnected, stackComponentPids) by CloudService PID.

import t from 'tap';
import { startDaemon } from '../helpers/daemon.js';
import { mosquittoSkip, startMosquitto } from '../helpers/mosquitto.js';
import { until } from '../helpers/mqtt-fixture.js';
import { MqttClient } from '../../src/mqtt/client.js';
import { silentLogger } from '../../src/log.js';
import { waitFor } from '../helpers/broker-watch.js';
import { freePort } from '../helpers/ports.js';

t.setTimeout(90_000);

const basic = (u: string, p: string) => ({ authorization: `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}` });
const ADMIN = basic('admin', 'Adm1n-Secret!');
const OPS = basic('ops', '0ps-Secret!x');
const VIEWER = basic('viewer', 'V1ewer-Secret!');
const BASE = '/services/cloudconnection/v1';

t.test('cloudconnection/v1: list, disconnect, connect, 404, 403', mosquittoSkip(), async (t) => {
  const a = await startMosquitto();
  t.teardown(() => a.close());
  const b = await startMosquitto();
  t.teardown(() => b.close());
  const seen: string[] = [];
  const sub = new MqttClient({ url: b.url, clientId: 'watch', keepAlive: 30, clean: true, reconnectMin: 50, reconnectMax: 300, log: silentLogger });
  sub.on('message', (topic: string) => seen.push(topic));
  sub.start();
  t.teardown(() => sub.end());
  await until(() => sub.isConnected, 5000, 'watcher');
  await sub.subscribe('$EDC/#', 1);
  await sub.subscribe('plant/#', 1);

  const d = await startDaemon(t, {
    rest: { 'auth.basic.enabled': true, 'login.throttle.max.delay': 0 },
    identities: {
      admin: { password: 'Adm1n-Secret!', passwordChangeNeeded: false, permissions: ['kura.admin'] },
      ops: { password: '0ps-Secret!x', passwordChangeNeeded: false, permissions: ['rest.cloudconnection'] },
      viewer: { password: 'V1ewer-Secret!', passwordChangeNeeded: false, permissions: ['rest.system'] },
    },
    assets: { pump: { 'driver.pid': 'sim', 'poll.interval': 100, channels: { n: { type: 'READ', 'value.type': 'INTEGER', simulation: 'counter' } } } },
    mqtt: {
      connections: {
        default: { enabled: true, 'broker-url': a.url, 'client-id': 'gw-a' },
        local: { enabled: true, 'broker-url': b.url, 'client-id': 'gw-b', 'topic.context.account-name': 'plant', 'payload.encoding': 'json' },
        spare: { enabled: false, 'broker-url': 'mqtt://user:s3cr3t@10.0.0.1:1883', 'client-id': 'gw-c', password: 'pw-Secret' },
      },
    },
  });
  const list = async (who = OPS) => d.request(`${BASE}/connections`, { headers: who });
  const one = async (name: string) => (await list()).json().find((c: any) => c.name === name);
  await waitFor(async () => (await one('default')).connected && (await one('local')).connected, 10_000, 'both connected');

  let r = await list();
  t.equal(r.status, 200);
  const body = r.json();
  t.same(body.map((c: any) => Object.keys(c)), Array(3).fill(['name', 'type', 'connected', 'brokerUrl', 'outbox', 'clientId', 'disconnectedOnRequest', 'published', 'reconnects', 'lastError']), 'the fields, in order');
  t.match(body[0], { name: 'default', type: 'kura', connected: true, brokerUrl: a.url, outbox: { pending: Number, dropped: 0 }, clientId: 'gw-a', disconnectedOnRequest: false, reconnects: 0, lastError: null });
  t.match(body[1], { name: 'local', type: 'kura', connected: true, brokerUrl: b.url, clientId: 'gw-b' });
  t.match(body[2], { name: 'spare', connected: false, brokerUrl: 'mqtt://10.0.0.1:1883' });
  t.notMatch(r.body, /s3cr3t|pw-Secret/, 'no credentials in the answer');
  t.equal((await list(ADMIN)).status, 200, 'kura.admin passes');
  t.equal((await d.request(`${BASE}/connections/local`, { headers: OPS })).json().name, 'local', 'one connection by name');

  // 403 for an identity without the role, on every resource; 404 for an unknown name.
  t.equal((await list(VIEWER)).status, 403);
  t.equal((await d.request(`${BASE}/connections/local/_disconnect`, { method: 'POST', headers: VIEWER })).status, 403);
  t.ok((await one('local')).connected, 'a refused request disconnects nothing');
  r = await d.request(`${BASE}/connections/nope/_connect`, { method: 'POST', headers: OPS });
  t.equal(r.status, 404);
  t.same(r.json(), { message: 'no connection named "nope"' });
  t.equal((await d.request(`${BASE}/connections/nope`, { headers: OPS })).status, 404);
  r = await d.request(`${BASE}/connections/${'x'.repeat(2000)}/_disconnect`, { method: 'POST', headers: OPS });
  t.same([r.status, r.json()], [404, { message: `no connection named "${'x'.repeat(64)}…"` }], 'a long name is not echoed whole');
  t.equal((await d.request(`${BASE}/connections/local/_bogus`, { method: 'POST', headers: OPS })).status, 404);

  // _disconnect: DC on the broker, the connection down, telemetry kept in its outbox; the other untouched.
  r = await d.request(`${BASE}/connections/local/_disconnect`, { method: 'POST', headers: OPS });
  t.equal(r.status, 204);
  t.equal(r.body, '');
  t.ok(seen.includes('$EDC/plant/gw-b/MQTT/DC'), 'DC published before the clean DISCONNECT');
  let local = await one('local');
  t.match(local, { connected: false, disconnectedOnRequest: true });
  await waitFor(async () => (await one('local')).outbox.pending >= 5, 10_000, 'telemetry held in the local outbox');
  const telemetryBefore = seen.filter((x) => x.startsWith('plant/')).length;
  t.ok((await one('default')).connected, 'the default connection stays connected');
  t.equal((await one('default')).reconnects, 0);
  // Disconnecting twice is no error.
  t.equal((await d.request(`${BASE}/connections/local/_disconnect`, { method: 'POST', headers: OPS })).status, 204);
  await new Promise((r) => setTimeout(r, 300));
  t.equal(seen.filter((x) => x.startsWith('plant/')).length, telemetryBefore, 'nothing published while disconnected');

  // _connect: BIRTH again, the held telemetry delivered.
  const births = seen.filter((x) => x === '$EDC/plant/gw-b/MQTT/BIRTH').length;
  r = await d.request(`${BASE}/connections/local/_connect`, { method: 'POST', headers: ADMIN });
  t.equal(r.status, 204);
  await waitFor(async () => (await one('local')).connected, 10_000, 'local connected again');
  await until(() => seen.filter((x) => x === '$EDC/plant/gw-b/MQTT/BIRTH').length > births, 5000, 'a new BIRTH');
  await waitFor(async () => (await one('local')).outbox.pending <= 3, 10_000, 'the outbox delivered (what is left is in flight)');
  local = await one('local');
  t.match(local, { connected: true, disconnectedOnRequest: false, reconnects: 1 });
  t.ok(seen.filter((x) => x.startsWith('plant/')).length > telemetryBefore + 4, 'the held telemetry arrived');
  // _connect on a disabled connection: 204, and it stays disconnected (its configuration says so).
  t.equal((await d.request(`${BASE}/connections/spare/_connect`, { method: 'POST', headers: OPS })).status, 204);
  t.equal((await one('spare')).connected, false);
  await d.stop();
});

t.test('one connection (the object form): one entry named default; system/v1 status as before', mosquittoSkip(), async (t) => {
  const a = await startMosquitto();
  t.teardown(() => a.close());
  const d = await startDaemon(t, {
    rest: { 'auth.basic.enabled': true, 'login.throttle.max.delay': 0 },
    identities: { admin: { password: 'Adm1n-Secret!', passwordChangeNeeded: false, permissions: ['kura.admin'] } },
    mqtt: { enabled: true, 'broker-url': a.url, 'client-id': 'solo' },
  });
  await waitFor(async () => (await d.request(`${BASE}/connections`, { headers: ADMIN })).json()[0].connected, 10_000, 'connected');
  const body = (await d.request(`${BASE}/connections`, { headers: ADMIN })).json();
  t.same(body.map((c: any) => [c.name, c.clientId]), [['default', 'solo']]);
  const status = (await d.request('/services/system/v1/status', { headers: ADMIN })).json().mqtt;
  t.same(Object.keys(status), ['enabled', 'brokerUrl', 'clientId', 'connected', 'outboxPending', 'outboxDropped', 'outboxMax', 'outboxBytes', 'outboxMaxBytes'], 'system/v1 status keeps its mqtt keys');
  t.match(status, { enabled: true, brokerUrl: a.url, clientId: 'solo', connected: true, outboxDropped: 0, outboxMax: 10000 });
  await d.stop();
});

t.test('lastError: a refused CONNECT and a closed port, for a Kura and a Sparkplug connection alike; no password in it', mosquittoSkip(), async (t) => {
  // A broker that takes no anonymous client and knows no user: every CONNECT answered "not authorized".
  const closed = await startMosquitto({ conf: ['allow_anonymous false'] });
  t.teardown(() => closed.close());
  // A port nothing listens on.
  const nowhere = `mqtt://127.0.0.1:${await freePort()}`;
  const sp = { type: 'sparkplug', 'sparkplug.group.id': 'G', 'keep-alive': 5 };
  const started = Date.now();
  const d = await startDaemon(t, {
    rest: { 'auth.basic.enabled': true, 'login.throttle.max.delay': 0 },
    identities: { admin: { password: 'Adm1n-Secret!', passwordChangeNeeded: false, permissions: ['kura.admin'] } },
    mqtt: {
      connections: {
        default: { enabled: true, 'broker-url': closed.url, 'client-id': 'k-refused', username: 'gw', password: 'pw-Refused-1' },
        kgone: { enabled: true, 'broker-url': nowhere, 'client-id': 'k-gone' },
        srefused: { enabled: true, ...sp, 'broker-url': closed.url, 'client-id': 's-refused', username: 'gw', password: 'pw-Refused-2' },
        sgone: { enabled: true, ...sp, 'broker-url': nowhere, 'client-id': 's-gone' },
      },
    },
  });
  const all = async () => (await d.request(`${BASE}/connections`, { headers: ADMIN })).json() as any[];
  await waitFor(async () => (await all()).every((c) => c.lastError !== null), 15_000, 'every connection has a lastError');
  const byName = Object.fromEntries((await all()).map((c) => [c.name, c]));
  for (const [name, pattern] of [
    ['default', /refused by broker/],
    ['srefused', /refused by broker/],
    ['kgone', /ECONNREFUSED/],
    ['sgone', /ECONNREFUSED/],
  ] as const) {
    const c = byName[name];
    t.equal(c.connected, false, `${name} not connected`);
    t.match(c.lastError.message, pattern, `${name}: ${c.lastError.message}`);
    t.ok(c.lastError.at >= started && c.lastError.at <= Date.now(), `${name}: its time`);
  }
  t.same([byName.srefused.type, byName.sgone.type], ['sparkplug', 'sparkplug']);
  const text = JSON.stringify(await all());
  t.notOk(text.includes('pw-Refused'), 'no password in the list');
  t.notOk(d.logs.some((l) => l.includes('pw-Refused')), 'nor in the log');
  await d.stop();
});

t.test("Kura's shapes: instances, cloudEndpoint connect, disconnect, isConnected, stackComponentPids", mosquittoSkip(), async (t) => {
  const a = await startMosquitto();
  t.teardown(() => a.close());
  const CS = 'org.eclipse.kura.cloud.CloudService';
  const TR = 'org.eclipse.kura.core.data.transport.mqtt.MqttDataTransport';
  const d = await startDaemon(t, {
    rest: { 'auth.basic.enabled': true, 'login.throttle.max.delay': 0 },
    identities: {
      ops: { password: '0ps-Secret!x', passwordChangeNeeded: false, permissions: ['rest.cloudconnection'] },
      viewer: { password: 'V1ewer-Secret!', passwordChangeNeeded: false, permissions: ['rest.system'] },
    },
    mqtt: {
      connections: {
        default: { enabled: true, 'broker-url': a.url, 'client-id': 'gw-k' },
        scada: { enabled: false, type: 'sparkplug', 'sparkplug.group.id': 'G', 'broker-url': a.url, 'client-id': 'gw-s' },
      },
    },
  });
  const post = (path: string, body: unknown, who = OPS) =>
    d.request(`${BASE}/${path}`, { method: 'POST', headers: { ...who, 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) });
  const connected = async (pid: string) => (await post('cloudEndpoint/isConnected', { cloudEndpointPid: pid })).json().connected;
  await waitFor(async () => connected(CS), 10_000, 'default connected');

  let r = await d.request(`${BASE}/instances`, { headers: OPS });
  t.equal(r.status, 200);
  t.same(r.json(), {
    cloudEndpointInstances: [
      { cloudConnectionFactoryPid: CS, cloudEndpointPid: CS, state: 'CONNECTED', cloudEndpointType: 'CLOUD_CONNECTION_MANAGER' },
      { cloudConnectionFactoryPid: CS, cloudEndpointPid: `${CS}-scada`, state: 'DISCONNECTED', cloudEndpointType: 'CLOUD_CONNECTION_MANAGER' },
    ],
    pubsubInstances: [],
  }, 'every connection as a CloudService endpoint, in its state');
  r = await post('cloudEndpoint/isConnected', { cloudEndpointPid: `${CS}-scada` });
  t.equal(r.status, 200);
  t.same(r.json(), { connected: false });
  t.same((await post('cloudEndpoint/stackComponentPids', { cloudConnectionFactoryPid: CS, cloudEndpointPid: CS })).json(), { pids: [CS, TR] });
  t.same((await post('cloudEndpoint/stackComponentPids', { cloudConnectionFactoryPid: CS, cloudEndpointPid: `${CS}-scada` })).json(), { pids: [`${CS}-scada`, `${TR}-scada`] });

  // disconnect and connect by PID: the same as _disconnect and _connect.
  r = await post('cloudEndpoint/disconnect', { cloudEndpointPid: CS });
  t.equal(r.status, 204, r.body);
  t.equal(await connected(CS), false, 'disconnected');
  t.match((await d.request(`${BASE}/connections/default`, { headers: OPS })).json(), { connected: false, disconnectedOnRequest: true }, 'held, as _disconnect holds it');
  await new Promise((res) => setTimeout(res, 300));
  t.equal(await connected(CS), false, 'and stays so');
  r = await post('cloudEndpoint/connect', { cloudEndpointPid: CS });
  t.equal(r.status, 204, r.body);
  await waitFor(async () => connected(CS), 10_000, 'connected again');
  t.match((await d.request(`${BASE}/connections/default`, { headers: OPS })).json(), { connected: true, disconnectedOnRequest: false, reconnects: 1 });

  // What others send: no body, not JSON, a number, the transport's PID, no such endpoint, another factory, a long PID, no role.
  const cases: [string, string, unknown, number, RegExp][] = [
    ['no body', 'cloudEndpoint/connect', '', 400, /cloudEndpointPid is required/],
    ['not JSON', 'cloudEndpoint/isConnected', '{"cloudEndpointPid":', 400, /./],
    ['a number', 'cloudEndpoint/disconnect', { cloudEndpointPid: 5 }, 400, /cloudEndpointPid is required/],
    ['an empty PID', 'cloudEndpoint/isConnected', { cloudEndpointPid: '' }, 400, /cloudEndpointPid is required/],
    ['a PID too long', 'cloudEndpoint/isConnected', { cloudEndpointPid: `${CS}-${'x'.repeat(300)}` }, 400, /cloudEndpointPid is required/],
    ['the transport PID', 'cloudEndpoint/connect', { cloudEndpointPid: TR }, 404, /no CloudEndpoint "org\.eclipse\.kura\.core\.data\.transport\.mqtt\.MqttDataTransport"/],
    ['no such connection', 'cloudEndpoint/isConnected', { cloudEndpointPid: `${CS}-nosuch` }, 404, /no CloudEndpoint/],
    ['another PID', 'cloudEndpoint/disconnect', { cloudEndpointPid: 'org.eclipse.kura.clock.ClockService' }, 404, /no CloudEndpoint/],
    ['another factory', 'cloudEndpoint/stackComponentPids', { cloudConnectionFactoryPid: 'org.eclipse.kura.cloudconnection.raw.mqtt.cloud.RawMqttCloudEndpoint', cloudEndpointPid: CS }, 404, /no cloud connection factory/],
    ['no factory', 'cloudEndpoint/stackComponentPids', { cloudEndpointPid: CS }, 400, /cloudConnectionFactoryPid is required/],
  ];
  for (const [what, path, body, status, re] of cases) {
    r = await post(path, body);
    t.equal(r.status, status, `${what}: ${status}`);
    t.match(r.json().message, re, `${what}: ${r.json().message}`);
  }
  r = await post('cloudEndpoint/disconnect', { cloudEndpointPid: CS }, VIEWER);
  t.equal(r.status, 403, 'without rest.cloudconnection: 403');
  t.equal((await d.request(`${BASE}/instances`, { headers: VIEWER })).status, 403);
  t.equal(await connected(CS), true, 'the refused disconnect did nothing');
  t.equal((await d.request(`${BASE}/instances`)).status, 401, 'no credentials: 401');
  await d.stop();
});
