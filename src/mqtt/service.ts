// MqttService: the MQTT side of the daemon. It runs one MqttClient at a time (made by the `client`
// factory it is given, anew after each reconfiguration), serves the MQTT applications it is given
// (src/mqtt/applications.ts) with one subscription each, hands the outbox's telemetry to the client,
// and follows configuration changes (SIGHUP) without losing the outbox. The daemon builds the
// parts (src/daemon.ts): applications, outbox, telemetry, client factory.
//
// Life-cycle messages, as Kura's CloudServiceImpl / MqttDataTransport (docs/mqtt.md "Life-cycle messages"):
//   <prefix>/<account>/<client-id>/MQTT/BIRTH  after each CONNACK and again (debounced) when the set of
//       application ids changes, QoS 1: Kura's string metrics (src/mqtt/lifecycle.ts);
//   <prefix>/<account>/<client-id>/MQTT/DC     before a clean DISCONNECT, QoS 1: uptime, display_name;
//   <prefix>/<account>/<client-id>/MQTT/LWT    the last will, QoS 0: timestamp of when the connection
//       was set up (the will is fixed at CONNECT time, so it cannot carry the time of death).
// The device publishes on other clients' topics only …/REPLY/… and …/NOTIFY/<own client id>/…
// (Eclipse Kapua's broker ACLs); `mayPublish` holds every reply and notification to that.
// What this connection serves is its own (`requester.permissions`, `applications.disabled`: the
// applications it subscribes to, announces in BIRTH and answers; docs/mqtt.md "Who may send
// requests"); those two and the outbox bounds change without reconnecting.
// Encoded as KuraPayload protobuf with `kura-protobuf`, as simple-json with the two JSON encodings.
// One MqttService is one connection of `mqtt.connections` (src/mqtt/connections.ts, docs/mqtt.md
// "Connections"): its logs name it unless it is `default`, and the operator's `connect` and
// `disconnect` (cloudconnection/v1) hold it disconnected, queuing telemetry, until connected again.

import type { ChannelRecord } from '../channels/types.js';
import type { Logger } from '../log.js';
import type { MqttApplications, RequesterPolicy } from './applications.js';
import { Envelope, type Reply } from './envelope.js';
import { MqttError, type MqttClient, type MqttClientOptions, type MqttMessage } from './client.js';
import { connectionLog, type ConnectionType, type MqttConfig } from './config.js';
import { encodeKuraPayloadForWire, type KuraMetric, type KuraPayload } from './kura-payload.js';
import { readTlsFiles, type TlsMaterial } from './tls-files.js';
import { birthMetrics, dcMetrics, type LifecycleFacts } from './lifecycle.js';
import type { TelemetryOutbox } from './telemetry-outbox.js';
import { encodeSimpleJsonPayload } from './simple-json-payload.js';
import type { ReadTls } from '../core/keystore-reference.js';
import { MetricNames, encodeTelemetry, type Telemetry } from './telemetry.js';

export interface MqttServiceOptions {
  config: MqttConfig;
  /** The connection's name (docs/mqtt.md "Connections"); default `default`. */
  name?: string;
  /** Where its keys are in the configuration, for messages: `mqtt` or `mqtt.connections.<name>`. */
  keyPath?: string;
  /** The MQTT applications to serve; BIRTH's application_ids. */
  applications: MqttApplications;
  /** The store-and-forward queue of telemetry: opened when MQTT is first enabled, closed by stop(). */
  outbox: TelemetryOutbox;
  /** Report-by-exception telemetry, running while MQTT is enabled; its records go to publishTelemetry. */
  telemetry: Telemetry;
  /** Makes the client for the current configuration. */
  client(options: MqttClientOptions): MqttClient;
  log: Logger;
  /** Reads `tls.*` values: files, or keystore entries (docs/configuration.md "Certificates from a keystore"); default: files. */
  readTls?: ReadTls;
  /** Tuning for tests; production uses the defaults. */
  tuning?: {
    reconnectMin?: number;
    reconnectMax?: number;
    connectTimeout?: number;
  };
}

/** QoS 1 telemetry messages handed to the client at once. */
const WINDOW = 32;
/** ASSET-V1 requests being served at once; more are dropped (and logged) rather than queued. */
const MAX_CONCURRENT_REQUESTS = 256;
/** How long the reply to a request that made the daemon reconnect waits for the new connection. */
const REPLY_AFTER_RECONNECT_MS = 10_000;
/** Keys applied to a running connection (their values here only blank them out for a comparison). */
const LIVE_KEYS = { 'requester.permissions': [], 'applications.disabled': [], 'outbox.max.messages': 0, 'outbox.max.bytes': 0, 'telemetry.assets': [] };

