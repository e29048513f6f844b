// gatewayd's channel values as Sparkplug metrics, and a Sparkplug command as the write it asks for,
// on the full codec's metrics (payload.ts here): the independent reference that
// test/mqtt/sparkplug-wire.test.ts holds the daemon's own mapping (src/mqtt/sparkplug/wire.ts
// commandWriteText, DATATYPE) to. Not part of the daemon.
//
// A channel's value type has one datatype (BOOLEAN Boolean, INTEGER Int32, LONG Int64, FLOAT Float,
// DOUBLE Double, STRING String, BYTE_ARRAY Bytes), and the two value representations are the same
// (docs/architecture.md "Asset values: one conversion": LONG a bigint, FLOAT a number already
// rounded to float32, BYTE_ARRAY a Buffer), so a channel value is a metric value as it is.
//
// A DCMD metric becomes what a written value is everywhere else: a value type and a text, which the
// caller gives to the one parse of written values and the asset runtime's conversion to the
// channel's type, exactly as REST `_write` and ASSET-V1 EXEC/write do. The text is exact (every
// integer in decimal, a Float or Double in the shortest digits that give the same number back, Bytes
// in base64), so the parse, not this file, decides what is refused: NaN and ±Infinity, a UInt64
// beyond a LONG, and what does not fit the channel are refused there with the same messages as for
// REST. What no channel can hold (null, DataSet, Template, arrays, a metric without datatype) is
// refused here.

import type { TypedValue, ValueType } from '../../../src/channels/types.js';
import type { SparkplugDataType } from './datatypes.js';
import type { MetricDataType, SparkplugMetric } from './payload.js';

/** gatewayd's channel value types (a channel's `value.type`, docs/configuration.md). */
export type ChannelValueType = ValueType;

/** A channel value in the channel model's representation. */
export type ChannelValue = TypedValue;

/** The datatype a channel of each value type is born with in DBIRTH. */
export const DATATYPE_OF_CHANNEL = Object.freeze({
  BOOLEAN: 'Boolean',
  INTEGER: 'Int32',
  LONG: 'Int64',
  FLOAT: 'Float',
  DOUBLE: 'Double',
  STRING: 'String',
  BYTE_ARRAY: 'Bytes',
} as const satisfies Record<ChannelValueType, MetricDataType>);

type ChannelMetricValue = { [T in ChannelValueType]: { datatype: (typeof DATATYPE_OF_CHANNEL)[T]; value: Extract<ChannelValue, { type: T }>['value'] } }[ChannelValueType];

/** A channel value as a metric's datatype and value. */
export function metricValueOf(v: ChannelValue): ChannelMetricValue {
  return { datatype: DATATYPE_OF_CHANNEL[v.type], value: v.value } as ChannelMetricValue;
}

/**
 * The value type a metric of this datatype is written as: Int8 … UInt16 and Int32 INTEGER, UInt32,
 * Int64, UInt64 and DateTime LONG, Float FLOAT, Double DOUBLE, Boolean BOOLEAN, String, Text and
 * UUID STRING, Bytes and File BYTE_ARRAY; undefined for the others.
 */
export function channelTypeOf(t: SparkplugDataType): ChannelValueType | undefined {
  switch (t) {
    case 'Int8': case 'Int16': case 'Int32': case 'UInt8': case 'UInt16':
      return 'INTEGER';
    case 'UInt32': case 'Int64': case 'UInt64': case 'DateTime':
      return 'LONG';
    case 'Float': return 'FLOAT';
    case 'Double': return 'DOUBLE';
    case 'Boolean': return 'BOOLEAN';
    case 'String': case 'Text': case 'UUID':
      return 'STRING';
    case 'Bytes': case 'File':
      return 'BYTE_ARRAY';
    default:
      return undefined;
  }
}

/** The shortest decimal that reads back as the same float32 (`0.1`, not `0.10000000149011612`). */
function float32Text(f: number): string {
  if (!Number.isFinite(f)) return String(f);
  if (Object.is(f, -0)) return '-0';
  for (let p = 1; p < 9; p++) {
    const s = f.toPrecision(p);
    if (Math.fround(Number(s)) === f) return String(Number(s));
  }
  return String(f);
}

export type WriteText = { ok: true; type: ChannelValueType; text: string } | { ok: false; error: string };

/** How a command's metric is named in a refusal: by name, else by alias. */
export function metricDescription(m: { name?: string; alias?: bigint }): string {
  if (m.name !== undefined) return `metric ${JSON.stringify(m.name.length > 64 ? `${m.name.slice(0, 64)}…` : m.name)}`;
  return m.alias === undefined ? 'a metric without name or alias' : `metric with alias ${m.alias}`;
}

/**
 * The value type and text a DCMD (or NCMD) metric asks to write, for the parse every front end
 * uses; or why no channel can take it. Give it a metric whose datatype is known (decode with
 * `datatypeOf`: commands usually carry an alias and may leave the datatype out).
 */
export function writeTextOf(m: SparkplugMetric): WriteText {
  const type = channelTypeOf(m.datatype);
  const refuse = (why: string): WriteText => ({ ok: false, error: `${metricDescription(m)}: ${why}` });
  if (m.datatype === 'Unknown') return refuse('no datatype, and none known for it from the birth');
  if (type === undefined) return refuse(`${m.datatype} value cannot be written to a channel`);
  if (m.value === null) return refuse('a null value cannot be written');
  const v = m.value;
  switch (type) {
    case 'FLOAT':
      return { ok: true, type, text: float32Text(v as number) };
    case 'DOUBLE':
      return { ok: true, type, text: Object.is(v, -0) ? '-0' : String(v) };
    case 'BYTE_ARRAY':
      return { ok: true, type, text: (v as Buffer).toString('base64') };
    default:
      return { ok: true, type, text: String(v) };
  }
}
