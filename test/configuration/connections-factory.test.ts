// MQTT connections created and deleted at run time through configuration/v2 (docs/configuration-v2.md
// "Creating and deleting connections"): one create makes both components of a connection and it
// connects with its own applications; the object form of `mqtt` becomes the connections form without
// touching the default connection; a created connection survives a restart; deleting either pid
// removes the connection (DC first), and what its outbox held is kept and said, then delivered when
// the connection is created again; a rollback and _reset restore the connections of their
// configuration. Creating and deleting is kura.admin's; bad names, duplicates and the default
// connection are refused. Through the real daemon and two real Mosquitto brokers.

import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startDaemon, type Daemon } from '../helpers/daemon.js';
import { basic } from '../helpers/session-client.js';
import { mosquittoSkip, startMosquitto } from '../helpers/mosquitto.js';
import { Requester, until } from '../helpers/mqtt-fixture.js';
import { decodeKuraPayload } from '../../src/mqtt/kura-payload.js';
import { type Got, listen, waitFor } from '../helpers/broker-watch.js';

t.setTimeout(120_000);

const C = '/services/configuration/v2';
const CLOUD = 'org.eclipse.kura.cloud.CloudService';
const MQTT = 'org.eclipse.kura.core.data.transport.mqtt.MqttDataTransport';
const S = (value: string) => ({ type: 'STRING', value });
const B = (value: boolean) => ({ type: 'BOOLEAN', value });

const appIds = (m: Got) => String((decodeKuraPayload(m.payload) as any).value.metrics.find((x: any) => x.name === 'application_ids').value).split(',');

