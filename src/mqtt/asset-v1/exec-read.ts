// EXEC/read (reference §3.2). Values are strings, BYTE_ARRAY base64, failures are per-channel
// `error` entries with response code 200. Assets are read concurrently, so a slow device delays only
// the reply that includes it.

import { AssetNotFoundError, type AssetService } from '../../assets/types.js';
import { badRequest, isObject, parseBody } from './envelope.js';
import { errorEntry, readEntry, type ChannelEntry } from './channel-entry.js';

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

export function parseReadBody(body: Buffer | undefined): ReadRequest[] | undefined {
  const json = parseBody(body);
  if (json === undefined) return undefined;
  if (!Array.isArray(json)) throw badRequest('Expected a JSON array of {"name": <asset>, "channels": [{"name": <channel>}]} objects.');
  const out = json.map((el, i): ReadRequest => {
    if (!isObject(el) || typeof el.name !== 'string') throw badRequest(`Element ${i} is not an object with a string "name".`);
    if (el.channels === undefined) return { name: el.name };
    if (!Array.isArray(el.channels)) throw badRequest(`"channels" of asset ${el.name} is not an array.`);
    const names = el.channels.map((c, j) => {
      if (!isObject(c) || typeof c.name !== 'string') {
        throw badRequest(`Channel ${j} of asset ${el.name} is not an object with a string "name".`);
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
  if (reqs === undefined) return Promise.all(assets.list().map((name) => readOne(assets, { name }, true)));
  return Promise.all(reqs.map((r) => readOne(assets, r, false)));
}
