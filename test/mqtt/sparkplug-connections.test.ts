// A Sparkplug B edge node as a named connection beside a Kura one (docs/mqtt.md "Connections",
// "Sparkplug B"), through the real daemon, two real Mosquitto brokers and a host application that
// decodes with Eclipse Tahu (test/helpers/sparkplug-host.ts): the Kura connection's BIRTH and
// telemetry unaffected; NBIRTH/DBIRTH only of the assets of the Sparkplug connection's
// `telemetry.assets`, a DCMD for another asset refused; DCMD writes reaching the asset; bdSeq in
// dataDir/mqtt-<name>/ across a restart; cloudconnection/v1 listing it, `_disconnect` (NDEATH, held)
// and `_connect` (NBIRTH, the next bdSeq); a reload that changes its type builds it anew while the
// default is untouched; a Sparkplug connection created and deleted through configuration/v2; two
// edge nodes on one broker, each with its own seq and bdSeq (one edge node twice refused); DDATA held
// by an edge node (its primary host offline) is not sent once the connection becomes a Kura one.

import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startDaemon, type Daemon } from '../helpers/daemon.js';
import { basic } from '../helpers/session-client.js';
import { mosquittoSkip, startMosquitto } from '../helpers/mosquitto.js';
import { until } from '../helpers/mqtt-fixture.js';
import { SparkplugHost, bdSeqOf, seqProblems, spMetric } from '../helpers/sparkplug-host.js';
import { decodeKuraPayload } from '../../src/mqtt/kura-payload.js';
import { type Got, listen, waitFor } from '../helpers/broker-watch.js';

t.setTimeout(150_000);

const G = 'G1';
const ADMIN = { authorization: `Basic ${Buffer.from('admin:Adm1n-Secret!').toString('base64')}` };
const identities = { admin: { password: 'Adm1n-Secret!', passwordChangeNeeded: false, permissions: ['kura.admin'] } };
const rest = { 'auth.basic.enabled': true, 'login.throttle.max.delay': 0 };
const mem = (initial: number) => ({ type: 'READ_WRITE', 'value.type': 'INTEGER', simulation: 'memory', initial });
const counter = { type: 'READ', 'value.type': 'INTEGER', simulation: 'counter' };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A Kura telemetry message's channel value (KuraPayload metric `<channel>`). */
const kuraValue = (m: Got, channel: string): unknown => {
  const p = decodeKuraPayload(m.payload) as any;
  return p.ok ? p.value.metrics.find((x: any) => x.name === channel)?.value : undefined;
};

