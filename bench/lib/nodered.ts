// The nodered section's pure logic: Node-RED's flow files and settings, and what the subscriber on
// the broker makes of each contender's telemetry (the values and so the polls they carry). No I/O
// here, so that test/bench/nodered.test.ts can check it.

/** The device's layout: channel c is an INT32 in holding registers 2c, 2c+1 (PDU), high word first. */
export const CHANNELS = 50;
export const REGISTERS = 2 * CHANNELS;
export const UNIT = 1;
/** The device holds seq × SEQ_SCALE + c in channel c (bench/load/ticking_device.py). */
export const SEQ_SCALE = 100;

export const channelName = (c: number) => `ch${String(c).padStart(2, '0')}`;

/** Topics each contender publishes on. */
export const TOPICS = {
  gatewayd: (account: string, clientId: string, asset: string) => `${account}/${clientId}/assets/${asset}`,
  best: 'bench/nodered/plc',
  typical: 'bench/nodered/plc/', // + channel name
};

export type Flow = 'typical' | 'best';

export interface FlowOptions {
  modbusPort: number;
  mqttPort: number;
  pollMs: number;
  /** MQTT QoS of the published telemetry (gatewayd's telemetry is QoS 1). */
  qos: 0 | 1;
  clientId: string;
}

// Node-RED function nodes: the INT32 decoding each flow needs (Node-RED has no 32-bit type of its
// own; this is the usual function-node idiom: high word first, signed).
const TYPICAL_FN = `const r = msg.payload;\nmsg.payload = (r[0] << 16) | r[1];\nmsg.topic = '${TOPICS.typical}' + msg.topic;\nreturn msg;`;
const BEST_FN = `const r = msg.payload;\nconst out = {};\nfor (let c = 0; c < ${CHANNELS}; c++) out['ch' + String(c).padStart(2, '0')] = (r[2 * c] << 16) | r[2 * c + 1];\nreturn { topic: '${TOPICS.best}', payload: out };`;

/**
 * The flow file (flows.json) of one Node-RED contender.
 * - typical: what most users build: one modbus-read node per channel (2 registers each, every pollMs)
 *   into a function node decoding the INT32, into one mqtt out node (a message per channel).
 * - best: one modbus-read of all registers every pollMs into a function splitting them into the 50
 *   INT32 values, into mqtt out (one message per poll with every value, like gatewayd's).
 * Every node not named here keeps the editor's default (node-red-contrib-modbus's client: command
 * queue on, 1 ms command delay, 1 s timeout, reconnect after 2 s).
 */
export function noderedFlow(kind: Flow, o: FlowOptions): Record<string, unknown>[] {
  const tab = 'bench-tab';
  const modbus = {
    id: 'bench-modbus', type: 'modbus-client', name: 'device', clienttype: 'tcp', bufferCommands: true, stateLogEnabled: false,
    queueLogEnabled: false, failureLogEnabled: true, tcpHost: '127.0.0.1', tcpPort: String(o.modbusPort), tcpType: 'DEFAULT',
    serialPort: '/dev/ttyUSB', serialType: 'RTU-BUFFERD', serialBaudrate: '9600', serialDatabits: '8', serialStopbits: '1',
    serialParity: 'none', serialConnectionDelay: '100', serialAsciiResponseStartDelimiter: '0x3A', unit_id: String(UNIT),
    commandDelay: '1', clientTimeout: '1000', reconnectOnTimeout: true, reconnectTimeout: '2000', parallelUnitIdsAllowed: true,
  };
  const broker = {
    id: 'bench-broker', type: 'mqtt-broker', name: 'broker', broker: '127.0.0.1', port: String(o.mqttPort), clientid: o.clientId,
    autoConnect: true, usetls: false, protocolVersion: '4', keepalive: '60', cleansession: true, autoUnsubscribe: true,
    birthTopic: '', birthQos: '0', birthPayload: '', birthMsg: {}, closeTopic: '', closeQos: '0', closePayload: '', closeMsg: {},
    willTopic: '', willQos: '0', willPayload: '', willMsg: {}, userProps: '', sessionExpiry: '',
  };
  const out = {
    id: 'bench-out', type: 'mqtt out', z: tab, name: '', topic: '', qos: String(o.qos), retain: 'false', respTopic: '',
    contentType: '', userProps: '', correl: '', expiry: '', broker: broker.id, x: 700, y: 100, wires: [],
  };
  const read = (id: string, name: string, adr: number, quantity: number, next: string, y: number) => ({
    id, type: 'modbus-read', z: tab, name, topic: name, showStatusActivities: false, logIOActivities: false, showErrors: false,
    unitid: String(UNIT), dataType: 'HoldingRegister', adr: String(adr), quantity: String(quantity), rate: String(o.pollMs),
    rateUnit: 'ms', delayOnStart: false, startDelayTime: '', server: modbus.id, useIOFile: false, ioFile: '', useIOForPayload: false,
    emptyMsgOnFail: false, x: 150, y, wires: [[next], []],
  });
  const fn = (func: string) => ({ id: 'bench-fn', type: 'function', z: tab, name: 'decode', func, outputs: 1, timeout: 0, noerr: 0, initialize: '', finalize: '', libs: [], x: 450, y: 100, wires: [[out.id]] });
  const nodes: Record<string, unknown>[] = [{ id: tab, type: 'tab', label: `bench ${kind}`, disabled: false, info: '' }, modbus, broker];
  if (kind === 'typical') {
    for (let c = 0; c < CHANNELS; c++) nodes.push(read(`bench-read-${c}`, channelName(c), 2 * c, 2, 'bench-fn', 40 + 40 * c));
    nodes.push(fn(TYPICAL_FN));
  } else {
    nodes.push(read('bench-read', 'plc', 0, REGISTERS, 'bench-fn', 100));
    nodes.push(fn(BEST_FN));
  }
  nodes.push(out);
  return nodes;
}

