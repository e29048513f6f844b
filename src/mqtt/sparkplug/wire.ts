// The edge node's own subset of the Sparkplug B payload codec (sparkplug_b.proto, the Sparkplug 3.0
// specification's chapter "Payloads"): what src/mqtt/sparkplug/edge-node.ts publishes (scalar
// metrics of the channel value types, bdSeq, Node Control/Rebirth) and reads (the scalar metrics of
// an NCMD or DCMD). It writes the same bytes as a full codec does for the same metrics (fields in
// number order, datatype on every metric, Int32 as its 32-bit two's complement in int_value) and
// reads what a full codec reads for a scalar metric: test/mqtt/sparkplug-wire.test.ts holds it to
// the reference codec of the tests (test/helpers/sparkplug-codec/) and to Eclipse Tahu's. DataSets,
// Templates, property sets and arrays are more than the daemon bundle has room for, and an edge
// node needs none of them.
//
// `seq` (Payload field 3) is not in an encoded payload: it is appended when the message is handed
// to the broker (withSeq), so a message that waited in the outbox gets its sequence number in the
// order it is published. Field 3 after field 2 is the order protobuf writes them in.

import { isUtf8 } from 'node:buffer';
import type { TypedValue, ValueType } from '../../channels/types.js';
import { DecodeError, Reader, Writer } from '../kura-payload.js';

/** The datatype number (sparkplug_b.proto's DataType) a channel of each value type is born with. */
export const DATATYPE: Record<ValueType, number> = { INTEGER: 3, LONG: 4, FLOAT: 9, DOUBLE: 10, BOOLEAN: 11, STRING: 12, BYTE_ARRAY: 17 };
const INT64 = 4;
const BOOLEAN = 11;

/** A metric to publish: a channel value (null: is_null), bdSeq (Int64) as a bigint, a Boolean node control. */
export interface OutMetric {
  name?: string;
  alias?: bigint;
  timestamp: number;
  /** The value type when the value is null. */
  type?: ValueType;
  value: TypedValue | null | bigint | boolean;
  historical?: boolean;
}

/** `timestamp` and `metrics` of a Payload (seq comes with withSeq). */
export function encodePayload(timestamp: number, metrics: OutMetric[]): Buffer {
  const w = new Writer(32 + 40 * metrics.length);
  w.tag(1, 0);
  w.uvarint(timestamp);
  for (const m of metrics) {
    const at = w.begin(2);
    if (m.name !== undefined) w.stringField(1, m.name);
    if (m.alias !== undefined) w.varintField(2, m.alias);
    w.tag(3, 0);
    w.uvarint(m.timestamp);
    const v = m.value;
    w.tag(4, 0);
    w.uvarint(typeof v === 'bigint' ? INT64 : typeof v === 'boolean' ? BOOLEAN : DATATYPE[v?.type ?? m.type!]);
    if (m.historical) w.varintField(5, 1n);
    if (v === null) w.varintField(7, 1n);
    else if (typeof v === 'bigint') w.varintField(11, v);
    else if (typeof v === 'boolean') w.varintField(14, v ? 1n : 0n);
    else writeValue(w, v);
    w.end(at);
  }
  return w.finish();
}

function writeValue(w: Writer, v: TypedValue): void {
  switch (v.type) {
    case 'INTEGER':
      return w.varintField(10, BigInt(v.value >>> 0));
    case 'LONG':
      return w.varintField(11, v.value);
    case 'FLOAT':
      return w.floatField(12, v.value);
    case 'DOUBLE':
      return w.doubleField(13, v.value);
    case 'BOOLEAN':
      return w.varintField(14, v.value ? 1n : 0n);
    case 'STRING':
      return w.stringField(15, v.value);
    case 'BYTE_ARRAY':
      return w.bytesField(16, v.value);
  }
}

/** The payload with its sequence number (0 … 255) as the last field. */
export function withSeq(payload: Buffer, seq: number): Buffer {
  return Buffer.concat([payload, Buffer.from(seq < 128 ? [0x18, seq] : [0x18, seq | 0x80, 1])]);
}

/** A metric of a command as it came: its value field (10 … 18) and wire type, undecided until its datatype is known. */
export interface CommandMetric {
  name?: string;
  alias?: bigint;
  /** The datatype number on the wire; undefined when absent (commands may leave it out). */
  code?: number;
  isNull?: boolean;
  field?: number;
  wire?: number;
  raw?: bigint | number | Buffer;
}

/** Commands carry a few metrics; a payload with more is refused as a whole. */
const MAX_COMMAND_METRICS = 1000;