/** A connection's figures (cloudconnection/v1, docs/rest-api.md): no secret in any of them. */
export interface ConnectionStats {
  connected: boolean;
  /** Disconnected on request (`_disconnect`) until `_connect` or a restart. */
  held: boolean;
  brokerUrl: string;
  clientId: string;
  outbox: { pending: number; dropped: number; bytes: number };
  /** Telemetry messages the broker acknowledged (QoS 1) or that were sent (QoS 0) since the start. */
  published: number;
  /** CONNACKs after the first one. */
  reconnects: number;
  /** The last connection error as logged, with its time; null if none since the start. */
  lastError: { at: number; message: string } | null;
}

/**
 * One MQTT connection as src/mqtt/connections.ts runs it: MqttService (type `kura`) and any other
 * type (its factory) have this surface. `connect`/`disconnect` are the operator's (REST `_connect`,
 * `_disconnect`); configuration changes go through `reconfigure`.
 */
export interface MqttConnection {
  readonly name: string;
  readonly type: ConnectionType;
  start(): Promise<void>;
  stop(): Promise<void>;
  reconfigure(config: MqttConfig): Promise<void>;
  /** Connects again with TLS material read anew (a keystore entry it uses changed). */
  reconnect(reason: string): Promise<void>;
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  readonly isConnected: boolean;
  stats(): ConnectionStats;
}

/** What a connection counts of itself, for connectionStats. */
export interface ConnectionCounters {
  connected: boolean;
  held: boolean;
  published: number;
  /** CONNACKs since the start. */
  connects: number;
  lastError: { at: number; message: string } | null;
}

/** A connection's stats() (MqttService, the Sparkplug edge node) from its settings, its outbox and its counters. */
export function connectionStats(c: MqttConfig, outbox: TelemetryOutbox, n: ConnectionCounters): ConnectionStats {
  const o = outbox.stats();
  return {
    connected: n.connected,
    held: n.held,
    brokerUrl: c['broker-url'],
    clientId: c['client-id'],
    outbox: { pending: o.pending, dropped: o.dropped, bytes: o.bytes },
    published: n.published,
    reconnects: Math.max(0, n.connects - 1),
    lastError: n.lastError,
  };
}

/**
 * A client's log that also hands each warning and error to `keep`, as a connection's `lastError`
 * (cloudconnection/v1); their text has no secret (src/mqtt/client.ts logs none).
 */
export function keepingErrors(log: Logger, keep: (e: { at: number; message: string }) => void): Logger {
  const kept = (msg: string, fields?: Record<string, unknown>) => {
    const e = fields?.error ?? fields?.reason ?? fields?.returnCode;
    keep({ at: Date.now(), message: e === undefined ? msg : `${msg}: ${String(e)}` });
  };
  const wrapped: Logger = Object.create(log);
  wrapped.error = (msg, fields) => (kept(msg, fields), log.error(msg, fields));
  wrapped.warn = (msg, fields) => (kept(msg, fields), log.warn(msg, fields));
  return wrapped;
}

export class MqttService implements MqttConnection {
  readonly name: string;
  readonly type: ConnectionType = 'kura';
  private readonly keyPath: string;
  private held = false;
  private published = 0;
  private connects = 0;
  private lastError: { at: number; message: string } | null = null;
  private config: MqttConfig;
  private readonly log: Logger;
  private client?: MqttClient;
  private envelope?: Envelope;
  /** Application ids subscribed on the current client. */
  private subscribed = new Set<string>();
  readonly applications: MqttApplications;
  private readonly outbox: TelemetryOutbox;
  private readonly telemetry: Telemetry;
  private outboxOpen = false;
  /** Messages handed to the current client and not yet acknowledged (a new set per client). */
  private handed = new Set<bigint>();
  private unlistenOutbox?: () => void;
  private activeRequests = 0;
  private readonly startedAt = Date.now();
  /** Telemetry metric names, encoded once per channel. */
  private readonly metricNames = new MetricNames();

  constructor(private readonly opts: MqttServiceOptions) {
    this.config = opts.config;
    this.name = opts.name ?? 'default';
    this.keyPath = opts.keyPath ?? 'mqtt';
    this.log = connectionLog(opts.log, this.name);
    this.applications = opts.applications;
    this.outbox = opts.outbox;
    this.telemetry = opts.telemetry;
    this.applications.onChange(() => {
      this.syncSubscriptions();
      this.scheduleBirth();
    });
  }

