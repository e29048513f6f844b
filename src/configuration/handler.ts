// configuration/v2 as one handler for REST and MQTT CONF-V2 (docs/configuration-v2.md): a method
// (GET PUT POST DEL EXEC, as Kura's request-handler proxy names them), the resource path and the
// parsed JSON body in; a status and a JSON body out. Kura's shapes, messages and validation order.

import { isPlainObject as isObj, setOwn } from '../config/schema.js';
import { ASSET_FACTORY, DRIVER_FACTORY, PLACEHOLDER, adsById, configDto, factoryOcd, json, ocdDto, ocdOf, propertyValue, type Component, type Props } from './model.js';
import { ConfigError, type ConfigurationService } from './service.js';
import { rawJson, type CoreRequest, type Family, type Method } from '../core/family.js';
import type { ChangeActor } from './reserved.js';
import { heapBound } from '../config/heap.js';
import { ReplyTooLargeError } from '../core/errors.js';

type Svc = ConfigurationService;
const bad = (text: string) => new ConfigError(400, text);

function field(body: unknown, key: string, kind: 'array' | 'number'): any {
  const v = isObj(body) ? body[key] : undefined;
  if (kind === 'array' ? !Array.isArray(v) : !Number.isInteger(v)) throw bad(`parameter "${key}" is required`);
  return v;
}

const pids = (body: unknown): string[] => [...new Set(field(body, 'pids', 'array') as string[])];
const snap = (body: unknown) => !(isObj(body) && body.takeSnapshot === false);
const shown = (svc: Svc, c: Component, mask: boolean, defaultsOnly?: boolean) => configDto(c, ocdOf(c, svc.effective, svc.registry), { definition: true, mask, defaultsOnly });
const message = (m: string | undefined) => m && { message: m };

/** Reply bytes per attribute definition, its property included (measured: ~230 with Modbus channels, ~16 per channel). */
const BYTES_PER_AD = 230;

/**
 * Configurations with their definitions grow with the channels (about 3.4 KB per Modbus channel), and
 * building a reply takes about twice its size on the heap: past a sixth of the heap bound the request
 * is answered 413, naming what to do, instead of V8 aborting the daemon at the bound
 * (docs/configuration-v2.md).
 */
function fits(svc: Svc, cs: Component[]): Component[] {
  let ads = 0;
  for (const c of cs) ads += ocdOf(c, svc.effective, svc.registry)?.ads.length ?? 0;
  const budget = heapBound() / 6;
  if (ads * BYTES_PER_AD > budget) {
    const mb = (x: number) => (x / 1048576).toFixed(1);
    throw new ReplyTooLargeError(`Reply too large: about ${mb(ads * BYTES_PER_AD)} MB of configurations with their definitions, ${mb(budget)} MB fit this daemon's heap bound; ask for fewer components with configurableComponents/configurations/byPid, or raise the heap bound (GATEWAYD_NODE_FLAGS=--max-old-space-size=…)`);
  }
  return cs;
}
const byPids = (svc: Svc, body: unknown) => pids(body).flatMap((p) => svc.component(p) ?? []);

/**
 * Request properties (Kura's PropertyDTO checks) as layer values; `placeholder` keeps a password.
 * `given` collects the PASSWORD properties set to a new value.
 */
function layerProps(svc: Svc, c: Component, props: Record<string, unknown>, given?: Set<string>): Props {
  const ads = adsById(ocdOf(c, svc.effective, svc.registry));
  const out: Props = {};
  for (const [k, p] of Object.entries(props)) {
    const ad = ads.get(k);
    let v: unknown;
    try {
      v = propertyValue(p, ad);
    } catch (err) {
      throw bad((err as Error).message);
    }
    const secret = ad?.type === 'PASSWORD' || (p as Props).type === 'PASSWORD';
    if (!/^(kura\.service\.pid|service\.(factoryPid|pid))$/.test(k) && !(secret && v === PLACEHOLDER)) setOwn(out, k, v);
    if (secret && v !== PLACEHOLDER && v !== null) given?.add(k);
  }
  return out;
}

function configs(body: unknown, svc: Svc, create: boolean, by: ChangeActor) {
  const todo: { c: Component; props: Props }[] = [];
  const secrets = new Map<string, Set<string>>();
  const taken = new Set(svc.components().map((c) => c.pid));
  for (const item of field(body, 'configs', 'array')) {
    if (!isObj(item)) throw bad('component configuration objects cannot be null');
    let c = svc.component(String(item.pid));
    if (create) {
      // Kura checks nothing more here and fails later with 500; these are 400 (docs/configuration-v2.md).
      const f = item.factoryPid === `org.eclipse.kura.asset` ? ASSET_FACTORY : item.factoryPid;
      if (typeof item.pid !== 'string' || !item.pid) throw bad('Invalid parameter. pid cannot be null');
      if (typeof f !== 'string') throw bad('Invalid parameter. factoryPid cannot be null');
      if (taken.has(item.pid)) throw bad(`Invalid parameter. pid ${item.pid} already exists`);
      if (f !== ASSET_FACTORY && !factoryOcd(f, svc.registry)) throw bad(`Invalid parameter. factoryPid ${f} is not a known factory`);
      taken.add(item.pid);
      c = { pid: item.pid, factoryPid: f, props: {} };
      item.properties ??= {};
    } else if (typeof item.pid !== 'string') throw bad('parameter "pid" is required');
    if (!isObj(item.properties)) throw bad('parameter "properties" is required');
    const given = new Set<string>();
    const props = layerProps(svc, c ?? { pid: '', props: {} }, item.properties, given);
    if (c) secrets.set(c.pid, new Set([...(secrets.get(c.pid) ?? []), ...given]));
    if (c) todo.push({ c, props }); // Kura ignores the update of an unknown pid
  }
  return svc.change((layer) => {
    for (const { c, props } of todo) {
      // Own properties throughout: `__proto__` is an ordinary pid or key here.
      const has = Object.hasOwn(layer.components, c.pid);
      if (create) layer.deleted = layer.deleted.filter((p) => p !== c.pid);
      if (create || !has) setOwn(layer.components, c.pid, { factoryPid: c.factoryPid, pinned: create || undefined, props: {} });
      for (const [k, v] of Object.entries(props)) if (!(create && v === null)) setOwn(layer.components[c.pid].props, k, v);
    }
  }, snap(body), { by, secrets });
}

