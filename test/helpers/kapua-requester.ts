// A requester that asks a device the way Eclipse Kapua's device-call layer does (KuraDeviceCallImpl,
// docs/mqtt.md "Topics"): its client id `KapuaPool-<ms>-<random>`, a `request.id` that is a Java
// random long (negative here, as half of Kapua's are), the KuraPayload without timestamp and never
// gzipped, published at QoS 0 after subscribing to the one reply topic it expects. The reply is
// read as Kapua's KuraPayload.readFromByteArray reads it: gunzipped whole (every gzip member) when
// it starts with the gzip magic, then protobuf.

import { randomBytes } from 'node:crypto';
import zlib from 'node:zlib';
import { silentLogger } from '../../src/log.js';
import { MqttClient } from '../../src/mqtt/client.js';
import { decodeKuraPayloadRaw, encodeKuraPayload, isGzip, type KuraMetric } from '../../src/mqtt/kura-payload.js';
import { until } from './mqtt-fixture.js';

export interface KapuaReply {
  topic: string;
  /** The MQTT payload as received. */
  raw: Buffer;
  /** performance.now() when it arrived (before it was decoded). */
  receivedAt: number;
  metrics: KuraMetric[];
  body: Buffer | undefined;
  /** response.code, when it is the INT32 Kapua casts it to (else undefined). */
  code: number | undefined;
  /** response.exception.message, when a STRING. */
  message: string | undefined;
}

/** A negative Java long, as String.valueOf(Random.nextLong()) writes it. */
export function negativeRequestId(): string {
  return (-(randomBytes(8).readBigUInt64BE() >> 1n) - 1n).toString();
}

export class KapuaRequester {
  readonly id = `KapuaPool-${Date.now()}-${randomBytes(4).readUInt32BE()}`;
  readonly client: MqttClient;
  private readonly replies = new Map<string, { topic: string; payload: Buffer; at: number }>();

  constructor(
    brokerUrl: string,
    readonly account = 'acct',
    /** The largest reply accepted (Kapua has no bound of its own below the broker's). */
    maxPacketBytes = 64 * 1024 * 1024,
  ) {
    this.client = new MqttClient({ url: brokerUrl, clientId: this.id, keepAlive: 30, clean: true, reconnectMin: 50, reconnectMax: 300, log: silentLogger, maxPacketBytes });
    this.client.on('message', (topic: string, payload: Buffer) => this.replies.set(topic, { topic, payload, at: performance.now() }));
  }

  async start(): Promise<void> {
    this.client.start();
    await until(() => this.client.isConnected, 5000, 'Kapua requester connect');
  }

  /** `METHOD/resources…` of application `app` on `device`, with `body`; undefined when no reply comes within `wait` ms. */
  async ask(device: string, app: string, methodResources: string, body?: string | Buffer, opts: { wait?: number; requestId?: string; metrics?: KuraMetric[]; payload?: Buffer } = {}): Promise<KapuaReply | undefined> {
    const requestId = opts.requestId ?? negativeRequestId();
    const replyTopic = `$EDC/${this.account}/${this.id}/${app}/REPLY/${requestId}`;
    await this.client.subscribe(replyTopic, 1);
    const metrics: KuraMetric[] = opts.metrics ?? [
      { name: 'requester.client.id', type: 'STRING', value: this.id },
      { name: 'request.id', type: 'STRING', value: requestId },
    ];
    // `payload`: sent as it is instead (a payload made by hand: gzipped, fields out of order, …).
    const payload = opts.payload ?? encodeKuraPayload({ metrics, body: body === undefined ? undefined : Buffer.from(body) });
    await this.client.publish(`$EDC/${this.account}/${device}/${app}/${methodResources}`, payload, { qos: 0 });
    try {
      await until(() => this.replies.has(replyTopic), opts.wait ?? 10_000, `reply on ${replyTopic}`);
    } catch {
      return undefined;
    }
    const { topic, payload: raw, at } = this.replies.get(replyTopic)!;
    this.replies.delete(replyTopic);
    const plain = isGzip(raw) ? zlib.gunzipSync(raw) : raw;
    const d = decodeKuraPayloadRaw(plain);
    if (!d.ok) throw new Error(`reply is no KuraPayload: ${d.error}`);
    const metric = (n: string) => d.value.metrics.find((m) => m.name === n);
    const code = metric('response.code');
    const message = metric('response.exception.message');
    return {
      topic,
      raw,
      receivedAt: at,
      metrics: d.value.metrics,
      body: d.value.body,
      code: code?.type === 'INT32' ? Number(code.value) : undefined,
      message: message?.type === 'STRING' ? String(message.value) : undefined,
    };
  }

  end(): Promise<void> {
    return this.client.end();
  }
}