  async start(): Promise<void> {
    if (!this.config.enabled) {
      this.log.info('mqtt disabled');
      return;
    }
    await this.openOutbox();
    this.dial();
  }

  /**
   * Applies a new `mqtt` section (SIGHUP). The outbox and its pending messages are kept. A change of
   * the requester policy or the outbox bounds only is applied to the running connection (BIRTH is
   * published again when the applications it serves change); anything else reconnects.
   */
  async reconfigure(next: MqttConfig): Promise<void> {
    if (JSON.stringify(next) === JSON.stringify(this.config)) return;
    const prev = this.config;
    this.outbox.maxMessages = next['outbox.max.messages'];
    this.outbox.maxBytes = next['outbox.max.bytes'];
    const connection = (c: MqttConfig) => JSON.stringify({ ...c, ...LIVE_KEYS });
    if (connection(next) === connection(prev)) {
      this.config = next;
      if (JSON.stringify(next['applications.disabled']) !== JSON.stringify(prev['applications.disabled'])) {
        this.syncSubscriptions();
        this.scheduleBirth();
      }
      this.log.info('mqtt requester policy or outbox bounds changed');
      return;
    }
    this.log.info('mqtt configuration changed, reconnecting');
    await this.hangUp();
    this.config = next;
    if (!next.enabled) {
      this.telemetry.stop();
      if (this.outboxOpen) await this.outbox.flush();
      this.log.info('mqtt disabled');
      return;
    }
    await this.openOutbox();
    if (!this.held) this.dial();
  }

  /**
   * Connects again with the TLS material read anew: a keystore entry the connection uses changed
   * (docs/mqtt.md "Rotating the device certificate"). Nothing is lost: the outbox keeps what is
   * not acknowledged.
   */
  async reconnect(reason: string): Promise<void> {
    if (!this.config.enabled || !this.outboxOpen || this.held) return;
    this.log.info('mqtt reconnecting', { reason });
    await this.hangUp();
    this.dial();
  }

  /** DC message, clean DISCONNECT, outbox flushed to disk. */
  async stop(): Promise<void> {
    // Telemetry first (synchronously), so no poll cycle lands in a closing outbox.
    this.telemetry.stop();
    await this.hangUp();
    this.unlistenOutbox?.();
    if (this.outboxOpen) await this.outbox.close();
    this.outboxOpen = false;
  }

  get isConnected(): boolean {
    return this.client?.isConnected ?? false;
  }

  /** The settings in force. */
  get settings(): MqttConfig {
    return this.config;
  }

  /** The operator's disconnect: DC, clean DISCONNECT; telemetry keeps going to the outbox. */
  async disconnect(): Promise<void> {
    this.held = true;
    if (this.client) this.log.info('mqtt disconnected on request');
    await this.hangUp();
  }

  /** The operator's connect, after a `disconnect` (or to try again now after a failure). */
  async connect(): Promise<void> {
    this.held = false;
    if (!this.config.enabled) return;
    if (this.client?.isConnected) return;
    await this.hangUp();
    await this.openOutbox();
    this.dial();
  }

  stats(): ConnectionStats {
    return connectionStats(this.config, this.outbox, { connected: this.isConnected, held: this.held, published: this.published, connects: this.connects, lastError: this.lastError });
  }

  // ---- internals -------------------------------------------------------------------------------

  /** Opens the outbox once; telemetry runs as long as MQTT is enabled (a reconnection loses no poll cycle). */
  private async openOutbox(): Promise<void> {
    if (!this.outboxOpen) {
      await this.outbox.open();
      this.outboxOpen = true;
      this.unlistenOutbox = this.outbox.onEnqueue(() => this.pump());
    }
    this.telemetry.start();
  }

  private topicBase(): string {
    const c = this.config;
    return `${c['topic.control-prefix']}/${c['topic.context.account-name']}/${c['client-id']}`;
  }

  private lifecyclePayload(metrics: KuraMetric[]): Buffer {
    const p: KuraPayload = { timestamp: BigInt(Date.now()), metrics };
    return this.config['payload.encoding'] === 'kura-protobuf' ? encodeKuraPayloadForWire(p, this.gzip) : encodeSimpleJsonPayload(p);
  }

  private get gzip(): boolean {
    return this.config['encode.gzip'];
  }

  private facts(): LifecycleFacts {
    const c = this.config;
    return { startedAt: this.startedAt, clientId: c['client-id'], encoding: c['payload.encoding'], applicationIds: this.servedIds(), connectionIp: this.client?.localAddress };
  }

