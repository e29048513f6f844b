// The outbox across a hard kill of the daemon: telemetry produced while the broker is down is
// written to dataDir; after SIGKILL (no shutdown code runs) and a restart on the same dataDir, every
// message that was on disk reaches a subscriber once the broker is back.

import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startDaemon } from '../helpers/daemon.js';
import { startMosquitto, mosquittoSkip } from '../helpers/mosquitto.js';
import { until } from '../helpers/mqtt-fixture.js';
import { MqttClient } from '../../src/mqtt/client.js';
import { TelemetryOutbox } from '../../src/mqtt/telemetry-outbox.js';
import { silentLogger } from '../../src/log.js';

t.test('outbox survives SIGKILL of the daemon', mosquittoSkip(), async (t) => {
  const broker = await startMosquitto();
  t.teardown(() => broker.close());
  const got = new Set<string>();
  const sub = new MqttClient({ url: broker.url, clientId: 'restart-sub', keepAlive: 30, clean: false, reconnectMin: 50, reconnectMax: 300, log: silentLogger });
  sub.on('message', (_topic: string, payload: Buffer) => {
    const el = JSON.parse(payload.toString());
    for (const c of el.channels) got.add(`${c.value}@${c.timestamp}`);
  });
  sub.start();
  await until(() => sub.isConnected);
  await sub.subscribe('account/gw/assets/#', 1);
  t.teardown(() => sub.end());

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-mqtt-restart-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const config = {
    assets: {
      counter: { 'driver.pid': 'sim', 'poll.interval': 40, channels: { n: { type: 'READ', 'value.type': 'INTEGER', simulation: 'counter' } } },
    },
    mqtt: { enabled: true, 'broker-url': broker.url, 'client-id': 'gw', 'payload.encoding': 'json', 'keep-alive': 5 },
  };
  const d1 = await startDaemon(t, config, { dir });
  await d1.waitForLog(/msg="mqtt connected"/);
  await until(() => got.size >= 3, 8000, 'telemetry before the outage');

  await broker.stop();
  // Offline telemetry is written in batches of about a second (src/mqtt/telemetry-outbox.ts): wait for two.
  await new Promise((r) => setTimeout(r, 2500));
  d1.proc.kill('SIGKILL');
  await d1.exited;

  // What is on disk now is what the restarted daemon owes the subscriber.
  const copy = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-mqtt-copy-'));
  t.teardown(() => fs.rmSync(copy, { recursive: true, force: true }));
  for (const f of fs.readdirSync(path.join(d1.dataDir, 'mqtt'))) fs.copyFileSync(path.join(d1.dataDir, 'mqtt', f), path.join(copy, f));
  const probe = new TelemetryOutbox({ dir: copy, maxMessages: 100_000, log: silentLogger });
  await probe.open();
  const owed = (await probe.readPending()).flatMap((m) => JSON.parse(m.payload.toString()).channels.map((c: { value: string; timestamp: number }) => `${c.value}@${c.timestamp}`));
  await probe.close();
  t.ok(owed.length >= 5, `${owed.length} messages were on disk at the kill`);

  await broker.start();
  const d2 = await startDaemon(t, config, { dir });
  await d2.waitForLog(/msg="mqtt connected"/);
  await until(() => owed.every((k) => got.has(k)), 10_000, 'owed messages delivered');
  t.same(
    owed.filter((k) => !got.has(k)),
    [],
    'every message on disk at the kill was delivered after the restart',
  );
  t.equal(await d2.stop(), 0);
});