/** Who sends a request, for the properties reserved to kura.admin (over MQTT: the requester's permissions). */
const actorOf = (req: CoreRequest): ChangeActor => ({ transport: req.transport, permissions: req.identity?.permissions ?? [] });

const factories = (svc: Svc) => svc.registry.names().map((n) => DRIVER_FACTORY + n);
const factoryConfigs = (svc: Svc, only?: string[]) => ({
  configs: factories(svc)
    .filter((f) => !only || only.includes(f))
    .map((f) => ({ pid: f, definition: ocdDto(factoryOcd(f, svc.registry)!), properties: {} })),
});

const ROUTES: Record<string, (svc: Svc, body: unknown, by: ChangeActor) => unknown> = {
  'GET snapshots': (svc) => ({ ids: svc.store.snapshotIds() }),
  'POST snapshots/byId': (svc, body) => {
    const id = field(body, 'id', 'number');
    const s = svc.store.readSnapshot(id);
    if (!s) throw new ConfigError(500, `Configuration snapshot ${id} was not found.`);
    return { configs: s.map((c) => configDto(c, ocdOf(c, svc.effective, svc.registry), { mask: true })) };
  },
  'EXEC snapshots/_write': async (svc) => ({ id: await svc.snapshot() }),
  'EXEC snapshots/_rollback': async (svc, _body, by) => {
    const ids = svc.store.snapshotIds();
    const id = ids[ids.length - 2];
    if (id === undefined) throw new ConfigError(500, 'Configuration snapshot No Snapshot Available was not found.');
    await svc.rollback(id, by);
    return { id };
  },
  'EXEC snapshots/byId/_rollback': async (svc, body, by) => message(await svc.rollback(field(body, 'id', 'number'), by)),
  'GET factoryComponents': (svc) => ({ pids: factories(svc) }),
  'POST factoryComponents': async (svc, body, by) => message(await configs(body, svc, true, by)),
  'DEL factoryComponents/byPid': async (svc, body, by) => {
    const gone = pids(body).filter((p) => svc.component(p)?.factoryPid); // Kura: other pids are a no-op
    return message(
      await svc.change((layer) => {
        for (const p of gone) delete layer.components[p], layer.deleted.push(p);
      }, snap(body), { by }),
    );
  },
  'GET factoryComponents/ocd': (svc) => factoryConfigs(svc),
  'POST factoryComponents/ocd/byFactoryPid': (svc, body) => factoryConfigs(svc, pids(body)),
  'GET configurableComponents': (svc) => ({ pids: svc.components().map((c) => c.pid) }),
  'GET configurableComponents/pidsWithFactory': (svc) => ({ components: svc.components().map(({ pid, factoryPid }) => ({ pid, factoryPid })) }),
  'GET configurableComponents/configurations': (svc) => ({ configs: fits(svc, svc.components()).map((c) => shown(svc, c, true)) }),
  'POST configurableComponents/configurations/byPid': (svc, body) => ({ configs: fits(svc, byPids(svc, body)).map((c) => shown(svc, c, true)) }),
  'POST configurableComponents/configurations/byPid/_default': (svc, body) => ({
    configs: fits(svc, byPids(svc, body)).flatMap((c) => (ocdOf(c, svc.effective, svc.registry) ? [shown(svc, c, false, true)] : [])),
  }),
  'PUT configurableComponents/configurations/_update': async (svc, body, by) => message(await configs(body, svc, false, by)),
  // gatewayd's extension: back to the image's configuration (the runtime layer dropped).
  'EXEC _reset': async (svc, body, by) => message(await svc.reset(snap(body), by)),
};

/** configuration/v2 over REST and CONF-V2 over MQTT, on the request-handler core (src/core/). */
export const configurationFamily = (svc: Svc): Family => ({
  name: 'configuration/v2',
  rest: '/services/configuration/v2',
  appId: 'CONF-V2',
  role: 'configuration',
  errors: 'json',
  routes: Object.entries(ROUTES).map(([k, fn]) => {
    const [method, path] = k.split(' ') as [Method, string];
    return {
      method,
      path,
      // One request at a time, in arrival order: reads see no half-made change.
      handler: async (req) => {
        const body = method === 'GET' ? undefined : await req.body();
        const out = await svc.serial(async () => fn(svc, body, actorOf(req)));
        return out ? rawJson(json(out)) : undefined;
      },
    };
  }),
});
