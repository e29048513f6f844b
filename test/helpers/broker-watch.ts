// What the connection tests watch on a real broker: every message under a filter (the `$EDC/…`
// life-cycle topics too when the filter is `#`), and waiting for a condition that asks the daemon.

import { silentLogger } from '../../src/log.js';
import { MqttClient } from '../../src/mqtt/client.js';
import { until } from './mqtt-fixture.js';

export interface Got {
  topic: string;
  payload: Buffer;
}

/** Every message under `filter` on the broker at `url`, in arrival order; `#` adds `$EDC/#` (`#` does not match `$` topics, MQTT 3.1.1 §4.7.2). */
export async function listen(t: { teardown(fn: () => unknown): void }, url: string, filter: string, clientId: string): Promise<Got[]> {
  const got: Got[] = [];
  const c = new MqttClient({ url, clientId, keepAlive: 30, clean: true, reconnectMin: 50, reconnectMax: 300, log: silentLogger });
  c.on('message', (topic: string, payload: Buffer) => got.push({ topic, payload }));
  c.start();
  t.teardown(() => c.end());
  await until(() => c.isConnected, 5000, `${clientId} connected`);
  await c.subscribe(filter, 1);
  if (filter === '#') await c.subscribe('$EDC/#', 1);
  return got;
}

/** `until` for a condition that asks the daemon. */
export async function waitFor(cond: () => Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
