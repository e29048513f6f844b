// Register data types and word/byte orders (docs/drivers.md "modbus", "Channel properties"),
// mapped to and from the channel's value type (src/channels/types.ts TypedValue).

import type { TypedValue, ValueType } from '../../channels/types.js';
import { YoungValue } from '../../channels/young.js';

export const DATA_TYPES = ['INT16', 'UINT16', 'INT32', 'UINT32', 'INT64', 'UINT64', 'FLOAT32', 'FLOAT64', 'STRING'] as const;
export type DataType = (typeof DATA_TYPES)[number];

export const DATA_ORDERS = ['BIG_ENDIAN', 'LITTLE_ENDIAN', 'BIG_ENDIAN_BYTE_SWAP', 'LITTLE_ENDIAN_BYTE_SWAP'] as const;
export type DataOrder = (typeof DATA_ORDERS)[number];

/** Which register data types each value type may declare (docs/drivers.md "Channel properties"). */
export const ALLOWED_DATA_TYPES: Record<ValueType, readonly DataType[]> = {
  INTEGER: ['INT16', 'UINT16', 'INT32'],
  LONG: ['INT16', 'UINT16', 'INT32', 'UINT32', 'INT64', 'UINT64'],
  FLOAT: ['FLOAT32'],
  DOUBLE: ['FLOAT32', 'FLOAT64'],
  // "a register read as 0/1"
  BOOLEAN: ['INT16', 'UINT16'],
  STRING: ['STRING'],
  BYTE_ARRAY: ['STRING'],
};

const WIDTH: Record<Exclude<DataType, 'STRING'>, number> = {
  INT16: 1, UINT16: 1, INT32: 2, UINT32: 2, FLOAT32: 2, INT64: 4, UINT64: 4, FLOAT64: 4,
};

/** Registers a value occupies; STRING (and BYTE_ARRAY) take `array.data.length` registers. */
export function registerCount(dataType: DataType, arrayLength: number): number {
  return dataType === 'STRING' ? arrayLength : WIDTH[dataType];
}

/**
 * Converts between wire order and big-endian (ABCD…) for 32- and 64-bit types. Each order is its
 * own inverse, so the same function serves reads and writes (docs/drivers.md, `data.order`):
 * BIG_ENDIAN AB CD EF GH; LITTLE_ENDIAN HG FE DC BA; BIG_ENDIAN_BYTE_SWAP BA DC FE HG;
 * LITTLE_ENDIAN_BYTE_SWAP GH EF CD AB.
 */
export function reorder(bytes: Buffer, order: DataOrder): Buffer {
  const out = Buffer.from(bytes);
  if (bytes.length <= 2) return out; // 16-bit types ignore the order
  switch (order) {
    case 'BIG_ENDIAN':
      return out;
    case 'LITTLE_ENDIAN':
      return out.reverse();
    case 'BIG_ENDIAN_BYTE_SWAP':
      return out.swap16();
    case 'LITTLE_ENDIAN_BYTE_SWAP': {
      const words = bytes.length / 2;
      for (let i = 0; i < words; i++) bytes.copy(out, (words - 1 - i) * 2, i * 2, i * 2 + 2);
      return out;
    }
  }
}

export interface ValueLayout {
  dataType: DataType;
  order: DataOrder;
  valueType: ValueType;
}

const INT64_MAX = (1n << 63n) - 1n;

/** Byte positions of a 32-bit value in wire order, per `data.order` (see reorder()). */
const ORDER32: Record<DataOrder, readonly [number, number, number, number]> = {
  BIG_ENDIAN: [0, 1, 2, 3],
  LITTLE_ENDIAN: [3, 2, 1, 0],
  BIG_ENDIAN_BYTE_SWAP: [1, 0, 3, 2],
  LITTLE_ENDIAN_BYTE_SWAP: [2, 3, 0, 1],
};

/**
 * Decodes a channel's registers (as received, two bytes each) to its value type: the `bytes` bytes
 * of `data` from `at` (by default all of it). 16- and 32-bit integers are read in place, the rest
 * from a reordered copy.
 */
