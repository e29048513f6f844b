// The nodered bench section's pure logic (bench/lib/nodered.ts): the Node-RED flows it generates,
// their function nodes' decoding, and how the subscriber turns telemetry into samples and polls.
// No timing is asserted: `make bench` measures.
import t, { type Test } from 'tap';
import { CHANNELS, noderedFlow, noderedSettings, parseTelemetry, PollCounter, REGISTERS, sampleOf, TOPICS, type Flow } from '../../bench/lib/nodered.js';

const OPTS = { modbusPort: 1502, mqttPort: 1883, pollMs: 100, qos: 1 as const, clientId: 'nr' };
type Node = Record<string, any>;

/** What the device holds at tick `seq` (bench/load/ticking_device.py): channel c = seq × 100 + c, high word first. */
function registers(seq: number): number[] {
  const regs: number[] = [];
  for (let c = 0; c < CHANNELS; c++) {
    const v = (seq * 100 + c) >>> 0;
    regs.push(v >>> 16, v & 0xffff);
  }
  return regs;
}

/** Runs a flow's function node on a modbus-read node's output, as Node-RED would (msg in, msg out). */
function runFunction(flow: Node[], msg: Node): Node {
  const fn = flow.find((n) => n.type === 'function')!;
  return new Function('msg', fn.func)(structuredClone(msg));
}

function wiring(t: Test, flow: Node[]): void {
  const ids = new Set(flow.map((n) => n.id));
  t.equal(ids.size, flow.length, 'node ids are unique');
  for (const n of flow) {
    for (const out of n.wires ?? []) for (const target of out) t.ok(ids.has(target), `${n.id} is wired to an existing node ${target}`);
    if (n.server) t.ok(ids.has(n.server), `${n.id}'s modbus client exists`);
    if (n.type === 'mqtt out') t.ok(ids.has(n.broker), `${n.id}'s broker exists`);
    if (n.z) t.ok(ids.has(n.z), `${n.id} is on an existing tab`);
  }
}

t.test('typical flow: one modbus-read per channel (2 registers, every poll) → INT32 function → mqtt out', async (t) => {
  const flow = noderedFlow('typical', OPTS) as Node[];
  wiring(t, flow);
  const reads = flow.filter((n) => n.type === 'modbus-read');
  t.equal(reads.length, CHANNELS);
  t.same(reads.map((n) => Number(n.adr)), Array.from({ length: CHANNELS }, (_, c) => 2 * c), 'channel c at PDU address 2c');
  t.ok(reads.every((n) => n.quantity === '2' && n.rate === '100' && n.rateUnit === 'ms' && n.dataType === 'HoldingRegister'));
  t.ok(reads.every((n) => n.wires[0][0] === 'bench-fn'), 'every read feeds the decoding function');
  const client = flow.find((n) => n.type === 'modbus-client')!;
  t.equal(client.tcpPort, '1502');
  const out = flow.find((n) => n.type === 'mqtt out')!;
  t.equal(out.qos, '1');
  t.equal(out.topic, '', 'the topic comes from each message');
  t.equal(flow.find((n) => n.type === 'mqtt-broker')!.port, '1883');

  // What read node ch07 emits at tick 4321, through the function, as the subscriber parses it.
  const regs = registers(4321);
  const msg = runFunction(flow, { topic: 'ch07', payload: regs.slice(14, 16) });
  t.equal(msg.topic, `${TOPICS.typical}ch07`);
  t.equal(msg.payload, 432107);
  const tel = parseTelemetry(msg.topic, String(msg.payload), 'x/y/assets/plc')!;
  t.same(tel, { who: 'typical', values: [{ channel: 7, seq: 4321 }], failed: 0, bad: 0 });
  t.equal(runFunction(flow, { topic: 'ch00', payload: [0xffff, 0xfffe] }).payload, -2, 'INT32 is signed, high word first');
});

