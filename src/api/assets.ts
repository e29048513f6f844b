// Assets REST API, `/services/assets` (interface §4.3, kura/deploy-assets-messaging.md §2).
// Role `assets` on every route; errors are Kura's text/plain bodies; success bodies are written
// by hand so LONG values stay exact (no double on the way out) and fields keep Gson's order.

import type { HttpServer } from '../http/server.js';
import { textFamily } from '../http/server.js';
import { HttpError, type RequestContext } from '../http/context.js';
import { mediaType, readBody } from '../http/body.js';
import type { Logger } from '../log.js';
import { AssetNotFoundError, VALUE_TYPES, type AssetService, type ChannelConfig, type ChannelRecord, type TypedValue, type ValueType } from '../assets/types.js';
import { clip, javaDoubleText, parseValueText, valueToJson } from '../assets/values.js';
import { DRIVER_NOT_ATTACHED } from '../assets/service.js';
import { JsonNumber, JsonSyntaxError, isJsonObject, parseExactJson, type ExactJson } from '../assets/json.js';

const BASE = '/services/assets';
const ROLE = 'assets';
const BODY_LIMIT = 1024 * 1024;

// Byte-exact from Kura (reference §2): the two hints differ in spacing on purpose.
export const READ_HINT = 'Bad request, expected request format: { "channels": [ "channel-1", "channel-2"]}';
export const WRITE_HINT = 'Bad request, expected request format: {"channels": [{"name": "channel-1", "type": "INTEGER", "value": 10 }]}';

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

function errorText(msg: string | undefined): string {
  if (!msg) return 'Unknown error';
  // Kura's KuraException text for a missing driver (reference §4.3).
  return msg === DRIVER_NOT_ATTACHED ? `Configuration Error: ${DRIVER_NOT_ATTACHED}` : msg;
}

/**
 * ChannelRecord JSON in Kura's field order: channelStatus, name, valueType, value, timestamp, unit.
 * Failures carry `channelFlag` and `exceptionMessage` (contract §4: no serialised Java exception).
 * Records the asset refused before the driver carry neither valueType nor unit, as in Kura.
 * `echo` (writes): Kura answers with the request's own type and value, and no unit.
 */
export function recordJson(r: ChannelRecord, echo?: TypedValue): string {
  const status =
    r.status === 'SUCCESS'
      ? '{"channelFlag":"SUCCESS"}'
      : `{"channelFlag":"FAILURE","exceptionMessage":${JSON.stringify(errorText(r.error))}}`;
  let s = `{"channelStatus":${status},"name":${JSON.stringify(r.name)}`;
  if (echo) {
    s += `,"valueType":"${echo.type}","value":${valueToJson(echo)},"timestamp":${r.timestamp}`;
    return s + '}';
  }
  if (!r.refused) s += `,"valueType":"${r.valueType}"`;
  if (r.value !== undefined) s += `,"value":${valueToJson(r.value)}`;
  s += `,"timestamp":${r.timestamp}`;
  if (r.unit !== undefined && !r.refused) s += `,"unit":${JSON.stringify(r.unit)}`;
  return s + '}';
}

/**
 * Reads the JSON body for a POST. Kura's `@Consumes(application/json)` gives 415 for another
 * declared type; a missing type is accepted (curl -d). An empty body is Gson's null object, which
 * the resource answers with its hint. Malformed JSON is 400 naming the problem (contract §4).
 */
async function readRequest(ctx: RequestContext, hint: string): Promise<{ [key: string]: ExactJson }> {
  const mt = mediaType(ctx);
  if (mt !== '' && mt !== 'application/json' && !mt.endsWith('+json')) {
    ctx.req.resume();
    throw new HttpError(415, `Unsupported content type ${JSON.stringify(mt)}: expected application/json`);
  }
  const buf = await readBody(ctx, BODY_LIMIT);
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(buf);
  } catch {
    throw new HttpError(400, 'Request body is not valid UTF-8');
  }
  if (text.trim() === '') throw new HttpError(400, hint);
  let body: ExactJson;
  try {
    body = parseExactJson(text);
  } catch (err) {
    if (err instanceof JsonSyntaxError) throw new HttpError(400, `Malformed JSON: ${err.message}`);
    throw err;
  }
  if (!isJsonObject(body)) throw new HttpError(400, hint);
  return body;
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
 * the value, type and channel (contract §4; Kura answers 500), and then nothing is written.
 */
export function parseWriteRequest(body: { [key: string]: ExactJson }): WriteItem[] {
  const list = body.channels;
  if (!Array.isArray(list)) throw new HttpError(400, WRITE_HINT);
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

  // Kura looks the asset up before it validates the body (reference §2), so this runs first.
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
