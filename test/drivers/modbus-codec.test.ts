// Modbus codec fixtures as (object, bytes) tables: each row gives a parse, a generate and a
// round-trip test (mqtt-packet style), plus random garbage that must never throw out of a decoder.

import t from 'tap';
import { decodeRequest, decodeResponse, encodeRequest, encodeResponse, type ModbusRequest, type ModbusResponse } from '../../src/drivers/modbus/pdu.js';
import { MbapDecoder, encodeMbap, type MbapFrame } from '../../src/drivers/modbus/mbap.js';
import { crc16, decodeRtu, encodeRtu, interFrameGapMs, type RtuFrame } from '../../src/drivers/modbus/rtu-frame.js';

const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ''), 'hex');
const bits = (s: string) => [...s].map((c) => c === '1');

function testParseGenerate<T>(
  name: string,
  object: T,
  bytes: Buffer,
  encode: (o: T) => Buffer,
  decode: (b: Buffer) => unknown,
) {
  t.test(name, async (t) => {
    t.same(decode(bytes), object, 'parse');
    t.same(encode(object), bytes, 'generate');
    t.same(decode(encode(object)), object, 'round trip');
  });
}

const requests: [string, ModbusRequest, string][] = [
  // Examples from the Modbus Application Protocol Specification V1.1b3 §6.
  ['FC1 read coils 20-38', { fc: 1, address: 19, quantity: 19 }, '01 0013 0013'],
  ['FC2 read discrete inputs 197-218', { fc: 2, address: 196, quantity: 22 }, '02 00C4 0016'],
  ['FC3 read holding registers 108-110', { fc: 3, address: 107, quantity: 3 }, '03 006B 0003'],
  ['FC4 read input register 9', { fc: 4, address: 8, quantity: 1 }, '04 0008 0001'],
  ['FC3 read 125 registers', { fc: 3, address: 0, quantity: 125 }, '03 0000 007D'],
  ['FC5 write coil 173 ON', { fc: 5, address: 172, value: true }, '05 00AC FF00'],
  ['FC5 write coil OFF', { fc: 5, address: 0, value: false }, '05 0000 0000'],
  ['FC6 write register 2', { fc: 6, address: 1, value: 3 }, '06 0001 0003'],
  ['FC6 write 0xFFFF', { fc: 6, address: 65535, value: 65535 }, '06 FFFF FFFF'],
  ['FC15 write 10 coils from 20', { fc: 15, address: 19, values: bits('1011001110') }, '0F 0013 000A 02 CD01'],
  ['FC16 write 2 registers from 2', { fc: 16, address: 1, data: hex('000A 0102') }, '10 0001 0002 04 000A0102'],
];

for (const [name, object, bytes] of requests) {
  testParseGenerate(`request ${name}`, object, hex(bytes), encodeRequest, decodeRequest);
}

const responses: [string, ModbusResponse, string][] = [
  ['FC1 coils', { fc: 1, bits: bits('101100111101011010110000') }, '01 03 CD6B0D'],
  ['FC2 inputs', { fc: 2, bits: bits('001101011101101110101100') }, '02 03 ACDB35'],
  ['FC3 registers', { fc: 3, data: hex('022B 0000 0064') }, '03 06 022B00000064'],
  ['FC4 register', { fc: 4, data: hex('000A') }, '04 02 000A'],
  ['FC5 echo', { fc: 5, address: 172, value: true }, '05 00AC FF00'],
  ['FC6 echo', { fc: 6, address: 1, value: 3 }, '06 0001 0003'],
  ['FC15 echo', { fc: 15, address: 19, quantity: 10 }, '0F 0013 000A'],
  ['FC16 echo', { fc: 16, address: 1, quantity: 2 }, '10 0001 0002'],
  ['exception 2 to FC3', { fc: 3, exception: 2 }, '83 02'],
  ['exception 1 to FC16', { fc: 16, exception: 1 }, '90 01'],
  ['exception 4 to FC1', { fc: 1, exception: 4 }, '81 04'],
];

for (const [name, object, bytes] of responses) {
  testParseGenerate(`response ${name}`, object, hex(bytes), encodeResponse, decodeResponse);
}

const mbapFrames: [string, MbapFrame, string][] = [
  ['read request', { transactionId: 1, protocolId: 0, unitId: 17, pdu: hex('03 006B 0003') }, '0001 0000 0006 11 03006B0003'],
  ['response, tid 0xFFFF', { transactionId: 0xffff, protocolId: 0, unitId: 1, pdu: hex('03 02 1234') }, 'FFFF 0000 0005 01 03021234'],
  ['exception', { transactionId: 0x1234, protocolId: 0, unitId: 247, pdu: hex('83 02') }, '1234 0000 0003 F7 8302'],
];

const decodeMbapWhole = (b: Buffer) => {
  const out = new MbapDecoder().push(b);
  return out.length === 1 && 'frame' in out[0] ? out[0].frame : out;
};
for (const [name, object, bytes] of mbapFrames) {
  testParseGenerate(`MBAP ${name}`, object, hex(bytes), encodeMbap, decodeMbapWhole);
}

const rtuFrames: [string, RtuFrame, 'request' | 'response', string][] = [
  // The CRC bytes (low byte first) of these are the well-known values for these frames.
  ['read request', { unitId: 1, pdu: hex('03 0000 000A') }, 'request', '01 03 0000 000A C5CD'],
  ['read response', { unitId: 1, pdu: hex('03 02 0001') }, 'response', '01 03 02 0001 7984'],
  ['write single register', { unitId: 17, pdu: hex('06 0001 0003') }, 'request', '11 06 0001 0003 9A9B'],
  ['exception', { unitId: 1, pdu: hex('83 02') }, 'response', '01 83 02 C0F1'],
];

