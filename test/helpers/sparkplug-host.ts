// A Sparkplug host application for the edge node tests (docs/mqtt.md "Sparkplug B"): every
// spBv1.0/<group>/# message on a real broker decoded by Eclipse Tahu's `sparkplug-payload`
// (test/helpers/tahu.ts), aliases learnt from the births per edge node and device, commands
// encoded by Tahu; the edge node is named in each message and command.

import { MqttClient } from '../../src/mqtt/client.js';
import type { SparkplugMetric, SparkplugPayload } from './sparkplug-codec/payload.js';
import { silentLogger } from '../../src/log.js';
import { until } from './mqtt-fixture.js';
import { tahuDecode, tahuEncode } from './tahu.js';

export interface SpSeen {
  topic: string;
  type: string;
  node: string;
  device?: string;
  p: SparkplugPayload;
}

export class SparkplugHost {
  readonly seen: SpSeen[] = [];
  readonly client: MqttClient;
  /** `<node>/<device>` ('' for the node) → alias → metric name, from its last birth. */
  readonly names = new Map<string, Map<bigint, string>>();

  constructor(
    url: string,
    id: string,
    readonly group: string,
  ) {
    this.client = new MqttClient({ url, clientId: id, keepAlive: 30, clean: true, reconnectMin: 50, reconnectMax: 300, log: silentLogger });
    this.client.on('message', (topic: string, payload: Buffer) => {
      const [, , type = '', node = '', device] = topic.split('/');
      const p = tahuDecode(payload);
      if (type === 'NBIRTH' || type === 'DBIRTH') this.names.set(`${node}/${device ?? ''}`, new Map(p.metrics.map((m) => [m.alias!, m.name!])));
      this.seen.push({ topic, type, node, device, p });
    });
  }

  async start(): Promise<void> {
    this.client.start();
    await until(() => this.client.isConnected, 8000, 'host connected');
    await this.client.subscribe(`spBv1.0/${this.group}/#`, 1);
  }

  /** The first message from index `from` on that `pred` accepts. */
  async next(pred: (m: SpSeen) => boolean, from = 0, what = 'message', ms = 10_000): Promise<SpSeen> {
    let hit: SpSeen | undefined;
    await until(() => (hit = this.seen.slice(from).find(pred)) !== undefined, ms, what);
    return hit!;
  }

  /** A metric's value by name (aliases resolved with the device's last birth). */
  valueOf(m: SpSeen, name: string): unknown {
    const names = this.names.get(`${m.node}/${m.device ?? ''}`);
    return m.p.metrics.find((x) => (x.name ?? names?.get(x.alias!)) === name)?.value;
  }

  /** The alias a metric was born with (device '' for the node's own). */
  alias(node: string, device: string, name: string): bigint {
    for (const [a, n] of this.names.get(`${node}/${device}`) ?? []) if (n === name) return a;
    throw new Error(`no alias for ${node}/${device}/${name}`);
  }

  dcmd(node: string, device: string, metrics: SparkplugMetric[]): Promise<void> {
    return this.client.publish(`spBv1.0/${this.group}/DCMD/${node}/${device}`, tahuEncode({ timestamp: BigInt(Date.now()), metrics }), { qos: 0 });
  }

  ncmd(node: string, metrics: SparkplugMetric[]): Promise<void> {
    return this.client.publish(`spBv1.0/${this.group}/NCMD/${node}`, tahuEncode({ timestamp: BigInt(Date.now()), metrics }), { qos: 0 });
  }
}

export const bdSeqOf = (m: SpSeen): unknown => m.p.metrics.find((x) => x.name === 'bdSeq')?.value;

export const spMetric = (m: { name?: string; alias?: bigint; datatype: string; value: unknown }): SparkplugMetric => m as unknown as SparkplugMetric;

/** seq of one edge node: 0 in each NBIRTH, then one more (mod 256) in every message of the session but NDEATH. */
export function seqProblems(seen: SpSeen[], node: string): string[] {
  const out: string[] = [];
  let prev: bigint | undefined;
  seen.forEach((m, i) => {
    if (m.node !== node || m.type.endsWith('CMD')) return;
    if (m.type === 'NDEATH') {
      if (m.p.seq !== undefined) out.push(`${i} NDEATH has seq ${m.p.seq}`);
      prev = undefined;
      return;
    }
    const want = m.type === 'NBIRTH' ? 0n : prev === undefined ? undefined : (prev + 1n) % 256n;
    if (want !== undefined && m.p.seq !== want) out.push(`${i} ${m.type} ${m.device ?? ''}: seq ${m.p.seq}, expected ${want}`);
    prev = m.p.seq;
  });
  return out;
}
