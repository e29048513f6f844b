// MqttConnections: the daemon's MQTT connections, one per entry of the configuration
// (docs/mqtt.md "Connections"). Each connection owns its client, its outbox (dataDir/mqtt for
// `default`, dataDir/mqtt-<name> for the others, with its own bounds), its Telemetry (only the
// assets of its `telemetry.assets`), the applications it serves and its requester permissions.
// Connections share nothing on the way out: each has its own outbox and client, so one broker's
// outage, slowness or full outbox holds only that connection's messages.
//
// A configuration change (SIGHUP, configuration/v2) adds, removes and reconfigures connections by
// name; a connection whose settings did not change is not touched. Which object runs a connection is
// its `type`'s factory (the table is a parameter: a build without a type's module has no entry, and
// such a connection is listed, not started, with the reason).

import path from 'node:path';
import type { AssetService } from '../assets/types.js';
import type { ChannelRecord } from '../channels/types.js';
import type { ReadTls } from '../core/keystore-reference.js';
import type { Logger } from '../log.js';
import type { MqttApplications } from './applications.js';
import type { MqttClient, MqttClientOptions } from './client.js';
import { DEFAULT_CONNECTION, connectionLog, outboxDirName, type ConnectionType, type MqttConfig, type MqttConnectionConfig, type NamedConnection } from './config.js';
import { MqttService, type ConnectionStats, type MqttConnection, type MqttServiceOptions } from './service.js';
import { SparkplugEdgeNode } from './sparkplug/edge-node.js';
import { Telemetry } from './telemetry.js';
import { TelemetryOutbox } from './telemetry-outbox.js';

export type { ConnectionStats, MqttConnection };

/** What a connection is built from. */
export interface ConnectionParts {
  name: string;
  /** `mqtt` or `mqtt.connections.<name>`: where its keys are, for messages. */
  keyPath: string;
  config: MqttConnectionConfig;
  dataDir: string;
  /** The MQTT applications the daemon has; each connection serves those it does not disable. */
  applications: MqttApplications;
  assets: Pick<AssetService, 'get' | 'onPoll' | 'write'>;
  client(options: MqttClientOptions): MqttClient;
  log: Logger;
  readTls?: ReadTls;
  tuning?: MqttServiceOptions['tuning'];
}

export type ConnectionFactory = (parts: ConnectionParts) => MqttConnection;
export type ConnectionFactories = Partial<Record<ConnectionType, ConnectionFactory>>;

/**
 * The poll cycles of the assets `accepts` takes; the configurations of all, or with `only` of
 * those it takes too (an edge node's devices: a DCMD for another asset finds no asset).
 */
function assetView(assets: Pick<AssetService, 'get' | 'onPoll' | 'write'>, accepts: (pid: string) => boolean, only = false): Pick<AssetService, 'get' | 'onPoll' | 'write'> {
  return {
    get: (pid) => (!only || accepts(pid) ? assets.get(pid) : undefined),
    write: (pid, items) => assets.write(pid, items),
    onPoll: (listener) => assets.onPoll((pid, records) => {
      if (accepts(pid)) listener(pid, records);
    }),
  };
}

/** `telemetry.assets` as a test, one Set per list (a reconfiguration brings a new list). */
function assetFilter(list: () => string[] | '*'): (pid: string) => boolean {
  let of: string[] | undefined;
  let set = new Set<string>();
  return (pid) => {
    const l = list();
    if (l === '*') return true;
    if (l !== of) (of = l), (set = new Set(l));
    return set.has(pid);
  };
}

/**
 * What every connection is made of besides its own object: its outbox (its own folder and bounds),
 * its view of the assets (those of its `telemetry.assets`, as `settings()` has them now; with
 * `only`, the other assets are not even found) and a Telemetry publishing through `publish`.
 */
function commonParts(p: ConnectionParts, settings: () => MqttConfig, only: boolean, publish: (pid: string, records: ChannelRecord[]) => void) {
  const c = p.config;
  const outbox = new TelemetryOutbox({ dir: path.join(p.dataDir, outboxDirName(p.name)), maxMessages: c['outbox.max.messages'], maxBytes: c['outbox.max.bytes'], log: connectionLog(p.log, p.name) });
  const assets = assetView(p.assets, assetFilter(() => (settings() as MqttConnectionConfig)['telemetry.assets'] ?? '*'), only);
  return { outbox, assets, telemetry: new Telemetry({ assets, log: p.log, publish }) };
}

/** A Kura-style connection (src/mqtt/service.ts): KuraPayload or JSON telemetry, BIRTH, the applications. */
export const kuraConnection: ConnectionFactory = (p) => {
  const { outbox, telemetry } = commonParts(p, () => service.settings, false, (pid, records) => service.publishTelemetry(pid, records));
  const service: MqttService = new MqttService({
    name: p.name,
    keyPath: p.keyPath,
    config: p.config,
    applications: p.applications,
    outbox,
    telemetry,
    client: p.client,
    log: p.log,
    readTls: p.readTls,
    tuning: p.tuning,
  });
  return service;
};

/**
 * A Sparkplug B edge node (src/mqtt/sparkplug/edge-node.ts): its devices are only the assets of its
 * `telemetry.assets` (a DCMD for another is refused, not written); its Telemetry is fed by the node
 * (a DDATA only while the device is born).
 */
export const sparkplugConnection: ConnectionFactory = (p) => {
  const { outbox, assets, telemetry } = commonParts(p, () => node.settings, true, (pid, records) => node.publishTelemetry(pid, records));
  const node: SparkplugEdgeNode = new SparkplugEdgeNode({ name: p.name, keyPath: p.keyPath, config: p.config, outbox, telemetry, assets, client: p.client, log: p.log, dataDir: p.dataDir, readTls: p.readTls, tuning: p.tuning });
  return node;
};