/** Node-RED's settings.js: headless (no editor, no admin API, no HTTP nodes), no telemetry. */
export function noderedSettings(userDir: string, flowFile: string): string {
  const settings = {
    userDir, flowFile, flowFilePretty: false, credentialSecret: false, httpAdminRoot: false, httpNodeRoot: false, httpStatic: false,
    uiHost: '127.0.0.1', uiPort: 0, telemetry: { enabled: false, updateNotification: false }, runtimeState: { enabled: false, ui: false },
    logging: { console: { level: 'info', metrics: false, audit: false } }, exportGlobalContextKeys: false, externalModules: { autoInstall: false },
  };
  return `module.exports = ${JSON.stringify(settings, null, 2)};\n`;
}

/** A value read from the device and published: the device's tick it was read in, and its channel. */
export interface Sample {
  channel: number;
  seq: number;
}

/** Splits a device value into its tick and channel; undefined when it cannot be one of the device's. */
export function sampleOf(value: number, channel: number): Sample | undefined {
  if (!Number.isInteger(value) || value < 0) return undefined;
  const c = value % SEQ_SCALE;
  return c === channel ? { channel, seq: Math.floor(value / SEQ_SCALE) } : undefined;
}

/**
 * What one message at the subscriber carries, by contender. `values`: the channels' samples (a
 * gatewayd message can also carry failed channels, counted in `failed`). `bad`: a value that is not
 * what the device held in that channel (a decoding defect). Undefined for a topic not ours.
 */
export interface Telemetry {
  who: 'gatewayd' | Flow;
  values: Sample[];
  failed: number;
  bad: number;
}

export function parseTelemetry(topic: string, payload: Buffer | string, gatewaydTopic: string): Telemetry | undefined {
  const text = payload.toString();
  const channelIndex = (name: string) => (/^ch\d\d$/.test(name) ? Number(name.slice(2)) : -1);
  const t = (who: Telemetry['who']): Telemetry => ({ who, values: [], failed: 0, bad: 0 });
  const add = (r: Telemetry, name: string, v: unknown) => {
    const c = channelIndex(name);
    const s = c >= 0 && c < CHANNELS ? sampleOf(Number(v), c) : undefined;
    if (s) r.values.push(s);
    else r.bad++;
  };
  try {
    if (topic === gatewaydTopic) {
      // json encoding (docs/mqtt.md "Telemetry"): {"name":…,"channels":[{"name","value"|"error",…}]}
      const r = t('gatewayd');
      const msg = JSON.parse(text) as { channels?: { name: string; value?: unknown; error?: unknown; channelStatus?: unknown }[] };
      for (const ch of msg.channels ?? []) {
        if (ch.value === undefined || ch.value === null) r.failed++;
        else add(r, ch.name, ch.value);
      }
      return r;
    }
    if (topic === TOPICS.best) {
      const r = t('best');
      for (const [k, v] of Object.entries(JSON.parse(text) as Record<string, unknown>)) add(r, k, v);
      return r;
    }
    if (topic.startsWith(TOPICS.typical)) {
      const r = t('typical');
      add(r, topic.slice(TOPICS.typical.length), Number(text));
      return r;
    }
  } catch {
    return { who: topic === gatewaydTopic ? 'gatewayd' : topic === TOPICS.best ? 'best' : 'typical', values: [], failed: 0, bad: 1 };
  }
  return undefined;
}

/**
 * Counts what a contender delivered: a poll is one message carrying values (gatewayd, best flow:
 * one message per poll), or, for the typical flow, CHANNELS values (one message each; each read node
 * polls on its own, so completed polls are values ÷ channels).
 */
export class PollCounter {
  values = 0;
  messages = 0;
  /** Messages that carried at least one value. */
  valueMessages = 0;
  failed = 0;
  bad = 0;
  /** The highest device tick seen in any value. */
  maxSeq = -1;

  add(t: Telemetry): void {
    this.messages++;
    this.values += t.values.length;
    this.failed += t.failed;
    this.bad += t.bad;
    if (t.values.length > 0) this.valueMessages++;
    for (const s of t.values) if (s.seq > this.maxSeq) this.maxSeq = s.seq;
  }

  polls(who: Telemetry['who']): number {
    return who === 'typical' ? this.values / CHANNELS : this.valueMessages;
  }
}