  /** The applications this connection serves: every registered one but those it disables. */
  private servedIds(): string[] {
    const disabled = this.config['applications.disabled'];
    return this.applications.ids().filter((id) => !disabled.includes(id));
  }

  /** The requester policy in force for the next request. */
  private policy(): RequesterPolicy {
    const c = this.config;
    return { permissions: c['requester.permissions'], serves: (appId) => !c['applications.disabled'].includes(appId) };
  }

  private birth(): MqttMessage {
    return { topic: `${this.topicBase()}/MQTT/BIRTH`, payload: this.lifecyclePayload(birthMetrics(this.facts())), qos: 1 };
  }

  private birthTimer?: NodeJS.Timeout;

  /** BIRTH again once the application ids settle (a package may add several handlers at once). */
  private scheduleBirth(): void {
    clearTimeout(this.birthTimer);
    this.birthTimer = setTimeout(() => {
      const client = this.client;
      if (!client?.isConnected) return; // the next connection's BIRTH carries the new ids
      const b = this.birth();
      client.publish(b.topic, b.payload, { qos: 1 }).catch(() => {});
    }, 1000);
    this.birthTimer.unref?.();
  }

  /**
   * Topics the device may publish replies and notifications on: its own, and on another client's
   * only `<prefix>/<account>/<client>/<app>/REPLY/…` and `…/<app>/NOTIFY/<own client id>/…`.
   */
  private mayPublish(topic: string): boolean {
    const c = this.config;
    const l = topic.split('/');
    if (l[0] !== c['topic.control-prefix'] || l[1] !== c['topic.context.account-name'] || l.length < 6) return false;
    return l[2] === c['client-id'] || l[4] === 'REPLY' || (l[4] === 'NOTIFY' && l[5] === c['client-id']);
  }

  private readTls(): TlsMaterial | undefined {
    return readTlsFiles(this.config, this.log, this.opts.readTls, this.keyPath, (message) => (this.lastError = { at: Date.now(), message }));
  }

  private dial(): void {
    const c = this.config;
    const base = this.topicBase();
    const tlsMaterial = this.readTls();
    if (!tlsMaterial) return;
    const envelope = new Envelope({
      prefix: c['topic.control-prefix'],
      account: c['topic.context.account-name'],
      clientId: c['client-id'],
      encoding: c['payload.encoding'],
      gzip: this.gzip,
    });
    const lwt: MqttMessage = { topic: `${base}/MQTT/LWT`, payload: this.lifecyclePayload([]), qos: 0 };
    let client: MqttClient;
    try {
      client = this.opts.client({
        url: c['broker-url'],
        clientId: c['client-id'],
        username: c.username || undefined,
        password: c.password || undefined,
        keepAlive: c['keep-alive'],
        clean: c['clean-session'],
        will: lwt,
        birth: () => this.birth(),
        disconnectMessage: () => ({ topic: `${base}/MQTT/DC`, payload: this.lifecyclePayload(dcMetrics(this.facts())), qos: 1 }),
        tls: tlsMaterial,
        connectTimeout: this.opts.tuning?.connectTimeout,
        reconnectMin: this.opts.tuning?.reconnectMin,
        reconnectMax: this.opts.tuning?.reconnectMax,
        log: keepingErrors(this.log, (e) => (this.lastError = e)),
      });
    } catch (err) {
      const option = err instanceof MqttError ? err.option : undefined;
      const key = option === 'url' ? `${this.keyPath}.broker-url` : option ? `${this.keyPath}.${option}` : this.keyPath;
      this.lastError = { at: Date.now(), message: `not started: ${key}: ${(err as Error).message}` };
      this.log.error('mqtt not started', { key, error: (err as Error).message });
      return;
    }
    client.on('message', (topic: string, payload: Buffer) => this.onMessage(client, envelope, topic, payload));
    // Flash-friendly outbox: telemetry acknowledged while connected is never written (telemetry-outbox.ts).
    client.on('connect', () => {
      this.connects++;
      this.outbox?.setOnline(true);
    });
    client.on('offline', () => this.outbox?.setOnline(false));
    this.client = client;
    this.envelope = envelope;
    this.subscribed.clear();
    this.syncSubscriptions();
    client.start();
    this.pump();
  }

