// Kura's record formats, in one place: the REST ChannelRecord and Channel JSON (assets REST API) and
// the ASSET-V1 channel entry (EXEC/read and EXEC/write replies, telemetry), with Kura's error texts.
//
// ASSET-V1 entry: success {"name","timestamp","value":"<text>","type"[,"unit"]}, failure
// {"name","timestamp","error"}.

import type { ChannelConfig, ChannelRecord, TypedValue, ValueType } from '../channels/types.js';
import { DRIVER_NOT_ATTACHED } from '../drivers/driver.js';
import { javaDoubleText, valueText, valueToJson } from '../channels/values.js';
export interface ChannelEntry {
  name: string;
  timestamp: number;
  value?: string;
  type?: string;
  unit?: string;
  error?: string;
}

/** A failure's message as Kura words it: a missing driver is its KuraException text. */
export function kuraErrorText(msg: string | undefined): string {
  if (!msg) return 'Unknown error';
  return msg === DRIVER_NOT_ATTACHED ? `Configuration Error: ${DRIVER_NOT_ATTACHED}` : msg;
}

/** Timestamps are never 0: Kura substitutes the current time. */
export function stamp(ts: number | undefined): number {
  return ts && ts > 0 ? ts : Date.now();
}

export function readEntry(r: ChannelRecord): ChannelEntry {
  if (r.status === 'SUCCESS' && r.value !== undefined) {
    const e: ChannelEntry = { name: r.name, timestamp: stamp(r.timestamp), value: valueText(r.value), type: r.value.type };
    // `unit` only when non-blank.
    if (r.unit !== undefined && r.unit.trim() !== '') e.unit = r.unit;
    return e;
  }
  return { name: r.name, timestamp: stamp(r.timestamp), error: kuraErrorText(r.error) };
}

export function errorEntry(name: string, message: string | undefined): ChannelEntry {
  return { name, timestamp: Date.now(), error: kuraErrorText(message) };
}

const NUMERIC: ValueType[] = ['INTEGER', 'LONG', 'FLOAT', 'DOUBLE'];

/** Channel JSON (GET /{pid}): Kura's Channel fields in declaration order; `type` is the mode. */
export function channelJson(c: ChannelConfig): string {
  // Non-numeric channels ignore scale and offset, and Kura shows the defaults for them.
  const numeric = NUMERIC.includes(c.valueType);
  let s = `{"name":${JSON.stringify(c.name)},"type":"${c.mode}","valueType":"${c.valueType}"`;
  s += `,"valueScale":${javaDoubleText(numeric ? c.scale : 1)},"valueOffset":${javaDoubleText(numeric ? c.offset : 0)}`;
  if (c.unit !== undefined) s += `,"unit":${JSON.stringify(c.unit)}`;
  return `${s},"isEnabled":${c.enabled}}`;
}

/**
 * ChannelRecord JSON in Kura's field order: channelStatus, name, valueType, value, timestamp, unit.
 * Failures carry `channelFlag` and `exceptionMessage` (COMPATIBILITY.md: no serialised Java exception).
 * Records the asset refused before the driver carry neither valueType nor unit, as in Kura.
 * `echo` (writes): the request's value; Kura answers a write with a type and value and no unit. A
 * successful write reports what was written (the value converted to the channel's type, the same
 * as the request's when the types agree); a failed one the request's own value.
 */
export function recordJson(r: ChannelRecord, echo?: TypedValue): string {
  const status =
    r.status === 'SUCCESS'
      ? '{"channelFlag":"SUCCESS"}'
      : `{"channelFlag":"FAILURE","exceptionMessage":${JSON.stringify(kuraErrorText(r.error))}}`;
  let s = `{"channelStatus":${status},"name":${JSON.stringify(r.name)}`;
  if (echo) {
    const v = r.status === 'SUCCESS' && r.value !== undefined ? r.value : echo;
    s += `,"valueType":"${v.type}","value":${valueToJson(v)},"timestamp":${r.timestamp}`;
    return s + '}';
  }
  if (!r.refused) s += `,"valueType":"${r.valueType}"`;
  if (r.value !== undefined) s += `,"value":${valueToJson(r.value)}`;
  s += `,"timestamp":${r.timestamp}`;
  if (r.unit !== undefined && !r.refused) s += `,"unit":${JSON.stringify(r.unit)}`;
  return s + '}';
}

/**
 * recordJson of read records, with what every record of a channel shares (status, name, value type,
 * unit) written once per channel: a REST read then only writes the value and the timestamp. Keyed
 * by channel name and checked against the record's type and unit (a reload may change them);
 * bounded, since names come from the configuration and a reload may rename them all.
 */
export class RecordJsonCache {
  private parts = new Map<string, { valueType: string; unit: string | undefined; head: string; tail: string }>();
  /** The last timestamp written and its text: the records of one read share it, and so do many reads. */
  private stamp = NaN;
  private stampText = '';

  json(r: ChannelRecord): string {
    if (r.status !== 'SUCCESS' || r.refused || r.value === undefined) return recordJson(r);
    let p = this.parts.get(r.name);
    if (!p || p.valueType !== r.valueType || p.unit !== r.unit) {
      if (this.parts.size >= 4096) this.parts.clear();
      p = {
        valueType: r.valueType,
        unit: r.unit,
        head: `{"channelStatus":{"channelFlag":"SUCCESS"},"name":${JSON.stringify(r.name)},"valueType":"${r.valueType}","value":`,
        tail: r.unit === undefined ? '}' : `,"unit":${JSON.stringify(r.unit)}}`,
      };
      this.parts.set(r.name, p);
    }
    if (r.timestamp !== this.stamp) {
      this.stamp = r.timestamp;
      this.stampText = `,"timestamp":${r.timestamp}`;
    }
    return `${p.head}${valueToJson(r.value)}${this.stampText}${p.tail}`;
  }
}
