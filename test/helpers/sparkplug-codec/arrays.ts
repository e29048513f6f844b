// Sparkplug B 3.0 array types (specification chapter "Payloads", "Datatype Details", "Array Types"):
// carried in a metric's bytes_value as little-endian packed elements. BooleanArray is a 4-byte
// little-endian count followed by the bits, the first value in the most significant bit of the first
// byte (the specification's example [false, false, true, true, false, true, false, false, …] →
// 0x34 …; Eclipse Tahu's Java codec does the same). StringArray is UTF-8 strings each ended by a NUL.
// DateTimeArray elements are unsigned milliseconds since the epoch, as the scalar DateTime.
//
// One packer and one unpacker per element kind. The unpacker is given the number of elements it may
// still produce (the decoder's budget) and refuses a larger array before allocating it.

import { isUtf8 } from 'node:buffer';
import { INTEGER_RANGE, SparkplugError, type ArrayDataType, type ArrayValueTypes } from './datatypes.js';

type FixedWidth = Exclude<ArrayDataType, 'BooleanArray' | 'StringArray'>;

const WIDTH: Record<FixedWidth, number> = {
  Int8Array: 1, Int16Array: 2, Int32Array: 4, Int64Array: 8,
  UInt8Array: 1, UInt16Array: 2, UInt32Array: 4, UInt64Array: 8,
  FloatArray: 4, DoubleArray: 8, DateTimeArray: 8,
};

/** The element type of an integer array, for its range. */
const ELEMENT = {
  Int8Array: 'Int8', Int16Array: 'Int16', Int32Array: 'Int32', Int64Array: 'Int64',
  UInt8Array: 'UInt8', UInt16Array: 'UInt16', UInt32Array: 'UInt32', UInt64Array: 'UInt64', DateTimeArray: 'DateTime',
} as const;

function badElement(type: ArrayDataType, i: number, v: unknown): SparkplugError {
  const shown = typeof v === 'bigint' ? `${v}n` : typeof v === 'string' ? JSON.stringify(v.slice(0, 32)) : String(v);
  return new SparkplugError(`${type} element ${i} cannot be ${shown} (out of range, or not of the element's type)`);
}

function checkInteger(type: keyof typeof ELEMENT, i: number, v: unknown): void {
  const [lo, hi] = INTEGER_RANGE[ELEMENT[type]]!;
  if (type === 'Int64Array' || type === 'UInt64Array' || type === 'DateTimeArray') {
    if (typeof v !== 'bigint' || v < lo || v > hi) throw badElement(type, i, v);
  } else if (typeof v !== 'number' || !Number.isInteger(v) || v < Number(lo) || v > Number(hi)) {
    throw badElement(type, i, v);
  }
}

/** The bytes_value of an array metric; throws SparkplugError naming the first bad element. */
export function packArray<T extends ArrayDataType>(type: T, values: ArrayValueTypes[T]): Buffer {
  if (!Array.isArray(values)) throw new SparkplugError(`${type} value must be an array`);
  if (type === 'BooleanArray') return packBooleans(values as boolean[]);
  if (type === 'StringArray') return packStrings(values as string[]);
  const width = WIDTH[type as FixedWidth];
  const out = Buffer.allocUnsafe(values.length * width);
  values.forEach((v: unknown, i: number) => {
    const at = i * width;
    switch (type) {
      case 'FloatArray':
        if (typeof v !== 'number') throw badElement(type, i, v);
        out.writeFloatLE(v, at);
        return;
      case 'DoubleArray':
        if (typeof v !== 'number') throw badElement(type, i, v);
        out.writeDoubleLE(v, at);
        return;
    }
    checkInteger(type as keyof typeof ELEMENT, i, v);
    if (width === 8) out.writeBigUInt64LE(BigInt.asUintN(64, v as bigint), at);
    else out.writeUIntLE((v as number) < 0 ? (v as number) + 2 ** (8 * width) : (v as number), at, width);
  });
  return out;
}

