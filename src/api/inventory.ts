// INVENTORY-V1 over MQTT and inventory/v1 over REST (docs/mqtt.md "INVENTORY-V1", docs/rest-api.md
// "inventory/v1"): what is on the device, as Kura's InventoryHandlerV1 and its REST service answer
// Eclipse Kapua's Inventory tab. One set of handlers mounted twice, because the two error styles
// differ as Kura's do: REST answers `{"message": …}` (its JAX-RS services), MQTT a native
// `response.code` with `response.exception.message`.
//
// Resources: `inventory` (everything, sorted by name), `bundles` (the daemon as bundle 0 and each
// package's plug-in), `deploymentPackages`, `systemPackages` (the image's package database,
// src/deploy/system-packages.ts), `containers` (gatewayd runs none: always empty), and
// `bundles/_start` / `bundles/_stop` with `{"name": …, "version": …}` (version optional), which
// start and stop a package's plug-in as DEPLOY-V2's EXEC/start/<id> does.
//
// JSON as Kura's marshaller writes it (minimal-json, compact, its field order); ids are numbers
// that fit Kapua's Integer.

import { RequestError } from '../core/errors.js';
import { METHODS, rawJson, type CoreRequest, type CoreRoute, type Family } from '../core/family.js';
import type { BundleInfo, DeploymentService } from '../deploy/service.js';
import { SystemPackages, type SystemPackage } from '../deploy/system-packages.js';
import type { Logger } from '../log.js';
import { VERSION } from '../version.js';

export const INVENTORY_V1 = 'INVENTORY-V1';

interface Item {
  name: string;
  version: string;
  type: string;
}

// `signed`: Kura's is whether the bundle's JAR carries signer certificates (Bundle.getSignerCertificates),
// a package's whether all its bundles do; here, whether the package's signature was verified with a
// trust anchor when it was installed (docs/packages.md "Signed packages"). gatewayd itself: false.
const bundleJson = (b: BundleInfo) => ({ name: b.name, version: b.version, id: b.id, state: b.state, signed: b.signed });

/** The bundle a start or stop names: `name` (a string, required) and `version` (a string, optional). */
async function bundleRef(req: CoreRequest): Promise<{ name: string; version: string | undefined }> {
  let body: unknown;
  try {
    body = await req.body();
  } catch (err) {
    // Over MQTT a body that is no JSON is the request's fault, as Kura's unmarshal failure is.
    if (err instanceof RequestError && err.status !== 400) throw err;
    body = null;
  }
  const o = body as Record<string, unknown> | null | undefined;
  if (o === undefined) throw new RequestError(400, 'Bad request. The bundle to start or stop is missing: send {"name": …, "version": …} as the body');
  if (o === null || typeof o !== 'object' || Array.isArray(o) || typeof o.name !== 'string' || (o.version !== undefined && typeof o.version !== 'string')) {
    throw new RequestError(400, 'Bad request. The body must be a JSON object with the bundle\'s "name" (a string) and optionally its "version" (a string)');
  }
  return { name: o.name, version: o.version as string | undefined };
}

/** INVENTORY-V1 (MQTT) and inventory/v1 (REST), sharing one reading of the package database. */
export function inventoryFamilies(deploy: DeploymentService, log: Logger): Family[] {
  const systemPackages = new SystemPackages(() => deploy.settings['system.packages.database'], log.child({ component: 'inventory' }));

  const bundles = () => deploy.bundles(VERSION);

  async function systemList(): Promise<SystemPackage[]> {
    try {
      return await systemPackages.list();
    } catch (err) {
      throw new RequestError(500, (err as Error).message);
    }
  }

  function deploymentPackages(): string {
    const byName = new Map(bundles().map((b) => [b.name, b]));
    const dps = deploy.list().map((p) => {
      const b = byName.get(p.name);
      return { name: p.name, version: p.version, bundles: b ? [bundleJson(b)] : [], signed: b?.signed ?? false };
    });
    return JSON.stringify({ deploymentPackages: dps });
  }

  async function inventory(): Promise<string> {
    let system: SystemPackage[] = [];
    try {
      system = await systemPackages.list();
    } catch (err) {
      // Kura lists the rest when the system packages cannot be had, and logs why.
      log.warn('inventory without system packages', { error: (err as Error).message });
    }
    const items: Item[] = [
      ...system.map((p) => ({ name: p.name, version: p.version, type: p.type })),
      ...bundles().map((b) => ({ name: b.name, version: b.version, type: 'BUNDLE' })),
      ...deploy.list().map((p) => ({ name: p.name, version: p.version, type: 'DP' })),
    ];
    // Java's String.compareTo: UTF-16 code units, as JavaScript compares strings; a stable sort.
    items.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return JSON.stringify({ inventory: items });
  }

  async function startStop(req: CoreRequest, start: boolean): Promise<undefined> {
    const ref = await bundleRef(req);
    // Kura's findFirstMatchingBundle: the first of that name, and of that version when one is given.
    const bundle = bundles().find((b) => b.name === ref.name && (ref.version === undefined || ref.version === b.version));
    if (!bundle) throw new RequestError(404, `No bundle ${ref.name}${ref.version === undefined ? '' : ` version ${ref.version}`} is installed`);
    if (bundle.system) throw new RequestError(400, `Bad request. ${bundle.name} is gatewayd itself (the system bundle): it cannot be started or stopped`);
    try {
      await deploy.setBundleStarted(bundle.name, start);
    } catch (err) {
      throw new RequestError(500, (err as Error).message);
    }
    return undefined;
  }

  const routes: CoreRoute[] = [
    { method: 'GET', path: 'inventory', handler: async () => rawJson(await inventory()) },
    { method: 'GET', path: 'bundles', handler: () => ({ bundles: bundles().map(bundleJson) }) },
    { method: 'GET', path: 'deploymentPackages', handler: () => rawJson(deploymentPackages()) },
    { method: 'GET', path: 'systemPackages', handler: async () => ({ systemPackages: (await systemList()).map((p) => ({ name: p.name, version: p.version, type: p.type })) }) },
    { method: 'GET', path: 'containers', handler: () => ({ containers: [] }) },
    { method: 'EXEC', path: 'bundles/_start', handler: (req) => startStop(req, true) },
    { method: 'EXEC', path: 'bundles/_stop', handler: (req) => startStop(req, false) },
  ];

  return [
    { name: 'inventory/v1', rest: '/services/inventory/v1', role: 'inventory', errors: 'json', routes },
    {
      name: INVENTORY_V1,
      appId: INVENTORY_V1,
      role: 'inventory',
      errors: 'native',
      routes,
      // Kura's InventoryHandlerV1: no resource is a bad request, an unknown one not found.
      noMatch(method, resources) {
        if (resources.length === 0 || !(METHODS as readonly string[]).includes(method)) return new RequestError(400);
        return new RequestError(404, 'Not found.');
      },
    },
  ];
}
