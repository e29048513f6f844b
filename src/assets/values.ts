// Value conversions of the channel model (Kura's TypedValue semantics).

import type { TypedValue, ValueType } from './types.js';

const F32 = new Float32Array(1);
export function toFloat32(n: number): number {
  F32[0] = n;
  return F32[0];
}

/** The zero value of a type (what a `memory` simulator channel reads before its first write). */
export function zeroValue(type: ValueType): TypedValue {
  switch (type) {
    case 'BOOLEAN': return { type, value: false };
    case 'INTEGER': return { type, value: 0 };
    case 'LONG': return { type, value: 0n };
    case 'FLOAT': return { type, value: 0 };
    case 'DOUBLE': return { type, value: 0 };
    case 'STRING': return { type, value: '' };
    case 'BYTE_ARRAY': return { type, value: Buffer.alloc(0) };
  }
}

const INT32_MIN = -2147483648;
const INT32_MAX = 2147483647;
const LONG_MIN = -(2n ** 63n);
const LONG_MAX = 2n ** 63n - 1n;

/**
 * Converts a JSON configuration value (the simulator's `initial`) to a typed value, or returns an
 * error message. LONG accepts a JSON number only when it is a safe integer, else a decimal string.
 */
export function fromJsonValue(type: ValueType, raw: unknown): TypedValue | string {
  switch (type) {
    case 'BOOLEAN':
      return typeof raw === 'boolean' ? { type, value: raw } : `expected true or false for BOOLEAN`;
    case 'INTEGER':
      return typeof raw === 'number' && Number.isInteger(raw) && raw >= INT32_MIN && raw <= INT32_MAX
        ? { type, value: raw }
        : `expected a 32-bit integer for INTEGER`;
    case 'LONG': {
      let v: bigint | undefined;
      if (typeof raw === 'number' && Number.isSafeInteger(raw)) v = BigInt(raw);
      else if (typeof raw === 'string' && /^-?\d+$/.test(raw.trim())) v = BigInt(raw.trim());
      return v !== undefined && v >= LONG_MIN && v <= LONG_MAX ? { type, value: v } : `expected a 64-bit integer for LONG`;
    }
    case 'FLOAT':
      return typeof raw === 'number' && Number.isFinite(raw) && Math.abs(raw) <= 3.4028234663852886e38
        ? { type, value: toFloat32(raw) }
        : `expected a number in float32 range for FLOAT`;
    case 'DOUBLE':
      return typeof raw === 'number' && Number.isFinite(raw) ? { type, value: raw } : `expected a number for DOUBLE`;
    case 'STRING':
      return typeof raw === 'string' ? { type, value: raw } : `expected a string for STRING`;
    case 'BYTE_ARRAY':
      return typeof raw === 'string' && /^[A-Za-z0-9+/]*={0,2}$/.test(raw) && raw.length % 4 === 0
        ? { type, value: Buffer.from(raw, 'base64') }
        : `expected base64 text for BYTE_ARRAY`;
  }
}

/** A numeric view of a value (for scale/offset, deadband, simulation); undefined for non-numeric. */
export function numericOf(v: TypedValue): number | undefined {
  switch (v.type) {
    case 'INTEGER':
    case 'FLOAT':
    case 'DOUBLE':
      return v.value;
    case 'LONG':
      return Number(v.value);
    default:
      return undefined;
  }
}

/** Builds a typed value of a numeric type from a JS number (truncating for integer types). */
export function fromNumber(type: ValueType, n: number): TypedValue {
  switch (type) {
    case 'INTEGER': return { type, value: Math.max(INT32_MIN, Math.min(INT32_MAX, Math.trunc(n))) | 0 };
    case 'LONG': return { type, value: BigInt(Math.trunc(n)) };
    case 'FLOAT': return { type, value: toFloat32(n) };
    case 'DOUBLE': return { type, value: n };
    case 'BOOLEAN': return { type, value: n !== 0 };
    case 'STRING': return { type, value: String(n) };
    case 'BYTE_ARRAY': return { type, value: Buffer.from(String(n)) };
  }
}

/** JSON text of a typed value for REST output: LONG exact (no double), BYTE_ARRAY base64. */
export function valueToJson(v: TypedValue): string {
  switch (v.type) {
    case 'LONG': return v.value.toString();
    case 'BYTE_ARRAY': return JSON.stringify(v.value.toString('base64'));
    default: return JSON.stringify(v.value);
  }
}