t.test('a Sparkplug connection beside the Kura default: births, commands, bdSeq, operator, reload', mosquittoSkip(), async (t) => {
  const cloud = await startMosquitto();
  t.teardown(() => cloud.close());
  const plant = await startMosquitto();
  t.teardown(() => plant.close());
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-spmulti-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const config = {
    rest,
    identities,
    assets: {
      line: { 'driver.pid': 'sim', 'poll.interval': 100, channels: { sp: mem(7) } },
      other: { 'driver.pid': 'sim', 'poll.interval': 100, channels: { op: mem(5) } },
    },
    mqtt: {
      connections: {
        default: { enabled: true, 'broker-url': cloud.url, 'client-id': 'gw-cloud', 'keep-alive': 5 },
        scada: { enabled: true, type: 'sparkplug', 'broker-url': plant.url, 'client-id': 'gw-scada', 'sparkplug.group.id': G, 'sparkplug.edge.node.id': 'node1', 'keep-alive': 5, 'telemetry.assets': ['line'] },
      },
    },
  };
  const cloudGot = await listen(t, cloud.url, '#', 'cloud-sub');
  const plantGot = await listen(t, plant.url, '#', 'plant-sub');
  const host = new SparkplugHost(plant.url, 'host', G);
  await host.start();
  t.teardown(() => host.client.end());
  let d: Daemon = await startDaemon(t, config, { dir });
  const conns = async () => (await d.request('/services/cloudconnection/v1/connections', { headers: ADMIN })).json() as any[];
  const byName = async (n: string) => (await conns()).find((c) => c.name === n);

  // The Kura connection: BIRTH and telemetry of both assets on the cloud broker.
  await until(() => cloudGot.some((m) => m.topic === '$EDC/account/gw-cloud/MQTT/BIRTH'), 10_000, 'Kura BIRTH on the cloud');
  await until(() => cloudGot.some((m) => m.topic === 'account/gw-cloud/assets/line') && cloudGot.some((m) => m.topic === 'account/gw-cloud/assets/other'), 10_000, 'Kura telemetry of both assets');
  t.notOk(cloudGot.some((m) => m.topic.startsWith('spBv1.0/')), 'no Sparkplug message on the cloud broker');

  // The edge node: NBIRTH, DBIRTH of the listed asset only.
  const nbirth = await host.next((m) => m.type === 'NBIRTH', 0, 'NBIRTH');
  t.equal(nbirth.topic, `spBv1.0/${G}/NBIRTH/node1`);
  t.equal(bdSeqOf(nbirth), 0n, 'bdSeq 0 on a fresh dataDir');
  const dbirth = await host.next((m) => m.type === 'DBIRTH' && m.device === 'line', 0, 'DBIRTH line');
  t.equal(host.valueOf(dbirth, 'sp'), 7, 'DBIRTH with the current value');
  await sleep(500);
  t.notOk(host.seen.some((m) => m.device === 'other'), 'nothing of the asset not in telemetry.assets');
  t.notOk(plantGot.some((m) => !m.topic.startsWith('spBv1.0/')), 'nothing but Sparkplug on the plant broker');
  const bdFile = path.join(d.dataDir, 'mqtt-scada', 'sparkplug-bdseq');
  t.equal(fs.readFileSync(bdFile, 'utf8'), '0\n', 'bdSeq kept in dataDir/mqtt-scada/');
  t.notOk(fs.existsSync(path.join(d.dataDir, 'mqtt', 'sparkplug-bdseq')), 'not in the default connection’s folder');

  // DCMD: the write reaches the asset (the Kura connection's telemetry of the next polls shows it) and comes back in DDATA.
  let from = host.seen.length;
  await host.dcmd('node1', 'line', [spMetric({ name: 'sp', datatype: 'Int32', value: 42 })]);
  await host.next((m) => m.type === 'DDATA' && m.device === 'line' && host.valueOf(m, 'sp') === 42, from, 'DDATA 42');
  await until(() => cloudGot.some((m) => m.topic === 'account/gw-cloud/assets/line' && kuraValue(m, 'sp') === 42), 10_000, 'the written value in the Kura telemetry');
  t.pass('DCMD written to the asset, seen by both connections');
  // A DCMD for an asset that is not this node's device is refused and writes nothing.
  const logged = d.logs.length;
  await host.dcmd('node1', 'other', [spMetric({ name: 'op', datatype: 'Int32', value: 99 })]);
  await until(() => d.logs.slice(logged).some((l) => l.includes('sparkplug message refused') && l.includes('/other')), 8000, 'DCMD for other refused');
  await sleep(500);
  t.notOk(cloudGot.some((m) => m.topic === 'account/gw-cloud/assets/other' && kuraValue(m, 'op') === 99), 'the other asset was not written');
  t.notOk(host.seen.some((m) => m.device === 'other' && m.type !== 'DCMD'), 'and is still no device');

  // cloudconnection/v1: listed with its type; its counters move.
  let sc = await byName('scada');
  t.match(sc, { type: 'sparkplug', connected: true, disconnectedOnRequest: false, brokerUrl: plant.url, clientId: 'gw-scada' });
  t.equal((await byName('default')).type, 'kura');
  const published = sc.published;
  t.ok(published >= 2, `published counts NBIRTH, DBIRTH and DDATA: ${published}`);
  from = host.seen.length;
  await host.dcmd('node1', 'line', [spMetric({ name: 'sp', datatype: 'Int32', value: 43 })]);
  await host.next((m) => m.type === 'DDATA' && host.valueOf(m, 'sp') === 43, from, 'DDATA 43');
  t.ok((await byName('scada')).published > published, 'published counts the DDATA');

  // _disconnect: NDEATH with the session's bdSeq, held down.
  from = host.seen.length;
  let r = await d.request('/services/cloudconnection/v1/connections/scada/_disconnect', { method: 'POST', headers: ADMIN });
  t.equal(r.status, 204, r.body);
  const death = await host.next((m) => m.type === 'NDEATH', from, 'NDEATH at _disconnect');
  t.equal(bdSeqOf(death), 0n, 'NDEATH bdSeq = NBIRTH bdSeq');
  await sleep(800);
  sc = await byName('scada');
  t.match(sc, { connected: false, disconnectedOnRequest: true }, 'held down');
  // After the NDEATH: a DDATA of a poll just before the request may still arrive between `from` and it.
  t.notOk(host.seen.slice(host.seen.indexOf(death) + 1).some((m) => m.type === 'NBIRTH' || m.type === 'DDATA'), 'nothing published while held');
  t.equal((await byName('default')).connected, true, 'the default stays connected');
  // _connect: a new NBIRTH with the next bdSeq, DBIRTH again.
  from = host.seen.length;
  r = await d.request('/services/cloudconnection/v1/connections/scada/_connect', { method: 'POST', headers: ADMIN });
  t.equal(r.status, 204, r.body);
  const nb2 = await host.next((m) => m.type === 'NBIRTH', from, 'NBIRTH at _connect');
  t.equal(bdSeqOf(nb2), 1n, 'the next bdSeq');
  await host.next((m) => m.type === 'DBIRTH' && m.device === 'line', from, 'DBIRTH at _connect');
  t.equal((await byName('default')).reconnects, 0, 'the default never reconnected');

  // A restart: the clean stop's NDEATH carries the session's bdSeq; the next session one more.
  from = host.seen.length;
  t.equal(await d.stop(), 0);
  const death2 = await host.next((m) => m.type === 'NDEATH', from, 'NDEATH at stop');
  t.equal(bdSeqOf(death2), 1n, 'NDEATH bdSeq = the NBIRTH bdSeq of that session');
  from = host.seen.length;
  d = await startDaemon(t, config, { dir });
  const nb3 = await host.next((m) => m.type === 'NBIRTH', from, 'NBIRTH after restart');
  t.equal(bdSeqOf(nb3), 2n, 'bdSeq goes on across the restart');
  await host.next((m) => m.type === 'DBIRTH' && m.device === 'line', from, 'DBIRTH after restart');
  await waitFor(async () => (await byName('default'))?.connected, 10_000, 'default connected');

  // Reload: telemetry.assets now lists the other asset: a new session in which it is the only device.
  from = host.seen.length;
  const cfgA = JSON.parse(fs.readFileSync(d.configFile, 'utf8'));
  cfgA.mqtt.connections.scada['telemetry.assets'] = ['other'];
  fs.writeFileSync(d.configFile, JSON.stringify(cfgA));
  d.signal('SIGHUP');
  const nbA = await host.next((m) => m.type === 'NBIRTH', from, 'NBIRTH after telemetry.assets changed');
  const nbAt = host.seen.indexOf(nbA);
  await host.next((m) => m.type === 'DBIRTH' && m.device === 'other', nbAt, 'DBIRTH other');
  await sleep(500);
  t.notOk(host.seen.slice(nbAt).some((m) => m.device === 'line'), 'the asset no longer listed is no device of the new session');
  t.equal((await byName('default')).reconnects, 0, 'the default did not reconnect');
  cfgA.mqtt.connections.scada['telemetry.assets'] = ['line'];
  fs.writeFileSync(d.configFile, JSON.stringify(cfgA));
  d.signal('SIGHUP');
  const nbB = await host.next((m) => m.type === 'NBIRTH' && host.seen.indexOf(m) > nbAt, nbAt + 1, 'NBIRTH with line again');
  await host.next((m) => m.type === 'DBIRTH' && m.device === 'line', host.seen.indexOf(nbB), 'DBIRTH line again');

  // Reload: scada becomes a Kura connection — NDEATH, then Kura BIRTH on the plant broker, no more
  // Sparkplug; the default does not reconnect.
  const cloudBirths = cloudGot.filter((m) => m.topic === '$EDC/account/gw-cloud/MQTT/BIRTH').length;
  const cloudDCs = cloudGot.filter((m) => m.topic === '$EDC/account/gw-cloud/MQTT/DC').length;
  from = host.seen.length;
  const cfg = JSON.parse(fs.readFileSync(d.configFile, 'utf8'));
  cfg.mqtt.connections.scada.type = 'kura';
  fs.writeFileSync(d.configFile, JSON.stringify(cfg));
  d.signal('SIGHUP');
  await until(() => plantGot.some((m) => m.topic === '$EDC/account/gw-scada/MQTT/BIRTH'), 10_000, 'Kura BIRTH on the plant broker');
  await host.next((m) => m.type === 'NDEATH', from, 'NDEATH of the Sparkplug session');
  await until(() => plantGot.some((m) => m.topic === 'account/gw-scada/assets/line'), 10_000, 'Kura telemetry of line on the plant');
  const sparkplugAt = host.seen.length;
  await sleep(800);
  t.equal(host.seen.length, sparkplugAt, 'no more spBv1.0 messages');
  t.notOk(plantGot.some((m) => m.topic === 'account/gw-scada/assets/other'), 'telemetry.assets still applies');
  t.equal((await byName('scada')).type, 'kura', 'listed as kura');
  t.equal((await byName('default')).reconnects, 0, 'the default did not reconnect');
  t.equal(cloudGot.filter((m) => m.topic === '$EDC/account/gw-cloud/MQTT/BIRTH').length, cloudBirths, 'no new BIRTH on the cloud');
  // And back: Kura DC on the plant, a new NBIRTH with the next bdSeq (the file was kept).
  from = host.seen.length;
  cfg.mqtt.connections.scada.type = 'sparkplug';
  fs.writeFileSync(d.configFile, JSON.stringify(cfg));
  d.signal('SIGHUP');
  const nb4 = await host.next((m) => m.type === 'NBIRTH', from, 'NBIRTH after the type came back');
  t.equal(bdSeqOf(nb4), 5n, 'bdSeq goes on');
  t.ok(plantGot.some((m) => m.topic === '$EDC/account/gw-scada/MQTT/DC'), 'the Kura connection said DC');
  await host.next((m) => m.type === 'DBIRTH' && m.device === 'line', from, 'DBIRTH after the type came back');
  t.equal((await byName('scada')).type, 'sparkplug');
  t.equal((await byName('default')).reconnects, 0, 'the default did not reconnect');
  t.equal(cloudGot.filter((m) => m.topic === '$EDC/account/gw-cloud/MQTT/DC').length, cloudDCs, 'no DC on the cloud broker for the reloads');
  t.same(seqProblems(host.seen, 'node1'), [], 'seq continuous over every session');
  t.equal(await d.stop(), 0);
});

