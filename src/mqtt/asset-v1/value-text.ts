// ASSET-V1 carries values as text (docs/mqtt.md "ASSET-V1"): Java `toString()` of the TypedValue, base64 for
// BYTE_ARRAY; writes parse the text with Java's parsers. The conversions live in assets/values.ts
// (the REST API uses the same Java text forms); ASSET-V1 differs only in accepting NaN and
// Infinity, which Java's Double.parseDouble accepts and a text payload can carry.

import { VALUE_TYPES, type TypedValue, type ValueType } from '../../assets/types.js';
import { parseValueText as parseJavaText } from '../../assets/values.js';

export { javaDoubleText, javaFloatText, valueText } from '../../assets/values.js';

/** ASSET-V1 matches the type name case-insensitively (Kura's `DataType.valueOf(s.toUpperCase())`). */
export function parseValueType(s: string): ValueType | undefined {
  const u = s.toUpperCase();
  return (VALUE_TYPES as readonly string[]).includes(u) ? (u as ValueType) : undefined;
}

/** Parses text as Java does for the type; returns the value or an error message in Kura's words. */
export function parseValueText(type: ValueType, text: string): TypedValue | string {
  return parseJavaText(type, text, true);
}