export function decodeRegisters(data: Buffer, layout: ValueLayout, at = 0, bytes = data.length - at): TypedValue | { error: string } {
  const { dataType, valueType } = layout;
  if (!ALLOWED_DATA_TYPES[valueType].includes(dataType)) {
    return { error: `data.type ${dataType} cannot be read as ${valueType}` };
  }
  if (valueType === 'INTEGER' || (valueType === 'LONG' && dataType !== 'INT64' && dataType !== 'UINT64') || valueType === 'BOOLEAN') {
    let n: number;
    if (dataType === 'INT16') n = data.readInt16BE(at);
    else if (dataType === 'UINT16') n = data.readUInt16BE(at);
    else {
      const o = ORDER32[layout.order];
      const u = ((data[at + o[0]]! << 24) | (data[at + o[1]]! << 16) | (data[at + o[2]]! << 8) | data[at + o[3]]!) >>> 0;
      n = dataType === 'INT32' ? u | 0 : u;
    }
    if (valueType === 'BOOLEAN') return { type: 'BOOLEAN', value: n !== 0 };
    return valueType === 'INTEGER' ? { type: 'INTEGER', value: n } : { type: 'LONG', value: BigInt(n) };
  }
  const wire = at === 0 && bytes === data.length ? data : data.subarray(at, at + bytes);
  if (dataType === 'STRING') {
    if (valueType === 'BYTE_ARRAY') return { type: 'BYTE_ARRAY', value: Buffer.from(wire) };
    // A device pads a string with NULs; the text ends at the first one.
    const nul = wire.indexOf(0);
    return { type: 'STRING', value: wire.subarray(0, nul < 0 ? wire.length : nul).toString('utf8') };
  }
  const b = reorder(wire, layout.order);
  let n: number | bigint;
  switch (dataType) {
    case 'INT16': n = b.readInt16BE(0); break;
    case 'UINT16': n = b.readUInt16BE(0); break;
    case 'INT32': n = b.readInt32BE(0); break;
    case 'UINT32': n = b.readUInt32BE(0); break;
    case 'INT64': n = b.readBigInt64BE(0); break;
    case 'UINT64': n = b.readBigUInt64BE(0); break;
    case 'FLOAT32': n = b.readFloatBE(0); break;
    case 'FLOAT64': n = b.readDoubleBE(0); break;
  }
  switch (valueType) {
    case 'LONG': {
      const big = BigInt(n);
      if (big > INT64_MAX) return { error: `UINT64 value ${big} does not fit a LONG (beyond 2^63-1)` };
      return { type: 'LONG', value: big };
    }
    case 'FLOAT':
      return { type: 'FLOAT', value: Math.fround(Number(n)) };
    default:
      return { type: 'DOUBLE', value: Number(n) };
  }
}

/** Decodes one channel's registers from a response: `data`, from byte `at`, `bytes` long. */
export type Decoder = (data: Buffer, at: number, bytes: number) => TypedValue | { error: string };

/**
 * decodeRegisters() specialised once for a channel's layout: the integer layouts a poll reads most
 * (16- and 32-bit registers as INTEGER, LONG or BOOLEAN) become a few byte operations per read; the
 * rest call decodeRegisters() itself. Same results (test/drivers/modbus-values.test.ts).
 */
export function decoderFor(layout: ValueLayout): Decoder {
  return layoutDecoder(layout) ?? ((data, at, bytes) => decodeRegisters(data, layout, at, bytes));
}

/**
 * The specialised decoder of a layout, or undefined where decodeRegisters() itself is the decoder.
 * They depend on the data type, value type and order alone: one per combination, shared by every
 * channel (a closure per channel costs about 200 bytes, which tens of thousands of channels feel
 * under the launcher's heap bound).
 */
export function layoutDecoder(layout: ValueLayout): Decoder | undefined {
  const key = `${layout.dataType}:${layout.valueType}:${layout.order}`;
  let d = specialised.get(key);
  if (d === undefined) specialised.set(key, (d = specialise(layout) ?? null));
  return d ?? undefined;
}

const specialised = new Map<string, Decoder | null>();

