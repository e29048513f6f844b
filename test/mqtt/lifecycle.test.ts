// Life-cycle messages a Kura cloud platform accepts (docs/mqtt.md "Life-cycle messages", "Broker rules"), against a real
// Mosquitto that enforces Eclipse Kapua's broker rules for the device with an ACL: BIRTH decoded
// field by field with its types (every metric a STRING, `uptime` too) and received at QoS 1;
// BIRTH again when an application is added; DC with `uptime` and `display_name` at QoS 1; and every
// PUBLISH the broker received from the device within the rules (own topics, others' …/REPLY/…,
// …/NOTIFY/<own client id>/…), none denied.

import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startMosquitto, mosquittoSkip } from '../helpers/mosquitto.js';
import { makeRuntime, makeService, mqttConfig, Requester, until } from '../helpers/mqtt-fixture.js';
import { MqttClient } from '../../src/mqtt/client.js';
import { decodeKuraPayload, type KuraMetric } from '../../src/mqtt/kura-payload.js';
import { silentLogger } from '../../src/log.js';

t.test('BIRTH/DC as Kura sends them, within Kapua broker rules', mosquittoSkip(), async (t) => {
  const aclDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-acl-'));
  t.teardown(() => fs.rmSync(aclDir, { recursive: true, force: true }));
  const acl = path.join(aclDir, 'acl');
  // Anonymous clients (watcher, requester) may do anything; the device `gw` only what Kapua allows.
  fs.writeFileSync(
    acl,
    [
      'topic readwrite #',
      'topic readwrite $EDC/#',
      'user gw',
      'topic read $EDC/acct/gw/#',
      'topic write $EDC/acct/gw/#',
      'topic write acct/gw/#',
      'topic write $EDC/acct/+/+/REPLY/#',
      'topic write $EDC/acct/+/+/NOTIFY/gw/#',
      '',
    ].join('\n'),
  );
  const broker = await startMosquitto({ conf: [`acl_file ${acl}`, 'log_type all', 'log_dest stderr'] });
  t.teardown(() => broker.close());

  const seen: { topic: string; payload: Buffer; qos: number }[] = [];
  const watcher = new MqttClient({ url: broker.url, clientId: 'watcher', keepAlive: 30, clean: true, reconnectMin: 50, reconnectMax: 300, log: silentLogger });
  watcher.on('message', (topic: string, payload: Buffer, p: { qos: number }) => seen.push({ topic, payload, qos: p.qos }));
  watcher.start();
  await until(() => watcher.isConnected);
  await watcher.subscribe('$EDC/acct/gw/MQTT/#', 1);
  t.teardown(() => watcher.end());

  const { runtime, dataDir } = makeRuntime();
  t.teardown(async () => {
    await runtime.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  const config = mqttConfig({ 'broker-url': broker.url, 'client-id': 'gw', username: 'gw', 'topic.context.account-name': 'acct' });
  const svc = makeService(runtime, dataDir, config);
  await svc.start();
  t.teardown(() => svc.stop());

  const decoded = (topic: string, n = 1) => {
    const m = seen.filter((x) => x.topic === topic)[n - 1]!;
    const d = decodeKuraPayload(m.payload);
    if (!d.ok) throw new Error(d.error);
    return { qos: m.qos, metrics: new Map(d.value.metrics.map((x: KuraMetric) => [x.name, x])) };
  };
  const BIRTH = '$EDC/acct/gw/MQTT/BIRTH';
  await until(() => seen.some((m) => m.topic === BIRTH), 8000, 'BIRTH');
  const birth = decoded(BIRTH);
  t.equal(birth.qos, 1, 'BIRTH published at QoS 1');
  const want: Record<string, RegExp> = {
    uptime: /^\d+$/,
    display_name: new RegExp(`^${os.hostname().replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`),
    os: /^Linux$/,
    os_version: /^\d+\./,
    jvm_name: /^Node\.js$/,
    jvm_version: /^\d+\.\d+\.\d+$/,
    application_framework: /^gatewayd$/,
    application_framework_version: /^\d+\.\d+\.\d+/,
    connection_interface: /^lo$/,
    connection_ip: /^127\.0\.0\.1$/,
    accept_encoding: /^gzip$/,
    application_ids: /^ASSET-V1$/,
    available_processors: /^[1-9]\d*$/,
    total_memory: /^[1-9]\d*$/,
    os_arch: /^(amd64|aarch64|arm|x86|[a-z0-9]+)$/,
    payload_encoding: /^KURA_PROTOBUF$/,
    client_id: /^gw$/,
  };
  for (const [name, re] of Object.entries(want)) {
    const m = birth.metrics.get(name);
    t.equal(m?.type, 'STRING', `${name} is a STRING`);
    t.match(String(m?.value), re, `${name} = ${String(m?.value)}`);
  }
  for (const m of birth.metrics.values()) t.equal(m.type, 'STRING', `every BIRTH metric is a STRING (${m.name})`);

  // The device is served and answers within the rules.
  const req = new Requester(broker.url, 'cloud');
  await req.start();
  t.teardown(() => req.end());
  await new Promise((r) => setTimeout(r, 200));
  t.equal((await req.kura('gw', 'GET/assets', undefined))?.code, 200, 'ASSET-V1 reply through the ACL');

  // A new application: BIRTH again, listing it.
  svc.applications.register({ appId: 'TEST-V1', handle: async () => ({ code: 200 }) });
  await until(() => seen.filter((m) => m.topic === BIRTH).length === 2, 8000, 'second BIRTH');
  t.equal(decoded(BIRTH, 2).metrics.get('application_ids')?.value, 'ASSET-V1,TEST-V1');
  t.equal((await req.kura('gw', 'GET/x', undefined, { app: 'TEST-V1' }))?.code, 200, 'and it is served');

  await svc.stop();
  await until(() => seen.some((m) => m.topic === '$EDC/acct/gw/MQTT/DC'), 8000, 'DC');
  const dc = decoded('$EDC/acct/gw/MQTT/DC');
  t.equal(dc.qos, 1, 'DC published at QoS 1');
  t.same([...dc.metrics.values()].map((m) => [m.name, m.type]), [['uptime', 'STRING'], ['display_name', 'STRING']]);
  t.match(String(dc.metrics.get('uptime')?.value), /^\d+$/);

  // The ACL bites: the same user publishing a request to another device is denied, and logged.
  const probe = new MqttClient({ url: broker.url, clientId: 'probe', username: 'gw', keepAlive: 30, clean: true, log: silentLogger });
  probe.start();
  await until(() => probe.isConnected);
  await probe.publish('$EDC/acct/other/ASSET-V1/EXEC/read', Buffer.from('x'), { qos: 1 });
  await probe.end();
  await until(() => /Denied PUBLISH from probe/.test(broker.output()), 5000, 'the probe denied');

  const log = broker.output();
  const received = [...log.matchAll(/Received PUBLISH from gw \([^']*'([^']*)'/g)].map((m) => m[1]!);
  t.ok(received.length >= 4, `${received.length} PUBLISHes from the device in the broker's log`);
  const allowed = (topic: string) => /^\$EDC\/acct\/gw\//.test(topic) || /^acct\/gw\//.test(topic) || /^\$EDC\/acct\/[^/]+\/[^/]+\/(REPLY\/|NOTIFY\/gw\/)/.test(topic);
  t.same(received.filter((x) => !allowed(x)), [], 'every topic within the rules');
  t.notMatch(log, /Denied PUBLISH from gw/, 'the broker denied nothing');
});
