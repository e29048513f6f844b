// The Modbus section (bench/README.md): one read of 50 channels over 100 holding registers from a pymodbus server. Requests
// on the wire and time per read: gatewayd's coalesced read (through its REST API) vs one request
// per channel and vs modbus-serial reading the whole block (both in a process of their own). RTU at
// 115200 baud over a socat pty pair: time per poll vs the wire time of the bytes exchanged.

import { startPyModbusRtu, startPyModbusTcp, type DeviceRequest, type PyModbusDevice } from '../../test/helpers/pymodbus.js';
import { freePort } from '../../test/helpers/ports.js';
import { login, request, sessionHeaders, type Target } from '../lib/client.js';
import { startGatewayd } from '../lib/gatewayd.js';
import { startJsonChild } from '../lib/proc.js';
import type { Results } from '../lib/results.js';
import { withScope, type Scope } from '../lib/scope.js';
import { PASSWORD, USER, type Options } from '../lib/setup.js';
import { median } from '../lib/stats.js';

const CHANNELS = 50;
const WORDS = 2; // INT32: 50 channels × 2 registers = 100 holding registers, addresses 1–100
const UNIT = 1;
const BAUD = 115200;
const PATH = '/services/assets/plc/_read';

/** Channel c holds c × 100003 + 7 (spans both registers, so a wrong order or offset shows). */
const valueOf = (c: number) => c * 100003 + 7;

function registers(): number[] {
  const regs: number[] = [];
  for (let c = 0; c < CHANNELS; c++) regs.push((valueOf(c) >>> 16) & 0xffff, valueOf(c) & 0xffff);
  return regs;
}

function plcConfig(http: number, driver: Record<string, unknown>): Record<string, any> {
  const channels: Record<string, object> = {};
  for (let c = 0; c < CHANNELS; c++) {
    channels[`ch${String(c).padStart(2, '0')}`] = {
      type: 'READ', 'value.type': 'INTEGER', 'unit.id': UNIT, 'primary.table': 'HOLDING_REGISTERS',
      'memory.address': 1 + c * WORDS, 'data.type': 'INT32',
    };
  }
  return {
    'log.level': 'warn',
    http: { 'http.ports': [http], 'https.ports': [], 'https.client.auth.ports': [], 'bind.address': '127.0.0.1' },
    identities: { [USER]: { password: PASSWORD, permissions: ['rest.assets'], passwordChangeNeeded: false } },
    drivers: { mb: { factory: 'modbus', 'modbus.timeout': 2000, ...driver } },
    assets: { plc: { 'driver.pid': 'mb', 'poll.interval': 0, channels } },
    mqtt: { enabled: false },
  };
}

interface GwReader {
  read(): Promise<number>;
}

async function gatewaydReader(scope: Scope, config: Record<string, any>, http: number): Promise<GwReader> {
  await startGatewayd(scope, config);
  const target: Target = { port: http };
  const s = await login(target, USER, PASSWORD);
  const headers = s ? sessionHeaders(s) : {};
  const expected = Array.from({ length: CHANNELS }, (_, c) => valueOf(c)).reduce((a, b) => a + b, 0);
  return {
    async read() {
      const r = await request(target, PATH, { headers });
      if (r.status !== 200) throw new Error(`gatewayd ${PATH}: HTTP ${r.status} ${r.body.toString().slice(0, 200)}`);
      const recs = JSON.parse(r.body.toString()) as { name: string; value?: number; channelStatus: { channelFlag: string; exceptionMessage?: string } }[];
      const bad = recs.find((x) => x.channelStatus.channelFlag !== 'SUCCESS');
      if (bad) throw new Error(`gatewayd read of ${bad.name} failed: ${bad.channelStatus.exceptionMessage}`);
      const sum = recs.reduce((a, x) => a + (x.value ?? 0), 0);
      if (recs.length !== CHANNELS || sum !== expected) throw new Error(`gatewayd read ${recs.length} channels with sum ${sum}, expected ${CHANNELS} and ${expected}`);
      return sum;
    },
  };
}

async function timeReads(reader: GwReader, polls: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < polls; i++) {
    const t0 = process.hrtime.bigint();
    await reader.read();
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return times;
}

/** Requests the device received over three reads (after warm-up), and per read. */
async function requestsPerRead(dev: PyModbusDevice, read: () => Promise<unknown>, reads = 3): Promise<{ perRead: number; requests: DeviceRequest[] }> {
  await dev.clearRequests();
  for (let i = 0; i < reads; i++) await read();
  const requests = (await dev.received()).filter((r) => r.fc === 3);
  return { perRead: requests.length / reads, requests };
}

/** Bytes of RTU frames for one Read Holding Registers exchange: request 8, answer 5 + 2 × count. */
function rtuBytes(reqs: DeviceRequest[]): number {
  return reqs.reduce((a, r) => a + 8 + 5 + 2 * (r.count ?? 0), 0);
}

