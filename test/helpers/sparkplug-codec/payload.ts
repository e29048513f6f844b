// Sparkplug B `Payload` (sparkplug_b.proto of the Sparkplug 3.0 specification, chapter "Payloads",
// proto2, package org.eclipse.tahu.protobuf), encoded and decoded by hand with the protobuf writer
// and reader of the KuraPayload codec. A test helper, not part of the daemon: the edge node ships
// only its own subset (src/mqtt/sparkplug/wire.ts), and this full codec is the reference that
// test/mqtt/sparkplug-wire.test.ts checks it against (same bytes written, same values read), beside
// Eclipse Tahu's `sparkplug-payload` (test/helpers/tahu.ts); test/mqtt/sparkplug-payload*.test.ts
// hold it to Tahu and to hand-made bytes.
//
//   Payload       timestamp 1 (uint64), metrics 2, seq 3 (uint64), uuid 4, body 5 (bytes)
//   Metric        name 1, alias 2 (uint64), timestamp 3 (uint64), datatype 4 (uint32), is_historical 5,
//                 is_transient 6, is_null 7, metadata 8, properties 9 (PropertySet), value oneof:
//                 int_value 10 (uint32), long_value 11 (uint64), float_value 12, double_value 13,
//                 boolean_value 14, string_value 15, bytes_value 16, dataset_value 17, template_value 18
//   MetaData      is_multi_part 1, content_type 2, size 3, seq 4, file_name 5, file_type 6, md5 7, description 8
//   PropertySet   keys 1 (repeated string), values 2 (repeated PropertyValue)
//   PropertyValue type 1, is_null 2, value oneof: int 3, long 4, float 5, double 6, boolean 7, string 8,
//                 propertyset_value 9, propertysets_value 10 (PropertySetList: propertyset 1)
//   DataSet       num_of_columns 1, columns 2, types 3 (repeated uint32), rows 4 (Row: elements 1,
//                 DataSetValue oneof: int 1, long 2, float 3, double 4, boolean 5, string 6)
//   Template      version 1, metrics 2, parameters 3 (Parameter: name 1, type 2, value oneof: int 3,
//                 long 4, float 5, double 6, boolean 7, string 8), template_ref 4, is_definition 5
//
// One encoder and one decoder per message kind. The encoder writes fields in field-number order,
// as protobuf implementations do (Tahu's payloads and ours are the same bytes for the same
// metrics), and writes `datatype` on every metric, DATA and CMD messages included, as Tahu's
// encoders do: the specification only advises against it there, and a host decoding with Tahu's
// JavaScript library reads a metric without datatype as null. Values are checked against their
// datatype before anything is written (a SparkplugError names the metric and the value).
//
// The decoder is bounded whatever a publisher sends (SPARKPLUG_DECODE_LIMITS): metrics per payload
// and per template, elements in all (metrics, properties, parameters, columns, cells, array
// elements), nesting of templates, data sets and property sets, string and bytes sizes. It throws
// only SparkplugError, whose message names the element (`metric 2 "temp" (alias 7): properties:
// property "Quality": …`) and the byte where it starts. Strings must be valid UTF-8. Unknown fields
// and extensions are skipped, as protobuf does; where a oneof value field occurs twice, the last wins.

import { isUtf8 } from 'node:buffer';
import { DecodeError, Reader, Writer } from '../../../src/mqtt/kura-payload.js';
import { packArray, unpackArray } from './arrays.js';
import {
  INTEGER_RANGE,
  SLOT,
  SparkplugError,
  datatypeCode,
  datatypeOfCode,
  isArrayType,
  isBasic,
  slotOf,
  type ArrayValueTypes,
  type BasicDataType,
  type BasicValue,
  type BasicValueTypes,
  type Slot,
  type SparkplugDataType,
} from './datatypes.js';

// ---- the model --------------------------------------------------------------------------------

export interface SparkplugMetaData {
  isMultiPart?: boolean;
  contentType?: string;
  size?: bigint;
  seq?: bigint;
  fileName?: string;
  fileType?: string;
  md5?: string;
  description?: string;
}

/** A PropertySet: its keys in wire order (a Map keeps the order, also of keys such as "1"). */
export type SparkplugPropertySet = Map<string, SparkplugPropertyValue>;

export interface PropertyValueTypes extends BasicValueTypes {
  PropertySet: SparkplugPropertySet;
  PropertySetList: SparkplugPropertySet[];
}
/** The types a property value may have: the basic ones, PropertySet and PropertySetList. */
export type PropertyDataType = keyof PropertyValueTypes;
export type SparkplugPropertyValue = { [T in PropertyDataType]: { type: T; value: PropertyValueTypes[T] | null } }[PropertyDataType];

/** A DataSet: one type per column (basic types only), each row one cell per column; null: no value. */
export interface SparkplugDataSet {
  columns: string[];
  types: BasicDataType[];
  rows: (BasicValue | null)[][];
}

export type SparkplugTemplateParameter = { [T in BasicDataType]: { name: string; type: T; value: BasicValueTypes[T] | null } }[BasicDataType];

export interface SparkplugTemplate {
  version?: string;
  /** A template instance's definition (the name of the definition's metric); absent on a definition. */
  templateRef?: string;
  isDefinition: boolean;
  metrics: SparkplugMetric[];
  parameters: SparkplugTemplateParameter[];
}

/**
 * A decoded metric's value when its datatype is not known (absent from the wire, or 0, and not
 * given by `datatypeOf`): the value field's own type (int_value a number, long_value a bigint, …).
 */
export type RawMetricValue = number | bigint | boolean | string | Buffer | SparkplugDataSet | SparkplugTemplate;

export interface MetricValueTypes extends BasicValueTypes, ArrayValueTypes {
  UUID: string;
  DataSet: SparkplugDataSet;
  Bytes: Buffer;
  File: Buffer;
  Template: SparkplugTemplate;
  /** Decoded only: encoding a metric of unknown datatype is refused. */
  Unknown: RawMetricValue;
}
/** Every datatype but the two that only property values have. */
export type MetricDataType = keyof MetricValueTypes;

