// GET/assets: asset metadata (docs/mqtt.md). Note the naming: here `type` is the value type and
// `mode` the channel mode, the opposite of the REST API. Every channel is listed, disabled ones too.

import type { AssetService } from '../../assets/types.js';
import { RequestError } from '../../core/errors.js';
import { checkElements, isObject } from './limits.js';

export interface AssetMetadata {
  name: string;
  channels?: { name: string; type: string; mode: string }[];
  error?: string;
}

/** No body or `[]`: every asset; `[{"name":…},…]`: those, in request order, duplicates kept. */
export function parseGetAssetsBody(json: unknown): string[] | undefined {
  if (json === undefined) return undefined;
  if (!Array.isArray(json)) throw new RequestError(400, 'Expected a JSON array of {"name": <asset>} objects.');
  checkElements(json.length);
  const names = json.map((el, i) => {
    if (!isObject(el) || typeof el.name !== 'string') throw new RequestError(400, `Element ${i} is not an object with a string "name".`);
    return el.name;
  });
  return names.length === 0 ? undefined : names;
}

export function getAssets(assets: AssetService, names: string[] | undefined): AssetMetadata[] {
  return (names ?? assets.list()).map((name) => {
    const a = assets.get(name);
    if (!a) return { name, error: 'Asset not found' };
    return { name, channels: a.channels.map((c) => ({ name: c.name, type: c.valueType, mode: c.mode })) };
  });
}