for (const [name, object, kind, bytes] of rtuFrames) {
  const decode = (b: Buffer) => {
    const r = decodeRtu(b, kind);
    return r.status === 'frame' && r.length === b.length ? r.frame : r;
  };
  testParseGenerate(`RTU ${name}`, object, hex(bytes), encodeRtu, decode);
}

t.test('CRC-16/MODBUS check value', async (t) => {
  // The catalogued check value of CRC-16/MODBUS over "123456789".
  t.equal(crc16(Buffer.from('123456789')), 0x4b37);
});

t.test('decoders report bad frames as errors', async (t) => {
  const bad: [string, string][] = [
    ['00', 'unsupported function code 0'],
    ['03 0000', 'expected 5'],
    ['03 0000 0000', 'quantity 0 outside 1..125'],
    ['03 0000 007E', 'quantity 126 outside 1..125'],
    ['01 0000 07D1', 'quantity 2001 outside 1..2000'],
    ['05 0000 1234', 'neither 0xFF00 nor 0x0000'],
    ['0F 0000 000A 01 FF', 'does not match byte count'],
    ['10 0000 0002 02 0001', 'does not match byte count'],
  ];
  for (const [bytes, msg] of bad) {
    const r = decodeRequest(hex(bytes));
    t.match(r, { error: new RegExp(msg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')) }, `request ${bytes}`);
  }
  t.match(decodeResponse(hex('03 03 000000')), { error: /odd byte count/ });
  t.match(decodeResponse(hex('03 04 0000')), { error: /expected 6/ });
  t.match(decodeResponse(hex('')), { error: /empty/ });
  t.match(new MbapDecoder().push(hex('0001 0001 0006 01 03000000')), [{ error: /protocol id 1/ }]);
  t.match(new MbapDecoder().push(hex('0001 0000 0000 01')), [{ error: /length 0/ }]);
  t.same(decodeRtu(hex('01 03 02 0001 0000'), 'response'), { status: 'crc', length: 7 });
  t.same(decodeRtu(hex('01 03 02'), 'response'), { status: 'incomplete' });
  t.same(decodeRtu(hex('01 63 00 00 00'), 'response'), { status: 'invalid' });
});

t.test('MBAP decoder reassembles frames split and joined across chunks', async (t) => {
  const a = encodeMbap({ transactionId: 7, protocolId: 0, unitId: 1, pdu: hex('03 04 00010002') });
  const b = encodeMbap({ transactionId: 8, protocolId: 0, unitId: 1, pdu: hex('83 02') });
  const all = Buffer.concat([a, b]);
  for (let cut = 1; cut < all.length; cut++) {
    const d = new MbapDecoder();
    const frames = [...d.push(all.subarray(0, cut)), ...d.push(all.subarray(cut))];
    t.same(frames.map((f) => ('frame' in f ? f.frame.transactionId : f.error)), [7, 8], `cut at ${cut}`);
  }
  // The transport reads into one reused buffer: what the decoder keeps must not change with it.
  for (let cut = 1; cut < all.length; cut++) {
    const d = new MbapDecoder();
    const rb = Buffer.alloc(64);
    const feed = (part: Buffer) => {
      part.copy(rb);
      const out = d.push(rb.subarray(0, part.length));
      rb.fill(0xee);
      return out;
    };
    const frames = [...feed(all.subarray(0, cut)), ...feed(all.subarray(cut))];
    t.same(frames.map((f) => ('frame' in f ? f.frame : f.error)), [{ transactionId: 7, protocolId: 0, unitId: 1, pdu: hex('03 04 00010002') }, { transactionId: 8, protocolId: 0, unitId: 1, pdu: hex('83 02') }], `reused buffer, cut at ${cut}`);
  }
});

t.test('inter-frame gap is 3.5 characters, 1.75 ms above 19200 baud', async (t) => {
  t.ok(Math.abs(interFrameGapMs(9600) - 4.01) < 0.01);
  t.equal(interFrameGapMs(115200), 1.75);
});

t.test('fuzz: random garbage never throws out of a decoder', async (t) => {
  // A seeded generator, so a failure can be reproduced.
  let seed = 0x2545f491;
  const rand = () => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) / 0x100000000;
  };
  const randomBytes = (n: number) => Buffer.from(Array.from({ length: n }, () => Math.floor(rand() * 256)));
  let errors = 0;
  const mbap = new MbapDecoder();
  for (let i = 0; i < 20000; i++) {
    const len = Math.floor(rand() * 300);
    const buf = randomBytes(len);
    // Bias some frames towards valid function codes so the deeper branches run too.
    if (len > 0 && rand() < 0.5) buf[0] = [1, 2, 3, 4, 5, 6, 15, 16, 0x83, 0x90][Math.floor(rand() * 10)];
    const req = decodeRequest(buf);
    const res = decodeResponse(buf);
    if ('error' in req) errors++;
    if ('error' in res) errors++;
    for (const r of mbap.push(buf)) if ('error' in r) errors++;
    for (const kind of ['request', 'response'] as const) {
      for (let off = 0; off < Math.min(buf.length, 8); off++) decodeRtu(buf, kind, off);
    }
  }
  t.ok(errors > 0, `decoders reported ${errors} errors and never threw`);
});
