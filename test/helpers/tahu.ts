// Eclipse Tahu's JavaScript Sparkplug B codec (npm `sparkplug-payload`, EPL-2.0, a test-time
// dependency) as an independent peer: our payload model converted to the object Tahu's
// `encodePayload` takes, and what Tahu's `decodePayload` returns converted back to our model, so
// a test compares values, not object shapes.
//
// What Tahu's decoder itself cannot read (and the tests therefore only compare one way, or bytes):
// array datatypes (it returns null), DataSet columns and Template parameters of types other than
// Int64, UInt32, Float, Double, Boolean, String (it throws), and Int64 cells and parameters (it
// returns them unsigned). Everything else is compared as values in both directions.

import { createRequire } from 'node:module';
import type {
  SparkplugDataSet,
  SparkplugMetaData,
  SparkplugMetric,
  SparkplugPayload,
  SparkplugPropertySet,
  SparkplugPropertyValue,
  SparkplugTemplate,
} from './sparkplug-codec/payload.js';

const require = createRequire(import.meta.url);

/* eslint-disable @typescript-eslint/no-explicit-any */
type Any = any;

interface TahuCodec {
  encodePayload(p: Any): Uint8Array;
  decodePayload(b: Uint8Array): Any;
}

export const tahu: TahuCodec = require('sparkplug-payload').get('spBv1.0');
export const Long: Any = require('long');

// ---- ours → Tahu's input ----------------------------------------------------------------------

function long(v: bigint, unsigned: boolean): Any {
  const u = BigInt.asUintN(64, v);
  return Long.fromBits(Number(u & 0xffffffffn) | 0, Number(u >> 32n) | 0, unsigned);
}

function tahuScalar(type: string, v: unknown): Any {
  if (v === null) return null;
  if (typeof v === 'bigint') return long(v, type !== 'Int64');
  return v;
}

function tahuPropertySet(set: SparkplugPropertySet): Any {
  const out: Any = {};
  for (const [k, pv] of set) out[k] = tahuPropertyValue(pv);
  return out;
}

function tahuPropertyValue(pv: SparkplugPropertyValue): Any {
  if (pv.type === 'PropertySet') return { type: pv.type, value: pv.value === null ? null : tahuPropertySet(pv.value) };
  if (pv.type === 'PropertySetList') return { type: pv.type, value: pv.value === null ? null : pv.value.map(tahuPropertySet) };
  return { type: pv.type, value: tahuScalar(pv.type, pv.value) };
}

function tahuMetaData(m: SparkplugMetaData): Any {
  const out: Any = { ...m };
  if (m.size !== undefined) out.size = long(m.size, true);
  if (m.seq !== undefined) out.seq = long(m.seq, true);
  return out;
}

function tahuDataSet(ds: SparkplugDataSet): Any {
  return {
    numOfColumns: ds.columns.length,
    columns: ds.columns,
    types: ds.types,
    rows: ds.rows.map((row) => row.map((cell, j) => tahuScalar(ds.types[j]!, cell))),
  };
}

function tahuTemplate(t: SparkplugTemplate): Any {
  const out: Any = { isDefinition: t.isDefinition, metrics: t.metrics.map(tahuMetric), parameters: t.parameters.map((p) => ({ name: p.name, type: p.type, value: tahuScalar(p.type, p.value) })) };
  if (t.version !== undefined) out.version = t.version;
  if (t.templateRef !== undefined) out.templateRef = t.templateRef;
  return out;
}

export function tahuMetric(m: SparkplugMetric): Any {
  const out: Any = { type: m.datatype };
  if (m.name !== undefined) out.name = m.name;
  if (m.alias !== undefined) out.alias = long(m.alias, true);
  if (m.timestamp !== undefined) out.timestamp = long(m.timestamp, true);
  if (m.isHistorical !== undefined) out.isHistorical = m.isHistorical;
  if (m.isTransient !== undefined) out.isTransient = m.isTransient;
  if (m.metadata !== undefined) out.metadata = tahuMetaData(m.metadata);
  if (m.properties !== undefined) out.properties = tahuPropertySet(m.properties);
  if (m.value === null) out.value = null;
  else if (m.datatype === 'DataSet') out.value = tahuDataSet(m.value as SparkplugDataSet);
  else if (m.datatype === 'Template') out.value = tahuTemplate(m.value as SparkplugTemplate);
  else out.value = tahuScalar(m.datatype, m.value);
  return out;
}

/** Our payload as the object Tahu's encodePayload takes. */
export function toTahu(p: SparkplugPayload): Any {
  const out: Any = { metrics: p.metrics.map(tahuMetric) };
  if (p.timestamp !== undefined) out.timestamp = long(p.timestamp, true);
  if (p.seq !== undefined) out.seq = long(p.seq, true);
  if (p.uuid !== undefined) out.uuid = p.uuid;
  if (p.body !== undefined) out.body = p.body;
  return out;
}

/** Tahu's encoding of our payload. */
export const tahuEncode = (p: SparkplugPayload): Buffer => Buffer.from(tahu.encodePayload(toTahu(p)));