interface MetricFields {
  name?: string;
  alias?: bigint;
  /** Milliseconds since the epoch (UTC). */
  timestamp?: bigint;
  isHistorical?: boolean;
  isTransient?: boolean;
  metadata?: SparkplugMetaData;
  properties?: SparkplugPropertySet;
}
/** A metric; `value: null` is Sparkplug's `is_null`. */
export type SparkplugMetric = { [T in MetricDataType]: MetricFields & { datatype: T; value: MetricValueTypes[T] | null } }[MetricDataType];

export interface SparkplugPayload {
  /** Milliseconds since the epoch (UTC) at which the message was published. */
  timestamp?: bigint;
  metrics: SparkplugMetric[];
  /** 0 … 255 in NBIRTH, DBIRTH, NDATA, DDATA, DDEATH; absent in NDEATH and commands. */
  seq?: bigint;
  uuid?: string;
  body?: Buffer;
}

// ---- shared helpers ---------------------------------------------------------------------------

const WIRE_VARINT = 0;
const WIRE_64 = 1;
const WIRE_LEN = 2;
const WIRE_32 = 5;

const U64_MAX = 2n ** 64n - 1n;

const SLOT_FIELD = ['int_value', 'long_value', 'float_value', 'double_value', 'boolean_value', 'string_value'];

function shown(v: unknown): string {
  if (typeof v === 'bigint') return `${v}n`;
  if (typeof v === 'string') return JSON.stringify(v.length > 32 ? `${v.slice(0, 32)}…` : v);
  if (Buffer.isBuffer(v)) return `${v.length} bytes`;
  if (Array.isArray(v)) return 'an array';
  if (v !== null && typeof v === 'object') return 'an object';
  return String(v);
}

const fail = (detail: string): never => {
  throw new SparkplugError(detail);
};

/** How an element is named in an error: `metric 2 "temp" (alias 7)`. */
function metricLabel(label: string, name: string | undefined, alias: bigint | undefined): string {
  return `${label}${name === undefined ? '' : ` ${shown(name)}`}${alias === undefined ? '' : ` (alias ${alias})`}`;
}

// ---- encoder ----------------------------------------------------------------------------------

/** Nesting the encoder follows before it refuses a value (a template that contains itself). */
const MAX_ENCODE_DEPTH = 32;

function u64Field(w: Writer, field: number, v: unknown, what: string): void {
  if (typeof v !== 'bigint' || v < 0n || v > U64_MAX) fail(`${what} must be a bigint from 0 to ${U64_MAX}, not ${shown(v)}`);
  w.varintField(field, v as bigint);
}

function boolField(w: Writer, field: number, v: unknown, what: string): void {
  if (typeof v !== 'boolean') fail(`${what} must be a boolean, not ${shown(v)}`);
  w.tag(field, WIRE_VARINT);
  w.uvarint(v ? 1 : 0);
}

function stringField(w: Writer, field: number, v: unknown, what: string): void {
  if (typeof v !== 'string') fail(`${what} must be a string, not ${shown(v)}`);
  w.stringField(field, v as string);
}

function code(t: unknown, allowed: (t: SparkplugDataType) => boolean, what: string): number {
  const c = typeof t === 'string' ? datatypeCode(t) : undefined;
  if (c === undefined || c === 0 || !allowed(t as SparkplugDataType)) fail(`${what} ${shown(t)} cannot be encoded here`);
  return c!;
}

/**
 * A basic (or UUID) value in the value field of its slot, `base` being the message's int_value
 * field number: Int8 … Int32 as their 32-bit two's complement, UInt32 and the 64-bit types in
 * long_value.
 */
function writeScalar(w: Writer, base: number, type: BasicDataType | 'UUID', v: unknown): void {
  const slot = slotOf(type);
  const range = INTEGER_RANGE[type];
  if (range) {
    const [lo, hi] = range;
    if (slot === SLOT.long && type !== 'UInt32') {
      if (typeof v !== 'bigint' || v < lo || v > hi) fail(`${type} value must be a bigint from ${lo} to ${hi}, not ${shown(v)}`);
      w.varintField(base + slot, v as bigint);
      return;
    }
    if (typeof v !== 'number' || !Number.isInteger(v) || v < Number(lo) || v > Number(hi)) {
      fail(`${type} value must be an integer from ${lo} to ${hi}, not ${shown(v)}`);
    }
    w.tag(base + slot, WIRE_VARINT);
    w.uvarint((v as number) >>> 0);
    return;
  }
  switch (slot) {
    case SLOT.float:
      if (typeof v !== 'number') fail(`Float value must be a number, not ${shown(v)}`);
      w.floatField(base + slot, v as number);
      return;
    case SLOT.double:
      if (typeof v !== 'number') fail(`Double value must be a number, not ${shown(v)}`);
      w.doubleField(base + slot, v as number);
      return;
    case SLOT.boolean:
      boolField(w, base + slot, v, 'Boolean value');
      return;
    default:
      stringField(w, base + slot, v, `${type} value`);
  }
}

function writeMetaData(w: Writer, m: SparkplugMetaData): void {
  if (m === null || typeof m !== 'object') fail(`metadata must be an object, not ${shown(m)}`);
  if (m.isMultiPart !== undefined) boolField(w, 1, m.isMultiPart, 'is_multi_part');
  if (m.contentType !== undefined) stringField(w, 2, m.contentType, 'content_type');
  if (m.size !== undefined) u64Field(w, 3, m.size, 'size');
  if (m.seq !== undefined) u64Field(w, 4, m.seq, 'seq');
  if (m.fileName !== undefined) stringField(w, 5, m.fileName, 'file_name');
  if (m.fileType !== undefined) stringField(w, 6, m.fileType, 'file_type');
  if (m.md5 !== undefined) stringField(w, 7, m.md5, 'md5');
  if (m.description !== undefined) stringField(w, 8, m.description, 'description');
}

