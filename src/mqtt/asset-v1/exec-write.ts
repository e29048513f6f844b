// EXEC/write (reference §3.2). The body is required; `type` and `value` must be JSON strings; the
// type name is case-insensitive. Every value is parsed before anything is written: one bad value
// rejects the whole request with 400 and no channel is touched.

import { AssetNotFoundError, type AssetService, type TypedValue } from '../../assets/types.js';
import { badRequest, isObject, parseBody } from './envelope.js';
import { errorEntry, kuraErrorText, stamp, type ChannelEntry } from './channel-entry.js';
import type { AssetResult } from './exec-read.js';
import { parseValueText, parseValueType } from './value-text.js';

export interface WriteItem {
  name: string;
  /** Echoed in the reply, as Kura echoes the request (interface §2). */
  typeName: string;
  text: string;
  value: TypedValue;
}

export interface WriteRequest {
  name: string;
  channels: WriteItem[];
}

export function parseWriteBody(body: Buffer | undefined): WriteRequest[] {
  const json = parseBody(body);
  if (json === undefined) throw badRequest('EXEC/write needs a body.');
  if (!Array.isArray(json)) {
    throw badRequest('Expected a JSON array of {"name": <asset>, "channels": [{"name", "type", "value"}]} objects.');
  }
  return json.map((el, i): WriteRequest => {
    if (!isObject(el) || typeof el.name !== 'string') throw badRequest(`Element ${i} is not an object with a string "name".`);
    const asset = el.name;
    if (!Array.isArray(el.channels)) throw badRequest(`"channels" of asset ${asset} is missing or not an array.`);
    const channels = el.channels.map((c, j): WriteItem => {
      if (!isObject(c) || typeof c.name !== 'string') throw badRequest(`Channel ${j} of asset ${asset} is not an object with a string "name".`);
      if (typeof c.type !== 'string') throw badRequest(`"type" of channel ${c.name} of asset ${asset} is not a string.`);
      if (typeof c.value !== 'string') throw badRequest(`"value" of channel ${c.name} of asset ${asset} is not a string.`);
      const type = parseValueType(c.type);
      if (!type) throw badRequest(`Unknown type ${c.type} for channel ${c.name} of asset ${asset}.`);
      const value = parseValueText(type, c.value);
      if (typeof value === 'string') throw badRequest(`${value} (channel ${c.name} of asset ${asset}).`);
      return { name: c.name, typeName: type, text: c.value, value };
    });
    return { name: asset, channels };
  });
}

/**
 * The AssetService wants each value in its channel's type. Kura hands the requested TypedValue to
 * the driver, which converts; we convert the request text to the channel's type here, and a text
 * that is no value of that type fails that channel alone (the request itself was well-formed).
 */
function toChannelType(assets: AssetService, pid: string, item: WriteItem): TypedValue | string {
  const ch = assets.get(pid)?.channels.find((c) => c.name === item.name);
  if (!ch || ch.valueType === item.value.type) return item.value;
  const converted = parseValueText(ch.valueType, item.text);
  return typeof converted === 'string' ? `${converted} (channel ${item.name} is ${ch.valueType})` : converted;
}

async function writeOne(assets: AssetService, req: WriteRequest): Promise<AssetResult> {
  if (!assets.get(req.name)) return { name: req.name, error: 'Asset not found' };
  // No channels: no driver call (Kura).
  if (req.channels.length === 0) return { name: req.name, channels: [] };
  const entries: (ChannelEntry | undefined)[] = new Array(req.channels.length);
  const toWrite: { idx: number; item: WriteItem; value: TypedValue }[] = [];
  req.channels.forEach((item, idx) => {
    const v = toChannelType(assets, req.name, item);
    if (typeof v === 'string') entries[idx] = errorEntry(item.name, v);
    else toWrite.push({ idx, item, value: v });
  });
  if (toWrite.length > 0) {
    try {
      const records = await assets.write(req.name, toWrite.map((w) => ({ name: w.item.name, value: w.value })));
      toWrite.forEach(({ idx, item }, i) => {
        const r = records[i];
        entries[idx] =
          r && r.status === 'SUCCESS'
            ? { name: item.name, timestamp: stamp(r.timestamp), value: item.text, type: item.typeName }
            : { name: item.name, timestamp: stamp(r?.timestamp), error: kuraErrorText(r?.error) };
      });
    } catch (err) {
      if (err instanceof AssetNotFoundError) return { name: req.name, error: 'Asset not found' };
      for (const { idx, item } of toWrite) entries[idx] = errorEntry(item.name, (err as Error)?.message);
    }
  }
  return { name: req.name, channels: entries as ChannelEntry[] };
}

/** Entries are written one after the other, in request order: two entries for the same channel end
 * with the second value, as with Kura's sequential loop. */
export async function execWrite(assets: AssetService, reqs: WriteRequest[]): Promise<AssetResult[]> {
  const out: AssetResult[] = [];
  for (const r of reqs) out.push(await writeOne(assets, r));
  return out;
}