t.test('best flow: one block read → split into the 50 values → one message per poll', async (t) => {
  const flow = noderedFlow('best', OPTS) as Node[];
  wiring(t, flow);
  const reads = flow.filter((n) => n.type === 'modbus-read');
  t.equal(reads.length, 1);
  t.equal(reads[0].adr, '0');
  t.equal(reads[0].quantity, String(REGISTERS));
  const msg = runFunction(flow, { topic: 'plc', payload: registers(99) });
  t.equal(msg.topic, TOPICS.best);
  const tel = parseTelemetry(msg.topic, JSON.stringify(msg.payload), 'x/y/assets/plc')!;
  t.equal(tel.who, 'best');
  t.equal(tel.values.length, CHANNELS);
  t.equal(tel.bad, 0);
  t.ok(tel.values.every((s, c) => s.channel === c && s.seq === 99));
});

t.test('Node-RED settings: headless, no admin API, no telemetry', async (t) => {
  const module: { exports?: Node } = {};
  new Function('module', noderedSettings('/tmp/u', '/tmp/u/flows.json'))(module);
  t.equal(module.exports!.httpAdminRoot, false);
  t.equal(module.exports!.httpNodeRoot, false);
  t.equal(module.exports!.telemetry.enabled, false);
  t.equal(module.exports!.flowFile, '/tmp/u/flows.json');
  t.equal(module.exports!.userDir, '/tmp/u');
});

t.test('gatewayd json telemetry: values, failed channels and foreign values', async (t) => {
  const topic = 'account/gatewayd/assets/plc';
  const payload = JSON.stringify({
    name: 'plc',
    channels: [
      { name: 'ch00', timestamp: 1, value: '500', type: 'INTEGER' },
      { name: 'ch01', timestamp: 1, value: '501', type: 'INTEGER' },
      { name: 'ch02', timestamp: 1, error: 'Modbus TCP 127.0.0.1:1502: connection refused' },
      { name: 'ch03', timestamp: 1, value: '504', type: 'INTEGER' },
    ],
  });
  t.same(parseTelemetry(topic, Buffer.from(payload), topic), { who: 'gatewayd', values: [{ channel: 0, seq: 5 }, { channel: 1, seq: 5 }], failed: 1, bad: 1 });
  t.same(parseTelemetry(topic, 'not json', topic), { who: 'gatewayd', values: [], failed: 0, bad: 1 }, 'an unreadable message is counted bad');
  t.equal(parseTelemetry('account/gatewayd/MQTT/BIRTH', '{}', topic), undefined, 'other topics are not telemetry');
});

t.test('samples: the device tick and channel of a value', async (t) => {
  t.same(sampleOf(1234507, 7), { channel: 7, seq: 12345 });
  t.equal(sampleOf(1234507, 8), undefined, 'a value in the wrong channel is not the device\'s');
  t.equal(sampleOf(-93, 7), undefined);
  t.equal(sampleOf(12.5, 12), undefined);
});

t.test('polls: a message with values per poll, or 50 values for the typical flow', async (t) => {
  const make = (who: 'gatewayd' | Flow, n: number, seq: number) => ({ who, values: Array.from({ length: n }, (_, c) => ({ channel: c, seq })), failed: 0, bad: 0 });
  const gw = new PollCounter();
  gw.add(make('gatewayd', CHANNELS, 10));
  gw.add(make('gatewayd', 3, 12)); // a poll where only some channels changed
  gw.add({ who: 'gatewayd', values: [], failed: CHANNELS, bad: 0 }); // device gone: errors only
  t.equal(gw.polls('gatewayd'), 2);
  t.equal(gw.failed, CHANNELS);
  t.equal(gw.maxSeq, 12);
  const typ = new PollCounter();
  for (let i = 0; i < 125; i++) typ.add(make('typical', 1, i));
  t.equal(typ.polls('typical'), 2.5);
  t.equal(typ.messages, 125);
});