t.test('connections made and removed at run time', mosquittoSkip(), async (t) => {
  const cloud = await startMosquitto();
  t.teardown(() => cloud.close());
  const plant = await startMosquitto();
  t.teardown(() => plant.close());
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-connfac-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  // The object form of `mqtt`: the one connection `default`.
  const config = {
    rest: { 'auth.basic.enabled': true, 'login.throttle.max.delay': 0 },
    identities: {
      admin: { password: 'Adm1n-Secret!', passwordChangeNeeded: false, permissions: ['kura.admin'] },
      conf: { password: 'C0nf-Secret!x', passwordChangeNeeded: false, permissions: ['rest.configuration', 'rest.cloudconnection'] },
    },
    assets: { pump: { 'driver.pid': 'sim', 'poll.interval': 100, channels: { n: { type: 'READ', 'value.type': 'INTEGER', simulation: 'counter' } } } },
    // Requests over the default connection run with rest.configuration, not kura.admin.
    mqtt: { enabled: true, 'broker-url': cloud.url, 'client-id': 'gw-cloud', 'keep-alive': 5, 'requester.permissions': ['rest.configuration'] },
  };
  const cloudGot = await listen(t, cloud.url, '#', 'cloud-sub');
  const plantGot = await listen(t, plant.url, '#', 'plant-sub');
  let d: Daemon = await startDaemon(t, config, { dir });
  const clients = () => ({ admin: basic(d, 'admin', 'Adm1n-Secret!'), conf: basic(d, 'conf', 'C0nf-Secret!x') });
  let { admin, conf } = clients();
  const call = (c: typeof admin, p: string, body?: unknown, method = 'POST') => c.request(`${C}/${p}`, { method, body: body === undefined ? undefined : JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  const create = (c: typeof admin, configs: unknown[]) => call(c, 'factoryComponents', { configs, takeSnapshot: false });
  const remove = (c: typeof admin, pids: string[]) => call(c, 'factoryComponents/byPid', { pids, takeSnapshot: false }, 'DELETE');
  const props = async (pid: string) => (await call(admin, 'configurableComponents/configurations/byPid', { pids: [pid] })).json().configs[0]?.properties;
  const pids = async (): Promise<string[]> => (await admin.request(`${C}/configurableComponents`)).json().pids;
  const conns = async () => (await admin.request('/services/cloudconnection/v1/connections')).json() as any[];
  const byName = async (n: string) => (await conns()).find((c) => c.name === n);
  await waitFor(async () => (await byName('default'))?.connected, 10_000, 'default connected');

  // The factory is listed, with the connection's definition.
  t.ok((await admin.request(`${C}/factoryComponents`)).json().pids.includes(CLOUD), 'the CloudService factory is listed');
  const ocd = (await call(admin, 'factoryComponents/ocd/byFactoryPid', { pids: [MQTT] })).json().configs[0];
  t.ok(ocd.definition.ad.some((a: any) => a.id === 'broker-url'), 'the transport factory’s definition');

  const local = [
    { factoryPid: CLOUD, pid: `${CLOUD}-local`, properties: { enabled: B(true) } },
    { factoryPid: MQTT, pid: `${MQTT}-local`, properties: { 'broker-url': S(plant.url), 'client-id': S('gw-local'), 'keep-alive': { type: 'INTEGER', value: 5 } } },
  ];

  // Only kura.admin creates or deletes a connection.
  let r = await create(conf, local);
  t.equal(r.status, 403, 'a limited identity may not create a connection');
  t.equal(r.json().message, `Only kura.admin may create MQTT connections (${CLOUD}-local)`);
  r = await create(conf, [{ factoryPid: CLOUD, pid: `${CLOUD}-quiet`, properties: {} }]);
  t.equal(r.status, 403, 'not even a disabled one without broker keys');
  t.notOk((await pids()).includes(`${CLOUD}-local`), 'nothing created');
  // The same over CONF-V2: 400 (the code Kapua maps) with the message.
  const req = new Requester(cloud.url, 'req', 'account');
  await req.start();
  t.teardown(() => req.client.end());
  let m = await req.kura('gw-cloud', 'POST/factoryComponents', JSON.stringify({ configs: local }), { app: 'CONF-V2' });
  t.equal(m?.code, 400, 'CONF-V2 create by a rest.configuration requester');
  t.equal(JSON.parse(m!.body!).message, `Only kura.admin may create MQTT connections (${CLOUD}-local)`);
  m = await req.kura('gw-cloud', 'GET/factoryComponents', undefined, { app: 'CONF-V2' });
  t.ok(JSON.parse(m!.body!).pids.includes(CLOUD), 'CONF-V2 lists the connection factory');

  // Bad names and pids.
  for (const [pid, f, what] of [
    [`${CLOUD}-a.b`, CLOUD, 'a dot'],
    [`${CLOUD}-`, CLOUD, 'an empty name'],
    [`${CLOUD}-${'x'.repeat(65)}`, CLOUD, '65 characters'],
    [`${CLOUD}-a/b`, CLOUD, 'a topic separator'],
    ['local', CLOUD, 'not a CloudService pid'],
    [`${CLOUD}-local`, MQTT, 'the other factory’s pid'],
  ]) {
    r = await create(admin, [{ factoryPid: f, pid, properties: {} }]);
    t.equal(r.status, 400, `${what}: 400`);
    t.match(r.json().message, /^Invalid parameter\. pid /, what);
  }
  // The default connection exists already.
  r = await create(admin, [{ factoryPid: CLOUD, pid: CLOUD, properties: {} }]);
  t.equal(r.status, 400);
  t.equal(r.json().message, `Invalid parameter. pid ${CLOUD} already exists`);
  // The same broker and client id as the default: the broker would cut one for the other.
  r = await create(admin, [{ factoryPid: CLOUD, pid: `${CLOUD}-twin`, properties: { enabled: B(true) } }, { factoryPid: MQTT, pid: `${MQTT}-twin`, properties: { 'broker-url': S(cloud.url), 'client-id': S('gw-cloud') } }]);
  t.equal(r.status, 400, 'duplicate broker and client id');
  t.match(r.json().message, `Invalid configuration of ${MQTT}-twin, property client-id: connection "default" uses the same broker and client id`);
  t.same((await conns()).map((c) => c.name), ['default'], 'nothing created by refused requests');

  // Created by kura.admin: both components, it connects, BIRTH with its applications, telemetry.
  r = await create(admin, local);
  t.equal(r.status, 200, r.body);
  t.equal(r.body, '', 'an empty 200, as Kura');
  const all = await pids();
  t.ok(all.includes(`${CLOUD}-local`) && all.includes(`${MQTT}-local`), 'both components');
  t.ok(all.includes(CLOUD) && all.includes(MQTT), 'the default keeps its PIDs');
  const withFactory = (await admin.request(`${C}/configurableComponents/pidsWithFactory`)).json().components;
  t.same(withFactory.find((c: any) => c.pid === `${CLOUD}-local`), { pid: `${CLOUD}-local`, factoryPid: CLOUD });
  t.same(withFactory.find((c: any) => c.pid === CLOUD), { pid: CLOUD }, 'the default is no factory instance');
  t.same((await props(`${MQTT}-local`))['client-id'], S('gw-local'));
  t.same((await props(`${CLOUD}-local`))['payload.encoding'], S('kura-protobuf'), 'the other keys at their defaults');
  t.same((await props(MQTT))['client-id'], S('gw-cloud'), 'the default connection’s settings kept');
  await until(() => plantGot.some((m) => m.topic === '$EDC/account/gw-local/MQTT/BIRTH'), 10_000, 'the created connection’s BIRTH');
  const ids = appIds(plantGot.find((m) => m.topic === '$EDC/account/gw-local/MQTT/BIRTH')!);
  t.ok(ids.includes('CONF-V2') && ids.includes('ASSET-V1'), `its BIRTH lists its applications: ${ids}`);
  await until(() => plantGot.some((m) => m.topic === 'account/gw-local/assets/pump'), 10_000, 'its telemetry');
  t.same((await conns()).map((c) => c.name), ['default', 'local']);
  t.equal((await byName('default')).reconnects, 0, 'the default connection did not reconnect for the conversion');
  t.equal(cloudGot.filter((m) => m.topic === '$EDC/account/gw-cloud/MQTT/DC').length, 0, 'no DC on the default broker');
  t.ok(fs.existsSync(path.join(d.dataDir, 'mqtt-local')), 'its own outbox folder');

  r = await create(admin, [{ factoryPid: MQTT, pid: `${MQTT}-local`, properties: {} }]);
  t.equal(r.status, 400, 'a second create of the connection');
  t.match(r.json().message, `pid ${MQTT}-local already exists`);
  // A created connection's broker keys are kura.admin's, as the file's connections'.
  const update = (c: typeof admin, configs: unknown[]) => call(c, 'configurableComponents/configurations/_update', { configs, takeSnapshot: false }, 'PUT');
  r = await update(conf, [{ pid: `${MQTT}-local`, properties: { 'broker-url': S('mqtt://127.0.0.1:1') } }]);
  t.equal(r.status, 403, 'reserved keys of a created connection');
  t.equal(r.json().message, `Only kura.admin may change ${MQTT}-local property broker-url`);

  // A connection with no enabled given: disabled, listed, not connected. Its password stays with its broker.
  r = await create(admin, [{ factoryPid: CLOUD, pid: `${CLOUD}-spare`, properties: { username: S('u'), password: { type: 'PASSWORD', value: 'spare-Secret' } } }]);
  t.equal(r.status, 200, r.body);
  t.match(await byName('spare'), { connected: false }, 'created disabled');
  t.same((await props(`${CLOUD}-spare`)).enabled, B(false));
  t.equal((await props(`${MQTT}-spare`)).password.value, 'placeholder');
  r = await update(admin, [{ pid: `${MQTT}-spare`, properties: { 'broker-url': S('mqtt://127.0.0.1:1') } }]);
  t.equal(r.status, 400, 'the stored password does not follow a new broker');
  t.match(r.json().message, `Invalid configuration of ${MQTT}-spare, property password: broker-url changed`);

  // Deleting: never the default, and only by kura.admin.
  r = await remove(admin, [MQTT]);
  t.equal(r.status, 400, 'the default connection cannot be deleted');
  t.match(r.json().message, 'the MQTT connection default cannot be deleted');
  r = await remove(conf, [`${CLOUD}-spare`]);
  t.equal(r.status, 403);
  t.equal(r.json().message, `Only kura.admin may delete MQTT connections (${CLOUD}-spare)`);
  m = await req.kura('gw-cloud', 'DEL/factoryComponents/byPid', JSON.stringify({ pids: [`${MQTT}-spare`] }), { app: 'CONF-V2' });
  t.equal(m?.code, 400, 'CONF-V2 delete by a rest.configuration requester');
  t.equal(JSON.parse(m!.body!).message, `Only kura.admin may delete MQTT connections (${MQTT}-spare)`);
  r = await remove(admin, [`${MQTT}-spare`]);
  t.equal(r.status, 200, 'either pid deletes the connection');
  t.notOk((await pids()).some((p) => p.endsWith('-spare')), 'both components gone');
  t.notOk(await byName('spare'), 'gone from cloudconnection/v1');
  // An asset whose pid looks like a connection's is an asset, created and deleted as one.
  r = await create(admin, [{ factoryPid: 'org.eclipse.kura.wire.WireAsset', pid: `${CLOUD}-odd`, properties: { 'driver.pid': S('sim') } }]);
  t.equal(r.status, 200, r.body);
  t.notOk(await byName('odd'), 'no connection');
  r = await remove(admin, [`${CLOUD}-odd`]);
  t.equal(r.status, 200);
  t.equal(r.body, '', 'deleted as an asset: an empty 200');

  // A restart keeps the created connection (the runtime layer).
  t.equal(await d.stop(), 0);
  const birthsBefore = plantGot.filter((m) => m.topic === '$EDC/account/gw-local/MQTT/BIRTH').length;
  d = await startDaemon(t, config, { dir });
  ({ admin, conf } = clients());
  await until(() => plantGot.filter((m) => m.topic === '$EDC/account/gw-local/MQTT/BIRTH').length > birthsBefore, 10_000, 'BIRTH after the restart');
  t.same((await conns()).map((c) => c.name), ['default', 'local'], 'the created connection after a restart; the deleted one stays deleted');

  // Deleting a connection says DC on its broker and stops it.
  await waitFor(async () => (await byName('local'))?.connected, 10_000, 'local connected');
  r = await remove(admin, [`${CLOUD}-local`]);
  t.equal(r.status, 200, r.body);
  t.match(r.json().message, /^MQTT connection local deleted; the \d+ messages? its outbox held (is|are) kept in dataDir\/mqtt-local/);
  await until(() => plantGot.some((m) => m.topic === '$EDC/account/gw-local/MQTT/DC'), 10_000, 'DC of the deleted connection');
  t.same((await conns()).map((c) => c.name), ['default']);

  // Created again, then its broker goes down: the outbox fills; the delete says how many it keeps.
  t.equal((await create(admin, local)).status, 200);
  await waitFor(async () => (await byName('local'))?.connected, 10_000, 'local connected again');
  await plant.stop();
  await waitFor(async () => !(await byName('local')).connected && (await byName('local')).outbox.pending >= 10, 15_000, 'local’s outbox holds telemetry');
  r = await remove(admin, [`${MQTT}-local`]);
  t.equal(r.status, 200);
  const kept = Number(/the (\d+) messages? its outbox held/.exec(r.json().message)?.[1]);
  t.ok(kept >= 10, `the delete says the outbox keeps ${kept} messages`);
  t.ok(fs.readdirSync(path.join(d.dataDir, 'mqtt-local')).length > 0, 'they are on disk');
  const deletedAt = Date.now();

  // Created once more with its broker back: what the outbox kept is delivered.
  await plant.start();
  const plantAfter = await listen(t, plant.url, '#', 'plant-sub2');
  t.equal((await create(admin, local)).status, 200);
  const stamp = (m: Got) => Number((decodeKuraPayload(m.payload) as any).value.metrics.find((x: any) => /_timestamp$/.test(x.name))?.value ?? 0);
  await until(() => plantAfter.filter((m) => m.topic === 'account/gw-local/assets/pump' && stamp(m) < deletedAt).length >= kept, 15_000, 'the kept messages delivered');
  t.pass('the deleted connection’s messages were kept and delivered');
  // (Last: a rollback pins every property, the test's listener ports too.)
  // A rollback restores the connections of its snapshot; _reset drops those made at run time.
  const snapId = async () => (await call(admin, 'snapshots/_write')).json().id as number;
  const without = await snapId();
  r = await call(admin, 'factoryComponents', { configs: [{ factoryPid: CLOUD, pid: `${CLOUD}-extra`, properties: {} }] });
  t.equal(r.status, 200, r.body);
  const withExtra = await snapId();
  t.equal((await call(admin, 'snapshots/byId/_rollback', { id: without })).status, 200);
  t.same((await conns()).map((c) => c.name), ['default', 'local'], 'rolled back: extra gone');
  t.equal((await call(admin, 'snapshots/byId/_rollback', { id: withExtra })).status, 200);
  t.same((await conns()).map((c) => c.name), ['default', 'local', 'extra'], 'rolled forward: extra back');
  t.same((await props(`${MQTT}-extra`))['client-id'], S('gatewayd'), 'with its values');
  t.same((await props(MQTT))['client-id'], S('gw-cloud'), 'the default as it was');
  t.equal((await remove(admin, [`${CLOUD}-extra`])).status, 200);
  // A rollback or _reset that would remove (or bring back) a connection is kura.admin's too.
  r = await call(conf, '_reset', { takeSnapshot: false });
  t.equal(r.status, 403, '_reset by a limited identity would delete a connection');
  t.equal(r.json().message, `Only kura.admin may create or delete MQTT connections (${MQTT}-local)`);
  r = await call(conf, 'snapshots/byId/_rollback', { id: withExtra });
  t.equal(r.status, 403, 'so would a rollback that brings one back');
  t.equal(r.json().message, `Only kura.admin may create or delete MQTT connections (${MQTT}-extra)`);
  // _reset: the image's configuration again, the single object without the connections made here.
  t.equal((await call(admin, '_reset', { takeSnapshot: false })).status, 200);
  t.same((await conns()).map((c) => c.name), ['default'], 'reset: only the file’s connection');
  t.notOk((await pids()).some((p) => p.endsWith('-local')), 'reset: no created components');

  t.equal(await d.stop(), 0);
});