function packBooleans(values: boolean[]): Buffer {
  const out = Buffer.alloc(4 + Math.ceil(values.length / 8));
  out.writeUInt32LE(values.length, 0);
  values.forEach((v, i) => {
    if (typeof v !== 'boolean') throw badElement('BooleanArray', i, v);
    if (v) out[4 + (i >> 3)]! |= 0x80 >> (i & 7);
  });
  return out;
}

function packStrings(values: string[]): Buffer {
  const parts: Buffer[] = [];
  values.forEach((v, i) => {
    // A NUL inside a string would end it early on the other side.
    if (typeof v !== 'string' || v.includes('\u0000')) throw badElement('StringArray', i, v);
    parts.push(Buffer.from(v, 'utf8'), Buffer.alloc(1));
  });
  return Buffer.concat(parts);
}

function tooMany(type: ArrayDataType, n: number | undefined, budget: number): SparkplugError {
  const bound = `the payload's remaining bound of ${Math.max(0, budget)} elements`;
  return new SparkplugError(n === undefined ? `${type} has more elements than ${bound}` : `${type} of ${n} elements is over ${bound}`);
}

/**
 * The elements of an array metric's bytes. `budget`: how many elements the payload may still
 * decode; a longer array is refused before it is allocated.
 */
export function unpackArray<T extends ArrayDataType>(type: T, bytes: Buffer, budget: number): ArrayValueTypes[T] {
  if (type === 'BooleanArray') return unpackBooleans(bytes, budget) as ArrayValueTypes[T];
  if (type === 'StringArray') return unpackStrings(bytes, budget) as ArrayValueTypes[T];
  const width = WIDTH[type as FixedWidth];
  if (bytes.length % width !== 0) throw new SparkplugError(`${type} of ${bytes.length} bytes is not a whole number of ${width}-byte elements`);
  const n = bytes.length / width;
  if (n > budget) throw tooMany(type, n, budget);
  const out: (number | bigint)[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const at = i * width;
    switch (type) {
      case 'Int8Array': out[i] = bytes.readInt8(at); break;
      case 'Int16Array': out[i] = bytes.readInt16LE(at); break;
      case 'Int32Array': out[i] = bytes.readInt32LE(at); break;
      case 'Int64Array': out[i] = bytes.readBigInt64LE(at); break;
      case 'UInt8Array': out[i] = bytes[at]!; break;
      case 'UInt16Array': out[i] = bytes.readUInt16LE(at); break;
      case 'UInt32Array': out[i] = bytes.readUInt32LE(at); break;
      case 'FloatArray': out[i] = bytes.readFloatLE(at); break;
      case 'DoubleArray': out[i] = bytes.readDoubleLE(at); break;
      default: out[i] = bytes.readBigUInt64LE(at); // UInt64Array, DateTimeArray
    }
  }
  return out as ArrayValueTypes[T];
}

function unpackBooleans(bytes: Buffer, budget: number): boolean[] {
  if (bytes.length < 4) throw new SparkplugError(`BooleanArray of ${bytes.length} bytes has no 4-byte count`);
  const n = bytes.readUInt32LE(0);
  const need = 4 + Math.ceil(n / 8);
  if (bytes.length !== need) throw new SparkplugError(`BooleanArray of ${n} values needs ${need} bytes, not ${bytes.length}`);
  if (n > budget) throw tooMany('BooleanArray', n, budget);
  const out: boolean[] = new Array(n);
  for (let i = 0; i < n; i++) out[i] = (bytes[4 + (i >> 3)]! & (0x80 >> (i & 7))) !== 0;
  return out;
}

function unpackStrings(bytes: Buffer, budget: number): string[] {
  if (bytes.length > 0 && bytes[bytes.length - 1] !== 0) throw new SparkplugError('StringArray does not end with a NUL');
  if (!isUtf8(bytes)) throw new SparkplugError('StringArray is not valid UTF-8');
  const out: string[] = [];
  for (let start = 0; start < bytes.length; ) {
    if (out.length >= budget) throw tooMany('StringArray', undefined, budget);
    const end = bytes.indexOf(0, start);
    out.push(bytes.toString('utf8', start, end));
    start = end + 1;
  }
  return out;
}
