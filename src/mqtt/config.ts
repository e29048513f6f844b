// The `mqtt` section of the configuration (docs/configuration.md "mqtt").

import type { Problem } from '../core/schema.js';
import fs from 'node:fs';
import path from 'node:path';
import { arrayOf, bool, duration, num, oneOf, section, str, warning } from '../core/schema.js';
import { isPlainObject, kind, problem, type Spec } from '../core/schema.js';
import { idProblem } from './sparkplug/topic.js';
import type { Logger } from '../log.js';

export const PAYLOAD_ENCODINGS = ['kura-protobuf', 'simple-json', 'json'] as const;
export type PayloadEncoding = (typeof PAYLOAD_ENCODINGS)[number];

export interface MqttConfig {
  enabled: boolean;
  'broker-url': string;
  'client-id': string;
  username: string;
  password: string;
  'keep-alive': number;
  'clean-session': boolean;
  'topic.context.account-name': string;
  'topic.control-prefix': string;
  'payload.encoding': PayloadEncoding;
  'tls.ca': string;
  'tls.cert': string;
  'tls.key': string;
  'outbox.max.messages': number;
  /** Bytes the outbox's files may take in dataDir (docs/mqtt.md "Telemetry"). */
  'outbox.max.bytes': number;
  /** Kura's CloudService property: gzip protobuf payloads when that makes them shorter. */
  'encode.gzip': boolean;
  /** What a requester over this connection may do, as an identity's permissions over REST. */
  'requester.permissions': string[];
  /** MQTT application ids not served on this connection (nor announced in its BIRTH). */
  'applications.disabled': string[];
  /** `kura` (KuraPayload, Kura's topics and applications) or `sparkplug` (a Sparkplug B 3.0 edge node, docs/mqtt.md "Sparkplug B"). */
  type: ConnectionType;
  /** Sparkplug group id; required with type sparkplug. */
  'sparkplug.group.id': string;
  /** Sparkplug edge node id; '' = the client-id. */
  'sparkplug.edge.node.id': string;
  /** The primary host application's id; '' = no primary host awareness. */
  'sparkplug.primary.host.id': string;
}

export const CONNECTION_TYPES = ['kura', 'sparkplug'] as const;
export type ConnectionType = (typeof CONNECTION_TYPES)[number];

