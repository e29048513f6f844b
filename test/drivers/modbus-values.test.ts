// Register data types and word/byte orders (docs/drivers.md "modbus") as (layout, wire bytes,
// value) tables, channel property validation (key paths), and request coalescing.

import t from 'tap';
import type { TypedValue, ValueType } from '../../src/channels/types.js';
import { decodeRegisters, decoderFor, encodeRegisters, type DataOrder, type DataType } from '../../src/drivers/modbus/datatypes.js';
import { modbusFactory } from '../../src/drivers/modbus/index.js';
import { parseChannel } from '../../src/drivers/modbus/config.js';
import { planReads, type ReadItem } from '../../src/drivers/modbus/plan.js';

const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ''), 'hex');

type Row = [DataType, DataOrder, string, TypedValue, number?];
const rows: Row[] = [
  ['INT16', 'BIG_ENDIAN', 'FFFE', { type: 'INTEGER', value: -2 }],
  ['INT16', 'LITTLE_ENDIAN', 'FFFE', { type: 'INTEGER', value: -2 }], // 16-bit types ignore the order
  ['UINT16', 'BIG_ENDIAN', 'FFFF', { type: 'INTEGER', value: 65535 }],
  ['INT32', 'BIG_ENDIAN', '0102 0304', { type: 'INTEGER', value: 0x01020304 }],
  ['INT32', 'LITTLE_ENDIAN', '0403 0201', { type: 'INTEGER', value: 0x01020304 }],
  ['INT32', 'BIG_ENDIAN_BYTE_SWAP', '0201 0403', { type: 'INTEGER', value: 0x01020304 }],
  ['INT32', 'LITTLE_ENDIAN_BYTE_SWAP', '0304 0102', { type: 'INTEGER', value: 0x01020304 }],
  ['INT32', 'BIG_ENDIAN', 'FFFF FFFF', { type: 'INTEGER', value: -1 }],
  ['UINT32', 'BIG_ENDIAN', 'FFFF FFFF', { type: 'LONG', value: 4294967295n }],
  ['FLOAT32', 'BIG_ENDIAN', '3FC0 0000', { type: 'FLOAT', value: 1.5 }],
  ['FLOAT32', 'LITTLE_ENDIAN', '0000 C03F', { type: 'FLOAT', value: 1.5 }],
  ['FLOAT32', 'BIG_ENDIAN_BYTE_SWAP', 'C03F 0000', { type: 'FLOAT', value: 1.5 }],
  ['FLOAT32', 'LITTLE_ENDIAN_BYTE_SWAP', '0000 3FC0', { type: 'FLOAT', value: 1.5 }],
  ['FLOAT32', 'BIG_ENDIAN', '3DCC CCCD', { type: 'FLOAT', value: Math.fround(0.1) }],
  ['FLOAT32', 'BIG_ENDIAN', '3DCC CCCD', { type: 'DOUBLE', value: Math.fround(0.1) }],
  ['FLOAT64', 'BIG_ENDIAN', '4009 21FB 5444 2D18', { type: 'DOUBLE', value: Math.PI }],
  ['FLOAT64', 'LITTLE_ENDIAN', '182D 4454 FB21 0940', { type: 'DOUBLE', value: Math.PI }],
  ['INT64', 'BIG_ENDIAN', '0020 0000 0000 0001', { type: 'LONG', value: 9007199254740993n }],
  ['INT64', 'LITTLE_ENDIAN', '0100 0000 0000 2000', { type: 'LONG', value: 9007199254740993n }],
  ['INT64', 'BIG_ENDIAN_BYTE_SWAP', '2000 0000 0000 0100', { type: 'LONG', value: 9007199254740993n }],
  ['INT64', 'LITTLE_ENDIAN_BYTE_SWAP', '0001 0000 0000 0020', { type: 'LONG', value: 9007199254740993n }],
  ['INT64', 'BIG_ENDIAN', '8000 0000 0000 0000', { type: 'LONG', value: -(2n ** 63n) }],
  ['UINT64', 'BIG_ENDIAN', '7FFF FFFF FFFF FFFF', { type: 'LONG', value: 2n ** 63n - 1n }],
  ['INT16', 'BIG_ENDIAN', '0001', { type: 'BOOLEAN', value: true }],
  ['UINT16', 'BIG_ENDIAN', '0000', { type: 'BOOLEAN', value: false }],
  ['INT16', 'BIG_ENDIAN', '0010', { type: 'LONG', value: 16n }],
  ['INT16', 'BIG_ENDIAN', 'FFF0', { type: 'LONG', value: -16n }],
  ['UINT16', 'BIG_ENDIAN', 'FFF0', { type: 'LONG', value: 65520n }],
  ['INT16', 'BIG_ENDIAN', '8000', { type: 'INTEGER', value: -32768 }],
  ['UINT16', 'BIG_ENDIAN', '0001', { type: 'BOOLEAN', value: true }],
  ['INT32', 'BIG_ENDIAN_BYTE_SWAP', 'FFFF FEFF', { type: 'INTEGER', value: -2 }],
  ['UINT32', 'BIG_ENDIAN', '8000 0000', { type: 'LONG', value: 2147483648n }],
  ['UINT32', 'LITTLE_ENDIAN_BYTE_SWAP', 'FFFE FFFF', { type: 'LONG', value: 4294967294n }],
  ['INT32', 'LITTLE_ENDIAN', 'FEFF FFFF', { type: 'LONG', value: -2n }],
  ['STRING', 'BIG_ENDIAN', '6869 2100', { type: 'STRING', value: 'hi!' }, 2],
  ['STRING', 'BIG_ENDIAN', '0102 0300', { type: 'BYTE_ARRAY', value: hex('01020300') }, 2],
];

