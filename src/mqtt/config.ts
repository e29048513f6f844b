// The `mqtt` section of the configuration (docs/configuration.md "mqtt").

import type { Problem } from '../core/schema.js';
import fs from 'node:fs';
import path from 'node:path';
import { arrayOf, bool, duration, num, oneOf, problem, section, str, warning } from '../core/schema.js';

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

const SPARKPLUG_ID = { pattern: /^[^/#+\u0000-\u001f\u007f-\u009f]*$/, patternHint: 'must be one topic level, without / # + or control characters' };

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
  // Sparkplug ids: one topic level each, without + / # or control characters (Sparkplug 3.0, tck-id-topic-structure-namespace-valid-*).
  'sparkplug.group.id': [str(SPARKPLUG_ID), ''],
  'sparkplug.edge.node.id': [str(SPARKPLUG_ID), ''],
  'sparkplug.primary.host.id': [str(SPARKPLUG_ID), ''],
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
  return { value, problems };
}
