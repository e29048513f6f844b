// Value conversions of the channel model (Kura's TypedValue semantics; docs/rest-api.md "assets").
//
// Representation (types.ts): LONG is a bigint end to end, so 64-bit values never round
// through a double; FLOAT is a number already rounded to float32; BYTE_ARRAY is a Buffer.

import type { TypedValue, ValueType } from './types.js';

export const INT32_MIN = -2147483648;
export const INT32_MAX = 2147483647;
export const LONG_MIN = -(2n ** 63n);
export const LONG_MAX = 2n ** 63n - 1n;
const FLOAT_MAX = 3.4028234663852886e38;

export function toFloat32(n: number): number {
  return Math.fround(n);
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

// java.util.Base64.getDecoder(): standard alphabet, no line breaks, padding optional but, when
// present, it must complete the last quantum.
function isJavaBase64(s: string): boolean {
  if (/^[A-Za-z0-9+/]*$/.test(s)) return s.length % 4 !== 1;
  return /^[A-Za-z0-9+/]*={1,2}$/.test(s) && s.length % 4 === 0;
}

/**
 * Converts a JSON configuration value (the simulator's `initial`) to a typed value, or returns an
 * error message. LONG accepts a JSON number only when it is a safe integer (JSON.parse has already
 * rounded anything larger), else a decimal string, which stays exact.
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
      else if (typeof raw === 'string' && /^-?\d{1,19}$/.test(raw.trim())) v = BigInt(raw.trim());
      return v !== undefined && v >= LONG_MIN && v <= LONG_MAX
        ? { type, value: v }
        : `expected a 64-bit integer for LONG (a JSON number up to 2^53, or a decimal string)`;
    }
    case 'FLOAT':
      return typeof raw === 'number' && Number.isFinite(raw) && Math.abs(raw) <= FLOAT_MAX
        ? { type, value: toFloat32(raw) }
        : `expected a number in float32 range for FLOAT`;
    case 'DOUBLE':
      return typeof raw === 'number' && Number.isFinite(raw) ? { type, value: raw } : `expected a number for DOUBLE`;
    case 'STRING':
      return typeof raw === 'string' ? { type, value: raw } : `expected a string for STRING`;
    case 'BYTE_ARRAY':
      return typeof raw === 'string' && isJavaBase64(raw)
        ? { type, value: Buffer.from(raw, 'base64') }
        : `expected base64 text for BYTE_ARRAY`;
  }
}

/** A numeric view of a value (for deadband, simulation); undefined for non-numeric. */
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
    case 'LONG': return { type, value: Number.isFinite(n) ? BigInt.asIntN(64, BigInt(Math.trunc(n))) : 0n };
    case 'FLOAT': return { type, value: toFloat32(n) };
    case 'DOUBLE': return { type, value: n };
    case 'BOOLEAN': return { type, value: n !== 0 };
    case 'STRING': return { type, value: String(n) };
    case 'BYTE_ARRAY': return { type, value: Buffer.from(String(n)) };
  }
}

/** Java's Double.toString: plain decimal in [1e-3, 1e7) with at least one fraction digit, else `d.dddE±n`. */
export function javaDoubleText(d: number): string {
  if (Number.isNaN(d)) return 'NaN';
  if (d === Infinity) return 'Infinity';
  if (d === -Infinity) return '-Infinity';
  if (d === 0) return Object.is(d, -0) ? '-0.0' : '0.0';
  const abs = Math.abs(d);
  if (abs >= 1e-3 && abs < 1e7) {
    // Same shortest round-trip digits as JS; JS never uses an exponent in this range.
    const s = String(d);
    return s.includes('.') ? s : `${s}.0`;
  }
  const [mant, exp] = d.toExponential().split('e') as [string, string];
  return `${mant.includes('.') ? mant : `${mant}.0`}E${exp.replace('+', '')}`;
}