for (const [dataType, order, wire, value, arrayLength = 1] of rows) {
  t.test(`${dataType} ${order} ${wire} as ${value.type}`, async (t) => {
    const layout = { dataType, order, valueType: value.type as ValueType };
    t.same(decodeRegisters(hex(wire), layout), value, 'decode');
    // Inside a block read: the channel's bytes between other registers.
    const block = Buffer.concat([hex('ABCD EF01'), hex(wire), hex('2345')]);
    t.same(decodeRegisters(block, layout, 4, hex(wire).length), value, 'decode at an offset in a block');
    t.same(decoderFor(layout)(block, 4, hex(wire).length), value, 'the channel decoder (decoderFor) agrees');
    t.same(encodeRegisters(value, layout, arrayLength), hex(wire), 'encode');
  });
}

t.test('values that do not fit are errors, not wrong numbers', async (t) => {
  const be = 'BIG_ENDIAN' as const;
  t.match(decodeRegisters(hex('FFFF FFFF FFFF FFFF'), { dataType: 'UINT64', order: be, valueType: 'LONG' }), { error: /beyond 2\^63-1/ });
  t.match(encodeRegisters({ type: 'INTEGER', value: 40000 }, { dataType: 'INT16', order: be, valueType: 'INTEGER' }, 1), { error: /out of range for INT16/ });
  t.match(encodeRegisters({ type: 'INTEGER', value: -1 }, { dataType: 'UINT16', order: be, valueType: 'INTEGER' }, 1), { error: /out of range/ });
  t.match(encodeRegisters({ type: 'LONG', value: -1n }, { dataType: 'UINT64', order: be, valueType: 'LONG' }, 1), { error: /out of range/ });
  t.match(encodeRegisters({ type: 'STRING', value: 'toolong' }, { dataType: 'STRING', order: be, valueType: 'STRING' }, 2), { error: /do not fit 2 registers/ });
  t.match(decodeRegisters(hex('0000'), { dataType: 'FLOAT32', order: be, valueType: 'INTEGER' }), { error: /cannot be read as INTEGER/ });
});