const isPropertyType = (t: SparkplugDataType) => isBasic(t) || t === 'PropertySet' || t === 'PropertySetList';

function writePropertySet(w: Writer, set: SparkplugPropertySet, depth: number): void {
  if (!(set instanceof Map)) fail(`a property set must be a Map, not ${shown(set)}`);
  if (depth > MAX_ENCODE_DEPTH) fail(`property sets nested deeper than ${MAX_ENCODE_DEPTH} levels`);
  for (const key of set.keys()) stringField(w, 1, key, 'a property key');
  for (const [key, pv] of set) {
    try {
      const at = w.begin(2);
      writePropertyValue(w, pv, depth);
      w.end(at);
    } catch (err) {
      throw err instanceof SparkplugError ? err.within(`property ${shown(key)}`) : err;
    }
  }
}

function writePropertyValue(w: Writer, pv: SparkplugPropertyValue, depth: number): void {
  if (pv === null || typeof pv !== 'object') fail(`a property value must be an object {type, value}, not ${shown(pv)}`);
  w.tag(1, WIRE_VARINT);
  w.uvarint(code(pv.type, isPropertyType, 'property type'));
  if (pv.value === null) {
    boolField(w, 2, true, 'is_null');
    return;
  }
  if (pv.type === 'PropertySet') {
    const at = w.begin(9);
    writePropertySet(w, pv.value, depth + 1);
    w.end(at);
  } else if (pv.type === 'PropertySetList') {
    if (!Array.isArray(pv.value)) fail(`a PropertySetList value must be an array of property sets, not ${shown(pv.value)}`);
    const list = w.begin(10);
    pv.value.forEach((set, i) => {
      try {
        const at = w.begin(1);
        writePropertySet(w, set, depth + 2);
        w.end(at);
      } catch (err) {
        throw err instanceof SparkplugError ? err.within(`property set ${i}`) : err;
      }
    });
    w.end(list);
  } else {
    writeScalar(w, 3, pv.type, pv.value);
  }
}

function writeDataSet(w: Writer, ds: SparkplugDataSet): void {
  if (ds === null || typeof ds !== 'object' || !Array.isArray(ds.columns) || !Array.isArray(ds.types) || !Array.isArray(ds.rows)) {
    fail(`a DataSet value must be an object {columns, types, rows}, not ${shown(ds)}`);
  }
  const n = ds.columns.length;
  if (ds.types.length !== n) fail(`a DataSet has ${n} columns and ${ds.types.length} types`);
  w.tag(1, WIRE_VARINT);
  w.uvarint(n);
  for (const c of ds.columns) stringField(w, 2, c, 'a DataSet column name');
  // proto2 repeated scalars are not packed unless declared so.
  const codes = ds.types.map((t, j) => code(t, isBasic, `column ${j} type`));
  for (const c of codes) {
    w.tag(3, WIRE_VARINT);
    w.uvarint(c);
  }
  ds.rows.forEach((row, i) => {
    if (!Array.isArray(row) || row.length !== n) fail(`row ${i} has ${Array.isArray(row) ? row.length : 'no'} cells for ${n} columns`);
    const rowAt = w.begin(4);
    row.forEach((cell, j) => {
      const at = w.begin(1);
      if (cell !== null) {
        try {
          writeScalar(w, 1, ds.types[j]!, cell);
        } catch (err) {
          throw err instanceof SparkplugError ? err.within(`column ${j}`).within(`row ${i}`) : err;
        }
      }
      w.end(at);
    });
    w.end(rowAt);
  });
}

function writeTemplate(w: Writer, t: SparkplugTemplate, depth: number): void {
  if (t === null || typeof t !== 'object' || !Array.isArray(t.metrics)) fail(`a Template value must be an object {isDefinition, metrics, parameters}, not ${shown(t)}`);
  if (depth > MAX_ENCODE_DEPTH) fail(`templates nested deeper than ${MAX_ENCODE_DEPTH} levels`);
  if (t.version !== undefined) stringField(w, 1, t.version, 'version');
  t.metrics.forEach((m, i) => {
    const at = w.begin(2);
    writeMetricAt(w, m, `metric ${i}`, depth + 1);
    w.end(at);
  });
  (t.parameters ?? []).forEach((p, i) => {
    try {
      if (p === null || typeof p !== 'object') fail(`a template parameter must be an object {name, type, value}, not ${shown(p)}`);
      const at = w.begin(3);
      stringField(w, 1, p.name, 'name');
      w.tag(2, WIRE_VARINT);
      w.uvarint(code(p.type, isBasic, 'type'));
      if (p.value !== null) writeScalar(w, 3, p.type, p.value);
      w.end(at);
    } catch (err) {
      throw err instanceof SparkplugError ? err.within(`parameter ${i}${typeof p?.name === 'string' ? ` ${shown(p.name)}` : ''}`) : err;
    }
  });
  if (t.templateRef !== undefined) stringField(w, 4, t.templateRef, 'template_ref');
  boolField(w, 5, t.isDefinition, 'is_definition');
}

const isMetricType = (t: SparkplugDataType) => t !== 'PropertySet' && t !== 'PropertySetList';

