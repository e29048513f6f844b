// Shared pieces of the MQTT tests: a real AssetRuntime (simulator driver plus a deliberately slow
// driver), an MqttService against a broker, and a requester client speaking the three encodings.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AssetRuntime } from '../../src/assets/service.js';
import { DriverPool } from '../../src/assets/driver-pool.js';
import type { ChannelConfig, ChannelMode, ValueType } from '../../src/channels/types.js';
import type { AssetConfig } from '../../src/assets/types.js';
import type { DriverInstanceConfig } from '../../src/configuration/config.js';
import type { ChannelResult, DriverFactory } from '../../src/drivers/driver.js';
import { DriverRegistry } from '../../src/drivers/registry.js';
import { simulatorFactory } from '../../src/drivers/simulator/index.js';
import { silentLogger, type Logger } from '../../src/log.js';
import { MqttClient } from '../../src/mqtt/client.js';
import { validateMqttSection, type MqttConfig } from '../../src/mqtt/config.js';
import { decodeKuraPayload, encodeKuraPayload, type KuraMetric, type KuraPayload } from '../../src/mqtt/kura-payload.js';
import { MqttService } from '../../src/mqtt/service.js';
import { MqttApplications } from '../../src/mqtt/applications.js';
import { TelemetryOutbox } from '../../src/mqtt/telemetry-outbox.js';
import { Telemetry } from '../../src/mqtt/telemetry.js';
import { assetV1Family } from '../../src/api/asset-v1/handler.js';
import { familyApplication } from '../../src/mqtt/family-application.js';
import { decodeSimpleJsonPayload, encodeSimpleJsonPayload } from '../../src/mqtt/simple-json-payload.js';

