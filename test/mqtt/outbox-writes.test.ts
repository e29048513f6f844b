// Flash-friendly store-and-forward (docs/mqtt.md "Telemetry") with a real Mosquitto: telemetry every 20 ms
// while the broker is connected and acknowledging writes nothing to dataDir (the outbox's own byte
// and fsync counters, and the log file's size, stay 0); with the broker gone the messages are
// written in batches, survive a power cut (a second reader of the files sees every message whose
// enqueue had resolved), and are all delivered once the broker is back. The bytes per hour of both
// states are printed (the figures of `make bench`'s outbox row).

import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { startMosquitto, mosquittoSkip } from '../helpers/mosquitto.js';
import { channel, makeRuntime, mqttConfig, fastTuning, storedPending, until } from '../helpers/mqtt-fixture.js';
import { MqttClient } from '../../src/mqtt/client.js';
import { MqttService } from '../../src/mqtt/service.js';
import { MqttApplications } from '../../src/mqtt/applications.js';
import { TelemetryOutbox } from '../../src/mqtt/telemetry-outbox.js';
import { Telemetry } from '../../src/mqtt/telemetry.js';
import { silentLogger } from '../../src/log.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

t.test('connected: no telemetry reaches the disk; offline: batched, power-cut safe, delivered later', mosquittoSkip(), async (t) => {
  const broker = await startMosquitto();
  t.teardown(() => broker.close());
  const values = new Set<number>();
  const sub = new MqttClient({ url: broker.url, clientId: 'sub', keepAlive: 30, clean: false, reconnectMin: 50, reconnectMax: 300, log: silentLogger });
  sub.on('message', (_topic: string, payload: Buffer) => {
    for (const c of JSON.parse(payload.toString()).channels) values.add(Number(c.value));
  });
  sub.start();
  await until(() => sub.isConnected);
  await sub.subscribe('acct/gw/assets/#', 1);
  t.teardown(() => sub.end());

  const { runtime, dataDir } = makeRuntime([
    { pid: 'tele', driverPid: 'sim', description: '', pollInterval: 20, publishMaxInterval: 0, channels: [channel('n', 'LONG', 'READ', { simulation: 'counter' })] },
  ]);
  t.teardown(async () => {
    await runtime.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  const config = mqttConfig({ 'broker-url': broker.url, 'client-id': 'gw', 'topic.context.account-name': 'acct', 'payload.encoding': 'json' });
  // Assembled as src/daemon.ts does, with the outbox's production batching (1 s); acknowledgements
  // may lag up to 30 s here (2 s in production) so a loaded test machine does not count as lagging.
  const outbox = new TelemetryOutbox({ dir: path.join(dataDir, 'mqtt'), maxMessages: 10_000, log: silentLogger, ackLagMs: 30_000 });
  const telemetry = new Telemetry({ assets: runtime, log: silentLogger, publish: (pid, records) => svc.publishTelemetry(pid, records) });
  const svc: MqttService = new MqttService({ config, applications: new MqttApplications(), outbox, telemetry, client: (o) => new MqttClient(o), log: silentLogger, tuning: fastTuning });
  await svc.start();
  t.teardown(() => svc.stop());
  const log = path.join(dataDir, 'mqtt', 'outbox.log');
  await until(() => svc.isConnected, 8000, 'connected');

  // Connected and acknowledging. What was produced before the first connection is on disk already;
  // wait until none of it is pending (not for an empty outbox: see storedPending).
  await until(() => storedPending(outbox) === 0, 30_000, 'the messages stored before the first connection delivered');
  await outbox.flush(); // their DONE records
  const c0 = outbox.stats();
  const size0 = fs.statSync(log).size;
  const v0 = values.size;
  const t0 = Date.now();
  await sleep(3000);
  const connectedMs = Date.now() - t0;
  const c1 = outbox.stats();
  t.ok(values.size - v0 > 30, `${values.size - v0} messages delivered in ${connectedMs} ms`);
  t.same([c1.bytesWritten - c0.bytesWritten, c1.syncs - c0.syncs], [0, 0], 'not a byte written, not an fsync, while connected');
  t.equal(fs.statSync(log).size, size0, 'outbox.log unchanged');

  // Offline.
  await broker.stop();
  await until(() => !svc.isConnected, 8000, 'disconnected');
  const b0 = outbox.stats().bytesWritten;
  const s0 = outbox.stats().syncs;
  const t1 = Date.now();
  await sleep(3000);
  const offlineMs = Date.now() - t1;
  const off = outbox.stats();
  const offBytes = off.bytesWritten - b0;
  const offSyncs = off.syncs - s0;
  t.ok(offBytes > 0, `${offBytes} bytes written in ${offlineMs} ms offline`);
  t.ok(offSyncs <= offlineMs / 500 + 2, `${offSyncs} fsyncs for ~${Math.round(offlineMs / 20)} messages: batched`);

  // Power cut while offline: what the files hold (every message whose enqueue resolved was fsynced).
  const copy = path.join(dataDir, 'copy');
  await sleep(1200); // the last batch's flush delay
  fs.mkdirSync(copy);
  for (const f of fs.readdirSync(path.dirname(log))) fs.copyFileSync(path.join(path.dirname(log), f), path.join(copy, f));
  const reader = new TelemetryOutbox({ dir: copy, maxMessages: 100_000, log: silentLogger });
  await reader.open();
  const onDisk = (await reader.readPending()).map((m) => Number(JSON.parse(m.payload.toString()).channels[0].value));
  await reader.close();
  t.ok(onDisk.length >= off.pending - 10, `${onDisk.length} messages on disk after a simulated power cut (${off.pending} pending a moment before)`);

  // Back: everything produced is delivered (the counter is dense).
  await broker.start();
  // Telemetry keeps coming every 20 ms, so the outbox is seldom empty at the instant it is looked
  // at on a loaded machine: wait for what was stored offline to arrive, then check for gaps.
  await until(() => onDisk.every((v) => values.has(v)), 30_000, 'what was stored offline delivered');
  const hi = Math.max(...values);
  const lo = Math.min(...values);
  const missing = [];
  for (let v = lo; v <= hi; v++) if (!values.has(v)) missing.push(v);
  t.same(missing, [], `counter ${lo}…${hi} delivered without a gap`);

  const perHour = (bytes: number, ms: number) => Math.round((bytes / ms) * 3_600_000);
  t.comment(`telemetry every 20 ms: connected ${perHour(0, connectedMs)} B/h written to dataDir, offline ${perHour(offBytes, offlineMs)} B/h (${Math.round((offSyncs / offlineMs) * 3_600_000)} fsyncs/h)`);
});