function writeMetric(w: Writer, m: SparkplugMetric, depth: number): void {
  if (m === null || typeof m !== 'object') fail(`a metric must be an object, not ${shown(m)}`);
  if (m.name !== undefined) stringField(w, 1, m.name, 'name');
  if (m.alias !== undefined) u64Field(w, 2, m.alias, 'alias');
  if (m.timestamp !== undefined) u64Field(w, 3, m.timestamp, 'timestamp');
  w.tag(4, WIRE_VARINT);
  w.uvarint(code(m.datatype, isMetricType, 'datatype'));
  if (m.isHistorical !== undefined) boolField(w, 5, m.isHistorical, 'is_historical');
  if (m.isTransient !== undefined) boolField(w, 6, m.isTransient, 'is_transient');
  if (m.value === null) boolField(w, 7, true, 'is_null');
  if (m.metadata !== undefined) {
    const at = w.begin(8);
    writeMetaData(w, m.metadata);
    w.end(at);
  }
  if (m.properties !== undefined) {
    const at = w.begin(9);
    try {
      writePropertySet(w, m.properties, depth + 1);
    } catch (err) {
      throw err instanceof SparkplugError ? err.within('properties') : err;
    }
    w.end(at);
  }
  if (m.value === null) return;
  if (m.value === undefined) fail('a metric needs a value (null for none)');
  const t = m.datatype;
  if (isBasic(t) || t === 'UUID') writeScalar(w, 10, t, m.value);
  else if (t === 'Bytes' || t === 'File') {
    if (!Buffer.isBuffer(m.value)) fail(`${t} value must be a Buffer, not ${shown(m.value)}`);
    w.bytesField(16, m.value as Buffer);
  } else if (isArrayType(t)) w.bytesField(16, packArray(t, m.value as never));
  else {
    const at = w.begin(t === 'DataSet' ? 17 : 18);
    try {
      if (t === 'DataSet') writeDataSet(w, m.value as SparkplugDataSet);
      else writeTemplate(w, m.value as SparkplugTemplate, depth + 1);
    } catch (err) {
      throw err instanceof SparkplugError ? err.within(t === 'DataSet' ? 'data set' : 'template') : err;
    }
    w.end(at);
  }
}

function writeMetricAt(w: Writer, m: SparkplugMetric, label: string, depth: number): void {
  try {
    writeMetric(w, m, depth);
  } catch (err) {
    throw err instanceof SparkplugError ? err.within(metricLabel(label, typeof m?.name === 'string' ? m.name : undefined, typeof m?.alias === 'bigint' ? m.alias : undefined)) : err;
  }
}

/**
 * The payload's bytes. Throws SparkplugError when a field or value does not fit its type (an
 * Int8 of 300, a UInt64 given as a number, a DataSet row one cell short, datatype Unknown), naming
 * the metric; nothing is half-written, the caller gets no bytes.
 */
export function encodeSparkplugPayload(p: SparkplugPayload): Buffer {
  if (p === null || typeof p !== 'object' || !Array.isArray(p.metrics)) fail('a payload must be an object with a metrics array');
  const w = new Writer(32 + 40 * p.metrics.length);
  if (p.timestamp !== undefined) u64Field(w, 1, p.timestamp, 'payload timestamp');
  p.metrics.forEach((m, i) => {
    const at = w.begin(2);
    writeMetricAt(w, m, `metric ${i}`, 0);
    w.end(at);
  });
  if (p.seq !== undefined) u64Field(w, 3, p.seq, 'seq');
  if (p.uuid !== undefined) stringField(w, 4, p.uuid, 'uuid');
  if (p.body !== undefined) {
    if (!Buffer.isBuffer(p.body)) fail(`body must be a Buffer, not ${shown(p.body)}`);
    w.bytesField(5, p.body);
  }
  return w.finish();
}

// ---- decoder ----------------------------------------------------------------------------------

export interface SparkplugDecodeLimits {
  /** Metrics in the payload, and in each template. */
  maxMetrics: number;
  /** Metrics, properties, parameters, columns, rows, cells and array elements, all counted together. */
  maxElements: number;
  /** Templates, data sets and property sets inside one another. */
  maxDepth: number;
  /** Bytes of one string (names, string values, keys). */
  maxStringBytes: number;
  /** Bytes of one bytes value (Bytes, File, an array, the body). */
  maxBytes: number;
}

/**
 * Defaults sized for what an edge node receives (NCMD, DCMD: a handful of metrics) and for
 * births of a large asset, with the decoded objects staying within a few MB.
 */
export const SPARKPLUG_DECODE_LIMITS: Readonly<SparkplugDecodeLimits> = Object.freeze({
  maxMetrics: 4096,
  maxElements: 16384,
  maxDepth: 8,
  maxStringBytes: 64 * 1024,
  maxBytes: 1024 * 1024,
});

export interface SparkplugDecodeOptions extends Partial<SparkplugDecodeLimits> {
  /**
   * The datatype of a payload-level metric that carries none (DATA and CMD messages may omit it):
   * what its birth said, by alias or name. Without it (or when it answers undefined) such a
   * metric decodes as datatype 'Unknown' with its raw value.
   */
  datatypeOf?: (metric: { name?: string; alias?: bigint }) => MetricDataType | undefined;
}

class DecodeState {
  readonly limits: SparkplugDecodeLimits;
  /** Elements the payload may still decode. */
  elements: number;
  depth = 0;

  constructor(
    /** byteOffset of the whole payload in its ArrayBuffer: errors give offsets into the payload. */
    readonly base: number,
    options: SparkplugDecodeOptions,
    readonly datatypeOf: SparkplugDecodeOptions['datatypeOf'],
  ) {
    this.limits = { ...SPARKPLUG_DECODE_LIMITS, ...withoutUndefined(options) };
    this.elements = this.limits.maxElements;
  }

  spend(n: number): void {
    this.elements -= n;
    if (this.elements < 0) fail(`more than ${this.limits.maxElements} elements (metrics, properties, parameters, columns, rows, cells, array elements) in the payload`);
  }

  enter(): void {
    if (++this.depth > this.limits.maxDepth) fail(`templates, data sets and property sets nested deeper than ${this.limits.maxDepth} levels`);
  }

  string(r: Reader, what: string): string {
    const b = r.lengthDelimited();
    if (b.length > this.limits.maxStringBytes) fail(`${what} of ${b.length} bytes is over the bound of ${this.limits.maxStringBytes}`);
    if (!isUtf8(b)) fail(`${what} is not valid UTF-8`);
    return b.toString('utf8');
  }