const C = '/services/configuration/v2';
const CLOUD = 'org.eclipse.kura.cloud.CloudService';
const MQTT = 'org.eclipse.kura.core.data.transport.mqtt.MqttDataTransport';
const S = (value: string) => ({ type: 'STRING', value });
const B = (value: boolean) => ({ type: 'BOOLEAN', value });

t.test('Sparkplug connections created and deleted through configuration/v2; two edge nodes on one broker', mosquittoSkip(), async (t) => {
  const broker = await startMosquitto();
  t.teardown(() => broker.close());
  const host = new SparkplugHost(broker.url, 'host', G);
  await host.start();
  t.teardown(() => host.client.end());
  const got = await listen(t, broker.url, '#', 'sub');
  const d = await startDaemon(t, {
    rest,
    identities,
    assets: { pump: { 'driver.pid': 'sim', 'poll.interval': 100, channels: { n: counter } } },
    mqtt: { enabled: true, 'broker-url': broker.url, 'client-id': 'gw-cloud', 'keep-alive': 5 },
  });
  const admin = basic(d, 'admin', 'Adm1n-Secret!');
  const call = (p: string, body?: unknown, method = 'POST') => admin.request(`${C}/${p}`, { method, body: body === undefined ? undefined : JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  const conns = async () => (await admin.request('/services/cloudconnection/v1/connections')).json() as any[];
  const node = (name: string, id: string) => [
    { factoryPid: CLOUD, pid: `${CLOUD}-${name}`, properties: { enabled: B(true), type: S('sparkplug'), 'sparkplug.group.id': S(G), 'sparkplug.edge.node.id': S(id) } },
    { factoryPid: MQTT, pid: `${MQTT}-${name}`, properties: { 'broker-url': S(broker.url), 'client-id': S(`gw-${name}`), 'keep-alive': { type: 'INTEGER', value: 5 } } },
  ];

  // A group id is required with type sparkplug.
  let r = await call('factoryComponents', { configs: [{ factoryPid: CLOUD, pid: `${CLOUD}-nogroup`, properties: { type: S('sparkplug') } }], takeSnapshot: false });
  t.equal(r.status, 400, 'type sparkplug without a group id');
  t.match(r.json().message, /sparkplug\.group\.id/);

  r = await call('factoryComponents', { configs: node('sp1', 'n1'), takeSnapshot: false });
  t.equal(r.status, 200, r.body);
  const nb1 = await host.next((m) => m.type === 'NBIRTH' && m.node === 'n1', 0, 'NBIRTH n1');
  t.equal(bdSeqOf(nb1), 0n);
  await host.next((m) => m.type === 'DBIRTH' && m.node === 'n1' && m.device === 'pump', 0, 'DBIRTH n1 pump');
  r = await call('factoryComponents', { configs: node('sp2', 'n2'), takeSnapshot: false });
  t.equal(r.status, 200, r.body);
  await host.next((m) => m.type === 'DBIRTH' && m.node === 'n2' && m.device === 'pump', 0, 'DBIRTH n2 pump');
  t.match(
    (await conns()).map((c) => [c.name, c.type]),
    [['default', 'kura'], ['sp1', 'sparkplug'], ['sp2', 'sparkplug']],
    'both listed as sparkplug',
  );
  // A third with n2's edge node id on the same broker would end n2's sessions: refused.
  r = await call('factoryComponents', { configs: node('sp3', 'n2'), takeSnapshot: false });
  t.equal(r.status, 400, 'one edge node id twice in a group on a broker');
  t.match(r.json().message, `Invalid configuration of ${CLOUD}-sp3, property sparkplug.edge.node.id: connection "sp2" is the same edge node`);
  t.equal((await conns()).length, 3, 'nothing created');
  t.ok(fs.existsSync(path.join(d.dataDir, 'mqtt-sp1', 'sparkplug-bdseq')) && fs.existsSync(path.join(d.dataDir, 'mqtt-sp2', 'sparkplug-bdseq')), 'a bdSeq file each');

  // Each node's DDATA in its own seq; a Rebirth of one leaves the other alone; n1's _disconnect/_connect moves only its bdSeq.
  const ddata = (n: string) => host.seen.filter((m) => m.type === 'DDATA' && m.node === n).length;
  await until(() => ddata('n1') > 20 && ddata('n2') > 20, 10_000, 'DDATA of both');
  let from = host.seen.length;
  await host.ncmd('n1', [spMetric({ name: 'Node Control/Rebirth', datatype: 'Boolean', value: true })]);
  await host.next((m) => m.type === 'NBIRTH' && m.node === 'n1', from, 'n1 reborn');
  r = await admin.request('/services/cloudconnection/v1/connections/sp1/_disconnect', { method: 'POST' });
  t.equal(r.status, 204);
  await host.next((m) => m.type === 'NDEATH' && m.node === 'n1', from, 'NDEATH n1');
  r = await admin.request('/services/cloudconnection/v1/connections/sp1/_connect', { method: 'POST' });
  t.equal(r.status, 204);
  const nb1b = await host.next((m) => m.type === 'NBIRTH' && m.node === 'n1' && bdSeqOf(m) === 1n, from, 'n1 NBIRTH bdSeq 1');
  t.ok(nb1b, 'n1 bdSeq 1');
  const n2Since = ddata('n2');
  await until(() => ddata('n2') > n2Since + 10, 10_000, 'n2 goes on');
  t.notOk(host.seen.slice(from).some((m) => m.node === 'n2' && (m.type === 'NBIRTH' || m.type === 'NDEATH')), 'n2 neither reborn nor dead');
  t.equal(fs.readFileSync(path.join(d.dataDir, 'mqtt-sp1', 'sparkplug-bdseq'), 'utf8'), '1\n');
  t.equal(fs.readFileSync(path.join(d.dataDir, 'mqtt-sp2', 'sparkplug-bdseq'), 'utf8'), '0\n', 'n2’s bdSeq untouched');
  t.same(seqProblems(host.seen, 'n1'), [], 'n1 seq continuous');
  t.same(seqProblems(host.seen, 'n2'), [], 'n2 seq continuous');

  // Deleting sp1: its NDEATH, 200 with what its outbox keeps; n2 goes on.
  from = host.seen.length;
  r = await call('factoryComponents/byPid', { pids: [`${CLOUD}-sp1`], takeSnapshot: false }, 'DELETE');
  t.equal(r.status, 200, r.body);
  t.match(r.json().message, /^MQTT connection sp1 deleted; the \d+ messages? its outbox held (is|are) kept in dataDir\/mqtt-sp1/);
  const gone = await host.next((m) => m.type === 'NDEATH' && m.node === 'n1', from, 'NDEATH of the deleted node');
  t.equal(bdSeqOf(gone), 1n);
  t.same((await conns()).map((c) => c.name), ['default', 'sp2']);
  const at = host.seen.length;
  await until(() => host.seen.slice(at).filter((m) => m.node === 'n2' && m.type === 'DDATA').length > 5, 10_000, 'n2 after the delete');
  await sleep(300);
  t.notOk(host.seen.slice(at).some((m) => m.node === 'n1'), 'nothing more of n1');
  t.same(seqProblems(host.seen, 'n2'), [], 'n2 seq continuous to the end');

  // configuration/v2 changes sp2's type: a Kura connection (NDEATH, then BIRTH), and back (NBIRTH, the next bdSeq).
  const update = (pid: string, properties: unknown) => call('configurableComponents/configurations/_update', { configs: [{ pid, properties }], takeSnapshot: false }, 'PUT');
  from = host.seen.length;
  r = await update(`${CLOUD}-sp2`, { type: S('kura') });
  t.equal(r.status, 200, r.body);
  await until(() => got.some((m) => m.topic === '$EDC/account/gw-sp2/MQTT/BIRTH'), 10_000, 'sp2’s Kura BIRTH');
  const death2 = await host.next((m) => m.type === 'NDEATH' && m.node === 'n2', from, 'NDEATH n2 at the type change');
  t.equal(bdSeqOf(death2), 0n);
  t.equal((await conns()).find((c) => c.name === 'sp2').type, 'kura');
  t.equal((await conns()).find((c) => c.name === 'default').reconnects, 0, 'the default did not reconnect');
  const kuraAt = host.seen.length;
  await until(() => got.some((m) => m.topic === 'account/gw-sp2/assets/pump'), 10_000, 'sp2’s Kura telemetry');
  t.equal(host.seen.length, kuraAt, 'no Sparkplug message while it is a Kura connection');
  r = await update(`${CLOUD}-sp2`, { type: S('sparkplug') });
  t.equal(r.status, 200, r.body);
  const back = await host.next((m) => m.type === 'NBIRTH' && m.node === 'n2', kuraAt, 'NBIRTH n2 again');
  t.equal(bdSeqOf(back), 1n, 'the next bdSeq');
  t.ok(got.some((m) => m.topic === '$EDC/account/gw-sp2/MQTT/DC'), 'the Kura connection said DC');
  t.equal(await d.stop(), 0);
});

t.test('held DDATA of a Sparkplug connection is not sent when it becomes a Kura one', mosquittoSkip(), async (t) => {
  const broker = await startMosquitto();
  t.teardown(() => broker.close());
  const got = await listen(t, broker.url, '#', 'sub');
  const host = new SparkplugHost(broker.url, 'scada-host', G);
  await host.start();
  t.teardown(() => host.client.end());
  // The primary host is offline: the node is not born and keeps its DDATA in the outbox.
  await host.client.publish('spBv1.0/STATE/scada-host', Buffer.from(JSON.stringify({ online: false, timestamp: 1000 })), { qos: 1, retain: true });
  const d = await startDaemon(t, {
    rest,
    identities,
    assets: { pump: { 'driver.pid': 'sim', 'poll.interval': 20, channels: { n: counter } } },
    mqtt: { connections: { scada: { enabled: true, type: 'sparkplug', 'broker-url': broker.url, 'client-id': 'gw-scada', 'sparkplug.group.id': G, 'sparkplug.primary.host.id': 'scada-host', 'keep-alive': 5 } } },
  });
  const scada = async () => ((await d.request('/services/cloudconnection/v1/connections', { headers: ADMIN })).json() as any[]).find((c) => c.name === 'scada');
  await waitFor(async () => (await scada()).outbox.pending >= 10, 10_000, 'DDATA held in the outbox');
  t.equal(host.seen.filter((m) => m.type !== 'NDEATH').length, 0, 'nothing born while the host is offline');

  const cfg = JSON.parse(fs.readFileSync(d.configFile, 'utf8'));
  cfg.mqtt.connections.scada.type = 'kura';
  fs.writeFileSync(d.configFile, JSON.stringify(cfg));
  d.signal('SIGHUP');
  await until(() => got.some((m) => m.topic === '$EDC/account/gw-scada/MQTT/BIRTH'), 10_000, 'Kura BIRTH');
  await until(() => got.filter((m) => m.topic === 'account/gw-scada/assets/pump').length >= 5, 10_000, 'Kura telemetry');
  await waitFor(async () => (await scada()).outbox.pending < 5, 10_000, 'the outbox drained');
  t.same(host.seen.filter((m) => m.type === 'DDATA').map((m) => m.topic), [], 'none of the held DDATA published by the Kura connection');
  t.equal(await d.stop(), 0);
});