export const until = async (cond: () => boolean, ms = 8000, what = 'condition'): Promise<void> => {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

/**
 * How many of an outbox's pending messages have an ADD record (were written to disk: produced while
 * offline, or read back at start). Tests wait for this to reach 0 rather than for an empty outbox:
 * with telemetry every few tens of ms a message is nearly always in flight at the instant of looking
 * on a loaded machine (a CI run failed on that wait). `stored` is the outbox's own count.
 */
export const storedPending = (outbox: TelemetryOutbox): number => outbox.stats().stored;

export function channel(name: string, valueType: ValueType, mode: ChannelMode, props: Record<string, unknown> = {}, extra: Partial<ChannelConfig> = {}): ChannelConfig {
  return { name, enabled: true, mode, valueType, scale: 1, offset: 0, deadband: 0, driverProps: props, ...extra };
}

/** A driver whose reads take `delay` ms: a slow field device. */
export const slowFactory: DriverFactory = {
  name: 'slow',
  instanceKeys: ['delay'],
  channelKeys: [],
  validateInstance: () => [],
  validateChannel: () => [],
  create: (props) => ({
    async read(chs) {
      await new Promise((r) => setTimeout(r, Number(props.delay ?? 1000)));
      return chs.map((): ChannelResult => ({ ok: true, value: { type: 'INTEGER', value: 7 }, timestamp: Date.now() }));
    },
    async write(reqs) {
      return reqs.map((r): ChannelResult => ({ ok: true, value: r.value }));
    },
    async close() {},
  }),
};

export function demoAssets(): AssetConfig[] {
  const asset = (pid: string, driverPid: string, channels: ChannelConfig[], extra: Partial<AssetConfig> = {}): AssetConfig => ({
    pid,
    driverPid,
    description: '',
    pollInterval: 0,
    publishMaxInterval: 0,
    channels,
    ...extra,
  });
  return [
    asset('a', 'sim', [
      channel('c1', 'INTEGER', 'READ_WRITE', { simulation: 'memory', initial: 432 }),
      channel('b', 'BOOLEAN', 'READ', { simulation: 'constant', initial: true }),
      channel('bytes', 'BYTE_ARRAY', 'READ_WRITE', { simulation: 'memory', initial: 'AQID' }),
      channel('d', 'DOUBLE', 'READ', { simulation: 'constant', initial: 1e7 }),
      channel('f', 'FLOAT', 'READ', { simulation: 'constant', initial: 0.1 }),
      channel('l', 'LONG', 'READ_WRITE', { simulation: 'memory', initial: '9007199254740993' }),
      channel('s', 'STRING', 'READ_WRITE', { simulation: 'memory', initial: 'hi' }),
      channel('t', 'DOUBLE', 'READ', { simulation: 'constant', initial: 21.5 }, { unit: 'C' }),
      channel('w', 'INTEGER', 'WRITE', { simulation: 'memory' }),
      channel('dis', 'INTEGER', 'READ', { simulation: 'memory' }, { enabled: false }),
    ]),
    asset('detached', 'nodriver', [channel('x', 'INTEGER', 'READ', {}), channel('y', 'INTEGER', 'READ_WRITE', {})]),
    asset('slow', 'slowdrv', [channel('v', 'INTEGER', 'READ', {})]),
  ];
}

export function makeRuntime(assets: AssetConfig[] = demoAssets(), log: Logger = silentLogger): { runtime: AssetRuntime; dataDir: string } {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-mqtt-'));
  const registry = new DriverRegistry([simulatorFactory, slowFactory]);
  const runtime = new AssetRuntime(new DriverPool(registry, log, dataDir), log);
  const drivers: Record<string, DriverInstanceConfig> = {
    sim: { id: 'sim', factory: 'simulator', props: {} },
    slowdrv: { id: 'slowdrv', factory: 'slow', props: { delay: 1500 } },
  };
  runtime.configure(assets, drivers);
  return { runtime, dataDir };
}

export function mqttConfig(raw: Record<string, unknown>): MqttConfig {
  const { value, problems } = validateMqttSection({ enabled: true, ...raw });
  const errors = problems.filter((p) => p.severity !== 'warning');
  if (errors.length > 0) throw new Error(`bad test mqtt config: ${JSON.stringify(errors)}`);
  return value;
}

export const fastTuning = { reconnectMin: 50, reconnectMax: 300, connectTimeout: 2000, outboxFlushMs: 10 };

const outboxes = new WeakMap<MqttService, TelemetryOutbox>();

/**
 * An MqttService assembled as the daemon assembles it (src/daemon.ts): its outbox in
 * `<dataDir>/mqtt`, telemetry over `runtime`, a real MqttClient, and ASSET-V1 over `runtime` unless
 * `applications` is given.
 */
export function makeService(runtime: AssetRuntime, dataDir: string, config: MqttConfig, log: Logger = silentLogger, applications?: MqttApplications): MqttService {
  let apps = applications;
  if (!apps) {
    apps = new MqttApplications();
    apps.register(familyApplication(assetV1Family(runtime), log));
  }
  const outbox = new TelemetryOutbox({ dir: path.join(dataDir, 'mqtt'), maxMessages: config['outbox.max.messages'], log, flushDelayMs: fastTuning.outboxFlushMs });
  const telemetry = new Telemetry({ assets: runtime, log, publish: (pid, records) => svc.publishTelemetry(pid, records) });
  const svc: MqttService = new MqttService({ config, applications: apps, outbox, telemetry, client: (o) => new MqttClient(o), log, tuning: fastTuning });
  outboxes.set(svc, outbox);
  return svc;
}

/** The outbox of a service made by makeService. */
export function outboxOf(svc: MqttService): TelemetryOutbox {
  return outboxes.get(svc)!;
}

export interface Reply {
  code?: number;
  message?: string;
  body?: string;
  raw: Buffer;
  topic: string;
  metrics: KuraMetric[];
}

/** A requester: a second MQTT client that sends ASSET-V1 requests and collects replies. */
export class Requester {
  readonly client: MqttClient;
  private n = 0;
  readonly replies = new Map<string, { topic: string; payload: Buffer }>();

  constructor(
    brokerUrl: string,
    readonly id: string,
    readonly account = 'acct',
  ) {
    this.client = new MqttClient({ url: brokerUrl, clientId: id, keepAlive: 30, clean: true, reconnectMin: 50, reconnectMax: 300, log: silentLogger });
    this.client.on('message', (topic: string, payload: Buffer) => {
      const rid = topic.split('/').pop()!;
      this.replies.set(rid, { topic, payload });
    });
  }

  async start(): Promise<void> {
    this.client.start();
    await until(() => this.client.isConnected, 5000, 'requester connect');
    await this.client.subscribe(`$EDC/${this.account}/${this.id}/+/REPLY/#`, 1);
  }

  nextId(): string {
    return `r${++this.n}-${Math.random().toString(16).slice(2, 6)}`;
  }

  /** Sends a Kura-encoded request (protobuf or simple-json) and waits for its reply (or not). */
  async kura(
    device: string,
    methodResource: string,
    body: string | Buffer | undefined,
    opts: { encoding?: 'kura-protobuf' | 'simple-json'; metrics?: KuraMetric[]; raw?: Buffer; wait?: number; requestId?: string; app?: string } = {},
  ): Promise<Reply | undefined> {
    const rid = opts.requestId ?? this.nextId();
    const p: KuraPayload = {
      timestamp: BigInt(Date.now()),
      metrics: opts.metrics ?? [
        { name: 'request.id', type: 'STRING', value: rid },
        { name: 'requester.client.id', type: 'STRING', value: this.id },
      ],
    };
    if (body !== undefined) p.body = Buffer.isBuffer(body) ? body : Buffer.from(body);
    const payload = opts.raw ?? (opts.encoding === 'simple-json' ? encodeSimpleJsonPayload(p) : encodeKuraPayload(p));
    await this.client.publish(`$EDC/${this.account}/${device}/${opts.app ?? 'ASSET-V1'}/${methodResource}`, payload, { qos: 1 });
    return this.await(rid, opts.wait ?? 5000, opts.encoding ?? 'kura-protobuf');
  }

  /** Sends a bare-JSON request (requester and request id as topic levels). */
  async json(device: string, methodResource: string, body: string | undefined, wait = 5000, app = 'ASSET-V1'): Promise<Reply | undefined> {
    const rid = this.nextId();
    await this.client.publish(`$EDC/${this.account}/${device}/${app}/${methodResource}/${this.id}/${rid}`, Buffer.from(body ?? ''), { qos: 1 });
    return this.await(rid, wait, 'json');
  }

  private async await(rid: string, wait: number, encoding: string): Promise<Reply | undefined> {
    try {
      await until(() => this.replies.has(rid), wait, `reply ${rid}`);
    } catch {
      return undefined;
    }
    const { topic, payload } = this.replies.get(rid)!;
    if (encoding === 'json') {
      const text = payload.toString();
      // An error is an object with `response.code`; anything else (JSON, CONF-V1's XML) is a success body.
      const obj = text.startsWith('{') ? JSON.parse(text) : undefined;
      if (obj !== null && typeof obj === 'object' && 'response.code' in obj) return { code: obj['response.code'], message: obj['response.exception.message'], body: text, raw: payload, topic, metrics: [] };
      return { code: 200, body: text, raw: payload, topic, metrics: [] };
    }
    let kp: KuraPayload;
    if (encoding === 'simple-json') kp = decodeSimpleJsonPayload(payload);
    else {
      const d = decodeKuraPayload(payload);
      if (!d.ok) throw new Error(d.error);
      kp = d.value;
    }
    const code = kp.metrics.find((m) => m.name === 'response.code');
    const msg = kp.metrics.find((m) => m.name === 'response.exception.message');
    return {
      code: code ? Number(code.value) : undefined,
      message: msg ? String(msg.value) : undefined,
      body: kp.body?.toString(),
      raw: payload,
      topic,
      metrics: kp.metrics,
    };
  }

  end(): Promise<void> {
    return this.client.end();
  }
}

/**
 * BIRTH's `application_ids`, as Kapua's console reads them, each BIRTH published under `filter`
 * (e.g. `$EDC/acct/dev1/MQTT/#`) from the moment this returns: the watcher is subscribed before
 * the daemon connects, and ended at teardown.
 */
export async function watchBirths(t: { teardown(fn: () => unknown): void }, brokerUrl: string, filter: string, clientId = 'birth-watcher'): Promise<string[]> {
  const births: string[] = [];
  const watcher = new MqttClient({ url: brokerUrl, clientId, keepAlive: 30, clean: true, reconnectMin: 50, reconnectMax: 300, log: silentLogger });
  watcher.on('message', (topic: string, raw: Buffer) => {
    const d = decodeKuraPayload(raw);
    if (d.ok && topic.endsWith('/MQTT/BIRTH')) births.push(String(d.value.metrics.find((m) => m.name === 'application_ids')?.value));
  });
  watcher.start();
  t.teardown(() => watcher.end());
  await until(() => watcher.isConnected, 5000, 'BIRTH watcher');
  await watcher.subscribe(filter, 1);
  return births;
}
