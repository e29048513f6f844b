// ASSET-V1 carries values as text (docs/mqtt.md "ASSET-V1"): Java `toString()` of the TypedValue, base64 for
// BYTE_ARRAY. Writes parse the text with the one parse every front end uses (src/channels/values.ts
// parseValueText, docs/architecture.md "Asset values: one conversion"), so a value is accepted or
// refused exactly as over the REST API; only the type name is matched here, case-insensitively.

import { VALUE_TYPES, type ValueType } from '../../channels/types.js';

export { javaDoubleText, javaFloatText, parseValueText, valueText } from '../../channels/values.js';

/** ASSET-V1 matches the type name case-insensitively (Kura's `DataType.valueOf(s.toUpperCase())`). */
export function parseValueType(s: string): ValueType | undefined {
  const u = s.toUpperCase();
  return (VALUE_TYPES as readonly string[]).includes(u) ? (u as ValueType) : undefined;
}
