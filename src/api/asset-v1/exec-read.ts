// EXEC/read (docs/mqtt.md). Values are strings, BYTE_ARRAY base64, failures are per-channel
// `error` entries with response code 200. Assets are read concurrently, so a slow device delays only
// the reply that includes it.

import { AssetNotFoundError, type AssetService } from '../../assets/types.js';
import { RequestError } from '../../core/errors.js';
import { errorEntry, readEntry, type ChannelEntry } from '../../assets/records.js';
import { checkChannels, checkElements, isObject } from './limits.js';

export interface ReadRequest {
  name: string;
  /** Undefined or empty: every readable channel of the asset. */
  channels?: string[];
}

export interface AssetResult {
  name: string;
  channels?: ChannelEntry[];
  error?: string;
}

export function parseReadBody(json: unknown): ReadRequest[] | undefined {
  if (json === undefined) return undefined;
  if (!Array.isArray(json)) throw new RequestError(400, 'Expected a JSON array of {"name": <asset>, "channels": [{"name": <channel>}]} objects.');
  checkElements(json.length);
  let total = 0;
  const out = json.map((el, i): ReadRequest => {
    if (!isObject(el) || typeof el.name !== 'string') throw new RequestError(400, `Element ${i} is not an object with a string "name".`);
    if (el.channels === undefined) return { name: el.name };
    if (!Array.isArray(el.channels)) throw new RequestError(400, `"channels" of asset ${el.name} is not an array.`);
    checkChannels((total += el.channels.length));
    const names = el.channels.map((c: unknown, j: number) => {
      if (!isObject(c) || typeof c.name !== 'string') {
        throw new RequestError(400, `Channel ${j} of asset ${el.name} is not an object with a string "name".`);
      }
      return c.name;
    });
    // Kura collects the names in a HashSet: duplicates are dropped.
    return { name: el.name, channels: [...new Set(names)] };
  });
  return out.length === 0 ? undefined : out;
}

async function readOne(assets: AssetService, req: ReadRequest, all: boolean): Promise<AssetResult> {
  const names = req.channels && req.channels.length > 0 ? req.channels : undefined;
  try {
    const records = await assets.read(req.name, names);
    return { name: req.name, channels: records.map(readEntry) };
  } catch (err) {
    if (err instanceof AssetNotFoundError) return { name: req.name, error: 'Asset not found' };
    // The whole read failed: every channel it would have covered carries the message.
    const a = assets.get(req.name);
    const covered = names ?? (a?.channels ?? []).filter((c) => all || c.mode !== 'WRITE').map((c) => c.name);
    return { name: req.name, channels: covered.map((n) => errorEntry(n, (err as Error)?.message)) };
  }
}

export async function execRead(assets: AssetService, reqs: ReadRequest[] | undefined): Promise<AssetResult[]> {
  // No body: every asset, as configured (bounded by the configuration, not by the requester).
  if (reqs === undefined) return Promise.all(assets.list().map((name) => readOne(assets, { name }, true)));
  // An element without channels reads its whole asset: count those channels too.
  checkChannels(reqs.reduce((n, r) => n + (r.channels && r.channels.length > 0 ? r.channels.length : Math.max(1, assets.get(r.name)?.channels.length ?? 0)), 0));
  return Promise.all(reqs.map((r) => readOne(assets, r, false)));
}
