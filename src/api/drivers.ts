// Commissioning tools of the driver instances, `/services/drivers/{pid}/…` (docs/rest-api.md
// "drivers"): requests a technician makes on a line without an asset. A gatewayd extension, on
// REST only, role `assets` (a probe reads and, confirmed, writes the device as an asset write
// does). Errors are `{"error": message}`: 400 for a wrong request, 404 for an unknown instance, 409
// when the instance has no such tool or is not attached, 502 when the device or line failed.

import { RequestError } from '../core/errors.js';
import { TextReply, rawJson, type CoreRequest, type Family } from '../core/family.js';
import { JsonNumber } from '../core/json.js';
import { isPlainObject } from '../core/schema.js';
import type { DriverPool } from '../assets/driver-pool.js';

/** What the family needs of the daemon's driver instances (the asset runtime's DriverPool). */
export type DriverInstances = Pick<DriverPool, 'get' | 'factoryOf' | 'list'>;
type DriverTools = NonNullable<NonNullable<ReturnType<DriverPool['get']>>['tools']>;

/** A tool's answer as JSON, a LONG with its exact digits. */
function answer(value: unknown): ReturnType<typeof rawJson> {
  const text = JSON.stringify(value, (_k, v) => (v instanceof JsonNumber ? `\u0001${v.text}` : v));
  return rawJson(text.replace(/"\\u0001(-?\d+)"/g, '$1'));
}

export function driversFamily(drivers: DriverInstances): Family {
  /** The tool `name` of the request's instance; 404 / 409 when there is none to use. */
  function toolOf<K extends keyof DriverTools>(req: CoreRequest, name: K): NonNullable<DriverTools[K]> {
    const pid = req.params.pid!;
    const factory = drivers.factoryOf(pid);
    if (factory === undefined) throw new RequestError(404, `Driver not found: ${pid}`);
    const driver = drivers.get(pid);
    if (!driver) throw new RequestError(409, `Driver not attached: ${pid} (factory ${factory} is not available)`);
    const tool = driver.tools?.[name];
    if (!tool) throw new RequestError(409, `The ${factory} driver ${pid} has no ${name} tool`);
    return (tool as (...a: unknown[]) => unknown).bind(driver.tools) as NonNullable<DriverTools[K]>;
  }
  // A tool's ToolError is a RequestError: the family's style answers it.
  const run = async (fn: () => unknown) => answer(await fn());
  const objectBody = async (req: CoreRequest) => {
    const body = await req.body({ limit: 16 * 1024 });
    if (!isPlainObject(body)) throw new RequestError(400, 'The request body must be a JSON object');
    return body;
  };
  return {
    name: 'drivers',
    rest: '/services/drivers',
    role: 'assets',
    errors: 'error',
    routes: [
      {
        // The instances and which tools each has: what the console offers (docs/rest-api.md "drivers").
        method: 'GET',
        path: '',
        handler: () => drivers.list().map((i) => {
          const t = i.driver?.tools ?? {};
          const tools = [t.probe && 'probe', t.startScan && 'scan', t.identify && 'identification', t.requestLog && 'log'].filter(Boolean);
          const access = i.props['access.type'];
          return { pid: i.id, factory: i.factory, attached: i.driver !== undefined, tools, ...(typeof access === 'string' ? { 'access.type': access } : {}) };
        }),
      },
      {
        method: 'GET',
        path: ':pid/_log',
        handler: (req) => {
          const log = toolOf(req, 'requestLog');
          const frames = req.query('frames');
          if (frames !== undefined && frames !== 'true' && frames !== 'false') throw new RequestError(400, 'Query parameter frames must be true or false');
          return answer(log(frames === 'true'));
        },
      },
      {
        method: 'GET',
        path: ':pid/units/:unit/identification',
        handler: (req) => {
          const identify = toolOf(req, 'identify');
          return run(() => identify(req.params.unit!));
        },
      },
      {
        method: 'EXEC',
        path: ':pid/_scan',
        handler: async (req) => {
          const start = toolOf(req, 'startScan');
          const body = await objectBody(req);
          const { id } = start(body);
          return new TextReply('application/json', JSON.stringify({ id }), { location: `/services/drivers/${encodeURIComponent(req.params.pid!)}/_scan/${id}` }, 202);
        },
      },
      { method: 'GET', path: ':pid/_scan/:id', handler: (req) => run(() => toolOf(req, 'scan')(req.params.id!)) },
      { method: 'DEL', path: ':pid/_scan/:id', handler: (req) => run(() => toolOf(req, 'cancelScan')(req.params.id!)) },
      {
        method: 'EXEC',
        path: ':pid/_probe',
        handler: async (req) => {
          const probe = toolOf(req, 'probe');
          const body = await objectBody(req);
          return run(() => probe(body));
        },
      },
    ],
  };
}
