// A Sparkplug B 3.0 edge node on one MQTT connection (`type: "sparkplug"`, docs/mqtt.md "Sparkplug
// B"): the surface of MqttService (start, stop, reconfigure, connect, disconnect, isConnected,
// stats), built from the same parts (a client factory, the outbox, a Telemetry, the assets). No
// KuraPayload application is served on such a connection.
//
// Topics spBv1.0/<group>/<type>/<edge node>[/<device>], built and checked by topic.ts; assets are
// devices named by their PID (an asset whose PID cannot be a topic level is left out, with a warning),
// channels are metrics named by channel name with an alias each (unique on the edge node, kept while
// the daemon runs). The Sparkplug 3.0 specification ("Topics and Messages", "Operational Behavior"):
// - every CONNECT has clean session, the will is NDEATH (QoS 1, not retained) with `bdSeq`, one more
//   than at the previous CONNECT (0 after 255), kept in dataDir across restarts; NBIRTH repeats it;
// - NBIRTH (seq 0), then a DBIRTH per device with every metric's current value (is_null without one),
//   DDATA by exception (Telemetry's deadband and publish.max.interval), DDEATH when a poll of the device
//   fails on every channel (it stopped answering) and DBIRTH at its first answer again; an asset
//   added or removed at run time is born or dies; seq 0 … 255 over every message but NDEATH;
// - NCMD `Node Control/Rebirth` true: NBIRTH (same bdSeq, seq 0) and every DBIRTH again;
// - DCMD writes by name or alias through the one conversion of written values (channels/values.ts
//   parseValueText, assets/channel-access.ts sortWrites) and the assets' write: a command of which
//   one metric is refused writes nothing; a refusal is logged, and a DDATA with the current value of
//   the refused metrics tells the host what the device holds;
// - with `sparkplug.primary.host.id`: STATE/<host id> (3.0 JSON, read by host-state.ts) decides; nothing is born before the
//   host is online, and when it goes offline the session ends (NDEATH, DISCONNECT) and a new one
//   waits for it. Meanwhile DDATA is held in the outbox (as historical), published in order after
//   the next NBIRTH and DBIRTHs. A STATE older than the last one seen of that host is ignored.
// Data messages are QoS 0 as the specification asks; the NCMD, DCMD and STATE subscriptions QoS 1.
// DDATA goes through the outbox (bounded as a Kura connection's), drained at once while the node is
// born; a DDATA of a device not born now is dropped when its turn comes. DBIRTH and DDEATH are
// published only while the node is born: otherwise the next NBIRTH's DBIRTHs tell the present.

import fs from 'node:fs';
import path from 'node:path';
import type { AssetConfig, AssetService } from '../../assets/types.js';
import { sortWrites } from '../../assets/channel-access.js';
import type { ChannelRecord, TypedValue } from '../../channels/types.js';
import { parseValueText } from '../../channels/values.js';
import type { ReadTls } from '../../core/keystore-reference.js';
import type { Logger } from '../../log.js';
import { writeFileAtomicSync } from '../../store/atomic.js';
import { readTlsFiles } from '../tls-files.js';
import type { MqttClient, MqttClientOptions, MqttMessage } from '../client.js';
import { DEFAULT_CONNECTION, connectionLog, outboxDirName, type MqttConfig } from '../config.js';
import { connectionStats, keepingErrors, type ConnectionStats, type MqttConnection } from '../service.js';
import type { Telemetry } from '../telemetry.js';
import type { TelemetryOutbox } from '../telemetry-outbox.js';
import { edgeNodeId } from './config.js';
import { decodeHostState } from './host-state.js';
import { idProblem, sparkplugTopic, type DeviceMessageType, type NodeMessageType } from './topic.js';
import { commandWriteText, decodeCommand, encodePayload, metricName, withSeq, type OutMetric } from './wire.js';