function specialise(layout: ValueLayout): Decoder | undefined {
  const { dataType, valueType } = layout;
  if (!ALLOWED_DATA_TYPES[valueType].includes(dataType)) return undefined;
  if (dataType === 'INT16' || dataType === 'UINT16') {
    const signed = dataType === 'INT16';
    const word = (d: Buffer, at: number) => (signed ? (((d[at]! << 8) | d[at + 1]!) << 16) >> 16 : (d[at]! << 8) | d[at + 1]!);
    if (valueType === 'INTEGER') return (d, at) => new YoungValue('INTEGER', word(d, at));
    if (valueType === 'BOOLEAN') return (d, at) => new YoungValue('BOOLEAN', word(d, at) !== 0);
    if (valueType === 'LONG') return (d, at) => new YoungValue('LONG', BigInt(word(d, at)));
    return undefined;
  }
  if (dataType === 'INT32' || dataType === 'UINT32') {
    const [a, b, c, e] = ORDER32[layout.order];
    const int32 = (d: Buffer, at: number) => (d[at + a]! << 24) | (d[at + b]! << 16) | (d[at + c]! << 8) | d[at + e]!;
    if (valueType === 'INTEGER') return (d, at) => new YoungValue('INTEGER', int32(d, at));
    if (valueType === 'LONG') return dataType === 'INT32' ? (d, at) => new YoungValue('LONG', BigInt(int32(d, at))) : (d, at) => new YoungValue('LONG', BigInt(int32(d, at) >>> 0));
  }
  return undefined;
}

const RANGE: Record<string, [bigint, bigint]> = {
  INT16: [-(1n << 15n), (1n << 15n) - 1n],
  UINT16: [0n, (1n << 16n) - 1n],
  INT32: [-(1n << 31n), (1n << 31n) - 1n],
  UINT32: [0n, (1n << 32n) - 1n],
  INT64: [-(1n << 63n), (1n << 63n) - 1n],
  UINT64: [0n, (1n << 64n) - 1n],
};

/** Encodes a value to the registers it is written as (wire order). */
export function encodeRegisters(v: TypedValue, layout: ValueLayout, arrayLength: number): Buffer | { error: string } {
  const { dataType } = layout;
  if (dataType === 'STRING') {
    const bytes = v.type === 'BYTE_ARRAY' ? v.value : v.type === 'STRING' ? Buffer.from(v.value, 'utf8') : undefined;
    if (!bytes) return { error: `a ${v.type} value cannot be written as data.type STRING` };
    if (bytes.length > arrayLength * 2) {
      return { error: `${bytes.length} bytes do not fit ${arrayLength} registers (array.data.length)` };
    }
    const out = Buffer.alloc(arrayLength * 2);
    bytes.copy(out);
    return out;
  }
  const b = Buffer.alloc(WIDTH[dataType] * 2);
  if (dataType === 'FLOAT32' || dataType === 'FLOAT64') {
    if (v.type !== 'FLOAT' && v.type !== 'DOUBLE') return { error: `a ${v.type} value cannot be written as ${dataType}` };
    if (dataType === 'FLOAT32') b.writeFloatBE(v.value, 0);
    else b.writeDoubleBE(v.value, 0);
    return reorder(b, layout.order);
  }
  let n: bigint;
  if (v.type === 'BOOLEAN') n = v.value ? 1n : 0n;
  else if (v.type === 'LONG') n = v.value;
  else if (v.type === 'INTEGER' && Number.isInteger(v.value)) n = BigInt(v.value);
  else return { error: `a ${v.type} value cannot be written as ${dataType}` };
  const [min, max] = RANGE[dataType];
  if (n < min || n > max) return { error: `value ${n} is out of range for ${dataType} (${min}..${max})` };
  switch (dataType) {
    case 'INT16': b.writeInt16BE(Number(n), 0); break;
    case 'UINT16': b.writeUInt16BE(Number(n), 0); break;
    case 'INT32': b.writeInt32BE(Number(n), 0); break;
    case 'UINT32': b.writeUInt32BE(Number(n), 0); break;
    case 'INT64': b.writeBigInt64BE(n, 0); break;
    case 'UINT64': b.writeBigUInt64BE(n, 0); break;
  }
  return reorder(b, layout.order);
}
