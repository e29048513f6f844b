// Assets REST API, `/services/assets` (docs/rest-api.md "assets"; Kura's AssetRestService).
// Role `assets` on every route; errors are Kura's text/plain bodies; success bodies are written
// by hand so LONG values stay exact (no double on the way out) and fields keep Gson's order.

import type { HttpServer } from '../http/server.js';
import { textFamily } from '../http/server.js';
import { HttpError, type RequestContext } from '../http/context.js';
import { readJsonBody } from '../http/body.js';
import { LimitError } from '../core/errors.js';
import { MAX_CHANNELS_PER_REQUEST, tooManyChannels } from '../core/limits.js';
import type { Logger } from '../log.js';
import { AssetNotFoundError, VALUE_TYPES, type AssetService, type ChannelConfig, type ChannelRecord, type TypedValue, type ValueType } from '../assets/types.js';
import { clip, parseValueText } from '../assets/values.js';
import { channelJson, recordJson } from '../assets/records.js';
import { JsonNumber, isJsonObject, type ExactJson } from '../core/json.js';

const BASE = '/services/assets';
const ROLE = 'assets';
const BODY_LIMIT = 1024 * 1024;

// Byte-exact from Kura's AssetRestService: the two hints differ in spacing on purpose.
export const READ_HINT = 'Bad request, expected request format: { "channels": [ "channel-1", "channel-2"]}';
export const WRITE_HINT = 'Bad request, expected request format: {"channels": [{"name": "channel-1", "type": "INTEGER", "value": 10 }]}';

/**
 * Reads the JSON body for a POST through the one reader (415 without `application/json`, 400 for
 * malformed JSON, COMPATIBILITY.md "Decided deviations"). An empty body is Gson's null object,
 * which the resource answers with its hint.
 */
async function readRequest(ctx: RequestContext, hint: string): Promise<{ [key: string]: ExactJson }> {
  const body = (await readJsonBody(ctx, { limit: BODY_LIMIT, exact: true })) as ExactJson | undefined;
  if (body === undefined || !isJsonObject(body)) throw new HttpError(400, hint);
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
  if (!Array.isArray(list)) throw new HttpError(400, READ_HINT);
  checkChannelCount(list.length);
  const names: string[] = [];
  for (const item of list) {
    const name = scalarText(item);
    if (name === undefined) throw new HttpError(400, READ_HINT);
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
 * not an exact DataType name, is Kura's 400 hint. A value that its type cannot parse is 400 naming
 * the value, type and channel (COMPATIBILITY.md "Assets"; Kura answers 500), and then nothing is written.
 */
export function parseWriteRequest(body: { [key: string]: ExactJson }): WriteItem[] {
  const list = body.channels;
  if (!Array.isArray(list)) throw new HttpError(400, WRITE_HINT);
  checkChannelCount(list.length);
  const entries = list.map((item) => {
    if (!isJsonObject(item)) throw new HttpError(400, WRITE_HINT);
    const name = scalarText(item.name);
    const type = typeof item.type === 'string' && (VALUE_TYPES as readonly string[]).includes(item.type) ? (item.type as ValueType) : undefined;
    const text = scalarText(item.value);
    if (name === undefined || type === undefined || text === undefined) throw new HttpError(400, WRITE_HINT);
    return { name, type, text };
  });
  return entries.map(({ name, type, text }) => {
    const value = parseValueText(type, text);
    if (typeof value === 'string') throw new HttpError(400, `${value} (channel ${clip(name)})`);
    return { name, value };
  });
}

export function mountAssetsApi(server: HttpServer, deps: { assets: AssetService; log: Logger }): void {
  const family = textFamily('assets');
  const { assets } = deps;

  // Kura's AssetRestService looks the asset up before it validates the body, so this runs first.
  const assetOf = (ctx: RequestContext) => {
    const a = assets.get(ctx.params.pid);
    if (!a) throw new HttpError(404, `Asset not found: ${ctx.params.pid}`);
    return a;
  };
  // The asset may vanish in a reload between the lookup and the driver call.
  const notFound = (err: unknown): never => {
    if (err instanceof AssetNotFoundError) throw new HttpError(404, err.message);
    throw err;
  };
  const records = (ctx: RequestContext, list: ChannelRecord[]) => ctx.rawJson(200, `[${list.map((r) => recordJson(r)).join(',')}]`);

  server.route('GET', BASE, family, (ctx) => ctx.json(200, assets.list()), ROLE);

  server.route('GET', `${BASE}/:pid`, family, (ctx) => {
    const a = assetOf(ctx);
    ctx.rawJson(200, `[${a.channels.map(channelJson).join(',')}]`);
  }, ROLE);

  server.route('GET', `${BASE}/:pid/_read`, family, async (ctx) => {
    const a = assetOf(ctx);
    records(ctx, await assets.read(a.pid).catch(notFound));
  }, ROLE);

  server.route('POST', `${BASE}/:pid/_read`, family, async (ctx) => {
    const a = assetOf(ctx);
    const names = parseReadRequest(await readRequest(ctx, READ_HINT));
    if (names.length === 0) return ctx.rawJson(200, '[]');
    records(ctx, await assets.read(a.pid, names).catch(notFound));
  }, ROLE);

  server.route('POST', `${BASE}/:pid/_write`, family, async (ctx) => {
    const a = assetOf(ctx);
    const items = parseWriteRequest(await readRequest(ctx, WRITE_HINT));
    if (items.length === 0) return ctx.rawJson(200, '[]');
    const out = await assets.write(a.pid, items).catch(notFound);
    ctx.rawJson(200, `[${out.map((r, i) => recordJson(r, items[i].value)).join(',')}]`);
  }, ROLE);
}
