// Plain objects of the poll path made by constructor calls rather than object literals.
//
// V8 follows the objects of each object and array literal (its allocation site): when many of
// them survive a young-generation collection, that literal's later objects are made in the old
// generation from then on ("pretenuring"). A poll's values, results and records live for one step
// only, but ten assets polled at the same instant (make bench's scale section) had V8 pretenure
// them, and the old generation then grew by megabytes a second between full collections, and the
// heap's committed size with it. Objects made by `new` have no allocation site: they always start
// young and die there. Their prototype is Object.prototype, so to every reader (JSON, key order,
// deep equality) they are the literals they replace.

import type { ChannelRecord, TypedValue, ValueType } from './types.js';

interface ValueCtor {
  new (type: ValueType, value: unknown): TypedValue;
}

/** `{ type, value }`. */
export const YoungValue = function (this: { type: ValueType; value: unknown }, type: ValueType, value: unknown) {
  this.type = type;
  this.value = value;
} as unknown as ValueCtor;
YoungValue.prototype = Object.prototype;

interface RecordCtor {
  new (name: string, status: 'SUCCESS', valueType: ValueType, timestamp: number, value: TypedValue, unit: string | undefined): ChannelRecord;
}

/** `{ name, status, valueType, timestamp, value }` and `unit` when the channel has one: a read channel's SUCCESS record. */
export const YoungRecord = function (this: ChannelRecord, name: string, status: 'SUCCESS', valueType: ValueType, timestamp: number, value: TypedValue, unit: string | undefined) {
  this.name = name;
  this.status = status;
  this.valueType = valueType;
  this.timestamp = timestamp;
  this.value = value;
  if (unit !== undefined) this.unit = unit;
} as unknown as RecordCtor;
YoungRecord.prototype = Object.prototype;