// ---- Tahu's decoded object → ours -------------------------------------------------------------

const isLong = (v: unknown): v is { low: number; high: number; unsigned: boolean } =>
  v !== null && typeof v === 'object' && typeof (v as Any).low === 'number' && typeof (v as Any).high === 'number';

function bigOf(v: unknown, signed: boolean): bigint {
  const raw = isLong(v) ? (BigInt(v.high >>> 0) << 32n) | BigInt(v.low >>> 0) : BigInt(v as number);
  return signed ? BigInt.asIntN(64, raw) : BigInt.asUintN(64, raw);
}

function ourScalar(type: string, v: unknown): Any {
  if (v === null || v === undefined) return null;
  switch (type) {
    case 'Int64': return bigOf(v, true);
    case 'UInt64': case 'DateTime': return bigOf(v, false);
    case 'UInt32': return isLong(v) ? v.low >>> 0 : v;
    case 'Bytes': case 'File': return Buffer.from(v as Uint8Array);
    default: return v;
  }
}

function ourPropertySet(o: Any): SparkplugPropertySet {
  return new Map(Object.keys(o).map((k) => [k, ourPropertyValue(o[k])]));
}

function ourPropertyValue(pv: Any): SparkplugPropertyValue {
  if (pv.type === 'PropertySet') return { type: pv.type, value: pv.value === null ? null : ourPropertySet(pv.value) };
  if (pv.type === 'PropertySetList') return { type: pv.type, value: pv.value === null ? null : pv.value.map(ourPropertySet) };
  return { type: pv.type, value: ourScalar(pv.type, pv.value) } as SparkplugPropertyValue;
}

function ourMetric(m: Any): SparkplugMetric {
  const out: Any = {};
  if (m.name !== undefined) out.name = m.name;
  if (m.alias !== undefined) out.alias = bigOf(m.alias, false);
  if (m.timestamp !== undefined) out.timestamp = bigOf(m.timestamp, false);
  if (m.isHistorical !== undefined) out.isHistorical = m.isHistorical;
  if (m.isTransient !== undefined) out.isTransient = m.isTransient;
  if (m.metadata !== undefined) {
    out.metadata = { ...m.metadata };
    if (m.metadata.size !== undefined) out.metadata.size = bigOf(m.metadata.size, false);
    if (m.metadata.seq !== undefined) out.metadata.seq = bigOf(m.metadata.seq, false);
  }
  if (m.properties !== undefined) out.properties = ourPropertySet(m.properties);
  out.datatype = m.type;
  if (m.value === null || m.value === undefined) out.value = null;
  else if (m.type === 'DataSet') {
    const ds = m.value;
    out.value = { columns: ds.columns, types: ds.types, rows: ds.rows.map((row: Any[]) => row.map((c, j) => ourScalar(ds.types[j], c))) };
  } else if (m.type === 'Template') {
    const t = m.value;
    const tpl: Any = { isDefinition: t.isDefinition ?? false, metrics: (t.metrics ?? []).map(ourMetric), parameters: (t.parameters ?? []).map((p: Any) => ({ name: p.name, type: p.type, value: ourScalar(p.type, p.value) })) };
    if (t.version !== undefined && t.version !== '') tpl.version = t.version;
    if (t.templateRef !== undefined && t.templateRef !== '') tpl.templateRef = t.templateRef;
    out.value = tpl;
  } else out.value = ourScalar(m.type, m.value);
  return out as SparkplugMetric;
}

/** What Tahu's decodePayload makes of `bytes`, in our model. */
export function tahuDecode(bytes: Buffer): SparkplugPayload {
  const d = tahu.decodePayload(bytes);
  const out: SparkplugPayload = { metrics: (d.metrics ?? []).map(ourMetric) };
  if (d.timestamp !== undefined) out.timestamp = bigOf(d.timestamp, false);
  if (d.seq !== undefined) out.seq = bigOf(d.seq, false);
  if (d.uuid !== undefined) out.uuid = d.uuid;
  if (d.body !== undefined) out.body = Buffer.from(d.body);
  return out;
}

// ---- comparison -------------------------------------------------------------------------------

/**
 * A JSON-able form that tells apart what deep equality might not: 1 from 1n, NaN, -0 and the
 * infinities, Buffers by their bytes, Maps in key order; undefined members are dropped.
 */
export function canon(v: unknown): unknown {
  if (typeof v === 'bigint') return `${v}n`;
  if (typeof v === 'number') return Object.is(v, -0) ? '-0' : Number.isFinite(v) ? v : String(v);
  if (Buffer.isBuffer(v) || v instanceof Uint8Array) return `0x${Buffer.from(v).toString('hex')}`;
  if (v instanceof Map) return { map: [...v].map(([k, x]) => [k, canon(x)]) };
  if (Array.isArray(v)) return v.map(canon);
  if (v !== null && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) if ((v as Any)[k] !== undefined) out[k] = canon((v as Any)[k]);
    return out;
  }
  return v;
}