// MQTT topic levels must not contain wildcards or separators.
const LEVEL = /^[^/#+\u0000]+$/;
// Permission names as identities carry them (docs/configuration.md "identities").
const PERMISSION = /^(kura\.admin|rest\.[A-Za-z0-9_.-]+|[A-Za-z0-9_.-]+)$/;

/** docs/configuration.md "mqtt": 16 MiB fits beside the rest of dataDir on a small data partition. */
export const DEFAULT_OUTBOX_MAX_BYTES = 16 * 1024 * 1024;

export const mqttSection = section<MqttConfig>({
  enabled: [bool, false],
  'broker-url': [str({ pattern: /^(mqtt|mqtts|tcp|ssl|tls):\/\/[^\s/]+(:\d+)?\/?$/, patternHint: 'expected mqtt://host:port or mqtts://host:port' }), 'mqtt://127.0.0.1:1883'],
  'client-id': [str({ pattern: LEVEL, patternHint: 'must be non-empty without / # +' }), 'gatewayd'],
  username: [str(), ''],
  password: [str(), ''],
  // Seconds; the CONNECT packet carries 16 bits of them (MQTT 3.1.1 §3.1.2.10).
  'keep-alive': [duration('s', 0, 65535), 30],
  'clean-session': [bool, false],
  'topic.context.account-name': [str({ pattern: LEVEL, patternHint: 'must be non-empty without / # +' }), 'account'],
  'topic.control-prefix': [str({ pattern: LEVEL, patternHint: 'must be non-empty without / # +' }), '$EDC'],
  'payload.encoding': [oneOf(PAYLOAD_ENCODINGS), 'kura-protobuf'],
  'tls.ca': [str(), ''],
  'tls.cert': [str(), ''],
  'tls.key': [str(), ''],
  // Each pending message costs the outbox some bookkeeping in memory even when its payload is on
  // disk only (src/mqtt/telemetry-outbox.ts): the maximum keeps that within a few MB.
  'outbox.max.messages': [num({ int: true, min: 1, max: 100_000 }), 10000],
  'outbox.max.bytes': [num({ int: true, min: 65_536, max: 2 ** 31 - 1 }), DEFAULT_OUTBOX_MAX_BYTES],
  'encode.gzip': [bool, true],
  'requester.permissions': [arrayOf(str({ pattern: PERMISSION, patternHint: 'not a permission name' }), { unique: true }), ['kura.admin']],
  'applications.disabled': [arrayOf(str({ pattern: LEVEL, patternHint: 'not an MQTT application id (a topic level: non-empty, without / # +)' }), { unique: true }), []],
  type: [oneOf(CONNECTION_TYPES), 'kura'],
  // Sparkplug ids: checked by validateMqttSection with the edge node's own rule (topic.ts idProblem).
  'sparkplug.group.id': [str(), ''],
  'sparkplug.edge.node.id': [str(), ''],
  'sparkplug.primary.host.id': [str(), ''],
});

export function validateMqttSection(raw: unknown, keyPath = 'mqtt'): { value: MqttConfig; problems: Problem[] } {
  const problems: Problem[] = [];
  const value = mqttSection(raw, keyPath, problems);
  if ((value['tls.cert'] === '') !== (value['tls.key'] === '')) {
    problems.push({ path: `${keyPath}.tls.key`, message: 'tls.cert and tls.key must be given together', severity: 'error' });
  }
  // A missing referenced file is a warning: a device may be provisioned later (docs/configuration.md).
  for (const k of ['tls.ca', 'tls.cert', 'tls.key'] as const) {
    const f = value[k];
    if (f && path.isAbsolute(f) && !fs.existsSync(f)) warning(problems, `${keyPath}.${k}`, `file not found: ${f}`);
  }
  if (value.enabled && /^(mqtts|ssl|tls):/.test(value['broker-url']) === false && (value['tls.ca'] || value['tls.cert'])) {
    warning(problems, `${keyPath}.broker-url`, 'TLS files are configured but the broker URL is not mqtts://');
  }
  if (value.type === 'sparkplug' && value['sparkplug.group.id'] === '') {
    problem(problems, `${keyPath}.sparkplug.group.id`, 'required when type is sparkplug');
  }
  // Sparkplug ids: one topic level each, without + / # or control characters (Sparkplug 3.0,
  // tck-id-topic-structure-namespace-valid-*), by the rule the edge node builds its topics with.
  for (const k of ['sparkplug.group.id', 'sparkplug.edge.node.id', 'sparkplug.primary.host.id'] as const) {
    const bad = value[k] && idProblem(value[k], k.slice(10).replaceAll('.', ' '));
    if (bad) problem(problems, `${keyPath}.${k}`, bad);
  }
  // The client-id is the edge node id when sparkplug.edge.node.id is not given: Sparkplug's id rules apply to it then.
  const asNodeId = value.type === 'sparkplug' && value['sparkplug.edge.node.id'] === '' && idProblem(value['client-id'], 'edge node id');
  if (asNodeId) problem(problems, `${keyPath}.client-id`, `${asNodeId} (the client-id is the edge node id without sparkplug.edge.node.id)`);
  return { value, problems };
}

// ---- connections, plural (docs/configuration.md "Connections") -------------------------------------
// `mqtt` is today's object (one connection, named `default`) or `{"connections": {<name>: {…}}}`,
// each entry today's keys plus `type` and `telemetry.assets`. Each entry is validated by
// validateMqttSection; what spans entries (names, a broker and client id used twice) is checked here.

/** The name of the connection the object form of `mqtt` is; it keeps today's PIDs and outbox folder. */
export const DEFAULT_CONNECTION = 'default';

/** One connection: today's section (with its type) and which assets' telemetry it publishes. */
export type MqttConnectionConfig = MqttConfig & {
  /** `"*"`: every asset; else the asset PIDs whose telemetry this connection publishes. */
  'telemetry.assets': string[] | '*';
};

/** A connection as the daemon runs it: its name and the key path of its settings (for messages). */
export interface NamedConnection {
  name: string;
  /** `mqtt` for the object form, `mqtt.connections.<name>` otherwise. */
  keyPath: string;
  config: MqttConnectionConfig;
}

/**
 * Connection names are one MQTT topic level that is also a file-name and PID suffix
 * (`dataDir/mqtt-<name>`, `…CloudService-<name>`) and one key-path level (`mqtt.connections.<name>`):
 * 1 to 64 letters, digits, `_` and `-`.
 */
export const CONNECTION_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** Asset PIDs as `telemetry.assets` may name them (any non-empty text without control characters). */
const ASSET_PID = /^[^\u0000-\u001f]+$/;

/** The outbox folder of a connection, under dataDir: `mqtt` for `default` (where it always was), else `mqtt-<name>`. */
/** A connection's log: `component: mqtt`, and its name unless it is `default` (whose lines read as before connections). */
export function connectionLog(log: Logger, name: string): Logger {
  return log.child(name === DEFAULT_CONNECTION ? { component: 'mqtt' } : { component: 'mqtt', connection: name });
}

export function outboxDirName(name: string): string {
  return name === DEFAULT_CONNECTION ? 'mqtt' : `mqtt-${name}`;
}

const assetList = arrayOf(str({ pattern: ASSET_PID, patternHint: 'expected an asset PID' }), { unique: true });
/** `"*"` or a list of PIDs; `["*"]` (how a configuration/v2 client writes it) is `"*"`. */
const telemetryAssets = Object.assign(
  (raw: unknown, keyPath: string, problems: Problem[]): string[] | '*' => (raw === '*' || (Array.isArray(raw) && raw.length === 1 && raw[0] === '*') ? '*' : assetList(raw, keyPath, problems)),
  { ad: assetList.ad },
);

/** The keys a connection has beyond mqttSection's, as configuration/v2 shows them on its CloudService component. */
export const CONNECTION_KEYS: Spec = {
  'telemetry.assets': [telemetryAssets, '*'],
};

/** One connection's keys: `telemetry.assets` is taken out, the rest is validateMqttSection's. */
export function validateMqttConnection(raw: unknown, keyPath: string): { value: MqttConnectionConfig; problems: Problem[] } {
  const problems: Problem[] = [];
  const own = isPlainObject(raw) ? { ...raw } : raw;
  let assets: string[] | '*' = '*';
  if (isPlainObject(own)) {
    if (own['telemetry.assets'] !== undefined) assets = telemetryAssets(own['telemetry.assets'], `${keyPath}.telemetry.assets`, problems);
    delete own['telemetry.assets'];
  }
  const v = validateMqttSection(own, keyPath);
  problems.push(...v.problems);
  const value = v.value as MqttConnectionConfig;
  value['telemetry.assets'] = assets;
  return { value, problems };
}

/** Where a broker is, as a comparison key: scheme family, host and port with the defaults filled in. */
function brokerKey(url: string): string {
  const m = /^(\w+):\/\/([^/]+?)(?::(\d+))?\/?$/.exec(url);
  if (!m) return url;
  const secure = /^(mqtts|ssl|tls)$/.test(m[1]);
  return `${secure ? 'mqtts' : 'mqtt'}://${m[2].toLowerCase()}:${m[3] ?? (secure ? '8883' : '1883')}`;
}

/**
 * The `mqtt` section in either form: every connection by name, in the file's order (the object form
 * is the one connection `default`). Problems name `mqtt.connections.<name>.<key>`.
 */
export function validateMqttConnections(raw: unknown, keyPath = 'mqtt'): { connections: NamedConnection[]; problems: Problem[] } {
  const problems: Problem[] = [];
  const connections: NamedConnection[] = [];
  if (!isPlainObject(raw) || !Object.hasOwn(raw, 'connections')) {
    const v = validateMqttConnection(raw, keyPath);
    return { connections: [{ name: DEFAULT_CONNECTION, keyPath, config: v.value }], problems: v.problems };
  }
  for (const k of Object.keys(raw)) {
    if (k !== 'connections') problem(problems, `${keyPath}.${k}`, 'with "connections", every key of mqtt belongs to a connection: move it into one');
  }
  const list = raw.connections;
  if (!isPlainObject(list)) {
    problem(problems, `${keyPath}.connections`, `expected an object of connections by name, got ${kind(list)}`);
    return { connections, problems };
  }
  for (const [name, entry] of Object.entries(list)) {
    const p = `${keyPath}.connections.${name}`;
    if (!CONNECTION_NAME.test(name)) {
      problem(problems, p, 'not a connection name: 1 to 64 letters, digits, "_" or "-"');
      continue;
    }
    if (!isPlainObject(entry)) {
      problem(problems, p, `expected an object, got ${kind(entry)}`);
      continue;
    }
    const v = validateMqttConnection(entry, p);
    problems.push(...v.problems);
    connections.push({ name, keyPath: p, config: v.value });
  }
  // Two clients with one client id on one broker take the session from each other (MQTT 3.1.1 §3.1.4).
  const seen = new Map<string, string>();
  for (const c of connections) {
    if (!c.config.enabled) continue;
    const key = `${brokerKey(c.config['broker-url'])} ${c.config['client-id']}`;
    const other = seen.get(key);
    if (other) problem(problems, `${c.keyPath}.client-id`, `connection "${other}" uses the same broker and client id: the broker would disconnect one for the other`);
    else seen.set(key, c.name);
  }
  // Two edge nodes of one id in one group on one broker: one's NDEATH would end the other's session
  // for every host (Sparkplug 3.0: the edge node id is unique in its group). The id defaults to the client id.
  const nodes = new Map<string, string>();
  for (const c of connections) {
    if (!c.config.enabled || c.config.type !== 'sparkplug') continue;
    const key = `${brokerKey(c.config['broker-url'])} ${c.config['sparkplug.group.id']}/${c.config['sparkplug.edge.node.id'] || c.config['client-id']}`;
    const other = nodes.get(key);
    if (other) problem(problems, `${c.keyPath}.sparkplug.edge.node.id`, `connection "${other}" is the same edge node of the same group on the same broker: set another sparkplug.edge.node.id`);
    else nodes.set(key, c.name);
  }
  return { connections, problems };
}

/** The connection system/v1 status reports as `mqtt`: `default`, else the first; a disabled default when there is none. */
export function primaryConnection(connections: readonly NamedConnection[]): MqttConnectionConfig {
  return (connections.find((c) => c.name === DEFAULT_CONNECTION) ?? connections[0])?.config ?? validateMqttConnection({}, 'mqtt').value;
}
