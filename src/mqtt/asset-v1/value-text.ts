// ASSET-V1 carries values as text (reference §3.2): Java `toString()` of the TypedValue, base64 for
// BYTE_ARRAY. Writes parse the text with Java's parsers. Kept here rather than in assets/values.ts
// because only the MQTT namespace speaks Java's text forms.

import type { TypedValue, ValueType } from '../../assets/types.js';
import { VALUE_TYPES } from '../../assets/types.js';

/** Java's Double.toString: plain decimal in [1e-3, 1e7) with at least one fraction digit, else `d.dddE±n`. */
export function javaDoubleText(d: number): string {
  if (Number.isNaN(d)) return 'NaN';
  if (d === Infinity) return 'Infinity';
  if (d === -Infinity) return '-Infinity';
  if (d === 0) return Object.is(d, -0) ? '-0.0' : '0.0';
  const abs = Math.abs(d);
  if (abs >= 1e-3 && abs < 1e7) {
    // JS gives the same shortest digits; below 1e21 it never uses an exponent in this range.
    const s = String(d);
    return s.includes('.') ? s : `${s}.0`;
  }
  const [mant, exp] = d.toExponential().split('e') as [string, string];
  return `${mant.includes('.') ? mant : `${mant}.0`}E${exp.replace('+', '')}`;
}

/** Java's Float.toString: the shortest digits that identify the float32, in Double.toString's layout. */
export function javaFloatText(f: number): string {
  if (!Number.isFinite(f) || f === 0) return javaDoubleText(f);
  for (let p = 1; p <= 9; p++) {
    const n = Number(f.toPrecision(p));
    if (Math.fround(n) === f) return javaDoubleText(n);
  }
  return javaDoubleText(f);
}

export function valueText(v: TypedValue): string {
  switch (v.type) {
    case 'BOOLEAN':
      return v.value ? 'true' : 'false';
    case 'INTEGER':
      return String(v.value);
    case 'LONG':
      return v.value.toString();
    case 'FLOAT':
      return javaFloatText(v.value);
    case 'DOUBLE':
      return javaDoubleText(v.value);
    case 'STRING':
      return v.value;
    case 'BYTE_ARRAY':
      return v.value.toString('base64');
  }
}

/** ASSET-V1 matches the type name case-insensitively (Kura's `DataType.valueOf(s.toUpperCase())`). */
export function parseValueType(s: string): ValueType | undefined {
  const u = s.toUpperCase();
  return (VALUE_TYPES as readonly string[]).includes(u) ? (u as ValueType) : undefined;
}

const JAVA_DECIMAL = /^[+-]?(NaN|Infinity|(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[fFdD]?)$/;

/**
 * Parses text as Java does for the type (Integer.parseInt, Long.parseLong, Float/Double.parseDouble,
 * Boolean.parseBoolean, strict Base64 decoder). Returns the value, or an error message in Kura's words.
 */
export function parseValueText(type: ValueType, text: string): TypedValue | string {
  const fail = `${text} cannot be converted into a TypedValue of type ${type}`;
  switch (type) {
    case 'BOOLEAN':
      // Boolean.parseBoolean never fails: anything but a case-insensitive "true" is false.
      return { type, value: text.toLowerCase() === 'true' };
    case 'INTEGER': {
      if (!/^[+-]?\d+$/.test(text)) return fail;
      const n = Number(text);
      return n >= -2147483648 && n <= 2147483647 ? { type, value: n } : fail;
    }
    case 'LONG': {
      if (!/^[+-]?\d+$/.test(text)) return fail;
      const n = BigInt(text);
      return n >= -(2n ** 63n) && n < 2n ** 63n ? { type, value: n } : fail;
    }
    case 'FLOAT':
    case 'DOUBLE': {
      // Java trims ASCII control characters and spaces before parsing.
      const s = text.replace(/^[\u0000-\u0020]+|[\u0000-\u0020]+$/g, '');
      if (!JAVA_DECIMAL.test(s)) return fail;
      const n = Number(s.replace(/[fFdD]$/, ''));
      return type === 'FLOAT' ? { type, value: Math.fround(n) } : { type, value: n };
    }
    case 'STRING':
      return { type, value: text };
    case 'BYTE_ARRAY': {
      // java.util.Base64.getDecoder(): standard alphabet, no line breaks, padding optional but exact.
      const ok = /^[A-Za-z0-9+/]*$/.test(text)
        ? text.length % 4 !== 1
        : /^[A-Za-z0-9+/]*={1,2}$/.test(text) && text.length % 4 === 0;
      return ok ? { type, value: Buffer.from(text, 'base64') } : fail;
    }
  }
}