/** Java's Float.toString: the shortest digits that identify the float32 (`0.1`, not `0.10000000149011612`). */
export function javaFloatText(f: number): string {
  if (!Number.isFinite(f) || f === 0) return javaDoubleText(f);
  for (let p = 1; p <= 9; p++) {
    const n = Number(f.toPrecision(p));
    if (Math.fround(n) === f) return javaDoubleText(n);
  }
  return javaDoubleText(f);
}

/**
 * JSON text of a value for REST output (Kura's ChannelRecord as Gson writes it): INTEGER and LONG as JSON
 * integers (LONG exact, never through a double), FLOAT and DOUBLE in Java `toString` form (`1.0E7`
 * is valid JSON), BOOLEAN, STRING, BYTE_ARRAY as padded base64. NaN and ±Infinity have no JSON
 * number form (Gson would fail the whole response): they are written as the strings "NaN" etc.
 */
export function valueToJson(v: TypedValue): string {
  switch (v.type) {
    case 'LONG': return v.value.toString();
    case 'INTEGER': return String(v.value);
    case 'FLOAT': return Number.isFinite(v.value) ? javaFloatText(v.value) : JSON.stringify(javaFloatText(v.value));
    case 'DOUBLE': return Number.isFinite(v.value) ? javaDoubleText(v.value) : JSON.stringify(javaDoubleText(v.value));
    case 'BYTE_ARRAY': return JSON.stringify(v.value.toString('base64'));
    case 'BOOLEAN': return v.value ? 'true' : 'false';
    case 'STRING': return JSON.stringify(v.value);
  }
}

/** Java's text of a value (`String.valueOf`), base64 for BYTE_ARRAY. */
export function valueText(v: TypedValue): string {
  switch (v.type) {
    case 'FLOAT': return javaFloatText(v.value);
    case 'DOUBLE': return javaDoubleText(v.value);
    case 'BYTE_ARRAY': return v.value.toString('base64');
    default: return String(v.value);
  }
}

// Double.parseDouble's decimal syntax after trimming: optional exponent and f/F/d/D suffix. Java's
// "NaN", "Infinity" and hexadecimal floating literals are left out on purpose: a written FLOAT or
// DOUBLE is a finite decimal number (docs/rest-api.md "Writing values").
const JAVA_DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[fFdD]?$/;

// Java's parseInt/parseLong syntax; leading zeros are allowed, but no more than 19 significant
// digits are looked at (so a megabyte of digits never reaches BigInt).
function integerText(text: string): boolean {
  return /^[+-]?\d+$/.test(text) && text.replace(/^[+-]?0*/, '').length <= 19;
}

// A BOOLEAN is written as true or false in any letter case, or as 1 or 0; anything else is refused
// rather than read as false (Boolean.parseBoolean would turn "on" or "yes" into false and switch an
// output off). The length check keeps a long text from being lower-cased.
function booleanOf(text: string): boolean | undefined {
  if (text.length > 5) return undefined;
  const s = text.toLowerCase();
  return s === 'true' || s === '1' ? true : s === 'false' || s === '0' ? false : undefined;
}

/** Request text quoted in a message, cut short: an error must not echo a megabyte back. */
export function clip(text: string, max = 64): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** Kura's message for text that is no value of the type (TypedValues.parseTypedValue). */
export function notConvertible(text: string, type: ValueType): string {
  return `${clip(text)} cannot be converted into a TypedValue of type ${type}`;
}

/**
 * The one parse of a written value's text, for every front end (REST `_write`, ASSET-V1
 * EXEC/write, a STRING written to a channel of another type): Kura's TypedValues.parseTypedValue
 * with Java's parsers (Integer.parseInt, Long.parseLong exact via BigInt, Float/Double.parseDouble,
 * the strict Base64 decoder) and these refusals on top (docs/rest-api.md "Writing values"): a
 * BOOLEAN is true/false in any case or 1/0, never "anything else is false"; a FLOAT or DOUBLE must
 * be finite, so NaN, Infinity and text that overflows the type (`1e999`, `3.5e38` for FLOAT) are
 * refused rather than written as an infinity; hexadecimal is no number. Returns the value or Kura's
 * error message.
 */