t.test('instance properties: problems carry key paths', async (t) => {
  const v = (props: Record<string, unknown>) => modbusFactory.validateInstance(props, 'drivers.plc');
  t.same(v({ 'access.type': 'TCP', 'modbus.tcp-udp.ip': '10.0.0.5' }), []);
  t.same(v({ 'access.type': 'rtu', 'modbus.rtu.port.name': '/dev/ttyS1', 'modbus.rtu.parity': 'EVEN_PARITY' }), []);
  t.match(v({ 'modbus.tcp-udp.ip': '10.0.0.5', 'modbus.timeout': '1000' }), [{ path: 'drivers.plc.modbus.timeout', message: /integer/ }]);
  t.match(v({ 'modbus.tcp-udp.ip': '10.0.0.5', 'modbus.timeout': 0 }), [{ path: 'drivers.plc.modbus.timeout', message: 'must be between 1 and 600000 ms (10 min), got 0' }]);
  t.match(v({ 'modbus.tcp-udp.ip': 'h', 'modbus.tcp-udp.port': 70000 }), [{ path: 'drivers.plc.modbus.tcp-udp.port' }]);
  t.match(v({ 'access.type': 'SERIAL' }), [{ path: 'drivers.plc.access.type', message: /unknown value "SERIAL"/ }]);
  t.match(v({ 'access.type': 'TCP' }), [{ path: 'drivers.plc.modbus.tcp-udp.ip', message: /required/ }]);
  t.match(v({ 'access.type': 'RTU', 'modbus.rtu.port.name': '/dev/x', 'modbus.rtu.baudrate': 9601 }), [{ path: 'drivers.plc.modbus.rtu.baudrate' }]);
  t.match(v({ 'access.type': 'RTU', 'modbus.rtu.port.name': '/dev/x', 'modbus.rtu.stopbits': 'THREE' }), [{ path: 'drivers.plc.modbus.rtu.stopbits' }]);
  t.match(v({ 'modbus.tcp-udp.ip': 'h', 'modbus.transaction.retry': -1, 'read.max.gap': 200 }), [
    { path: 'drivers.plc.modbus.transaction.retry' },
    { path: 'drivers.plc.read.max.gap' },
  ]);
  t.match(v({ 'access.type': 'RTU', 'modbus.rtu.port.name': '/dev/x', 'modbus.rtu.databits': 7 }), [{ path: 'drivers.plc.modbus.rtu.databits', severity: 'warning' }]);
  t.same([...modbusFactory.instanceKeys].sort(), [
    'access.type', 'inter.request.delay', 'modbus.rtu.baudrate', 'modbus.rtu.databits', 'modbus.rtu.parity', 'modbus.rtu.port.name', 'modbus.rtu.stopbits',
    'modbus.tcp-udp.ip', 'modbus.tcp-udp.port', 'modbus.timeout', 'modbus.transaction.retry', 'read.max.gap', 'unit.backoff.max', 'write.multiple.registers.only',
  ]);
  t.same([...modbusFactory.channelKeys].sort(), ['array.data.length', 'data.order', 'data.type', 'memory.address', 'primary.table', 'scale.on.write', 'unit.id']);
  t.same(v({ 'access.type': 'RTU_OVER_TCP', 'modbus.tcp-udp.ip': '10.0.0.5', 'write.multiple.registers.only': true, 'unit.backoff.max': 0 }), []);
  t.same(v({ 'access.type': 'TCP-RTU', 'modbus.tcp-udp.ip': '10.0.0.5' }), [], "Kura's name for RTU over TCP");
  t.match(v({ 'access.type': 'RTU_OVER_TCP' }), [{ path: 'drivers.plc.modbus.tcp-udp.ip', message: 'is required when access.type is RTU_OVER_TCP' }]);
  t.match(v({ 'modbus.tcp-udp.ip': 'h', 'write.multiple.registers.only': 'yes', 'unit.backoff.max': -1 }), [
    { path: 'drivers.plc.write.multiple.registers.only', message: /true or false/ },
    { path: 'drivers.plc.unit.backoff.max', message: 'must be between 0 and 3600000 ms (1 h), got -1' },
  ]);
});