export async function modbusSection(res: Results, opt: Options): Promise<void> {
  const polls = opt.quick ? 20 : 100;
  await withScope(async (scope) => {
    const dev = await startPyModbusTcp(scope, { size: 200 });
    await dev.set(UNIT, 'hr', 0, registers());
    const http = await freePort();
    const gw = await gatewaydReader(scope, plcConfig(http, { 'access.type': 'TCP', 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': dev.port }), http);
    for (let i = 0; i < 10; i++) await gw.read(); // warm-up
    const gwWire = await requestsPerRead(dev, () => gw.read());

    const serial = async (mode: 'block' | 'per-channel') => {
      const child = await startJsonChild(scope, 'modbus-client', [String(dev.port), String(UNIT), mode, '0', String(CHANNELS), String(WORDS), String(polls)]);
      const out = await child.next();
      await child.stop();
      if (out.error) throw new Error(`modbus-serial ${mode}: ${out.error}`);
      return out.msPerPoll as number[];
    };
    const wire = async (mode: 'block' | 'per-channel') => {
      await dev.clearRequests();
      const child = await startJsonChild(scope, 'modbus-client', [String(dev.port), String(UNIT), mode, '0', String(CHANNELS), String(WORDS), '3']);
      await child.next();
      await child.stop();
      return (await dev.received()).filter((r) => r.fc === 3).length / 3;
    };
    const wireBlock = await wire('block');
    const wirePer = await wire('per-channel');

    const t = { gw: [] as number[], block: [] as number[], per: [] as number[] };
    for (let rep = 0; rep < opt.repeats; rep++) {
      t.gw.push(median(await timeReads(gw, polls)));
      t.block.push(median(await serial('block')));
      t.per.push(median(await serial('per-channel')));
      process.stderr.write(`  TCP read of ${CHANNELS} channels: gatewayd ${t.gw.at(-1)!.toFixed(2)} ms, modbus-serial block ${t.block.at(-1)!.toFixed(2)} ms, per channel ${t.per.at(-1)!.toFixed(2)} ms\n`);
    }
    const goal = { op: '<=' as const, value: 2, text: '≤ 2 requests', on: 'value' as const };
    res.add('Modbus', 'tcp-requests-vs-per-channel', `Modbus TCP, 50 channels / 100 registers: requests on the wire per read`, 'requests', [gwWire.perRead], 'one request per channel (modbus-serial)', [wirePer], goal,
      `per read gatewayd sent ${gwWire.requests.slice(0, Math.max(1, Math.round(gwWire.perRead))).map((r) => `FC3 address ${r.address} count ${r.count}`).join(', ')}; modbus-serial reading the block sends ${wireBlock}`);
    res.add('Modbus', 'tcp-time-vs-block', 'Modbus TCP, 50-channel read: time per read (gatewayd via REST)', 'ms', t.gw, 'modbus-serial, one block read', t.block, undefined,
      `median of ${polls} reads per repetition; gatewayd's figure includes its HTTP round trip, session check and JSON records, the baseline only the Modbus exchange and decoding`);
    res.add('Modbus', 'tcp-time-vs-per-channel', 'Modbus TCP, 50-channel read: time per read (gatewayd via REST)', 'ms', t.gw, 'modbus-serial, one request per channel', t.per);
  });

  await withScope(async (scope) => {
    const dev = await startPyModbusRtu(scope, { size: 200, baud: BAUD });
    await dev.set(UNIT, 'hr', 0, registers());
    const http = await freePort();
    const config = plcConfig(http, { 'access.type': 'RTU', 'modbus.rtu.port.name': dev.serialPort, 'modbus.rtu.baudrate': BAUD });
    const pollsRtu = opt.quick ? 10 : 40;
    const t: number[] = [];
    const raw: number[] = [];
    let perRead = 0;
    let requests: DeviceRequest[] = [];
    // The two clients cannot share the pty (either would eat the other's answers): gatewayd runs,
    // stops, then the raw client runs, in turn.
    for (let rep = 0; rep < opt.repeats; rep++) {
      await withScope(async (inner) => {
        const gw = await gatewaydReader(inner, config, http);
        for (let i = 0; i < 5; i++) await gw.read();
        if (rep === 0) ({ perRead, requests } = await requestsPerRead(dev, () => gw.read()));
        t.push(median(await timeReads(gw, pollsRtu)));
      });
      const child = await startJsonChild(scope, 'rtu-raw', [dev.serialPort, String(UNIT), '0', String(CHANNELS * WORDS), String(pollsRtu)]);
      const out = await child.next();
      await child.stop();
      if (out.error) throw new Error(`raw RTU client: ${out.error}`);
      raw.push(median(out.msPerPoll));
      process.stderr.write(`  RTU poll: gatewayd ${t.at(-1)!.toFixed(2)} ms, raw frames ${raw.at(-1)!.toFixed(2)} ms (wire ${((rtuBytes(requests) / 3) * 10 * 1000 / BAUD).toFixed(2)} ms)\n`);
    }
    // 8N1: 10 bits on the wire per byte.
    const bytes = rtuBytes(requests) / 3;
    const wireMs = (bytes * 10 * 1000) / BAUD;
    res.add('Modbus', 'rtu-poll-vs-raw', `Modbus RTU ${BAUD} baud over a socat pty pair: time per 50-channel poll (gatewayd via REST)`, 'ms', t, 'hand-made RTU frames on the same pty and device', raw, undefined,
      `${perRead} request(s) per poll; median of ${pollsRtu} polls per repetition. A pty does not pace bytes at the baud rate, so both figures are software time (the device's included), not line time`);
    // On a real line the bytes take their wire time; what gatewayd adds on top is its poll minus the
    // raw client's on the same pty and device (medians: single repetitions swing on a busy machine).
    const own = Math.max(0, median(t) - median(raw));
    res.add('Modbus', 'rtu-projected-vs-wire', `Modbus RTU ${BAUD} baud: projected poll on a real line (wire time + gatewayd's own time)`, 'ms', [wireMs + own], `wire time of the ${Math.round(bytes)} bytes exchanged (8N1, the physical limit)`, [wireMs],
      { op: '<=', value: 1.2, text: '≤ 1.2× wire time' },
      `gatewayd's own time per poll, ${own.toFixed(2)} ms (median poll ${median(t).toFixed(2)} ms minus the raw client's ${median(raw).toFixed(2)} ms; its REST round trip and the 3.5-character silence it keeps included), added to the wire time as if nothing overlapped the transfer`);
  });
}