  bytes(b: Buffer, what: string): Buffer {
    if (b.length > this.limits.maxBytes) fail(`${what} of ${b.length} bytes is over the bound of ${this.limits.maxBytes}`);
    return b;
  }
}

function withoutUndefined(o: SparkplugDecodeOptions): Partial<SparkplugDecodeLimits> {
  const out: Partial<SparkplugDecodeLimits> = {};
  for (const k of ['maxMetrics', 'maxElements', 'maxDepth', 'maxStringBytes', 'maxBytes'] as const) {
    if (o[k] !== undefined) out[k] = o[k];
  }
  return out;
}

/**
 * Any failure inside a message as a SparkplugError seen from that message: the reader's own errors
 * get the byte where it stopped, the codec's the byte where the field (`at`) starts.
 */
function located(err: unknown, st: DecodeState, r: Reader, at: number, label?: string): unknown {
  const start = r.buf.byteOffset - st.base;
  if (err instanceof SparkplugError) return err.within(label, start + at);
  if (err instanceof DecodeError) return new SparkplugError(err.message.replace(/ at byte \d+$/, ''), label ? [label] : [], start + r.pos);
  return err;
}

/** A oneof value field as it was read: varints as bigint, floats as numbers, the rest as bytes. */
type RawField = bigint | number | Buffer;

function readSlot(r: Reader, wire: number, slot: number): RawField {
  switch (slot) {
    case SLOT.int:
    case SLOT.long:
    case SLOT.boolean:
      r.expect(wire, WIRE_VARINT, SLOT_FIELD[slot]!);
      return r.varint();
    case SLOT.float:
      r.expect(wire, WIRE_32, 'float_value');
      return r.take(4).readFloatLE(0);
    case SLOT.double:
      r.expect(wire, WIRE_64, 'double_value');
      return r.take(8).readDoubleLE(0);
    default:
      r.expect(wire, WIRE_LEN, slot === SLOT.string ? 'string_value' : 'value');
      return r.lengthDelimited();
  }
}

/**
 * The oneof value field of a Metric (10 … 18), PropertyValue (3 … 10), Template.Parameter (3 … 8)
 * or DataSetValue (1 … 6), the four messages whose value fields come in the same order (SLOT): the
 * last one read (protobuf's oneof rule), its slot and the byte where it starts. One reader for all
 * four, so their value fields cannot come to be read differently.
 */
class ValueField {
  slot = -1;
  raw: RawField = 0;
  at = 0;
  constructor(
    readonly first: number,
    readonly last: number,
  ) {}

  /** Reads field `field` if it is one of the value fields (true), else leaves it (false). */
  read(r: Reader, field: number, wire: number, at: number): boolean {
    if (field < this.first || field > this.last) return false;
    this.slot = field - this.first;
    this.raw = readSlot(r, wire, this.slot);
    this.at = at;
    return true;
  }

  /** A basic value of `type` (null when the message has no value field), checked against its field. */
  scalar(type: BasicDataType | 'UUID', st: DecodeState): BasicValue | null {
    return this.slot < 0 ? null : scalarValue(type, this.slot, this.raw, st);
  }
}

/**
 * An integer of a type up to 32 bits from int_value (or long_value, where some encoders put it),
 * exact: Int8 and Int16 are accepted sign-extended to 32 (or 64) bits, as Tahu writes them, or in
 * their own width (0xFF is Int8 -1); anything outside the type's range is refused.
 */
function smallInteger(type: SparkplugDataType, slot: number, raw: bigint): number {
  const [lo, hi] = INTEGER_RANGE[type]!;
  let u: bigint;
  if (slot === SLOT.int || raw <= 0xffffffffn) u = raw & 0xffffffffn; // protobuf reads a uint32 as the varint's low 32 bits
  else if (lo < 0n && BigInt.asIntN(64, raw) < 0n && BigInt.asIntN(64, raw) >= -(2n ** 31n)) u = raw & 0xffffffffn; // a negative sign-extended to 64 bits
  else return fail(`${type} value ${lo < 0n ? BigInt.asIntN(64, raw) : raw} in long_value is out of range`);
  const signed = BigInt.asIntN(32, u);
  if (signed >= lo && signed <= hi) return Number(signed);
  if (u >= lo && u <= hi) return Number(u);
  if ((type === 'Int8' && u <= 0xffn) || (type === 'Int16' && u <= 0xffffn)) return Number(BigInt.asIntN(type === 'Int8' ? 8 : 16, u));
  return fail(`${type} value ${u} in ${SLOT_FIELD[slot]} is out of range`);
}

/** A basic (or UUID) value from its raw field; the field must be the type's (see smallInteger). */
function scalarValue(type: BasicDataType | 'UUID', slot: number, raw: RawField, st: DecodeState): BasicValue {
  const want = slotOf(type);
  const range = INTEGER_RANGE[type];
  if (range && want === SLOT.long && type !== 'UInt32') {
    if (slot !== SLOT.long) fail(`${type} value in ${SLOT_FIELD[slot] ?? 'a non-scalar field'}, expected long_value`);
    return type === 'Int64' ? BigInt.asIntN(64, raw as bigint) : (raw as bigint);
  }
  if (range) {
    if (slot !== SLOT.int && slot !== SLOT.long) fail(`${type} value in ${SLOT_FIELD[slot] ?? 'a non-scalar field'}, expected ${SLOT_FIELD[want]}`);
    return smallInteger(type, slot, raw as bigint);
  }
  if (slot !== want) fail(`${type} value in ${SLOT_FIELD[slot] ?? 'a non-scalar field'}, expected ${SLOT_FIELD[want]}`);
  if (want === SLOT.boolean) return raw !== 0n;
  if (want === SLOT.string) return utf8(raw as Buffer, st, `${type} value`);
  return raw as number;
}

