// CONF-V2: configuration/v2 as an MQTT application through the same handlers (docs/configuration-v2.md),
// against the real daemon and a real Mosquitto, with a requester that speaks KuraPayload as Kapua
// does: results and errors identical to REST; a change made over MQTT seen over REST; MQTT
// reconnects only when its own settings change; the bare-JSON form after switching the encoding.
import t from 'tap';
import { startDaemon } from '../helpers/daemon.js';
import { basic } from '../helpers/session-client.js';
import { mosquittoSkip, startMosquitto } from '../helpers/mosquitto.js';
import { Requester, until } from '../helpers/mqtt-fixture.js';

const C = '/services/configuration/v2';
const REST = 'org.eclipse.kura.internal.rest.provider.RestService';
const MQTT = 'org.eclipse.kura.core.data.transport.mqtt.MqttDataTransport';
const CLOUD = 'org.eclipse.kura.cloud.CloudService';

t.test('CONF-V2 over a real broker', mosquittoSkip(), async (t) => {
  const broker = await startMosquitto();
  t.teardown(() => broker.close());
  const d = await startDaemon(t, {
    identities: { admin: { password: 'admin', permissions: ['kura.admin'] } },
    rest: { 'login.throttle.max.delay': 0 },
    mqtt: { enabled: true, 'broker-url': broker.url, 'client-id': 'dev1', 'topic.context.account-name': 'acct', username: 'u', password: 'Mqtt-Secret-1', 'keep-alive': 30 },
  });
  await d.waitForLog(/msg="mqtt connected"/);
  const req = new Requester(broker.url, 'kapua');
  await req.start();
  t.teardown(() => req.client.end());
  const admin = basic(d, 'admin', 'admin');
  const rest = (p: string, body?: unknown, method = body === undefined ? 'GET' : 'POST') =>
    admin.request(`${C}/${p}`, { method, body: body === undefined ? undefined : JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  const conf = async (mr: string, body?: unknown) => (await req.kura('dev1', mr, body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body), { app: 'CONF-V2', wait: 8000 }))!;

  t.test('GET/snapshots, body = REST body, response.code int32', async (t) => {
    const r = await conf('GET/snapshots');
    t.equal(r.code, 200);
    t.equal(r.metrics.find((m) => m.name === 'response.code')?.type, 'INT32');
    t.equal(r.body, (await rest('snapshots')).body);
    t.equal(r.topic.split('/').slice(0, 5).join('/'), '$EDC/acct/kapua/CONF-V2/REPLY');
  });

  t.test('EXEC/snapshots/_write; POST is 404 Not found.', async (t) => {
    const r = await conf('EXEC/snapshots/_write');
    t.equal(r.code, 200);
    const id = JSON.parse(r.body!).id;
    t.same((await rest('snapshots')).json().ids.at(-1), id);
    const p = await conf('POST/snapshots/_write');
    t.equal(p.code, 404);
    t.same(JSON.parse(p.body!), { message: 'Not found.' });
    t.equal(p.message, undefined, 'no response.exception.message');
  });

  t.test('byPid without credentials; same configurations as REST', async (t) => {
    t.equal((await conf('POST/configurableComponents/configurations/byPid', { pids: ['nope'] })).body, '{"configs":[]}');
    const m = await conf('POST/configurableComponents/configurations/byPid', { pids: [MQTT, REST] });
    t.equal(m.body, (await rest('configurableComponents/configurations/byPid', { pids: [MQTT, REST] })).body);
    t.notOk(m.body!.includes('Mqtt-Secret-1'), 'password masked over MQTT too');
  });

  t.test('malformed body and validation errors are the REST ones', async (t) => {
    const bad = await conf('PUT/configurableComponents/configurations/_update', '{bad');
    t.equal(bad.code, 400);
    t.ok(JSON.parse(bad.body!).message);
    const body = { configs: [{ pid: REST, properties: { 'session.inactivity.interval': { type: 'LONG', value: 0 } } }] };
    const m = await conf('PUT/configurableComponents/configurations/_update', body);
    const r = await rest('configurableComponents/configurations/_update', body, 'PUT');
    t.same([m.code, m.body], [r.status, r.body]);
    t.equal(r.status, 400);
  });

  t.test('an update over MQTT shows over REST; MQTT does not reconnect for it', async (t) => {
    const connects = () => d.logs.filter((l) => /msg="mqtt connected"/.test(l)).length;
    const before = connects();
    const r = await conf('PUT/configurableComponents/configurations/_update', { configs: [{ pid: REST, properties: { 'session.inactivity.interval': { type: 'LONG', value: 1800 } } }], takeSnapshot: false });
    t.same([r.code, r.body], [200, undefined]);
    t.same((await rest('configurableComponents/configurations/byPid', { pids: [REST] })).json().configs[0].properties['session.inactivity.interval'], { value: 1800, type: 'INTEGER' });
    t.equal(connects(), before, 'no reconnection for a REST setting');
  });

  t.test('create and DEL/factoryComponents/byPid', async (t) => {
    const create = await conf('POST/factoryComponents', {
      configs: [{ factoryPid: 'org.eclipse.kura.wire.WireAsset', pid: 'a2', properties: { 'driver.pid': { type: 'STRING', value: 'sim' }, 'c#+type': { type: 'STRING', value: 'READ' }, 'c#+value.type': { type: 'STRING', value: 'INTEGER' } } }],
      takeSnapshot: false,
    });
    t.equal(create.code, 200);
    t.equal((await admin.request('/services/assets/a2')).status, 200);
    const del = await conf('DEL/factoryComponents/byPid', { pids: ['a2'], takeSnapshot: false });
    t.same([del.code, del.body], [200, undefined]);
    t.equal((await admin.request('/services/assets/a2')).status, 404);
  });

  t.test('its own settings reconnect MQTT; the bare-JSON form', async (t) => {
    const connects = () => d.logs.filter((l) => /msg="mqtt connected"/.test(l)).length;
    const before = connects();
    const r = await rest('configurableComponents/configurations/_update', { configs: [{ pid: CLOUD, properties: { 'payload.encoding': { type: 'STRING', value: 'json' } } }, { pid: MQTT, properties: { 'keep-alive': { type: 'INTEGER', value: 20 } } }], takeSnapshot: false }, 'PUT');
    t.equal(r.status, 200);
    await until(() => connects() > before, 10_000, 'reconnect');
    let j: Awaited<ReturnType<Requester['json']>>;
    // The new subscription may take a moment after the reconnect: ask until it answers.
    for (let i = 0; i < 10 && !j!; i++) j = await req.json('dev1', 'GET/snapshots', undefined, 1500, 'CONF-V2');
    t.ok(j!, 'a bare-JSON reply');
    t.equal(j!.body, (await rest('snapshots')).body);
    const e = await req.json('dev1', 'POST/configurableComponents/configurations/byPid', '{}', 5000, 'CONF-V2');
    t.equal(e!.code, 400);
  });
});
