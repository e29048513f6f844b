// Assets REST API, `/services/assets` (interface §4.3, kura/deploy-assets-messaging.md §2).
// Role `assets`; errors are Kura's text/plain bodies.

import type { HttpServer } from '../http/server.js';
import { textFamily } from '../http/server.js';
import { HttpError, type RequestContext } from '../http/context.js';
import type { Logger } from '../log.js';
import { AssetNotFoundError, type AssetService, type ChannelRecord } from '../assets/types.js';
import { valueToJson } from '../assets/values.js';

const BASE = '/services/assets';
const ROLE = 'assets';

/** ChannelRecord JSON in Kura's field order: channelStatus, name, valueType, value, timestamp, unit. */
export function recordJson(r: ChannelRecord): string {
  const status =
    r.status === 'SUCCESS'
      ? '{"channelFlag":"SUCCESS"}'
      : `{"channelFlag":"FAILURE","exceptionMessage":${JSON.stringify(r.error ?? '')}}`;
  let s = `{"channelStatus":${status},"name":${JSON.stringify(r.name)}`;
  if (r.status === 'SUCCESS') s += `,"valueType":${JSON.stringify(r.valueType)}`;
  if (r.value !== undefined) s += `,"value":${valueToJson(r.value)}`;
  s += `,"timestamp":${r.timestamp}`;
  if (r.unit !== undefined) s += `,"unit":${JSON.stringify(r.unit)}`;
  return s + '}';
}

export function mountAssetsApi(server: HttpServer, deps: { assets: AssetService; log: Logger }): void {
  const family = textFamily('assets');
  const { assets } = deps;

  const pidOf = (ctx: RequestContext): string => {
    const pid = ctx.params.pid;
    if (!assets.get(pid)) throw new HttpError(404, `Asset not found: ${pid}`);
    return pid;
  };

  server.route('GET', BASE, family, (ctx) => ctx.json(200, assets.list()), ROLE);

  server.route('GET', `${BASE}/:pid/_read`, family, async (ctx) => {
    const pid = pidOf(ctx);
    try {
      const records = await assets.read(pid);
      ctx.rawJson(200, `[${records.map(recordJson).join(',')}]`);
    } catch (err) {
      if (err instanceof AssetNotFoundError) throw new HttpError(404, err.message);
      throw err;
    }
  }, ROLE);
}
