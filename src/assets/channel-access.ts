// Kura's rules for reading and writing an asset's channels (BaseAsset.read and BaseAsset.write,
// docs/rest-api.md "assets" and "Writing values"): a channel that is unknown, disabled or
// of the other mode is refused with Kura's wording in a FAILURE record stamped now, in request
// order beside the others, and never reaches the driver; a driver's result becomes the channel's
// record, in the channel's type, scaled.

import type { ChannelResult } from '../drivers/driver.js';
import type { ChannelConfig, ChannelRecord, TypedValue, ValueType } from '../channels/types.js';
import type { AssetConfig } from './types.js';
import { applyScaleOffset } from '../channels/scaling.js';
import { convertValue } from '../channels/values.js';
import { YoungRecord } from '../channels/young.js';

const READ_EXPECTED = 'Channel type not within expected types (READ or READ_WRITE)';
const WRITE_EXPECTED = 'Channel type not within expected types (WRITE or READ_WRITE)';

/** Records in request order, the refused ones filled in, and the channels left for the driver. */
export interface SortedReads {
  records: ChannelRecord[];
  toRead: { idx: number; ch: ChannelConfig }[];
}

/** The channels `names` asks for (de-duplicated, first occurrence wins), refused or to read. */
export function sortReads(asset: AssetConfig, names: string[], now: number): SortedReads {
  const byName = new Map(asset.channels.map((c) => [c.name, c]));
  const wanted = [...new Set(names)];
  const records: ChannelRecord[] = new Array(wanted.length);
  const toRead: SortedReads['toRead'] = [];
  wanted.forEach((name, idx) => {
    const ch = byName.get(name);
    if (!ch) records[idx] = refused(name, 'STRING', 'Channel not available', now);
    else if (ch.mode === 'WRITE') records[idx] = refused(name, ch.valueType, READ_EXPECTED, now);
    else if (!ch.enabled) records[idx] = refused(name, ch.valueType, 'Channel is not enabled', now);
    else toRead.push({ idx, ch });
  });
  return { records, toRead };
}

/** Records in request order, the refused ones filled in, and the values (in the channel's type) left for the driver. */
export interface SortedWrites {
  records: ChannelRecord[];
  toWrite: { idx: number; ch: ChannelConfig; value: TypedValue }[];
}

/**
 * The same refusals with the WRITE wording; values are converted to the channel's type
 * (channels/values.ts convertValue), and one that cannot be fails that channel alone.
 */
export function sortWrites(asset: AssetConfig, items: { name: string; value: TypedValue }[], now: number): SortedWrites {
  const byName = new Map(asset.channels.map((c) => [c.name, c]));
  const records: ChannelRecord[] = new Array(items.length);
  const toWrite: SortedWrites['toWrite'] = [];
  items.forEach((it, idx) => {
    const ch = byName.get(it.name);
    const rec = (error: string, value = it.value): ChannelRecord => ({ ...refused(it.name, value.type, error, now), value });
    if (!ch) records[idx] = rec('Channel not available');
    else if (ch.mode === 'READ') records[idx] = rec(WRITE_EXPECTED);
    else if (!ch.enabled) records[idx] = rec('Channel is not enabled');
    else {
      const value = convertValue(it.value, ch.valueType);
      if (typeof value === 'string') records[idx] = { name: it.name, status: 'FAILURE', valueType: it.value.type, value: it.value, error: value, timestamp: now };
      else toWrite.push({ idx, ch, value });
    }
  });
  return { records, toWrite };
}

/** The record of a written channel: what was written, in the channel's type. */
export function writeRecord(ch: ChannelConfig, value: TypedValue, res: ChannelResult): ChannelRecord {
  const r: ChannelRecord = { name: ch.name, status: res.ok ? 'SUCCESS' : 'FAILURE', valueType: value.type, value, timestamp: stampOf(res) };
  if (!res.ok) r.error = res.error || 'driver error';
  return r;
}

/** The records of a read of `channels`; with `map`, what it makes of them, in the same step. */
export function readRecords<T>(channels: ChannelConfig[], results: ChannelResult[], map: ((records: ChannelRecord[]) => T) | undefined): T | ChannelRecord[] {
  const records: ChannelRecord[] = new Array(channels.length);
  for (let i = 0; i < channels.length; i++) records[i] = readRecord(channels[i]!, results[i]!);
  return map ? map(records) : records;
}

function stampOf(res: ChannelResult): number {
  return (res.ok && res.timestamp) || Date.now();
}

function refused(name: string, valueType: ValueType, error: string, timestamp: number): ChannelRecord {
  return { name, status: 'FAILURE', valueType, error, timestamp, refused: true };
}

/** A read channel's FAILURE record, one literal with all its keys (readRecord says why). */
function readFailure({ name, valueType, unit }: ChannelConfig, timestamp: number, error: string): ChannelRecord {
  return unit === undefined ? { name, status: 'FAILURE', valueType, timestamp, error } : { name, status: 'FAILURE', valueType, timestamp, error, unit };
}

/**
 * The record of a read channel: the driver's value in the channel's type, scaled; or why not. Each
 * outcome is one object literal with all its keys (in the order the REST and MQTT encodings write
 * them): a record made with four keys and given `value` after was a second allocation (V8's
 * out-of-object property store, about 40 bytes) per channel per poll, ten thousand a second in
 * make bench's scale section.
 */
export function readRecord(ch: ChannelConfig, res: ChannelResult): ChannelRecord {
  const { name, valueType, unit } = ch;
  if (!res.ok) return readFailure(ch, Date.now(), res.error || 'driver error');
  const timestamp = res.timestamp || Date.now();
  const value = res.value.type === valueType ? res.value : convertValue(res.value, valueType);
  if (typeof value === 'string') return readFailure(ch, timestamp, `Driver returned ${value}`);
  const scaled = ch.scale === 1 && ch.offset === 0 ? value : applyScaleOffset(value, ch);
  // Made young (channels/young.ts): ten thousand a second in make bench's scale section.
  return new YoungRecord(name, 'SUCCESS', valueType, timestamp, scaled, unit);
}
