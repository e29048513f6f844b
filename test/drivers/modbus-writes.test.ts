// Modbus writes devices accept, against a real pymodbus device: FC6/FC5 by default and FC16/FC15
// with write.multiple.registers.only, contiguous channels coalesced into one request, every 32/64-bit
// type round trip in all four word orders (register contents checked against the byte orders
// written independently of the driver's codec), scale.on.write, and values longer than one FC16.

import t, { type Test } from 'tap';
import os from 'node:os';
import type { TypedValue, ValueType } from '../../src/channels/types.js';
import { modbusFactory, type ModbusDriver } from '../../src/drivers/modbus/index.js';
import { SharedLines } from '../../src/drivers/lines.js';
import { silentLogger } from '../../src/log.js';
import { channel, show } from '../helpers/driver-conformance.js';
import { ORDERS, wireRegisters } from '../helpers/modbus-fixtures.js';
import { havePeers, startPyModbusTcp } from '../helpers/pymodbus.js';

if (havePeers(t, 'pymodbus')) {
  const dev = await startPyModbusTcp(t, { units: [1] });
  const create = (tt: Test, extra: Record<string, unknown> = {}): ModbusDriver => {
    const props = { 'access.type': 'TCP', 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': dev.port, 'modbus.timeout': 1000, ...extra };
    const d = modbusFactory.create(props, { id: 'w', log: silentLogger, dataDir: os.tmpdir(), lines: new SharedLines() });
    tt.teardown(() => d.close());
    return d;
  };
  const hr = (addr: number, dataType: string, valueType: ValueType = 'INTEGER', extra: Record<string, unknown> = {}) =>
    channel(`hr${addr}`, valueType, { 'memory.address': addr, 'data.type': dataType, ...extra });
  const coil = (addr: number) => channel(`co${addr}`, 'BOOLEAN', { 'primary.table': 'COILS', 'memory.address': addr });
  const int = (value: number): TypedValue => ({ type: 'INTEGER', value });
  const on = (value: boolean): TypedValue => ({ type: 'BOOLEAN', value });
  const wire = async () => (await dev.received()).map((q) => [q.fc, q.address, q.count]);
  const ok = (tt: Test, r: { ok: boolean; error?: string }[]) => tt.ok(r.every((x) => x.ok), r.map((x) => (x.ok ? 'ok' : x.error)).join(', '));

  t.test('one register with FC6 and one coil with FC5 by default; FC16 and FC15 with write.multiple.registers.only', async (t) => {
    const plain = create(t);
    await dev.clearRequests();
    ok(t, await plain.write([{ channel: hr(11, 'INT16'), value: int(5) }]));
    ok(t, await plain.write([{ channel: coil(11), value: on(true) }]));
    t.same(await wire(), [[6, 10, 1], [5, 10, 1]]);
    const multiple = create(t, { 'write.multiple.registers.only': true });
    await dev.clearRequests();
    ok(t, await multiple.write([{ channel: hr(12, 'INT16'), value: int(6) }]));
    ok(t, await multiple.write([{ channel: coil(12), value: on(true) }]));
    t.same(await wire(), [[16, 11, 1], [15, 11, 1]]);
    t.same(await dev.get(1, 'hr', 10, 2), [5, 6]);
    t.same(await dev.get(1, 'co', 10, 2), [1, 1]);
  });

  t.test('contiguous channels of one _write become one FC16 / FC15; gaps and order split them', async (t) => {
    const d = create(t);
    await dev.clearRequests();
    ok(t, await d.write([
      { channel: hr(21, 'INT16'), value: int(1) },
      { channel: hr(22, 'INT32'), value: int(0x20003) },
      { channel: hr(24, 'INT16'), value: int(4) },
      { channel: hr(30, 'INT16'), value: int(30) }, // a gap: a new request (FC6)
      { channel: coil(21), value: on(true) },
      { channel: coil(22), value: on(false) },
      { channel: coil(23), value: on(true) },
      { channel: hr(25, 'INT16'), value: int(5) }, // contiguous with 24, but not next in the request
    ]));
    t.same(await wire(), [[16, 20, 4], [6, 29, 1], [15, 20, 3], [6, 24, 1]]);
    t.same(await dev.get(1, 'hr', 20, 6), [1, 2, 3, 4, 5, 0]);
    t.same(await dev.get(1, 'co', 20, 3), [1, 0, 1]);
    const w = await d.write([{ channel: hr(5000, 'INT16'), value: int(1) }, { channel: hr(5001, 'INT16'), value: int(2) }]);
    t.match(w, [
      { ok: false, error: 'Modbus exception 2 (ILLEGAL DATA ADDRESS) for writing HOLDING_REGISTERS 5000..5001 on unit 1' },
      { ok: false, error: 'Modbus exception 2 (ILLEGAL DATA ADDRESS) for writing HOLDING_REGISTERS 5000..5001 on unit 1' },
    ], 'a coalesced request that fails fails each of its channels');
  });

  t.test('word order on writes: every 32/64-bit type round trips in all four orders', async (t) => {
    const d = create(t);
    const be = (n: number, f: (b: Buffer) => void) => { const b = Buffer.alloc(n); f(b); return b; };
    const cases: [string, ValueType, TypedValue, Buffer][] = [
      ['INT32', 'INTEGER', int(-123456789), be(4, (b) => b.writeInt32BE(-123456789))],
      ['UINT32', 'LONG', { type: 'LONG', value: 4_000_000_001n }, be(4, (b) => b.writeUInt32BE(4_000_000_001))],
      ['FLOAT32', 'FLOAT', { type: 'FLOAT', value: Math.fround(-1234.5) }, be(4, (b) => b.writeFloatBE(-1234.5))],
      ['FLOAT32', 'DOUBLE', { type: 'DOUBLE', value: 0.15625 }, be(4, (b) => b.writeFloatBE(0.15625))],
      ['INT64', 'LONG', { type: 'LONG', value: -(2n ** 62n) - 12345n }, be(8, (b) => b.writeBigInt64BE(-(2n ** 62n) - 12345n))],
      ['UINT64', 'LONG', { type: 'LONG', value: 2n ** 63n - 2n }, be(8, (b) => b.writeBigUInt64BE(2n ** 63n - 2n))],
      ['FLOAT64', 'DOUBLE', { type: 'DOUBLE', value: -Math.PI * 1e10 }, be(8, (b) => b.writeDoubleBE(-Math.PI * 1e10))],
    ];
    let addr = 101;
    for (const [dataType, valueType, value, bytes] of cases) {
      for (const order of ORDERS) {
        const ch = hr(addr, dataType, valueType, { 'data.order': order });
        const w = await d.write([{ channel: ch, value }]);
        const what = `${dataType} as ${valueType} in ${order}`;
        t.ok(w[0].ok, `${what} written${w[0].ok ? '' : `: ${w[0].error}`}`);
        t.same(await dev.get(1, 'hr', addr - 1, bytes.length / 2), wireRegisters(bytes, order), `${what}: registers in that order`);
        const r = await d.read([ch]);
        t.equal(r[0].ok ? show(r[0].value) : r[0].error, show(value), `${what}: reads back`);
        addr += bytes.length / 2;
      }
    }
  });

  t.test('scale.on.write applies the inverse of scale and offset; off by default (Kura)', async (t) => {
    const d = create(t);
    const scaled = (addr: number, sow?: boolean) => ({ ...hr(addr, 'FLOAT32', 'DOUBLE', sow === undefined ? {} : { 'scale.on.write': sow }), scale: 0.1, offset: 5 });
    ok(t, await d.write([{ channel: scaled(301, true), value: { type: 'DOUBLE', value: 25 } }, { channel: scaled(303), value: { type: 'DOUBLE', value: 25 } }]));
    const raw = await d.read([hr(301, 'FLOAT32', 'DOUBLE'), hr(303, 'FLOAT32', 'DOUBLE')]);
    t.same(raw.map((x) => (x.ok ? Math.round(Number(x.value.value) * 1000) / 1000 : x.error)), [200, 25], '(25 - 5) / 0.1 = 200 on the wire; as given without the option');
    const i = { ...hr(305, 'INT16', 'INTEGER', { 'scale.on.write': true }), scale: 2, offset: 1 };
    ok(t, await d.write([{ channel: i, value: int(21) }]));
    t.same(await dev.get(1, 'hr', 304, 1), [10], 'INTEGER: (21 - 1) / 2');
    const zero = { ...hr(306, 'INT16', 'INTEGER', { 'scale.on.write': true }), scale: 0.5 };
    t.match(await d.write([{ channel: zero, value: int(1) }]), [{ ok: false, error: /HOLDING_REGISTERS 306: scale 0.5 cannot be inverted for a INTEGER write/ }]);
  });

  t.test('a STRING longer than 123 registers is written in two FC16 requests', async (t) => {
    const d = create(t);
    const ch = channel('text', 'STRING', { 'memory.address': 401, 'data.type': 'STRING', 'array.data.length': 125 });
    const text = 'x'.repeat(200) + 'END'.repeat(16) + 'yz';
    await dev.clearRequests();
    ok(t, await d.write([{ channel: ch, value: { type: 'STRING', value: text } }]));
    t.same(await wire(), [[16, 400, 123], [16, 523, 2]]);
    const r = await d.read([ch]);
    t.equal(r[0].ok ? r[0].value.value : r[0].error, text);
  });
}