t.test('channel properties: types, ranges, enums and value.type mismatches', async (t) => {
  const p = 'assets.pump.channels.speed';
  const v = (props: Record<string, unknown>, vt: ValueType) => modbusFactory.validateChannel(props, vt, p, {});
  t.same(v({}, 'INTEGER'), []);
  t.same(v({ 'unit.id': 3, 'primary.table': 'input_registers', 'memory.address': 10, 'data.type': 'FLOAT32', 'data.order': 'LITTLE_ENDIAN' }, 'FLOAT'), []);
  t.same(v({ 'primary.table': 'COILS' }, 'BOOLEAN'), []);
  t.same(v({ 'data.type': 'STRING', 'array.data.length': 8 }, 'STRING'), []);
  t.same(v({ 'array.data.length': 4 }, 'BYTE_ARRAY'), []);
  const rtu = { 'access.type': 'RTU' };
  t.match(modbusFactory.validateChannel({ 'unit.id': 0 }, 'INTEGER', p, rtu), [{ path: `${p}.unit.id`, message: /out of range \(1..247\)/ }], 'RTU: 0 is broadcast');
  t.match(modbusFactory.validateChannel({ 'unit.id': 248 }, 'INTEGER', p, rtu), [{ path: `${p}.unit.id`, message: /out of range \(1..247\)/ }]);
  for (const access of ['TCP', 'RTU_OVER_TCP']) {
    for (const id of [0, 255]) t.same(modbusFactory.validateChannel({ 'unit.id': id }, 'INTEGER', p, { 'access.type': access }), [], `${access}: unit ${id}`);
    t.match(modbusFactory.validateChannel({ 'unit.id': 256 }, 'INTEGER', p, { 'access.type': access }), [{ path: `${p}.unit.id`, message: /out of range \(0..255\)/ }]);
  }
  t.match(v({ 'scale.on.write': 1 }, 'DOUBLE'), [{ path: `${p}.scale.on.write`, message: /true or false/ }]);
  // A channel that could never be written is a configuration error (the mode comes from `type`).
  const w = (props: Record<string, unknown>, mode: 'READ' | 'WRITE' | 'READ_WRITE') => modbusFactory.validateChannel(props, 'INTEGER', p, {}, mode);
  t.same(w({ 'primary.table': 'INPUT_REGISTERS' }, 'READ'), []);
  t.match(w({ 'primary.table': 'INPUT_REGISTERS' }, 'READ_WRITE'), [{ path: `${p}.primary.table`, message: /INPUT_REGISTERS cannot be written, so type READ_WRITE can never work/ }]);
  t.match(modbusFactory.validateChannel({ 'primary.table': 'DISCRETE_INPUTS' }, 'BOOLEAN', p, {}, 'WRITE'), [{ path: `${p}.primary.table` }]);
  t.match(v({ 'unit.id': '1' }, 'INTEGER'), [{ path: `${p}.unit.id`, message: /integer/ }]);
  t.match(v({ 'memory.address': 0 }, 'INTEGER'), [{ path: `${p}.memory.address` }]);
  t.match(v({ 'memory.address': 65536, 'data.type': 'INT32' }, 'INTEGER'), [{ path: `${p}.memory.address`, message: /past the end/ }]);
  t.match(v({ 'primary.table': 'REGISTERS' }, 'INTEGER'), [{ path: `${p}.primary.table`, message: /unknown value/ }]);
  t.match(v({ 'data.order': 'MIDDLE_ENDIAN' }, 'INTEGER'), [{ path: `${p}.data.order` }]);
  t.match(v({ 'data.type': 'UINT32' }, 'INTEGER'), [{ path: `${p}.data.type`, message: /channel speed: data.type UINT32 does not fit value.type INTEGER/ }]);
  t.match(v({ 'data.type': 'INT32' }, 'FLOAT'), [{ path: `${p}.data.type` }]);
  t.match(v({ 'data.type': 'FLOAT64' }, 'FLOAT'), [{ path: `${p}.data.type` }]);
  t.match(v({ 'data.type': 'INT32' }, 'DOUBLE'), [{ path: `${p}.data.type` }]);
  t.match(v({ 'data.type': 'INT32' }, 'BOOLEAN'), [{ path: `${p}.data.type` }]);
  t.match(v({ 'data.type': 'STRING' }, 'STRING'), [{ path: `${p}.array.data.length`, message: /required/ }]);
  t.match(v({ 'primary.table': 'COILS' }, 'INTEGER'), [{ path: `${p}.value.type`, message: /must be BOOLEAN/ }]);
  t.match(v({ 'primary.table': 'DISCRETE_INPUTS', 'data.type': 'INT32' }, 'BOOLEAN'), [{ path: `${p}.data.type`, severity: 'warning' }]);
  t.match(modbusFactory.validateChannel({ 'data.type': 'UINT32' }, 'INTEGER', 'assets.p.channels.motor.speed', {}), [{ path: 'assets.p.channels.motor.speed.data.type', message: /^channel motor.speed: / }]);
  for (const dt of ['INT16', 'UINT16', 'INT32', 'UINT32', 'INT64', 'UINT64']) t.same(v({ 'data.type': dt }, 'LONG'), [], `LONG from ${dt}`);
});

function items(specs: [number, string, number, number][]): ReadItem[] {
  // [unit, table, memory.address (1-based), data.type width]
  return specs.map(([unit, table, addr, width], index) => {
    const dataType = width === 1 ? 'INT16' : width === 2 ? 'INT32' : 'INT64';
    return { index, spec: parseChannel({ 'unit.id': unit, 'primary.table': table, 'memory.address': addr, 'data.type': dataType }, 'LONG', 'x').value };
  });
}