export function parseValueText(type: ValueType, text: string): TypedValue | string {
  const fail = notConvertible(text, type);
  switch (type) {
    case 'BOOLEAN': {
      const b = booleanOf(text);
      return b === undefined ? fail : { type, value: b };
    }
    case 'INTEGER': {
      if (!integerText(text)) return fail;
      const n = BigInt(text);
      return n >= BigInt(INT32_MIN) && n <= BigInt(INT32_MAX) ? { type, value: Number(n) } : fail;
    }
    case 'LONG': {
      if (!integerText(text)) return fail;
      const n = BigInt(text);
      return n >= LONG_MIN && n <= LONG_MAX ? { type, value: n } : fail;
    }
    case 'FLOAT':
    case 'DOUBLE': {
      // Java trims ASCII control characters and spaces before parsing.
      const s = text.replace(/^[\u0000-\u0020]+|[\u0000-\u0020]+$/g, '');
      if (!JAVA_DECIMAL.test(s)) return fail;
      const d = Number(s.replace(/[fFdD]$/, ''));
      // Rounded to the type as Java rounds (Float.MAX_VALUE's text "3.4028235E38" is the largest
      // float); only a result that rounds to an infinity is an overflow.
      const v = type === 'FLOAT' ? toFloat32(d) : d;
      return Number.isFinite(v) ? { type, value: v } : fail;
    }
    case 'STRING':
      return { type, value: text };
    case 'BYTE_ARRAY':
      return isJavaBase64(text) ? { type, value: Buffer.from(text, 'base64') } : fail;
  }
}

/**
 * Converts a value to a channel's type for a write. Kura hands the requested value to the driver,
 * which converts; our drivers receive values in the channel's type, so the conversion is here, and
 * it is exact or it fails: integers must fit, a LONG never goes through a double unless the target
 * is FLOAT/DOUBLE. To and from BOOLEAN the rules are Kura's GPIO driver's (docs/drivers.md "gpio"):
 * a number is true when > 0, a byte array when not all zeros, and true/false read as 1/0. Returns
 * an error message when there is no sensible conversion.
 */
export function convertValue(v: TypedValue, target: ValueType): TypedValue | string {
  if (v.type === target) return v;
  const fail = `a ${v.type} value cannot be written to a ${target} channel`;
  if (v.type === 'STRING') return parseValueText(target, v.value);
  if (target === 'STRING') return { type: target, value: valueText(v) };
  if (target === 'BOOLEAN') {
    switch (v.type) {
      case 'LONG': return { type: target, value: v.value > 0n };
      case 'BYTE_ARRAY': return { type: target, value: v.value.some((b) => b !== 0) };
      default: return { type: target, value: Number(v.value) > 0 };
    }
  }
  if (v.type === 'BYTE_ARRAY' || target === 'BYTE_ARRAY') return fail;
  // Numeric (or BOOLEAN as 1/0) to numeric.
  const big: bigint | undefined =
    v.type === 'LONG' ? v.value : v.type === 'BOOLEAN' ? (v.value ? 1n : 0n) : Number.isInteger(v.value) ? BigInt(v.value) : undefined;
  const num: number = v.type === 'LONG' ? Number(v.value) : v.type === 'BOOLEAN' ? (v.value ? 1 : 0) : v.value;
  switch (target) {
    case 'INTEGER':
      return big !== undefined && big >= BigInt(INT32_MIN) && big <= BigInt(INT32_MAX)
        ? { type: target, value: Number(big) }
        : `${valueText(v)} does not fit a ${target} channel`;
    case 'LONG':
      return big !== undefined && big >= LONG_MIN && big <= LONG_MAX
        ? { type: target, value: big }
        : `${valueText(v)} does not fit a ${target} channel`;
    case 'FLOAT':
      // As the FLOAT text parse: a finite value fits when its float32 rounding is finite (a read's
      // NaN or infinity passes through as it is).
      return Number.isFinite(toFloat32(num)) || !Number.isFinite(num)
        ? { type: target, value: toFloat32(num) }
        : `${valueText(v)} does not fit a ${target} channel`;
    case 'DOUBLE':
      return { type: target, value: num };
  }
}
