// EXEC/write (docs/mqtt.md). The body is required; `type` and `value` must be JSON strings; the
// type name is case-insensitive. Every value is parsed as its requested type, by the parse the REST
// API uses (docs/architecture.md "Asset values: one conversion"), before anything is written: one
// bad value rejects the whole request with 400 and no channel is touched. Conversion to the
// channel's type is the asset runtime's, as for REST; a value it cannot convert fails that channel
// alone. A written channel's entry reports what was written, in Java's text of the value (Kura
// formats the parsed TypedValue the same way), so REST and ASSET-V1 report the same write alike.

import { type TypedValue } from '../../channels/types.js';
import { AssetNotFoundError, type AssetService } from '../../assets/types.js';
import { RequestError } from '../../core/errors.js';
import { errorEntry, kuraErrorText, stamp, type ChannelEntry } from '../../assets/records.js';
import type { AssetResult } from './exec-read.js';
import { parseValueText, parseValueType } from './value-text.js';
import { valueText } from '../../channels/values.js';
import { checkChannels, checkElements, isObject } from './limits.js';

export interface WriteItem {
  name: string;
  value: TypedValue;
}

export interface WriteRequest {
  name: string;
  channels: WriteItem[];
}

export function parseWriteBody(json: unknown): WriteRequest[] {
  if (json === undefined) throw new RequestError(400, 'EXEC/write needs a body.');
  if (!Array.isArray(json)) {
    throw new RequestError(400, 'Expected a JSON array of {"name": <asset>, "channels": [{"name", "type", "value"}]} objects.');
  }
  checkElements(json.length);
  let total = 0;
  return json.map((el, i): WriteRequest => {
    if (!isObject(el) || typeof el.name !== 'string') throw new RequestError(400, `Element ${i} is not an object with a string "name".`);
    const asset = el.name;
    if (!Array.isArray(el.channels)) throw new RequestError(400, `"channels" of asset ${asset} is missing or not an array.`);
    checkChannels((total += el.channels.length));
    const channels = el.channels.map((c: unknown, j: number): WriteItem => {
      if (!isObject(c) || typeof c.name !== 'string') throw new RequestError(400, `Channel ${j} of asset ${asset} is not an object with a string "name".`);
      if (typeof c.type !== 'string') throw new RequestError(400, `"type" of channel ${c.name} of asset ${asset} is not a string.`);
      if (typeof c.value !== 'string') throw new RequestError(400, `"value" of channel ${c.name} of asset ${asset} is not a string.`);
      const type = parseValueType(c.type);
      if (!type) throw new RequestError(400, `Unknown type ${c.type} for channel ${c.name} of asset ${asset}.`);
      const value = parseValueText(type, c.value);
      if (typeof value === 'string') throw new RequestError(400, `${value} (channel ${c.name} of asset ${asset}).`);
      return { name: c.name, value };
    });
    return { name: asset, channels };
  });
}

async function writeOne(assets: AssetService, req: WriteRequest): Promise<AssetResult> {
  if (!assets.get(req.name)) return { name: req.name, error: 'Asset not found' };
  // No channels: no driver call (Kura).
  if (req.channels.length === 0) return { name: req.name, channels: [] };
  let entries: ChannelEntry[];
  try {
    const records = await assets.write(req.name, req.channels.map((c) => ({ name: c.name, value: c.value })));
    entries = req.channels.map((item, i) => {
      const r = records[i];
      if (!r || r.status !== 'SUCCESS') return { name: item.name, timestamp: stamp(r?.timestamp), error: kuraErrorText(r?.error) };
      // What was written: the value converted to the channel's type.
      const written = r.value ?? item.value;
      return { name: item.name, timestamp: stamp(r.timestamp), value: valueText(written), type: written.type };
    });
  } catch (err) {
    if (err instanceof AssetNotFoundError) return { name: req.name, error: 'Asset not found' };
    entries = req.channels.map((item) => errorEntry(item.name, (err as Error)?.message));
  }
  return { name: req.name, channels: entries };
}

/** Entries are written one after the other, in request order: two entries for the same channel end
 * with the second value, as with Kura's sequential loop. */
export async function execWrite(assets: AssetService, reqs: WriteRequest[]): Promise<AssetResult[]> {
  const out: AssetResult[] = [];
  for (const r of reqs) out.push(await writeOne(assets, r));
  return out;
}