/** The factories of this build's connection types. */
export const BUILTIN_CONNECTION_TYPES: ConnectionFactories = { kura: kuraConnection, sparkplug: sparkplugConnection };

/** A connection whose type this build has no factory for: listed with the reason, never started. */
class UnavailableConnection implements MqttConnection {
  readonly isConnected = false;
  private readonly since = Date.now();
  constructor(
    readonly name: string,
    readonly type: ConnectionType,
    private config: MqttConfig,
    private readonly reason: string,
  ) {}
  async start(): Promise<void> {}
  async stop(): Promise<void> {}
  async reconfigure(config: MqttConfig): Promise<void> {
    this.config = config;
  }
  async reconnect(): Promise<void> {}
  async connect(): Promise<void> {}
  async disconnect(): Promise<void> {}
  stats(): ConnectionStats {
    const c = this.config;
    return { connected: false, held: false, brokerUrl: c['broker-url'], clientId: c['client-id'], outbox: { pending: 0, dropped: 0, bytes: 0 }, published: 0, reconnects: 0, lastError: { at: this.since, message: this.reason } };
  }
}

export interface MqttConnectionsOptions {
  /** The factory of each connection type this build has (BUILTIN_CONNECTION_TYPES and any added). */
  factories: ConnectionFactories;
  /** Everything of ConnectionParts but the connection's own. */
  parts: Omit<ConnectionParts, 'name' | 'keyPath' | 'config'>;
  log: Logger;
}

interface Running {
  entry: NamedConnection;
  conn: MqttConnection;
}

export class MqttConnections {
  private running = new Map<string, Running>();
  private readonly log: Logger;

  constructor(private readonly opts: MqttConnectionsOptions) {
    this.log = opts.log.child({ component: 'mqtt' });
  }

  /** Builds and starts every connection (each connects in the background). */
  async start(entries: readonly NamedConnection[]): Promise<void> {
    await this.reconfigure(entries);
  }

  /**
   * Applies a new list: connections that are gone stop (DC, outbox flushed; their folder stays for
   * a later return), new ones start, a changed type builds the connection anew, and every other one
   * is given its settings (MqttService reconnects only if its connection settings changed). All at
   * once: a connection waiting for its broker's DISCONNECT delays no other.
   */
  async reconfigure(entries: readonly NamedConnection[]): Promise<void> {
    const next = new Map<string, Running>();
    const work: Promise<void>[] = [];
    const names = new Set(entries.map((e) => e.name));
    for (const [name, r] of this.running) {
      if (!names.has(name)) work.push(this.guard(name, 'stop', () => r.conn.stop()).then(() => this.log.info('mqtt connection removed', { connection: name })));
    }
    for (const entry of entries) {
      const r = this.running.get(entry.name);
      if (r && r.entry.config.type === entry.config.type) {
        next.set(entry.name, { entry, conn: r.conn });
        work.push(this.guard(entry.name, 'reconfigure', () => r.conn.reconfigure(entry.config)));
        continue;
      }
      const conn = this.build(entry);
      next.set(entry.name, { entry, conn });
      // A changed type: the old object stops (its outbox closes) before the new one opens it.
      work.push(this.guard(entry.name, 'start', async () => {
        if (r) await r.conn.stop();
        await conn.start();
      }));
    }
    this.running = next;
    await Promise.all(work);
  }

  private build(entry: NamedConnection): MqttConnection {
    const type = entry.config.type ?? 'kura';
    const factory = this.opts.factories[type];
    if (!factory) {
      const reason = `connection type "${type}" is not available in this build`;
      this.log.error('mqtt connection not started', { key: `${entry.keyPath}.type`, connection: entry.name, error: reason });
      return new UnavailableConnection(entry.name, type, entry.config, reason);
    }
    return factory({ ...this.opts.parts, name: entry.name, keyPath: entry.keyPath, config: entry.config });
  }

  private async guard(name: string, what: string, fn: () => Promise<void>): Promise<void> {
    try {
      await fn();
    } catch (err) {
      this.log.error(`mqtt connection ${what} failed`, { connection: name, error: (err as Error).message });
    }
  }

  /** The connections, in the configuration's order. */
  list(): MqttConnection[] {
    return [...this.running.values()].map((r) => r.conn);
  }

  get(name: string): MqttConnection | undefined {
    return this.running.get(name)?.conn;
  }

  /** The one system/v1 reports as `mqtt`: `default`, else the first. */
  primary(): MqttConnection | undefined {
    return this.get(DEFAULT_CONNECTION) ?? this.list()[0];
  }

  /**
   * Reconnects the connections whose TLS keys are among `keys` (`mqtt.tls.cert`,
   * `mqtt.connections.<name>.tls.key`, …): a keystore entry they use changed.
   */
  async reconnect(reason: string, keys: readonly string[]): Promise<void> {
    const work: Promise<void>[] = [];
    for (const r of this.running.values()) {
      if (!r.entry.config.enabled || !keys.some((k) => k.startsWith(`${r.entry.keyPath}.tls.`))) continue;
      work.push(this.guard(r.entry.name, 'reconnection', () => r.conn.reconnect(reason)));
    }
    await Promise.all(work);
  }

  /** Every connection: DC, clean DISCONNECT, outbox flushed; all at once. */
  async stop(): Promise<void> {
    const all = [...this.running.entries()];
    this.running = new Map();
    await Promise.all(all.map(([name, r]) => this.guard(name, 'stop', () => r.conn.stop())));
  }
}