export interface EdgeNodeOptions {
  /** The connection's name (`default` for the object form of `mqtt`). */
  name?: string;
  /** `mqtt` or `mqtt.connections.<name>`: where its keys are, for messages. */
  keyPath?: string;
  config: MqttConfig;
  outbox: TelemetryOutbox;
  /** Report-by-exception of each poll (its `publish` calls publishTelemetry); not started: the edge node feeds it. */
  telemetry: Telemetry;
  assets: Pick<AssetService, 'get' | 'onPoll' | 'write'>;
  client(options: MqttClientOptions): MqttClient;
  log: Logger;
  /** bdSeq is kept in `<dataDir>/<the connection's outbox folder>/sparkplug-bdseq` (beside the outbox, which makes the folder). */
  dataDir: string;
  readTls?: ReadTls;
  tuning?: { reconnectMin?: number; reconnectMax?: number; connectTimeout?: number };
}

interface Device {
  asset: AssetConfig;
  /** Answered at its last poll; undefined before the first. */
  alive?: boolean;
  /** DBIRTH published since the current NBIRTH. */
  born?: boolean;
  /** Its last record of each channel. */
  last: Map<string, ChannelRecord>;
}

const REBIRTH = 'Node Control/Rebirth';
/** QoS 0 publications fail only when the connection is gone: the next session's births tell the present. */
const ignore = () => {};
const value = (r: ChannelRecord | undefined): TypedValue | null => (r?.status === 'SUCCESS' && r.value) || null;

export class SparkplugEdgeNode implements MqttConnection {
  readonly name: string;
  readonly type = 'sparkplug' as const;
  readonly #o: EdgeNodeOptions;
  /** Disconnected on request (cloudconnection/v1 `_disconnect`) until `connect()`. */
  #held = false;
  #published = 0;
  #connects = 0;
  #lastError: { at: number; message: string } | null = null;
  readonly #outbox: TelemetryOutbox;
  readonly #log: Logger;
  #config: MqttConfig;
  #client?: MqttClient;
  #open = false;
  #unlisten: (() => void)[] = [];
  #devices = new Map<string, Device>();
  /** `<pid>\0<channel>` (the node's own metrics: pid '') → alias, and back. */
  readonly #aliases = new Map<string, bigint>();
  readonly #byAlias = new Map<bigint, string>();
  #bdSeq = -1;
  #seq = 0;
  /** NBIRTH published in this MQTT session. */
  #born = false;
  /** The timestamp of the last STATE of the primary host in force (-1: none yet). */
  #lastState = -1;
  /** PIDs that cannot be a device id, warned about once. */
  readonly #badIds = new Set<string>();
  /** DCMDs being written. */
  #busy = 0;
  /** The asset whose poll is a DBIRTH now (Telemetry's publication of it is not a DDATA). */
  #birthing?: string;

  constructor(o: EdgeNodeOptions) {
    this.#o = o;
    this.#outbox = o.outbox;
    this.#config = o.config;
    this.name = o.name ?? DEFAULT_CONNECTION;
    this.#log = connectionLog(o.log, this.name);
    this.#alias('', REBIRTH);
  }

