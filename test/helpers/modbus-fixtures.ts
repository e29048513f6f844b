// Shared by the Modbus TCP and RTU tests: the acceptance layout (holding registers 1–100 as 50
// channels) with the register contents written independently of the driver's codec, from the
// byte orders docs/drivers.md states (`data.order`).

import type { ChannelConfig, TypedValue, ValueType } from '../../src/channels/types.js';
import { channel } from './driver-conformance.js';

export type Order = 'BIG_ENDIAN' | 'LITTLE_ENDIAN' | 'BIG_ENDIAN_BYTE_SWAP' | 'LITTLE_ENDIAN_BYTE_SWAP';
export const ORDERS: Order[] = ['BIG_ENDIAN', 'LITTLE_ENDIAN', 'BIG_ENDIAN_BYTE_SWAP', 'LITTLE_ENDIAN_BYTE_SWAP'];

/** Big-endian bytes (A B C D …) in the wire order of docs/drivers.md (`data.order`), as 16-bit register values. */
export function wireRegisters(be: Buffer, order: Order): number[] {
  const n = be.length;
  const idx = [...Array(n).keys()];
  let perm: number[];
  if (n === 2 || order === 'BIG_ENDIAN') perm = idx; // AB CD EF GH
  else if (order === 'LITTLE_ENDIAN') perm = idx.reverse(); // HG FE DC BA
  else if (order === 'BIG_ENDIAN_BYTE_SWAP') perm = idx.map((i) => i ^ 1); // BA DC FE HG
  else perm = idx.map((i) => (n - 2 - (i & ~1)) + (i & 1)); // GH EF CD AB
  const bytes = Buffer.from(perm.map((i) => be[i]));
  return Array.from({ length: n / 2 }, (_, i) => bytes.readUInt16BE(i * 2));
}

export interface Fixture {
  channel: ChannelConfig;
  /** PDU address (memory.address - 1) and the registers the device holds there. */
  address: number;
  registers: number[];
  expected: TypedValue;
}

function fixture(name: string, valueType: ValueType, memoryAddress: number, dataType: string, order: Order, be: Buffer, expected: TypedValue): Fixture {
  return {
    channel: channel(name, valueType, { 'unit.id': 1, 'primary.table': 'HOLDING_REGISTERS', 'memory.address': memoryAddress, 'data.type': dataType, 'data.order': order }),
    address: memoryAddress - 1,
    registers: wireRegisters(be, order),
    expected,
  };
}

const f32 = (v: number) => { const b = Buffer.alloc(4); b.writeFloatBE(v); return b; };
const f64 = (v: number) => { const b = Buffer.alloc(8); b.writeDoubleBE(v); return b; };
const i16 = (v: number) => { const b = Buffer.alloc(2); b.writeInt16BE(v); return b; };
const i32 = (v: number) => { const b = Buffer.alloc(4); b.writeInt32BE(v); return b; };
const u32 = (v: number) => { const b = Buffer.alloc(4); b.writeUInt32BE(v); return b; };
const i64 = (v: bigint) => { const b = Buffer.alloc(8); b.writeBigInt64BE(v); return b; };

/**
 * 50 channels exactly covering holding registers 1–100 (Kura addresses): FLOAT32 in all four
 * orders, INT64 beyond 2^53 in all four orders, UINT32 above 2^31, INT16, INT32, FLOAT64.
 */
export function fiftyChannels(): Fixture[] {
  const out: Fixture[] = [];
  let addr = 1;
  const add = (valueType: ValueType, dataType: string, order: Order, be: Buffer, expected: TypedValue) => {
    out.push(fixture(`c${out.length}`, valueType, addr, dataType, order, be, expected));
    addr += be.length / 2;
  };
  ORDERS.forEach((o, i) => add('FLOAT', 'FLOAT32', o, f32(-12.375 * (i + 1)), { type: 'FLOAT', value: -12.375 * (i + 1) }));
  ORDERS.forEach((o, i) => {
    const v = 2n ** 53n + 12345n + BigInt(i) * 1000003n;
    add('LONG', 'INT64', o, i64(i % 2 ? -v : v), { type: 'LONG', value: i % 2 ? -v : v });
  });
  ORDERS.forEach((o, i) => add('LONG', 'UINT32', o, u32(3_000_000_000 + i), { type: 'LONG', value: BigInt(3_000_000_000 + i) }));
  add('DOUBLE', 'FLOAT64', 'BIG_ENDIAN', f64(Math.E), { type: 'DOUBLE', value: Math.E });
  // 13 channels on 36 registers so far; 37 channels on the other 64: 10 INT16 and 27 INT32.
  for (let i = 0; i < 10; i++) add('INTEGER', 'INT16', 'BIG_ENDIAN', i16(-1000 * i - 7), { type: 'INTEGER', value: -1000 * i - 7 });
  for (let i = 0; i < 27; i++) add('INTEGER', 'INT32', ORDERS[i % 4], i32(100_000 * i + 1), { type: 'INTEGER', value: 100_000 * i + 1 });
  if (out.length !== 50 || addr !== 101) throw new Error(`fixture covers ${out.length} channels up to ${addr - 1}`);
  return out;
}