  /** One subscription per application id (Kura subscribes per cloudlet), added and removed at run time. */
  private syncSubscriptions(): void {
    const client = this.client;
    const envelope = this.envelope;
    if (!client || !envelope) return;
    const ids = new Set(this.servedIds());
    const failed = (err: unknown) => this.log.warn('mqtt subscribe failed', { error: (err as Error).message });
    for (const id of ids) {
      if (this.subscribed.has(id)) continue;
      this.subscribed.add(id);
      client.subscribe(envelope.subscription(id), 1).catch(failed);
    }
    for (const id of this.subscribed) {
      if (ids.has(id)) continue;
      this.subscribed.delete(id);
      client.unsubscribe(envelope.subscription(id)).catch(failed);
    }
  }

  private onMessage(client: MqttClient, envelope: Envelope, topic: string, payload: Buffer): void {
    // A payload over MAX_REQUEST_BYTES is refused by the envelope (src/mqtt/envelope.ts) with a reply when it can be.
    if (this.activeRequests >= MAX_CONCURRENT_REQUESTS) {
      this.log.warn('MQTT request dropped: too many requests in progress', { topic, limit: MAX_CONCURRENT_REQUESTS });
      return;
    }
    this.activeRequests++;
    // Replies and notifications are QoS 0, retain false, as Kura publishes them.
    const send = (r: Reply) => {
      if (this.mayPublish(r.topic)) return client.publish(r.topic, r.payload, { qos: 0 });
      this.log.warn('MQTT reply not sent: topic outside the broker rules', { topic: r.topic });
      return Promise.resolve();
    };
    this.applications
      .dispatch(envelope, topic, payload, (r) => void send(r).catch(() => {}), this.log, this.policy())
      .then(async (reply) => {
        if (!reply) return;
        const now = await this.replyConnection(client);
        if (now === client) await send(reply);
        else if (this.mayPublish(reply.topic)) await now.publish(reply.topic, reply.payload, { qos: 0 });
      })
      .catch((err) => this.log.warn('MQTT reply not sent', { topic, error: (err as Error).message }))
      .finally(() => this.activeRequests--);
  }

  /**
   * The connection to answer a request that came on `client` over. A request that changed this
   * connection's own settings (CONF-V2 or CONF-V1 updating the mqtt component) has made the daemon
   * reconnect before its reply was ready: it is answered on the new connection once that is up
   * (within REPLY_AFTER_RECONNECT_MS), as Kura answers such a change before applying it.
   */
  private async replyConnection(client: MqttClient): Promise<MqttClient> {
    const now = this.client;
    if (!now || now === client || now.isConnected) return now ?? client;
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        now.off('connect', done);
        resolve();
      };
      const timer = setTimeout(done, REPLY_AFTER_RECONNECT_MS);
      now.once('connect', done);
    });
    return now;
  }

  /** Queues one asset's telemetry (the Telemetry's `publish`). */
  publishTelemetry(pid: string, records: ChannelRecord[]): void {
    const outbox = this.outbox;
    if (!this.outboxOpen) return;
    const c = this.config;
    const topic = `${c['topic.context.account-name']}/${c['client-id']}/assets/${pid}`;
    outbox
      // The payload is made for this message alone: the outbox may free it at the PUBACK.
      .enqueue(topic, encodeTelemetry(pid, records, c['payload.encoding'], this.gzip, this.metricNames), 1, true)
      .catch((err) => this.log.warn('telemetry not stored', { asset: pid, error: (err as Error).message }));
  }

  /** Hands pending outbox messages to the client, WINDOW at a time, oldest first. */
  private pump(): void {
    const outbox = this.outbox;
    const client = this.client;
    const handed = this.handed;
    if (!this.outboxOpen || !client) return;
    while (handed.size < WINDOW) {
      const m = outbox.take();
      if (!m) return;
      // A Sparkplug edge node's DDATA, held in this outbox before the connection's type became kura
      // (docs/mqtt.md "Sparkplug B": dropped, not sent); `spBv1.0` is Sparkplug's namespace only.
      if (m.topic.startsWith('spBv1.0/')) {
        outbox.ack(m.seq);
        continue;
      }
      handed.add(m.seq);
      const seq = m.seq;
      client.publish(m.topic, m.payload, { qos: m.qos }).then(
        () => {
          handed.delete(seq);
          outbox.ack(seq);
          this.published++;
          this.pump();
        },
        // The client was stopped (disconnect() put its messages back); they stay in the outbox.
        () => handed.delete(seq),
      );
    }
  }

  private async hangUp(): Promise<void> {
    clearTimeout(this.birthTimer);
    this.outbox?.setOnline(false);
    const client = this.client;
    this.client = undefined;
    this.envelope = undefined;
    if (client) await client.end();
    this.handed = new Set();
    this.outbox.untakeAll();
  }
}