function utf8(b: Buffer, st: DecodeState, what: string): string {
  if (b.length > st.limits.maxStringBytes) fail(`${what} of ${b.length} bytes is over the bound of ${st.limits.maxStringBytes}`);
  if (!isUtf8(b)) fail(`${what} is not valid UTF-8`);
  return b.toString('utf8');
}

function readMetaData(buf: Buffer, st: DecodeState): SparkplugMetaData {
  const r = new Reader(buf);
  const m: SparkplugMetaData = {};
  let at = 0;
  try {
    while (!r.done) {
      at = r.pos;
      const { field, wire } = r.tag();
      switch (field) {
        case 1: r.expect(wire, WIRE_VARINT, 'is_multi_part'); m.isMultiPart = r.varint() !== 0n; break;
        case 2: r.expect(wire, WIRE_LEN, 'content_type'); m.contentType = st.string(r, 'content_type'); break;
        case 3: r.expect(wire, WIRE_VARINT, 'size'); m.size = r.varint(); break;
        case 4: r.expect(wire, WIRE_VARINT, 'seq'); m.seq = r.varint(); break;
        case 5: r.expect(wire, WIRE_LEN, 'file_name'); m.fileName = st.string(r, 'file_name'); break;
        case 6: r.expect(wire, WIRE_LEN, 'file_type'); m.fileType = st.string(r, 'file_type'); break;
        case 7: r.expect(wire, WIRE_LEN, 'md5'); m.md5 = st.string(r, 'md5'); break;
        case 8: r.expect(wire, WIRE_LEN, 'description'); m.description = st.string(r, 'description'); break;
        default: r.skip(wire);
      }
    }
    return m;
  } catch (err) {
    throw located(err, st, r, at, 'metadata');
  }
}

function readPropertySet(buf: Buffer, st: DecodeState): SparkplugPropertySet {
  const r = new Reader(buf);
  const keys: string[] = [];
  const values: SparkplugPropertyValue[] = [];
  let at = 0;
  try {
    st.enter();
    while (!r.done) {
      at = r.pos;
      const { field, wire } = r.tag();
      if (field === 1) {
        r.expect(wire, WIRE_LEN, 'key');
        st.spend(1);
        keys.push(st.string(r, 'a property key'));
      } else if (field === 2) {
        r.expect(wire, WIRE_LEN, 'value');
        st.spend(1);
        const i = values.length;
        values.push(readPropertyValue(r.lengthDelimited(), st, i < keys.length ? `property ${shown(keys[i])}` : `property ${i}`));
      } else r.skip(wire);
    }
    at = 0;
    if (keys.length !== values.length) fail(`a property set of ${keys.length} keys and ${values.length} values`);
    const set: SparkplugPropertySet = new Map();
    keys.forEach((k, i) => {
      if (set.has(k)) fail(`property key ${shown(k)} appears twice`);
      set.set(k, values[i]!);
    });
    st.depth--;
    return set;
  } catch (err) {
    throw located(err, st, r, at);
  }
}

function readPropertyValue(buf: Buffer, st: DecodeState, label: string): SparkplugPropertyValue {
  const r = new Reader(buf);
  let typeCode: number | undefined;
  let isNull = false;
  const v = new ValueField(3, 10);
  let at = 0;
  try {
    while (!r.done) {
      at = r.pos;
      const { field, wire } = r.tag();
      if (field === 1) {
        r.expect(wire, WIRE_VARINT, 'type');
        typeCode = Number(r.varint() & 0xffffffffn);
      } else if (field === 2) {
        r.expect(wire, WIRE_VARINT, 'is_null');
        isNull = r.varint() !== 0n;
      } else if (!v.read(r, field, wire, at)) r.skip(wire);
    }
    at = 0;
    const type = typeCode === undefined ? undefined : datatypeOfCode(typeCode);
    if (type === undefined || !isPropertyType(type)) return fail(typeCode === undefined ? 'a property value without a type' : `property type ${typeCode} is not a basic type, PropertySet or PropertySetList`);
    if (isNull || v.slot < 0) return { type, value: null } as SparkplugPropertyValue;
    at = v.at;
    if (type === 'PropertySet' || type === 'PropertySetList') {
      const want = slotOf(type);
      if (v.slot !== want) fail(`${type} value in ${SLOT_FIELD[v.slot] ?? 'the other property set field'}`);
      if (type === 'PropertySet') return { type, value: readPropertySet(v.raw as Buffer, st) };
      return { type, value: readPropertySetList(v.raw as Buffer, st) };
    }
    return { type, value: v.scalar(type, st) } as SparkplugPropertyValue;
  } catch (err) {
    throw located(err, st, r, at, label);
  }
}

function readPropertySetList(buf: Buffer, st: DecodeState): SparkplugPropertySet[] {
  const r = new Reader(buf);
  const out: SparkplugPropertySet[] = [];
  let at = 0;
  try {
    st.enter();
    while (!r.done) {
      at = r.pos;
      const { field, wire } = r.tag();
      if (field !== 1) {
        r.skip(wire);
        continue;
      }
      r.expect(wire, WIRE_LEN, 'propertyset');
      st.spend(1);
      const sub = r.lengthDelimited();
      try {
        out.push(readPropertySet(sub, st));
      } catch (err) {
        throw err instanceof SparkplugError ? err.within(`property set ${out.length}`) : err;
      }
    }
    st.depth--;
    return out;
  } catch (err) {
    throw located(err, st, r, at);
  }
}

