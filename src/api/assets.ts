// Assets REST API, `/services/assets` (docs/rest-api.md "assets"; Kura's AssetRestService), a
// request-core family (src/core/family.ts) mounted on REST only.
// Role `assets` on every route; errors are Kura's text/plain bodies; success bodies are written
// by hand so LONG values stay exact (no double on the way out) and fields keep Gson's order.

import { LimitError, RequestError } from '../core/errors.js';
import { rawJson, type CoreRequest, type Family } from '../core/family.js';
import { MAX_CHANNELS_PER_REQUEST, tooManyChannels } from '../core/limits.js';
import { VALUE_TYPES, type ChannelRecord, type TypedValue, type ValueType } from '../channels/types.js';
import { AssetNotFoundError, type AssetService } from '../assets/types.js';
import { clip, parseValueText } from '../channels/values.js';
import { RecordJsonCache, channelJson, recordJson } from '../assets/records.js';
import { JsonNumber, isJsonObject, type ExactJson } from '../core/json.js';

const BASE = '/services/assets';
const ROLE = 'assets';

// Byte-exact from Kura's AssetRestService: the two hints differ in spacing on purpose.
export const READ_HINT = 'Bad request, expected request format: { "channels": [ "channel-1", "channel-2"]}';
export const WRITE_HINT = 'Bad request, expected request format: {"channels": [{"name": "channel-1", "type": "INTEGER", "value": 10 }]}';

/**
 * The JSON body of a POST through the one reader (415 without `application/json`, 400 for malformed
 * JSON). An empty body is Gson's null object, which the resource answers with its hint.
 */
async function readRequest(req: CoreRequest, hint: string): Promise<{ [key: string]: ExactJson }> {
  const body = (await req.body({ exact: true })) as ExactJson | undefined;
  if (body === undefined || !isJsonObject(body)) throw new RequestError(400, hint);
  return body;
}

/** Channels one request may name (issue: a list of 99,000 names must not take the daemon down). */
function checkChannelCount(n: number): void {
  if (n > MAX_CHANNELS_PER_REQUEST) throw new LimitError(400, tooManyChannels(n));
}

/** Gson's coercion of a JSON scalar into a String field: numbers and booleans keep their literal text. */
function scalarText(v: ExactJson | undefined): string | undefined {
  if (typeof v === 'string') return v;
  if (v instanceof JsonNumber) return v.text;
  if (typeof v === 'boolean') return String(v);
  return undefined;
}

/** POST _read body → channel names in request order, de-duplicated (Kura's LinkedHashSet). */
export function parseReadRequest(body: { [key: string]: ExactJson }): string[] {
  const list = body.channels;
  if (!Array.isArray(list)) throw new RequestError(400, READ_HINT);
  checkChannelCount(list.length);
  const names: string[] = [];
  for (const item of list) {
    const name = scalarText(item);
    if (name === undefined) throw new RequestError(400, READ_HINT);
    names.push(name);
  }
  return [...new Set(names)];
}

export interface WriteItem {
  name: string;
  value: TypedValue;
}

/**
 * POST _write body → typed values. Any entry without name, type or value, or with a type that is
 * not an exact DataType name, is Kura's 400 hint. The value's text is parsed by the parse ASSET-V1
 * uses too (docs/architecture.md "Asset values: one conversion"); one it refuses is 400 naming the
 * value, type and channel (COMPATIBILITY.md "Assets"; Kura answers 500), and then nothing is written.
 */
export function parseWriteRequest(body: { [key: string]: ExactJson }): WriteItem[] {
  const list = body.channels;
  if (!Array.isArray(list)) throw new RequestError(400, WRITE_HINT);
  checkChannelCount(list.length);
  const entries = list.map((item) => {
    if (!isJsonObject(item)) throw new RequestError(400, WRITE_HINT);
    const name = scalarText(item.name);
    const type = typeof item.type === 'string' && (VALUE_TYPES as readonly string[]).includes(item.type) ? (item.type as ValueType) : undefined;
    const text = scalarText(item.value);
    if (name === undefined || type === undefined || text === undefined) throw new RequestError(400, WRITE_HINT);
    return { name, type, text };
  });
  return entries.map(({ name, type, text }) => {
    const value = parseValueText(type, text);
    if (typeof value === 'string') throw new RequestError(400, `${value} (channel ${clip(name)})`);
    return { name, value };
  });
}

/** The assets REST API as a request-core family (REST only: Kura's ASSET-V1 is a separate application). */
export function assetsFamily(assets: AssetService): Family {
  // Kura's AssetRestService looks the asset up before it validates the body, so this runs first.
  const assetOf = (req: CoreRequest) => {
    const a = assets.get(req.params.pid!);
    if (!a) throw new RequestError(404, `Asset not found: ${req.params.pid}`);
    return a;
  };
  // The asset may vanish in a reload between the lookup and the driver call.
  const notFound = (err: unknown): never => {
    if (err instanceof AssetNotFoundError) throw new RequestError(404, err.message);
    throw err;
  };
  const cache = new RecordJsonCache();
  const records = (list: ChannelRecord[]) => {
    let s = '[';
    for (let i = 0; i < list.length; i++) s += i === 0 ? cache.json(list[i]!) : `,${cache.json(list[i]!)}`;
    return rawJson(`${s}]`);
  };
  return {
    name: 'assets',
    rest: BASE,
    role: ROLE,
    errors: 'text',
    routes: [
      { method: 'GET', path: '', handler: () => assets.list() },
      { method: 'GET', path: ':pid', handler: (req) => rawJson(`[${assetOf(req).channels.map(channelJson).join(',')}]`) },
      // The asset was just found, and the read starts in the same step: it cannot have vanished.
      { method: 'GET', path: ':pid/_read', handler: (req) => assets.readAll(assetOf(req).pid, records) },
      {
        method: 'POST',
        path: ':pid/_read',
        handler: async (req) => {
          const a = assetOf(req);
          const names = parseReadRequest(await readRequest(req, READ_HINT));
          if (names.length === 0) return rawJson('[]');
          return records(await assets.read(a.pid, names).catch(notFound));
        },
      },
      {
        method: 'POST',
        path: ':pid/_write',
        handler: async (req) => {
          const a = assetOf(req);
          const items = parseWriteRequest(await readRequest(req, WRITE_HINT));
          if (items.length === 0) return rawJson('[]');
          const out = await assets.write(a.pid, items).catch(notFound);
          return rawJson(`[${out.map((r, i) => recordJson(r, items[i]!.value)).join(',')}]`);
        },
      },
    ],
  };
}