t.test('coalescing: fewest requests per unit and table, split at 125 registers and 2000 bits', async (t) => {
  const shape = (blocks: ReturnType<typeof planReads>) => blocks.map((b) => [b.unitId, b.fc, b.address, b.quantity, b.items.map((i) => i.index)]);
  // 50 two-register channels covering holding registers 1..100, given out of order.
  const fifty = items(Array.from({ length: 50 }, (_, i) => [1, 'HOLDING_REGISTERS', 99 - 2 * i, 2] as [number, string, number, number]));
  const one = planReads(fifty, 0);
  t.equal(one.length, 1);
  t.same([one[0].address, one[0].quantity, one[0].items.length], [0, 100, 50]);
  // 100 two-register channels: 200 registers, split at 125.
  const hundred = items(Array.from({ length: 100 }, (_, i) => [1, 'HOLDING_REGISTERS', 1 + 2 * i, 2] as [number, string, number, number]));
  t.same(planReads(hundred, 0).map((b) => [b.address, b.quantity]), [[0, 124], [124, 76]]);
  // Gaps: merged only within read.max.gap; tables and units never mix.
  const gappy = items([[1, 'HOLDING_REGISTERS', 1, 1], [1, 'HOLDING_REGISTERS', 5, 1], [1, 'INPUT_REGISTERS', 2, 1], [2, 'HOLDING_REGISTERS', 2, 1]]);
  t.same(shape(planReads(gappy, 0)), [[1, 3, 0, 1, [0]], [1, 3, 4, 1, [1]], [1, 4, 1, 1, [2]], [2, 3, 1, 1, [3]]]);
  t.same(shape(planReads(gappy, 3)), [[1, 3, 0, 5, [0, 1]], [1, 4, 1, 1, [2]], [2, 3, 1, 1, [3]]]);
  t.same(shape(planReads(gappy, 2)).length, 4, 'a gap of 3 is not merged with read.max.gap 2');
  // Overlapping channels share registers.
  t.same(shape(planReads(items([[1, 'HOLDING_REGISTERS', 1, 4], [1, 'HOLDING_REGISTERS', 3, 1]]), 0)), [[1, 3, 0, 4, [0, 1]]]);
  // Coils: 2500 single bits become two requests (2000 + 500).
  const coils = items(Array.from({ length: 2500 }, (_, i) => [1, 'COILS', i + 1, 1] as [number, string, number, number]));
  t.same(planReads(coils, 0).map((b) => [b.fc, b.address, b.quantity]), [[1, 0, 2000], [1, 2000, 500]]);
});

t.test('channel specs of one layout share its fields; each keeps only its address (memory at tens of thousands of channels)', async (t) => {
  const spec = (addr: number, unit = 1) => parseChannel({ 'unit.id': unit, 'primary.table': 'HOLDING_REGISTERS', 'memory.address': addr, 'data.type': 'INT32' }, 'LONG', 'x').value;
  const a = spec(10);
  const b = spec(20);
  t.same(Object.keys(a), ['address'], 'own field: the address');
  t.equal(Object.getPrototypeOf(a), Object.getPrototypeOf(b), 'one layout object');
  t.not(Object.getPrototypeOf(spec(10, 2)), Object.getPrototypeOf(a), 'another unit: another layout');
  t.match({ ...Object.getPrototypeOf(b), address: b.address }, { unitId: 1, table: 'HOLDING_REGISTERS', address: 19, count: 2, dataType: 'INT32', order: 'BIG_ENDIAN', valueType: 'LONG', arrayLength: 1, scaleOnWrite: false });
});

t.test('channels of one layout share one specialised decoder (memory at tens of thousands of channels)', async (t) => {
  const a = decoderFor({ dataType: 'INT16', valueType: 'INTEGER', order: 'BIG_ENDIAN' });
  t.equal(decoderFor({ dataType: 'INT16', valueType: 'INTEGER', order: 'BIG_ENDIAN' }), a, 'the same function');
  t.not(decoderFor({ dataType: 'UINT16', valueType: 'INTEGER', order: 'BIG_ENDIAN' }), a, 'another layout, another decoder');
  const data = Buffer.from([0xff, 0xfe, 0x00, 0x07]);
  t.same(a(data, 0, 2), { type: 'INTEGER', value: -2 });
  t.same(decoderFor({ dataType: 'UINT16', valueType: 'INTEGER', order: 'BIG_ENDIAN' })(data, 0, 2), { type: 'INTEGER', value: 0xfffe });
  const swapped = decoderFor({ dataType: 'INT32', valueType: 'INTEGER', order: 'LITTLE_ENDIAN_BYTE_SWAP' });
  t.not(swapped, decoderFor({ dataType: 'INT32', valueType: 'INTEGER', order: 'BIG_ENDIAN' }), 'the order is part of the layout');
  t.same(swapped(data, 0, 4), { type: 'INTEGER', value: 0x0007fffe });
  // Layouts without a specialised decoder still decode, through decodeRegisters.
  t.same(decoderFor({ dataType: 'FLOAT32', valueType: 'FLOAT', order: 'BIG_ENDIAN' })(Buffer.from([0x3f, 0xc0, 0, 0]), 0, 4), { type: 'FLOAT', value: 1.5 });
});