  async start(): Promise<void> {
    if (!this.#config.enabled) return this.#log.info('mqtt disabled');
    if (!this.#open) {
      await this.#outbox.open();
      this.#open = true;
      this.#unlisten.push(this.#outbox.onEnqueue(() => this.#pump()), this.#o.assets.onPoll((pid, records) => this.#onPoll(pid, records)));
    }
    if (!this.#held) this.#dial();
  }

  async stop(): Promise<void> {
    for (const u of this.#unlisten.splice(0)) u();
    await this.#hangUp();
    if (this.#open) await this.#outbox.close();
    this.#open = false;
  }

  /** A new `mqtt` section: the devices follow the assets in force; a changed connection reconnects. */
  async reconfigure(next: MqttConfig): Promise<void> {
    this.#syncDevices();
    if (JSON.stringify(next) === JSON.stringify(this.#config)) return;
    // Another host's STATE timestamps are its own clock's: none of the previous host's is older or newer.
    if (next['sparkplug.primary.host.id'] !== this.#config['sparkplug.primary.host.id']) this.#lastState = -1;
    this.#outbox.maxMessages = next['outbox.max.messages'];
    this.#outbox.maxBytes = next['outbox.max.bytes'];
    await this.#hangUp();
    this.#config = next;
    await this.start();
  }

  async reconnect(reason: string): Promise<void> {
    if (!this.#config.enabled || !this.#open || this.#held) return;
    this.#log.info('mqtt reconnecting', { reason });
    await this.#hangUp();
    this.#dial();
  }

  /** The connection's settings in force. */
  get settings(): MqttConfig {
    return this.#config;
  }

  get isConnected(): boolean {
    return !!this.#client?.isConnected;
  }

  stats(): ConnectionStats {
    return connectionStats(this.#config, this.#outbox, { connected: this.isConnected, held: this.#held, published: this.#published, connects: this.#connects, lastError: this.#lastError });
  }

  /** The operator's connect (cloudconnection/v1 `_connect`), after a `disconnect` or to try again now. */
  async connect(): Promise<void> {
    this.#held = false;
    if (!this.#config.enabled || !this.#open || this.#client?.isConnected) return;
    await this.#hangUp();
    this.#dial();
  }

  /** The operator's disconnect: NDEATH and a clean DISCONNECT, held until `connect()`; what is pending stays in the outbox. */
  async disconnect(): Promise<void> {
    this.#held = true;
    if (this.#client) this.#log.info('mqtt disconnected on request');
    await this.#hangUp();
  }

  /** Connects: a new client, which asks for the will (a new bdSeq) at each CONNECT. */
  #dial(): void {
    const c = this.#config;
    const tls = readTlsFiles(c, this.#log, this.#o.readTls, this.#o.keyPath, (message) => (this.#lastError = { at: Date.now(), message }));
    if (!tls) return;
    let client: MqttClient;
    let subscriptions: string[];
    try {
      // Built first: an id that cannot be a topic level stops here, before a will is asked for.
      const host = c['sparkplug.primary.host.id'];
      subscriptions = [this.#topic('NCMD'), `${this.#topic('DCMD', '-').slice(0, -1)}+`, ...(host ? [sparkplugTopic({ type: 'STATE', hostId: host })] : [])];
      client = this.#o.client({
        url: c['broker-url'],
        clientId: c['client-id'],
        username: c.username,
        password: c.password,
        keepAlive: c['keep-alive'],
        // Clean session always (tck-id-principles-persistence-clean-session-311).
        clean: true,
        will: () => this.#nextDeath(),
        disconnectMessage: () => this.#death(),
        tls,
        ...this.#o.tuning,
        log: keepingErrors(this.#log, (e) => (this.#lastError = e)),
      });
    } catch (err) {
      this.#lastError = { at: Date.now(), message: `not started: ${(err as Error).message}` };
      return this.#log.error('mqtt not started', { error: (err as Error).message });
    }
    client.on('message', (topic: string, payload: Buffer) => this.#onMessage(topic, payload));
    client.on('connect', () => {
      this.#connects++;
      this.#born = false;
      // With a primary host, its retained STATE decides (tck-id-message-flow-edge-node-birth-publish-subscribe).
      if (!c['sparkplug.primary.host.id']) this.#birth();
    });
    client.on('offline', () => this.#unborn());
    this.#client = client;
    const failed = (err: unknown) => this.#log.warn('mqtt subscribe failed', { error: (err as Error).message });
    for (const t of subscriptions) client.subscribe(t, 1).catch(failed);
    client.start();
  }

  /** NDEATH and a clean DISCONNECT; what is pending stays in the outbox. */
  async #hangUp(): Promise<void> {
    const client = this.#client;
    this.#client = undefined;
    this.#unborn();
    await client?.end();
  }

  /** One asset's changed records (Telemetry's `publish`): a DDATA, historical while not born. */
  publishTelemetry(pid: string, records: ChannelRecord[]): void {
    if (pid !== this.#birthing && this.#devices.get(pid)?.alive) this.#ddata(pid, this.#metrics(pid, records, !this.#born));
  }

  // ---- internals -------------------------------------------------------------------------------

  #unborn(): void {
    this.#born = false;
    this.#outbox.setOnline(false);
  }

  /** A node's or device's topic (topic.ts checks each id: it throws SparkplugError for one that is no topic level). */
  #topic(type: NodeMessageType | DeviceMessageType, device?: string): string {
    const c = this.#config;
    const ids = { group: c['sparkplug.group.id'], edgeNode: edgeNodeId(c) };
    return sparkplugTopic(device === undefined ? { type: type as NodeMessageType, ...ids } : { type: type as DeviceMessageType, ...ids, device });
  }

  #alias(pid: string, name: string): bigint {
    const key = `${pid}\u0000${name}`;
    let a = this.#aliases.get(key);
    if (a === undefined) {
      this.#aliases.set(key, (a = BigInt(this.#aliases.size + 1)));
      this.#byAlias.set(a, key);
    }
    return a;
  }

  /** The will of the next CONNECT: bdSeq one more than the last one (kept in dataDir), 0 after 255. */
  #nextDeath(): MqttMessage {
    const file = path.join(this.#o.dataDir, outboxDirName(this.name), 'sparkplug-bdseq');
    if (this.#bdSeq < 0) {
      try {
        this.#bdSeq = +fs.readFileSync(file, 'utf8');
      } catch {
        // The first connection: 0 below.
      }
      if (!(this.#bdSeq >= 0 && this.#bdSeq < 256)) this.#bdSeq = 255;
    }
    this.#bdSeq = (this.#bdSeq + 1) % 256;
    try {
      writeFileAtomicSync(file, `${this.#bdSeq}\n`);
    } catch (err) {
      this.#log.warn('sparkplug bdSeq not stored', { file, error: (err as Error).message });
    }
    return this.#death();
  }

  #death(): MqttMessage {
    const now = Date.now();
    return { topic: this.#topic('NDEATH'), payload: encodePayload(now, [{ name: 'bdSeq', timestamp: now, value: BigInt(this.#bdSeq) }]), qos: 1 };
  }

  /** NBIRTH (seq 0) and a DBIRTH per device that answers; then what waits in the outbox. */
  #birth(): void {
    const client = this.#client;
    if (!client?.isConnected) return;
    this.#born = false;
    this.#syncDevices();
    this.#born = true;
    this.#seq = 0;
    const now = Date.now();
    const node: OutMetric[] = [
      { name: 'bdSeq', timestamp: now, value: BigInt(this.#bdSeq) },
      { name: REBIRTH, alias: this.#alias('', REBIRTH), timestamp: now, value: false },
    ];
    this.#send(client, this.#topic('NBIRTH'), encodePayload(now, node)).catch(ignore);
    for (const [pid, d] of this.#devices) if ((d.born = !!d.alive)) this.#send(client, this.#topic('DBIRTH', pid), this.#birthPayload(pid, d)).catch(ignore);
    this.#outbox.setOnline(true);
    this.#pump();
  }

  #send(client: MqttClient, topic: string, payload: Buffer): Promise<void> {
    const p = client.publish(topic, withSeq(payload, this.#seq), { qos: 0 });
    this.#seq = (this.#seq + 1) % 256;
    this.#published++;
    return p;
  }

  /** Every enabled channel, with its name and its value of the last poll (is_null without one). */
  #birthPayload(pid: string, d: Device): Buffer {
    const now = Date.now();
    const metrics = d.asset.channels.filter((ch) => ch.enabled).map((ch): OutMetric => {
      const r = d.last.get(ch.name);
      return { name: ch.name, alias: this.#alias(pid, ch.name), timestamp: r?.timestamp || now, type: ch.valueType, value: value(r) };
    });
    return encodePayload(now, metrics);
  }

  /** DDATA metrics: by alias only (tck-id-payloads-alias-data-cmd-requirement). */
  #metrics(pid: string, records: ChannelRecord[], historical: boolean): OutMetric[] {
    return records.map((r) => ({ alias: this.#alias(pid, r.name), timestamp: r.timestamp, type: r.valueType, value: value(r), historical }));
  }

  /** DDATA: through the outbox, which keeps it while the node is not born. */
  #ddata(pid: string, metrics: OutMetric[]): void {
    if (this.#open) this.#outbox.enqueue(this.#topic('DDATA', pid), encodePayload(Date.now(), metrics), 0).catch((err) => this.#log.warn('DDATA not stored', { device: pid, error: (err as Error).message }));
  }

  /**
   * DBIRTH or DDEATH of a device, published at once while the node is born (the outbox is drained
   * whenever it is, so they come in order with DDATA); while it is not, the next NBIRTH's DBIRTHs tell
   * the present.
   */
  #device(type: DeviceMessageType, pid: string, payload: Buffer): void {
    if (this.#born && this.#client) this.#send(this.#client, this.#topic(type, pid), payload).catch(ignore);
  }

  /**
   * The devices are the assets in force that poll: a removed one dies, a changed one is forgotten
   * and born again at its next poll (an asset without poll.interval is no device: nothing would say
   * whether it answers).
   */
  #syncDevices(): void {
    for (const [pid, d] of this.#devices) {
      const asset = this.#o.assets.get(pid);
      if (asset === d.asset) continue;
      this.#o.telemetry.forget(pid);
      this.#devices.delete(pid);
      if (d.born) this.#device('DDEATH', pid, encodePayload(Date.now(), []));
    }
  }

  #birthDevice(pid: string): void {
    const d = this.#devices.get(pid)!;
    d.born = true;
    this.#device('DBIRTH', pid, this.#birthPayload(pid, d));
  }

  #onPoll(pid: string, records: ChannelRecord[]): void {
    const asset = this.#o.assets.get(pid);
    if (!asset) return;
    let d = this.#devices.get(pid);
    if (!d && this.#notDeviceId(pid)) return;
    if (d?.asset !== asset) {
      this.#o.telemetry.forget(pid);
      this.#devices.set(pid, (d = { asset, last: new Map() }));
    }
    for (const r of records) d.last.set(r.name, r);
    // A device that answers nothing at all has stopped answering (one failing channel is a null metric).
    if (records.length > 0 && !records.some((r) => r.status === 'SUCCESS')) {
      if (d.alive !== false) this.#o.telemetry.forget(pid);
      if (d.born) this.#device('DDEATH', pid, encodePayload(Date.now(), []));
      d.alive = d.born = false;
      return;
    }
    if (d.alive) return this.#o.telemetry.onPoll(pid, records);
    d.alive = true;
    // Telemetry learns the values the DBIRTH carries; its publication of them is the DBIRTH.
    this.#birthing = pid;
    try {
      this.#o.telemetry.onPoll(pid, records);
    } finally {
      this.#birthing = undefined;
    }
    if (this.#born) this.#birthDevice(pid);
  }

  /** A PID that cannot be a Sparkplug device id (a topic level) is no device: warned about once. */
  #notDeviceId(pid: string): boolean {
    const problem = idProblem(pid, 'device id');
    if (problem && !this.#badIds.has(pid)) {
      this.#badIds.add(pid);
      this.#log.warn('sparkplug asset not published', { asset: pid, error: problem });
    }
    return problem !== undefined;
  }

  /**
   * Hands pending messages to the client, seq added, oldest first; stale ones are dropped. QoS 0:
   * written to the socket at once (or not at all), so each is done when handed.
   */
  #pump(): void {
    const outbox = this.#outbox;
    const client = this.#client;
    if (!this.#open || !client?.isConnected || !this.#born) return;
    for (let m; (m = outbox.take()); outbox.ack(m.seq)) {
      const [, , type = '', , device = ''] = m.topic.split('/');
      // DDATA of a device not born now is dropped, as is a message of another group or edge node, or a Kura connection's (the type or ids changed).
      if (type === 'DDATA' && this.#devices.get(device)?.born && m.topic === this.#topic(type, device)) this.#send(client, m.topic, m.payload).catch(ignore);
    }
  }

  #onMessage(topic: string, payload: Buffer): void {
    const [, group, type, , device] = topic.split('/');
    const refused = (err: unknown) => this.#log.warn('sparkplug message refused', { topic, error: (err as Error).message });
    try {
      if (group === 'STATE') this.#onState(payload);
      else if (type === 'NCMD') this.#onNodeCommand(payload);
      // Bounded as Kura requests are (src/mqtt/service.ts): beyond, a command is refused, not queued.
      else if (device !== undefined && this.#busy < 256) {
        this.#busy++;
        this.#onDeviceCommand(device, payload).catch(refused).finally(() => this.#busy--);
      } else throw new Error('busy');
    } catch (err) {
      refused(err);
    }
  }

  /**
   * spBv1.0/STATE/<host id>, Sparkplug 3.0's JSON {"online", "timestamp"}: an older one than the last
   * is ignored; online, the node is born; offline, the session ends and the next waits for the host
   * (tck-id-operational-behavior-primary-application-state-with-multiple-servers-walk).
   */
  #onState(payload: Buffer): void {
    const s = decodeHostState(payload);
    if (s.timestamp < this.#lastState) return;
    this.#lastState = s.timestamp;
    this.#log.info('sparkplug primary host', { online: s.online });
    if (s.online && !this.#born) this.#birth();
    else if (!s.online && this.#born) void this.reconnect('primary host offline');
  }

  /** Node Control/Rebirth (Boolean true, by name or alias): NBIRTH and every DBIRTH again, seq from 0, the same bdSeq. */
  #onNodeCommand(payload: Buffer): void {
    for (const m of decodeCommand(payload)) {
      if (m.name !== REBIRTH && (m.name !== undefined || m.alias !== this.#alias('', REBIRTH))) throw new Error(`${metricName(m)}: not a node control`);
      if (m.field === 14 && m.raw !== 0n && this.#born) this.#birth();
    }
  }

  /**
   * DCMD: each metric (by name or alias) as a write of its channel, through the one parse and the
   * channel rules of every write; one refused, nothing is written. A refusal is logged and answered
   * with a DDATA of the current values of the metrics asked for.
   */
  async #onDeviceCommand(pid: string, payload: Buffer): Promise<void> {
    const asset = this.#o.assets.get(pid);
    if (!asset) throw new Error('no such asset');
    const refused: string[] = [];
    const items: { name: string; value: TypedValue }[] = [];
    for (const m of decodeCommand(payload)) {
      const key = m.name === undefined ? this.#byAlias.get(m.alias ?? -1n) : `${pid}\u0000${m.name}`;
      const ch = key?.startsWith(`${pid}\u0000`) ? asset.channels.find((c) => c.name === key.slice(pid.length + 1)) : undefined;
      const t = ch ? commandWriteText(m, ch.valueType) : { ok: false as const, error: `${metricName(m)}: not a channel of ${pid}` };
      const v = t.ok ? parseValueText(t.type, t.text) : t.error;
      if (typeof v === 'string') refused.push(t.ok ? `${metricName(m)}: ${v}` : v);
      if (ch) items.push({ name: ch.name, value: typeof v === 'string' ? { type: 'STRING', value: v } : v });
    }
    // Kura's channel rules (mode, enabled, the conversion to the channel's type) before anything is written.
    const said = (r: ChannelRecord | undefined) => r?.error && refused.push(`metric ${JSON.stringify(r.name)}: ${r.error}`);
    if (refused.length === 0) sortWrites(asset, items, Date.now()).records.forEach(said);
    let records = refused.length === 0 ? await this.#o.assets.write(pid, items) : [];
    records.forEach(said);
    const d = this.#devices.get(pid);
    if (refused.length > 0) {
      this.#log.warn('sparkplug DCMD refused', { device: pid, refused });
      records = items.flatMap((it) => d?.last.get(it.name) ?? []);
    }
    if (d?.born && records.length > 0) this.#ddata(pid, this.#metrics(pid, records, false));
  }
}
