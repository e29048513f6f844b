// The Sparkplug B topic namespace (Sparkplug 3.0 specification, chapter "Topics and Messages"):
//
//   spBv1.0/<group_id>/<NBIRTH|NDEATH|NDATA|NCMD>/<edge_node_id>
//   spBv1.0/<group_id>/<DBIRTH|DDEATH|DDATA|DCMD>/<edge_node_id>/<device_id>
//   spBv1.0/STATE/<sparkplug_host_id>
//
// Each id is one topic level: valid UTF-8 without + / # (the specification's requirements
// tck-id-topic-structure-namespace-valid-group-id, -valid-edge-node-id and -valid-device-id), never
// empty, and, as MQTT 3.1.1 asks of any string, well-formed [MQTT-1.5.3-1] and without NUL
// [MQTT-1.5.3-2]; the control characters MQTT advises against are refused too. Built topics are
// checked, so a bad id is an error naming it rather than a publish to the wrong topic; parsed
// topics are checked the same way.

import { SparkplugError } from './error.js';

export const SPARKPLUG_NAMESPACE = 'spBv1.0';

export const NODE_MESSAGE_TYPES = ['NBIRTH', 'NDEATH', 'NDATA', 'NCMD'] as const;
export const DEVICE_MESSAGE_TYPES = ['DBIRTH', 'DDEATH', 'DDATA', 'DCMD'] as const;
export type NodeMessageType = (typeof NODE_MESSAGE_TYPES)[number];
export type DeviceMessageType = (typeof DEVICE_MESSAGE_TYPES)[number];

export type SparkplugTopic =
  | { type: NodeMessageType; group: string; edgeNode: string }
  | { type: DeviceMessageType; group: string; edgeNode: string; device: string }
  | { type: 'STATE'; hostId: string };

/** MQTT's limit on a topic name: a two-byte length [MQTT-1.5.3]. */
const MAX_TOPIC_BYTES = 65535;

// Lone surrogates have no UTF-8 form [MQTT-1.5.3-1]; NUL [MQTT-1.5.3-2] and the other C0 and C1 controls.
const NOT_IN_LEVEL = /[/+#\u0000-\u001f\u007f-\u009f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * Why `level` cannot be a Sparkplug id (`what`: "group id", "edge node id", "device id", "host
 * id"), or undefined when it can. For configuration validators as well as for the topics here.
 */
export function idProblem(level: string, what: string): string | undefined {
  if (typeof level !== 'string' || level.length === 0) return `${what} must be a non-empty string`;
  const bad = NOT_IN_LEVEL.exec(level);
  if (!bad) return undefined;
  const ch = bad[0];
  const shown = ch === '/' || ch === '+' || ch === '#' ? `"${ch}"` : `U+${ch.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`;
  return `${what} ${JSON.stringify(level.length > 64 ? `${level.slice(0, 64)}…` : level)} contains ${shown}: a Sparkplug id is one topic level, without + / # or control characters`;
}

function checkId(level: string, what: string): void {
  const problem = idProblem(level, what);
  if (problem) throw new SparkplugError(problem);
}

const isNodeType = (s: string): s is NodeMessageType => (NODE_MESSAGE_TYPES as readonly string[]).includes(s);
const isDeviceType = (s: string): s is DeviceMessageType => (DEVICE_MESSAGE_TYPES as readonly string[]).includes(s);

/** The topic of a message; throws SparkplugError naming an id that cannot be a topic level. */
export function sparkplugTopic(t: SparkplugTopic): string {
  let topic: string;
  if (t.type === 'STATE') {
    checkId(t.hostId, 'host id');
    topic = `${SPARKPLUG_NAMESPACE}/STATE/${t.hostId}`;
  } else {
    checkId(t.group, 'group id');
    checkId(t.edgeNode, 'edge node id');
    if (isNodeType(t.type)) topic = `${SPARKPLUG_NAMESPACE}/${t.group}/${t.type}/${t.edgeNode}`;
    else if (isDeviceType(t.type)) {
      const { device } = t as { device: string };
      checkId(device, 'device id');
      topic = `${SPARKPLUG_NAMESPACE}/${t.group}/${t.type}/${t.edgeNode}/${device}`;
    } else throw new SparkplugError(`unknown message type ${JSON.stringify(t.type)}`);
  }
  if (Buffer.byteLength(topic) > MAX_TOPIC_BYTES) throw new SparkplugError(`topic of ${Buffer.byteLength(topic)} bytes is longer than MQTT's ${MAX_TOPIC_BYTES}`);
  return topic;
}

/** A topic's parts; throws SparkplugError saying why a topic is no Sparkplug B topic. */
export function parseSparkplugTopic(topic: string): SparkplugTopic {
  const levels = topic.split('/');
  if (levels[0] !== SPARKPLUG_NAMESPACE) throw new SparkplugError(`topic does not start with ${SPARKPLUG_NAMESPACE}/`);
  if (levels.length === 3 && levels[1] === 'STATE') {
    checkId(levels[2]!, 'host id');
    return { type: 'STATE', hostId: levels[2]! };
  }
  const [, group, type, edgeNode, device] = levels;
  if (type === undefined || edgeNode === undefined) throw new SparkplugError(`topic of ${levels.length} levels: expected ${SPARKPLUG_NAMESPACE}/<group id>/<message type>/<edge node id>[/<device id>]`);
  checkId(group!, 'group id');
  checkId(edgeNode, 'edge node id');
  if (isNodeType(type)) {
    if (levels.length !== 4) throw new SparkplugError(`${type} topic has 4 levels, not ${levels.length}`);
    return { type, group: group!, edgeNode };
  }
  if (isDeviceType(type)) {
    if (levels.length !== 5) throw new SparkplugError(`${type} topic has 5 levels, not ${levels.length}`);
    checkId(device!, 'device id');
    return { type, group: group!, edgeNode, device: device! };
  }
  throw new SparkplugError(`unknown message type ${JSON.stringify(type.slice(0, 16))}`);
}