/** The metrics of an NCMD or DCMD payload; throws DecodeError for a malformed one. */
export function decodeCommand(payload: Buffer): CommandMetric[] {
  const out: CommandMetric[] = [];
  const r = new Reader(payload);
  while (!r.done) {
    const { field, wire } = r.tag();
    if (field !== 2 || wire !== 2) r.skip(wire);
    else if (out.push(decodeMetric(new Reader(r.lengthDelimited()))) > MAX_COMMAND_METRICS) throw new DecodeError('more than 1000 metrics in a command');
  }
  return out;
}

function decodeMetric(r: Reader): CommandMetric {
  const m: CommandMetric = {};
  while (!r.done) {
    const { field, wire } = r.tag();
    // A name that is no UTF-8 names no channel (its U+FFFD never matches one).
    if (field === 1 && wire === 2) m.name = r.lengthDelimited().toString();
    else if (field === 2 && wire === 0) m.alias = r.varint();
    else if (field === 4 && wire === 0) m.code = Number(r.varint() & 0xffffffffn);
    else if (field === 7 && wire === 0) m.isNull = r.varint() !== 0n;
    else if (field >= 10 && field <= 18) {
      m.field = field;
      m.wire = wire;
      m.raw = wire === 0 ? r.varint() : wire === 5 ? r.take(4).readFloatLE(0) : wire === 1 ? r.take(8).readDoubleLE(0) : r.lengthDelimited();
    } else r.skip(wire);
  }
  return m;
}

/** Each datatype up to File: the value field it travels in (10 int_value … 16 bytes_value), and an integer's bits (negative: signed). */
const FIELD = [0, 10, 10, 10, 11, 10, 10, 11, 11, 12, 13, 14, 15, 11, 15, 15, 0, 16, 16];
const BITS = [0, -8, -16, -32, -64, 8, 16, 32, 64, 0, 0, 0, 0, 64];
/** The wire type of each value field from int_value (10) to bytes_value (16). */
const WIRE = [0, 0, 5, 1, 0, 2, 2];

/** How a command's metric is named in a refusal: by name, else by alias. */
export function metricName(m: { name?: string; alias?: bigint }): string {
  return m.name !== undefined ? `metric ${JSON.stringify(m.name.slice(0, 64))}` : `metric with alias ${m.alias}`;
}

export type WriteText = { ok: true; type: ValueType; text: string } | { ok: false; error: string };

/**
 * The value type and text a command metric asks to write, for the one parse of written values
 * (channels/values.ts parseValueText, as REST and ASSET-V1 writes; docs/architecture.md "Asset values:
 * one conversion"): the metric's datatype, or `birthType` (the channel's) when a command leaves it
 * out. The text is exact (integers in decimal, a Float's or Double's number as JavaScript writes it,
 * bytes in base64), so the parse decides what is refused (NaN, infinities, a UInt64 beyond a LONG);
 * integers must be in their datatype's range; what no channel can hold (null, DataSet, Template,
 * arrays, property sets) is refused here.
 */
export function commandWriteText(m: CommandMetric, birthType: ValueType): WriteText {
  const code = m.code || DATATYPE[birthType];
  const refuse = (why: string): WriteText => ({ ok: false, error: `${metricName(m)}: ${why}` });
  const field = FIELD[code];
  if (!field) return refuse(`a value of datatype ${code} cannot be written to a channel`);
  if (m.isNull) return refuse('a null value cannot be written');
  const bits = BITS[code] ?? 0;
  // Integers of up to 32 bits may come in int_value or long_value (encoders differ), the rest in their own field.
  if (m.field !== field && !(bits && (m.field === 10 || m.field === 11)) || WIRE[m.field! - 10] !== m.wire) return refuse(`datatype ${code} value not in its value field`);
  const v = m.raw!;
  if (bits) {
    const width = Math.abs(bits);
    // int_value is a uint32: Int8 … Int32 come as their 32-bit two's complement, as Tahu writes them.
    let n = m.field === 10 ? (v as bigint) & 0xffffffffn : (v as bigint);
    n = bits < 0 ? BigInt.asIntN(m.field === 10 ? 32 : 64, n) : n;
    const fits = bits < 0 ? BigInt.asIntN(width, n) === n : BigInt.asUintN(width, n) === n;
    if (!fits) return refuse(`value ${n} is out of range for datatype ${code}`);
    return { ok: true, type: width > 16 && (bits > 0 || width > 32) ? 'LONG' : 'INTEGER', text: String(n) };
  }
  if (field === 16) return { ok: true, type: 'BYTE_ARRAY', text: (v as Buffer).toString('base64') };
  if (field === 15) return isUtf8(v as Buffer) ? { ok: true, type: 'STRING', text: v.toString() } : refuse('string value is not UTF-8');
  if (field === 14) return { ok: true, type: 'BOOLEAN', text: String(v !== 0n) };
  return { ok: true, type: field === 12 ? 'FLOAT' : 'DOUBLE', text: Object.is(v, -0) ? '-0' : String(v) };
}
