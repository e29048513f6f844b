// Commissioning tools of the driver instances, `/services/drivers/{pid}/…` (docs/rest-api.md
// "drivers"): requests a technician makes on a line without an asset. A gatewayd extension, on
// REST only, role `assets` (a probe reads and, confirmed, writes the device as an asset write
// does). Errors are `{"error": message}`: 400 for a wrong request, 404 for an unknown instance, 409
// when the instance has no such tool or is not attached, 502 when the device or line failed.

import { RequestError } from '../core/errors.js';
import { rawJson, type CoreRequest, type Family } from '../core/family.js';
import { isPlainObject } from '../core/schema.js';
import { DriverToolError, type Driver, type DriverTools } from '../drivers/driver.js';
import { ExactLong } from '../drivers/modbus/tools.js';

/** What the family needs of the daemon's driver instances (the asset runtime's DriverPool). */
export interface DriverInstances {
  get(id: string): Driver | undefined;
  factoryOf(id: string): string | undefined;
}

const STATUS: Record<DriverToolError['kind'], number> = { input: 400, device: 502, busy: 409, missing: 404 };

/** A tool's answer as JSON, a LONG with its exact digits. */
function answer(value: unknown): ReturnType<typeof rawJson> {
  const text = JSON.stringify(value, (_k, v) => (v instanceof ExactLong ? `\u0001${v.digits}` : v));
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
  const run = async (fn: () => unknown) => {
    try {
      return answer(await fn());
    } catch (err) {
      if (err instanceof DriverToolError) throw new RequestError(STATUS[err.kind], err.message);
      throw err;
    }
  };
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