function readDataSet(buf: Buffer, st: DecodeState): SparkplugDataSet {
  const r = new Reader(buf);
  let numOfColumns: bigint | undefined;
  const columns: string[] = [];
  const codes: number[] = [];
  const rows: Buffer[] = [];
  let at = 0;
  try {
    st.enter();
    while (!r.done) {
      at = r.pos;
      const { field, wire } = r.tag();
      switch (field) {
        case 1:
          r.expect(wire, WIRE_VARINT, 'num_of_columns');
          numOfColumns = r.varint();
          break;
        case 2:
          r.expect(wire, WIRE_LEN, 'columns');
          st.spend(1);
          columns.push(st.string(r, 'a column name'));
          break;
        case 3:
          // Accepted packed as well, as protobuf parsers must.
          if (wire === WIRE_LEN) {
            const packed = new Reader(r.lengthDelimited());
            while (!packed.done) {
              st.spend(1);
              codes.push(Number(packed.varint() & 0xffffffffn));
            }
          } else {
            r.expect(wire, WIRE_VARINT, 'types');
            st.spend(1);
            codes.push(Number(r.varint() & 0xffffffffn));
          }
          break;
        case 4:
          r.expect(wire, WIRE_LEN, 'rows');
          st.spend(1);
          rows.push(r.lengthDelimited());
          break;
        default:
          r.skip(wire);
      }
    }
    at = 0;
    const types = codes.map((c, j) => {
      const t = datatypeOfCode(c);
      return t !== undefined && isBasic(t) ? t : fail(`column ${j} has type ${c}, not a basic type`);
    });
    if (numOfColumns === undefined) fail('a DataSet without num_of_columns');
    if (numOfColumns !== BigInt(types.length) || columns.length !== types.length) {
      fail(`a DataSet of num_of_columns ${numOfColumns} with ${columns.length} column names and ${types.length} types`);
    }
    const out: SparkplugDataSet = { columns, types, rows: rows.map((row, i) => readRow(row, types, st, i)) };
    st.depth--;
    return out;
  } catch (err) {
    throw located(err, st, r, at, 'data set');
  }
}

function readRow(buf: Buffer, types: BasicDataType[], st: DecodeState, index: number): (BasicValue | null)[] {
  const r = new Reader(buf);
  const cells: (BasicValue | null)[] = [];
  let at = 0;
  try {
    while (!r.done) {
      at = r.pos;
      const { field, wire } = r.tag();
      if (field !== 1) {
        r.skip(wire);
        continue;
      }
      r.expect(wire, WIRE_LEN, 'elements');
      st.spend(1);
      const type = types[cells.length];
      if (type === undefined) fail(`more cells than the ${types.length} columns`);
      cells.push(readCell(r.lengthDelimited(), type!, st, cells.length));
    }
    at = 0;
    if (cells.length !== types.length) fail(`${cells.length} cells for ${types.length} columns`);
    return cells;
  } catch (err) {
    throw located(err, st, r, at, `row ${index}`);
  }
}

function readCell(buf: Buffer, type: BasicDataType, st: DecodeState, column: number): BasicValue | null {
  const r = new Reader(buf);
  const v = new ValueField(1, 6);
  let at = 0;
  try {
    while (!r.done) {
      at = r.pos;
      const { field, wire } = r.tag();
      if (!v.read(r, field, wire, at)) r.skip(wire);
    }
    return v.scalar(type, st);
  } catch (err) {
    throw located(err, st, r, at, `column ${column}`);
  }
}

function readTemplate(buf: Buffer, st: DecodeState): SparkplugTemplate {
  const r = new Reader(buf);
  const t: SparkplugTemplate = { isDefinition: false, metrics: [], parameters: [] };
  let at = 0;
  try {
    st.enter();
    while (!r.done) {
      at = r.pos;
      const { field, wire } = r.tag();
      switch (field) {
        case 1:
          r.expect(wire, WIRE_LEN, 'version');
          t.version = st.string(r, 'version');
          break;
        case 2:
          r.expect(wire, WIRE_LEN, 'metrics');
          if (t.metrics.length === st.limits.maxMetrics) fail(`more than ${st.limits.maxMetrics} metrics in a template`);
          st.spend(1);
          t.metrics.push(readMetric(r.lengthDelimited(), st, `metric ${t.metrics.length}`, false));
          break;
        case 3:
          r.expect(wire, WIRE_LEN, 'parameters');
          st.spend(1);
          t.parameters.push(readParameter(r.lengthDelimited(), st, t.parameters.length));
          break;
        case 4:
          r.expect(wire, WIRE_LEN, 'template_ref');
          t.templateRef = st.string(r, 'template_ref');
          break;
        case 5:
          r.expect(wire, WIRE_VARINT, 'is_definition');
          t.isDefinition = r.varint() !== 0n;
          break;
        default:
          r.skip(wire);
      }
    }
    st.depth--;
    return t;
  } catch (err) {
    throw located(err, st, r, at, 'template');
  }
}

function readParameter(buf: Buffer, st: DecodeState, index: number): SparkplugTemplateParameter {
  const r = new Reader(buf);
  let name: string | undefined;
  let typeCode: number | undefined;
  const v = new ValueField(3, 8);
  let at = 0;
  try {
    while (!r.done) {
      at = r.pos;
      const { field, wire } = r.tag();
      if (field === 1) {
        r.expect(wire, WIRE_LEN, 'name');
        name = st.string(r, 'name');
      } else if (field === 2) {
        r.expect(wire, WIRE_VARINT, 'type');
        typeCode = Number(r.varint() & 0xffffffffn);
      } else if (!v.read(r, field, wire, at)) r.skip(wire);
    }
    at = 0;
    if (name === undefined) fail('a template parameter without a name');
    const type = typeCode === undefined ? undefined : datatypeOfCode(typeCode);
    if (type === undefined || !isBasic(type)) return fail(typeCode === undefined ? 'a template parameter without a type' : `parameter type ${typeCode} is not a basic type`);
    at = v.at;
    return { name, type, value: v.scalar(type, st) } as SparkplugTemplateParameter;
  } catch (err) {
    throw located(err, st, r, at, `parameter ${index}${name === undefined ? '' : ` ${shown(name)}`}`);
  }
}

