// Eclipse Kapua's side of CMD-V1 (docs/mqtt.md "CMD-V1"), for the tests that drive the remote
// command through the real daemon: KuraDeviceCallImpl publishes at QoS 0 with a `KapuaPool-…`
// requester and a random signed long as `request.id`, TranslatorAppCommandKapuaKura names the
// metrics, and the reply is read from exactly `$EDC/<account>/<requester>/CMD-V1/REPLY/<id>`.

import crypto from 'node:crypto';
import fs from 'node:fs';
import { until } from './mqtt-fixture.js';
import { MqttClient } from '../../src/mqtt/client.js';
import { decodeKuraPayload, encodeKuraPayload, type KuraMetric, type KuraPayload } from '../../src/mqtt/kura-payload.js';
import { silentLogger } from '../../src/log.js';

export const ACCOUNT = 'acct';
export const DEVICE = 'gw-cmd';
export const PID = 'org.eclipse.kura.cloud.app.command.CommandCloudApp';
export const CLOUD = 'org.eclipse.kura.cloud.CloudService';
export const PASSWORD = 'cmd-Pa55-w0rd!';
export const ENV_SECRET = 'env-value-never-logged-7f3a';
export const STDIN_SECRET = 'stdin-text-never-logged-91c2';
export const DAEMON_SECRET = 'daemon-environment-secret-55e1';

export interface Reply {
  topic: string;
  payload: KuraPayload;
  metrics: Record<string, unknown>;
  types: Record<string, string>;
}

export const s = (name: string, value: string): KuraMetric => ({ name, type: 'STRING', value });
export const i32 = (name: string, value: number): KuraMetric => ({ name, type: 'INT32', value });
export const b = (name: string, value: boolean): KuraMetric => ({ name, type: 'BOOL', value });

/** What Kapua's TranslatorAppCommandKapuaKura sends: the command, its arguments one metric each, the options. */
export function command(program: string, args: string[] = [], o: { password?: string; timeout?: number; dir?: string; stdin?: string; env?: string[]; async?: boolean } = {}): KuraMetric[] {
  const m = [s('command.command', program), ...args.map((a, i) => s(`command.argument${i}`, a)), i32('command.timeout', o.timeout ?? 60), b('command.run.async', o.async ?? false)];
  if (o.password !== undefined) m.push(s('command.password', o.password));
  if (o.dir !== undefined) m.push(s('command.working.directory', o.dir));
  if (o.stdin !== undefined) m.push(s('command.stdin', o.stdin));
  for (const [i, p] of (o.env ?? []).entries()) m.push(s(`command.environment.pair${i}`, p));
  return m;
}

/** Eclipse Kapua's side: KuraDeviceCallImpl publishes at QoS 0 and waits on the one reply topic. */
export class Kapua {
  readonly id = `KapuaPool-${Date.now()}-${crypto.randomInt(1e9)}`;
  readonly client: MqttClient;
  readonly replies = new Map<string, Reply>();
  /** Every reply topic seen, to check none was published elsewhere. */
  readonly topics: string[] = [];

  constructor(url: string) {
    this.client = new MqttClient({ url, clientId: this.id, keepAlive: 30, clean: true, reconnectMin: 50, reconnectMax: 300, log: silentLogger });
    this.client.on('message', (topic: string, raw: Buffer) => {
      this.topics.push(topic);
      const d = decodeKuraPayload(raw);
      if (!d.ok) return;
      const metrics = Object.fromEntries(d.value.metrics.map((m) => [m.name, m.value]));
      const types = Object.fromEntries(d.value.metrics.map((m) => [m.name, m.type]));
      this.replies.set(topic.split('/').pop()!, { topic, payload: d.value, metrics, types });
    });
  }

  async start(): Promise<void> {
    this.client.start();
    await until(() => this.client.isConnected, 5000, 'kapua connect');
    await this.client.subscribe(`$EDC/${ACCOUNT}/${this.id}/#`, 1);
  }

  /** A request; resolves with its reply, or undefined when none came within `wait` ms. */
  async send(methodResource: string, metrics: KuraMetric[], o: { wait?: number; body?: Buffer; negative?: boolean } = {}): Promise<Reply | undefined> {
    // String.valueOf(Random.nextLong()): negative half the time; here chosen to test both.
    const n = crypto.randomBytes(8).readBigUInt64BE() >> 1n;
    const rid = String(o.negative === false ? n : -n);
    const p: KuraPayload = { metrics: [s('request.id', rid), s('requester.client.id', this.id), ...metrics] };
    if (o.body) p.body = o.body;
    await this.client.publish(`$EDC/${ACCOUNT}/${DEVICE}/CMD-V1/${methodResource}`, encodeKuraPayload(p), { qos: 0 });
    try {
      await until(() => this.replies.has(rid), o.wait ?? 15_000, `reply to ${methodResource}`);
    } catch (err) {
      if (o.wait !== undefined) return undefined;
      throw err;
    }
    const r = this.replies.get(rid)!;
    if (r.topic !== `$EDC/${ACCOUNT}/${this.id}/CMD-V1/REPLY/${rid}`) throw new Error(`reply on ${r.topic}`);
    return r;
  }

  async exec(metrics: KuraMetric[], o: { negative?: boolean } = {}): Promise<Reply> {
    return (await this.send('EXEC/command', metrics, o))!;
  }
}

/** Whether a process runs: a zombie (killed, not yet reaped by an init that may never reap) does not. */
export const alive = (pid: number) => {
  try {
    return !/^\d+ \(.*\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
};

