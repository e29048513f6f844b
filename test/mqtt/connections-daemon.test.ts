// Two MQTT connections of the real daemon, each on its own real Mosquitto (docs/mqtt.md
// "Connections"): `default` (KuraPayload, every application, every asset) and `local` (json, only
// the asset `pump`, without CONF-V2). Telemetry reaches both brokers, each BIRTH lists its own
// connection's applications, `telemetry.assets` filters, a reconfiguration of one reconnects only it,
// the default broker's outage holds nothing of the local connection's (every poll still arrives,
// its outbox writes nothing), and what each outbox holds survives a restart of the daemon.

import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startDaemon, type Daemon } from '../helpers/daemon.js';
import { mosquittoSkip, startMosquitto } from '../helpers/mosquitto.js';
import { until } from '../helpers/mqtt-fixture.js';
import { decodeKuraPayload } from '../../src/mqtt/kura-payload.js';
import { type Got, listen, waitFor } from '../helpers/broker-watch.js';

t.setTimeout(120_000);

const admin = { authorization: `Basic ${Buffer.from('admin:Adm1n-Secret!').toString('base64')}` };
const counter = { type: 'READ', 'value.type': 'INTEGER', simulation: 'counter' };

t.test('two connections, two brokers', mosquittoSkip(), async (t) => {
  const cloud = await startMosquitto();
  t.teardown(() => cloud.close());
  const plant = await startMosquitto();
  t.teardown(() => plant.close());
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-conns-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));

  const config = {
    rest: { 'auth.basic.enabled': true, 'login.throttle.max.delay': 0 },
    identities: { admin: { password: 'Adm1n-Secret!', passwordChangeNeeded: false, permissions: ['kura.admin'] } },
    assets: {
      pump: { 'driver.pid': 'sim', 'poll.interval': 100, channels: { n: counter } },
      // Another channel name: the simulator's counter is one per channel name.
      tank: { 'driver.pid': 'sim', 'poll.interval': 100, channels: { level: counter } },
    },
    mqtt: {
      connections: {
        default: { enabled: true, 'broker-url': cloud.url, 'client-id': 'gw-cloud', 'topic.context.account-name': 'acct', 'keep-alive': 5 },
        local: {
          enabled: true,
          'broker-url': plant.url,
          'client-id': 'gw-local',
          'topic.context.account-name': 'plant',
          'payload.encoding': 'json',
          'keep-alive': 5,
          'telemetry.assets': ['pump'],
          'applications.disabled': ['CONF-V2', 'CONF-V1'],
        },
      },
    },
  };
  const cloudGot = await listen(t, cloud.url, '#', 'cloud-sub');
  const plantGot = await listen(t, plant.url, '#', 'plant-sub');
  let d: Daemon = await startDaemon(t, config, { dir });
  const conns = async () => (await d.request('/services/cloudconnection/v1/connections', { headers: admin })).json() as any[];
  const byName = async (n: string) => (await conns()).find((c) => c.name === n);

  // Telemetry on both: the cloud every asset, the plant only the pump.
  const telemetry = (got: Got[], prefix: string) => got.filter((m) => m.topic.startsWith(prefix));
  await until(() => telemetry(cloudGot, 'acct/gw-cloud/assets/tank').length > 2 && telemetry(plantGot, 'plant/gw-local/assets/pump').length > 2, 10_000, 'telemetry on both brokers');
  t.ok(telemetry(cloudGot, 'acct/gw-cloud/assets/pump').length > 0, 'the cloud gets the pump');
  t.equal(plantGot.filter((m) => m.topic.includes('/assets/tank')).length, 0, 'the plant never gets the tank (telemetry.assets)');
  t.ok(decodeKuraPayload(telemetry(cloudGot, 'acct/gw-cloud/assets/pump')[0].payload).ok, 'the cloud in KuraPayload');
  t.equal(JSON.parse(telemetry(plantGot, 'plant/gw-local/assets/pump')[0].payload.toString()).name, 'pump', 'the plant in json');

  // BIRTH per connection, each with its own applications.
  const cloudBirth = cloudGot.find((m) => m.topic === '$EDC/acct/gw-cloud/MQTT/BIRTH');
  const plantBirth = plantGot.find((m) => m.topic === '$EDC/plant/gw-local/MQTT/BIRTH');
  t.ok(cloudBirth && plantBirth, 'a BIRTH on each broker');
  const cloudIds = String(decodeKuraPayload(cloudBirth!.payload).ok && (decodeKuraPayload(cloudBirth!.payload) as any).value.metrics.find((m: any) => m.name === 'application_ids').value).split(',');
  const plantIds = String(JSON.parse(plantBirth!.payload.toString()).metrics.application_ids).split(',');
  t.ok(cloudIds.includes('CONF-V2') && cloudIds.includes('ASSET-V1'), `cloud BIRTH: ${cloudIds}`);
  t.ok(!plantIds.includes('CONF-V2') && !plantIds.includes('CONF-V1') && plantIds.includes('ASSET-V1'), `plant BIRTH: ${plantIds}`);
  t.equal(cloudGot.filter((m) => m.topic.startsWith('$EDC/plant')).length + plantGot.filter((m) => m.topic.startsWith('$EDC/acct')).length, 0, 'nothing of one connection on the other broker');

  // Reconfigure the local connection only (SIGHUP): it reconnects, the default does not.
  const births = (got: Got[], topic: string) => got.filter((m) => m.topic === topic).length;
  const cloudBirths = births(cloudGot, '$EDC/acct/gw-cloud/MQTT/BIRTH');
  const plantBirths = births(plantGot, '$EDC/plant/gw-local/MQTT/BIRTH');
  const cfg2 = JSON.parse(fs.readFileSync(d.configFile, 'utf8'));
  cfg2.mqtt.connections.local['keep-alive'] = 7;
  fs.writeFileSync(d.configFile, JSON.stringify(cfg2));
  d.signal('SIGHUP');
  await until(() => births(plantGot, '$EDC/plant/gw-local/MQTT/BIRTH') > plantBirths, 10_000, 'the local connection reconnected');
  t.ok(plantGot.some((m) => m.topic === '$EDC/plant/gw-local/MQTT/DC'), 'the local connection said DC before reconnecting');
  // The cloud connection saw no DC and no new BIRTH, and its client never reconnected.
  await waitFor(async () => (await byName('local')).connected, 5000, 'local connected again');
  t.equal(births(cloudGot, '$EDC/acct/gw-cloud/MQTT/BIRTH'), cloudBirths, 'no new BIRTH on the cloud');
  t.equal(cloudGot.filter((m) => m.topic === '$EDC/acct/gw-cloud/MQTT/DC').length, 0, 'no DC on the cloud');
  t.equal((await byName('default')).reconnects, 0, 'the default connection never reconnected');

  // A connection added by SIGHUP connects; removed again, it says DC and goes; the others stay.
  const cfg3 = JSON.parse(fs.readFileSync(d.configFile, 'utf8'));
  cfg3.mqtt.connections.extra = { enabled: true, 'broker-url': plant.url, 'client-id': 'gw-extra', 'applications.disabled': ['ASSET-V1'] };
  fs.writeFileSync(d.configFile, JSON.stringify(cfg3));
  d.signal('SIGHUP');
  await until(() => plantGot.some((m) => m.topic === '$EDC/account/gw-extra/MQTT/BIRTH'), 10_000, 'the added connection’s BIRTH');
  t.same((await conns()).map((c) => c.name), ['default', 'local', 'extra'], 'listed in the file’s order');
  const extraBirth = plantGot.find((m) => m.topic === '$EDC/account/gw-extra/MQTT/BIRTH')!;
  t.notOk(String((decodeKuraPayload(extraBirth.payload) as any).value.metrics.find((m: any) => m.name === 'application_ids').value).split(',').includes('ASSET-V1'), 'its BIRTH without what it disables');
  delete cfg3.mqtt.connections.extra;
  fs.writeFileSync(d.configFile, JSON.stringify(cfg3));
  d.signal('SIGHUP');
  await until(() => plantGot.some((m) => m.topic === '$EDC/account/gw-extra/MQTT/DC'), 10_000, 'the removed connection’s DC');
  t.same((await conns()).map((c) => c.name), ['default', 'local']);
  t.equal((await byName('default')).reconnects, 0, 'default untouched by adding and removing another');

  // The cloud broker goes down: the plant still gets every poll of the pump, its outbox writes nothing.
  const pumpValues = () => telemetry(plantGot, 'plant/gw-local/assets/pump').map((m) => Number(JSON.parse(m.payload.toString()).channels[0].value));
  await cloud.stop();
  await waitFor(async () => !(await byName('default')).connected, 10_000, 'default disconnected');
  // From the same instant: what the plant receives, and what the cloud's outbox queues.
  const p0 = (await byName('default')).outbox.pending;
  const from = pumpValues().length;
  await waitFor(async () => (await byName('default')).outbox.pending >= p0 + 40, 15_000, 'the cloud’s outbox fills');
  const during = pumpValues().slice(from);
  // The cloud queued 40 (two assets a poll): as many polls of the pump reached the plant meanwhile.
  t.ok(during.length >= 18, `the plant got ${during.length} polls while the cloud queued 40 messages`);
  const gaps = during.filter((v, i) => i > 0 && v !== during[i - 1] + 1);
  t.same(gaps, [], 'every poll of the pump, in order, none missing');
  const local = await byName('local');
  t.ok(local.connected, 'local stays connected');
  t.ok(local.outbox.pending <= 10, `local outbox pending ${local.outbox.pending} (only what is in flight)`);
  t.equal(local.outbox.dropped, 0, 'local dropped nothing');
  t.equal(local.outbox.bytes, 0, 'local outbox wrote nothing to dataDir');
  t.ok(fs.existsSync(path.join(d.dataDir, 'mqtt-local')), 'the local connection’s outbox folder is mqtt-local');
  const status = (await d.request('/services/system/v1/status', { headers: admin })).json().mqtt;
  t.match(status, { enabled: true, clientId: 'gw-cloud', connected: false }, 'system/v1 status reports the default connection');
  t.ok(status.outboxPending >= 40, 'with its outbox');

  // The plant goes down too; the daemon stops with both outboxes holding messages, and restarts.
  await plant.stop();
  await waitFor(async () => !(await byName('local')).connected && (await byName('local')).outbox.pending >= 5, 10_000, 'local outbox holds telemetry');
  const stoppedAt = Date.now();
  t.equal(await d.stop(), 0, 'clean stop');
  t.ok(fs.readdirSync(path.join(d.dataDir, 'mqtt')).length > 0 && fs.readdirSync(path.join(d.dataDir, 'mqtt-local')).length > 0, 'both outboxes on disk');
  await cloud.start();
  await plant.start();
  const cloudAfter = await listen(t, cloud.url, 'acct/gw-cloud/assets/#', 'cloud-sub2');
  const plantAfter = await listen(t, plant.url, 'plant/gw-local/assets/#', 'plant-sub2');
  d = await startDaemon(t, config, { dir });
  const stamp = (m: Got, json: boolean) =>
    json ? Number(JSON.parse(m.payload.toString()).channels[0].timestamp) : Number((decodeKuraPayload(m.payload) as any).value.metrics.find((x: any) => /_timestamp$/.test(x.name))?.value ?? 0);
  await until(() => cloudAfter.some((m) => stamp(m, false) < stoppedAt) && plantAfter.some((m) => stamp(m, true) < stoppedAt), 15_000, 'messages from before the restart');
  t.ok(plantAfter.filter((m) => stamp(m, true) < stoppedAt).every((m) => m.topic === 'plant/gw-local/assets/pump'), 'what the local outbox kept is only the pump');
  t.pass('both outboxes delivered what they held across the restart');
  await d.stop();
});