/** A metric's value once its datatype is known. */
function metricValue(type: MetricDataType, slot: number, raw: RawField, st: DecodeState): MetricValueTypes[MetricDataType] {
  if (type === 'Unknown') {
    switch (slot) {
      case SLOT.int: return Number((raw as bigint) & 0xffffffffn);
      case SLOT.long: return raw as bigint;
      case SLOT.float: case SLOT.double: return raw as number;
      case SLOT.boolean: return raw !== 0n;
      case SLOT.string: return utf8(raw as Buffer, st, 'string_value');
      case SLOT.extra0: return Buffer.from(st.bytes(raw as Buffer, 'bytes_value'));
      case SLOT.extra1: return readDataSet(raw as Buffer, st);
      default: return readTemplate(raw as Buffer, st);
    }
  }
  if (isBasic(type) || type === 'UUID') return scalarValue(type, slot, raw, st);
  const want: Slot = slotOf(type);
  if (slot !== want) fail(`${type} value in ${SLOT_FIELD[slot] ?? ['bytes_value', 'dataset_value', 'template_value'][slot - SLOT.extra0]}`);
  if (type === 'DataSet') return readDataSet(raw as Buffer, st);
  if (type === 'Template') return readTemplate(raw as Buffer, st);
  const bytes = st.bytes(raw as Buffer, `${type} value`);
  if (type === 'Bytes' || type === 'File') return Buffer.from(bytes);
  const arr = unpackArray(type as keyof ArrayValueTypes, bytes, st.elements);
  st.spend(arr.length);
  return arr;
}

function readMetric(buf: Buffer, st: DecodeState, label: string, top: boolean): SparkplugMetric {
  const r = new Reader(buf);
  const m: MetricFields = {};
  let typeCode: number | undefined;
  let isNull = false;
  const v = new ValueField(10, 18);
  let at = 0;
  try {
    while (!r.done) {
      at = r.pos;
      const { field, wire } = r.tag();
      switch (field) {
        case 1: r.expect(wire, WIRE_LEN, 'name'); m.name = st.string(r, 'name'); break;
        case 2: r.expect(wire, WIRE_VARINT, 'alias'); m.alias = r.varint(); break;
        case 3: r.expect(wire, WIRE_VARINT, 'timestamp'); m.timestamp = r.varint(); break;
        case 4: r.expect(wire, WIRE_VARINT, 'datatype'); typeCode = Number(r.varint() & 0xffffffffn); break;
        case 5: r.expect(wire, WIRE_VARINT, 'is_historical'); m.isHistorical = r.varint() !== 0n; break;
        case 6: r.expect(wire, WIRE_VARINT, 'is_transient'); m.isTransient = r.varint() !== 0n; break;
        case 7: r.expect(wire, WIRE_VARINT, 'is_null'); isNull = r.varint() !== 0n; break;
        case 8: r.expect(wire, WIRE_LEN, 'metadata'); m.metadata = readMetaData(r.lengthDelimited(), st); break;
        case 9: {
          r.expect(wire, WIRE_LEN, 'properties');
          const sub = r.lengthDelimited();
          try {
            m.properties = readPropertySet(sub, st);
          } catch (err) {
            throw err instanceof SparkplugError ? err.within('properties') : err;
          }
          break;
        }
        default:
          if (!v.read(r, field, wire, at)) r.skip(wire); // extension_value (19) and unknown fields
      }
    }
    at = 0;
    let datatype: MetricDataType | undefined;
    if (typeCode === undefined || typeCode === 0) {
      datatype = (top ? st.datatypeOf?.(m) : undefined) ?? 'Unknown';
      if (!isMetricType(datatype) || datatypeCode(datatype) === undefined) fail(`datatypeOf answered ${shown(datatype)}, not a metric datatype`);
    }
    else {
      const t = datatypeOfCode(typeCode);
      if (t === undefined) fail(`unknown datatype ${typeCode}`);
      if (t === 'PropertySet' || t === 'PropertySetList') fail(`datatype ${t} is for property values, not metrics`);
      datatype = t as MetricDataType;
    }
    at = v.at;
    const value = isNull || v.slot < 0 ? null : metricValue(datatype, v.slot, v.raw, st);
    return Object.assign(m, { datatype, value }) as SparkplugMetric;
  } catch (err) {
    throw located(err, st, r, at, metricLabel(label, m.name, m.alias));
  }
}

/**
 * Decodes a Sparkplug B payload. Throws SparkplugError (and nothing else) for bytes that are no
 * payload, a value that does not fit its datatype, or a payload over a bound of
 * SPARKPLUG_DECODE_LIMITS (or of `options`).
 */
export function decodeSparkplugPayload(bytes: Uint8Array, options: SparkplugDecodeOptions = {}): SparkplugPayload {
  const buf = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const st = new DecodeState(buf.byteOffset, options, options.datatypeOf);
  const r = new Reader(buf);
  const p: SparkplugPayload = { metrics: [] };
  let at = 0;
  try {
    while (!r.done) {
      at = r.pos;
      const { field, wire } = r.tag();
      switch (field) {
        case 1:
          r.expect(wire, WIRE_VARINT, 'timestamp');
          p.timestamp = r.varint();
          break;
        case 2:
          r.expect(wire, WIRE_LEN, 'metrics');
          if (p.metrics.length === st.limits.maxMetrics) fail(`more than ${st.limits.maxMetrics} metrics`);
          st.spend(1);
          p.metrics.push(readMetric(r.lengthDelimited(), st, `metric ${p.metrics.length}`, true));
          break;
        case 3:
          r.expect(wire, WIRE_VARINT, 'seq');
          p.seq = r.varint();
          break;
        case 4:
          r.expect(wire, WIRE_LEN, 'uuid');
          p.uuid = st.string(r, 'uuid');
          break;
        case 5:
          r.expect(wire, WIRE_LEN, 'body');
          p.body = Buffer.from(st.bytes(r.lengthDelimited(), 'body'));
          break;
        default:
          r.skip(wire);
      }
    }
    return p;
  } catch (err) {
    throw located(err, st, r, at);
  }
}
