import { SparkplugError as DaemonSparkplugError } from '../../../src/mqtt/sparkplug/error.js';

// Sparkplug B 3.0 data types (the `DataType` enum of sparkplug_b.proto, specification chapter
// "Payloads", sections "Data Types" and "Datatype Details") and how gatewayd represents their values.
//
// One representation per type, exact in both directions:
//   Int8 … Int32, UInt8 … UInt32   number (an integer in the type's range)
//   Int64, UInt64, DateTime         bigint (64-bit exact; DateTime is unsigned milliseconds since the epoch)
//   Float                           number (rounded to float32 on the wire), Double number
//   Boolean boolean;  String, Text, UUID string;  Bytes, File Buffer
//   DataSet, Template               the objects of payload.ts
//   <X>Array                        a JS array of the element's representation (bigint for 64-bit ones)
// A null value is Sparkplug's `is_null`.

export const DATATYPES = [
  'Unknown',
  'Int8', 'Int16', 'Int32', 'Int64', 'UInt8', 'UInt16', 'UInt32', 'UInt64',
  'Float', 'Double', 'Boolean', 'String', 'DateTime', 'Text',
  'UUID', 'DataSet', 'Bytes', 'File', 'Template',
  'PropertySet', 'PropertySetList',
  'Int8Array', 'Int16Array', 'Int32Array', 'Int64Array', 'UInt8Array', 'UInt16Array', 'UInt32Array', 'UInt64Array',
  'FloatArray', 'DoubleArray', 'BooleanArray', 'StringArray', 'DateTimeArray',
] as const;

/** A Sparkplug datatype by its name in sparkplug_b.proto; its number is its index in DATATYPES. */
export type SparkplugDataType = (typeof DATATYPES)[number];

// Made at first use: a bundle that uses only SparkplugError (the edge node) leaves the table out.
const CODE_OF = {
  codes: undefined as Map<string, number> | undefined,
  get(name: string): number | undefined {
    return (this.codes ??= new Map(DATATYPES.map((n, code) => [n, code]))).get(name);
  },
};

/** The datatype's number on the wire, or undefined for a name that is none. */
export function datatypeCode(name: string): number | undefined {
  return CODE_OF.get(name);
}

/** The datatype of a wire number, or undefined for a number Sparkplug 3.0 does not define. */
export function datatypeOfCode(code: number): SparkplugDataType | undefined {
  return DATATYPES[code];
}

/** The basic types (1 … 14): the only ones a DataSet column or a Template parameter may have. */
export interface BasicValueTypes {
  Int8: number;
  Int16: number;
  Int32: number;
  Int64: bigint;
  UInt8: number;
  UInt16: number;
  UInt32: number;
  UInt64: bigint;
  Float: number;
  Double: number;
  Boolean: boolean;
  String: string;
  DateTime: bigint;
  Text: string;
}
export type BasicDataType = keyof BasicValueTypes;
export type BasicValue = BasicValueTypes[BasicDataType];

export interface ArrayValueTypes {
  Int8Array: number[];
  Int16Array: number[];
  Int32Array: number[];
  Int64Array: bigint[];
  UInt8Array: number[];
  UInt16Array: number[];
  UInt32Array: number[];
  UInt64Array: bigint[];
  FloatArray: number[];
  DoubleArray: number[];
  BooleanArray: boolean[];
  StringArray: string[];
  DateTimeArray: bigint[];
}
export type ArrayDataType = keyof ArrayValueTypes;

export const isBasic = (t: SparkplugDataType): t is BasicDataType => {
  const code = CODE_OF.get(t)!;
  return code >= 1 && code <= 14;
};

export const isArrayType = (t: SparkplugDataType): t is ArrayDataType => CODE_OF.get(t)! >= 22;

/**
 * Which value field of a Metric, PropertyValue, Template.Parameter or DataSet.DataSetValue carries a
 * type: the scalar fields come in the same order in all four messages (int_value, long_value,
 * float_value, double_value, boolean_value, string_value), so a slot is an offset from the
 * message's first value field. Metric adds bytes/dataset/template after them, PropertyValue its
 * property sets.
 *
 * UInt32 travels in long_value, as Eclipse Tahu's Java, C and JavaScript encoders write it (the
 * specification's table says uint32; decoders accept either, see payload.ts). Int8, Int16 and
 * Int32 travel in int_value as their two's complement sign-extended to 32 bits, as Tahu writes them.
 */
export const SLOT = { int: 0, long: 1, float: 2, double: 3, boolean: 4, string: 5, extra0: 6, extra1: 7, extra2: 8 } as const;
export type Slot = (typeof SLOT)[keyof typeof SLOT];

export function slotOf(t: SparkplugDataType): Slot {
  switch (t) {
    case 'Int8': case 'Int16': case 'Int32': case 'UInt8': case 'UInt16':
      return SLOT.int;
    case 'UInt32': case 'Int64': case 'UInt64': case 'DateTime':
      return SLOT.long;
    case 'Float': return SLOT.float;
    case 'Double': return SLOT.double;
    case 'Boolean': return SLOT.boolean;
    case 'String': case 'Text': case 'UUID':
      return SLOT.string;
    case 'DataSet': return SLOT.extra1;
    case 'Template': return SLOT.extra2;
    case 'PropertySet': return SLOT.extra0;
    case 'PropertySetList': return SLOT.extra1;
    default:
      // Bytes, File and every array type: bytes_value.
      return SLOT.extra0;
  }
}

/** The integer range of each type that travels in int_value or long_value. */
export const INTEGER_RANGE: Partial<Record<SparkplugDataType, readonly [bigint, bigint]>> = {
  Int8: [-128n, 127n],
  Int16: [-32768n, 32767n],
  Int32: [-2147483648n, 2147483647n],
  UInt8: [0n, 255n],
  UInt16: [0n, 65535n],
  UInt32: [0n, 4294967295n],
  // Literals (-2^63, 2^63 - 1, 2^64 - 1), which a bundler can drop when the table is not used.
  Int64: [-9223372036854775808n, 9223372036854775807n],
  UInt64: [0n, 18446744073709551615n],
  DateTime: [0n, 18446744073709551615n],
};

/**
 * The one error of the codec: `detail` says what is wrong, `where` the path to it (outermost first,
 * e.g. `metric 3 "temp"`, `properties`), `offset` the byte of the payload where the offending
 * message or field starts, when there is one. A kind of the daemon's own (topics and host state
 * throw that), so `instanceof` the daemon's holds for both.
 */
export class SparkplugError extends DaemonSparkplugError {
  constructor(
    readonly detail: string,
    readonly where: readonly string[] = [],
    readonly offset?: number,
  ) {
    super(`${where.length ? `${where.join(': ')}: ` : ''}${detail}${offset === undefined ? '' : ` (at byte ${offset})`}`);
  }

  /** The same error seen from an enclosing element (`label`), with `offset` if it had none. */
  within(label: string | undefined, offset?: number): SparkplugError {
    return new SparkplugError(this.detail, label ? [label, ...this.where] : this.where, this.offset ?? offset);
  }
}
