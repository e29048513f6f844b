// configuration/v2 as one handler for REST and MQTT CONF-V2 (docs/configuration-v2.md): a method
// (GET PUT POST DEL EXEC, as Kura's request-handler proxy names them), the resource path and the
// parsed JSON body in; a status and a JSON body out. Kura's shapes, messages and validation order.

import { isPlainObject as isObj, setOwn } from '../core/schema.js';
import { ASSET_FACTORY, CLOUD_FACTORY, channelOcd, CONNECTION_NAME, DEFAULT_CONNECTION, DRIVER_FACTORY, PLACEHOLDER, TRANSPORT_FACTORY, componentOf, connectionOfPid, connectionPids, definitionLookup, factoryOcd, json, ocdDto, propertyValue, type Component, type ComponentRef, type Props } from '../configuration/model.js';
import { ADMIN, isAdmin } from '../configuration/reserved.js';
import { ConfigError, type ConfigurationService } from '../configuration/service.js';
import { AssetSource, configsJson, shownOf, type ShowOptions } from '../configuration/reply.js';
import { JsonPieces, rawJson, type CoreRequest, type Family, type Method } from '../core/family.js';
import type { ChangeActor } from '../configuration/reserved.js';

/** What configuration/v2 learns of the running MQTT connections: how much a deleted one's outbox held. */
export interface ConnectionOutboxes {
  list(): readonly { name: string; outbox: { pending: number } }[];
}

// ---- MQTT connections as factory components (docs/configuration-v2.md "Creating and deleting
// connections"). As Kura's CloudConnectionFactory does, one create makes a connection's two
// components and one delete removes both; changing which brokers the device talks to is kura.admin's
// (docs/configuration-v2.md "Reserved to kura.admin").

const isConnectionFactory = (f: unknown) => f === CLOUD_FACTORY || f === TRANSPORT_FACTORY;

/** Creating or deleting a connection by someone without kura.admin: REST 403, over MQTT 400 (the code Kapua maps). */
function refuseUnlessAdmin(by: ChangeActor, what: 'create' | 'delete', pid: string): void {
  if (!isAdmin(by)) throw new ConfigError(by.transport === 'mqtt' ? 400 : 403, `Only ${ADMIN} may ${what} MQTT connections (${cut(pid)})`);
}

/** A pid as a message repeats it: at most 200 characters of it. */
const cut = (pid: string) => (pid.length > 200 ? `${pid.slice(0, 200)}…` : pid);

/** The connection a create item names, checked: its name and the pid's form. */
function connectionToCreate(pid: string, factoryPid: string): string {
  const conn = connectionOfPid(pid);
  pid = cut(pid);
  if (!conn || conn.factoryPid !== factoryPid) throw bad(`Invalid parameter. pid ${pid}: a connection of factory ${factoryPid} is ${factoryPid}-<name>`);
  if (!CONNECTION_NAME.test(conn.name) && conn.name !== DEFAULT_CONNECTION) throw bad(`Invalid parameter. pid ${pid}: "${conn.name.slice(0, 80)}" is not a connection name: 1 to 64 letters, digits, "_" or "-"`);
  return conn.name;
}

type Svc = ConfigurationService;
const bad = (text: string) => new ConfigError(400, text);

function field(body: unknown, key: string, kind: 'array' | 'number'): any {
  const v = isObj(body) ? body[key] : undefined;
  if (kind === 'array' ? !Array.isArray(v) : !Number.isInteger(v)) throw bad(`parameter "${key}" is required`);
  return v;
}

const pids = (body: unknown): string[] => [...new Set(field(body, 'pids', 'array') as string[])];
const snap = (body: unknown) => !(isObj(body) && body.takeSnapshot === false);
const message = (m: string | undefined) => m && { message: m };

/**
 * Configurations as Kura's DTOs, made a piece at a time from the configuration in force now: with
 * their definitions they grow by about 3.4 KB per Modbus channel, more than the heap holds at the
 * documented channel bound (docs/configuration-v2.md "How large a configuration can grow").
 */
function shown(svc: Svc, refs: ComponentRef[], o: ShowOptions): JsonPieces {
  const raw = svc.effective;
  return new JsonPieces(configsJson(shownOf(raw, refs, (pid) => componentOf(raw, pid)), raw, svc.registry, o));
}

/** The components a `pids` body names, in its order; unknown pids are left out. */
function byPids(svc: Svc, body: unknown): ComponentRef[] {
  const all = svc.components();
  return pids(body).flatMap((p) => all.find((c) => c.pid === p) ?? []);
}

/**
 * Request properties (Kura's PropertyDTO checks) as layer values; `placeholder` keeps a password.
 * `given` collects the PASSWORD properties set to a new value.
 */
function layerProps(svc: Svc, c: ComponentRef, props: Record<string, unknown>, given?: Set<string>): Props {
  const adOf = definitionLookup(c, svc.effective, svc.registry);
  const out: Props = {};
  for (const [k, p] of Object.entries(props)) {
    const ad = adOf(k);
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
  const todo: { c: ComponentRef; props: Props }[] = [];
  const secrets = new Map<string, Set<string>>();
  const all = svc.components();
  const taken = new Set(all.map((c) => c.pid));
  /** The connections this request creates (each one's two components). */
  const pairs = new Set<string>();
  const named = new Set<string>();
  for (const item of field(body, 'configs', 'array')) {
    if (!isObj(item)) throw bad('component configuration objects cannot be null');
    let c = all.find((x) => x.pid === String(item.pid));
    if (create) {
      // Kura checks nothing more here and fails later with 500; these are 400 (docs/configuration-v2.md).
      const f = item.factoryPid === `org.eclipse.kura.asset` ? ASSET_FACTORY : item.factoryPid;
      if (typeof item.pid !== 'string' || !item.pid) throw bad('Invalid parameter. pid cannot be null');
      if (typeof f !== 'string') throw bad('Invalid parameter. factoryPid cannot be null');
      const conn = isConnectionFactory(f) ? connectionToCreate(item.pid, f) : undefined;
      if (conn !== undefined) refuseUnlessAdmin(by, 'create', item.pid);
      // The second half of a connection this request creates is not taken by its first.
      const second = conn !== undefined && pairs.has(conn) && !named.has(item.pid);
      if (taken.has(item.pid) && !second) throw bad(`Invalid parameter. pid ${item.pid} already exists`);
      named.add(item.pid);
      if (f !== ASSET_FACTORY && !factoryOcd(f, svc.registry)) throw bad(`Invalid parameter. factoryPid ${f} is not a known factory`);
      if (conn !== undefined) {
        // The pair at once; the other half may come later in this request with its own properties.
        const pair = connectionPids(conn);
        const other = pair.find((p) => p !== item.pid)!;
        if (!pairs.has(conn)) {
          if (taken.has(other)) throw bad(`Invalid parameter. pid ${item.pid}: the MQTT connection ${conn} already exists (${other})`);
          pairs.add(conn);
          taken.add(other);
          todo.push({ c: { pid: other, factoryPid: other === pair[0] ? TRANSPORT_FACTORY : CLOUD_FACTORY }, props: {} });
        }
      }
      taken.add(item.pid);
      c = { pid: item.pid, factoryPid: f };
      item.properties ??= {};
    } else if (typeof item.pid !== 'string') throw bad('parameter "pid" is required');
    if (!isObj(item.properties)) throw bad('parameter "properties" is required');
    const given = new Set<string>();
    const props = layerProps(svc, c ?? { pid: '' }, item.properties, given);
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

/**
 * configuration/v2's update (`_update`) of a `{configs, takeSnapshot}` body, with its validation and
 * messages: CONF-V1's PUT applies what it read from its XML through it.
 */
export const updateConfigurations = (svc: Svc, body: unknown, by: ChangeActor): Promise<string | undefined> => configs(body, svc, false, by);

/** Who sends a request, for the properties reserved to kura.admin (over MQTT: the requester's permissions). */
export const actorOf = (req: CoreRequest): ChangeActor => ({ transport: req.transport, permissions: req.identity?.permissions ?? [] });

// The driver factories, then the connection's two (Kura lists every factory with a metatype Designate).
const factories = (svc: Svc) => [...svc.registry.names().map((n) => DRIVER_FACTORY + n), CLOUD_FACTORY, TRANSPORT_FACTORY];
const factoryConfigs = (svc: Svc, only?: string[]) => ({
  configs: factories(svc)
    .filter((f) => !only || only.includes(f))
    .map((f) => ({ pid: f, definition: ocdDto(factoryOcd(f, svc.registry)!), properties: {} })),
});

/** The routes whose reply is made in pieces (JsonPieces). */
const STREAMED = new Set(['POST snapshots/byId', 'GET configurableComponents/configurations', 'POST configurableComponents/configurations/byPid', 'POST configurableComponents/configurations/byPid/_default']);

const ROUTES: Record<string, (svc: Svc, body: unknown, by: ChangeActor, outboxes?: ConnectionOutboxes) => unknown> = {
  'GET snapshots': (svc) => ({ ids: svc.store.snapshotIds() }),
  'POST snapshots/byId': (svc, body) => {
    const s = svc.readSnapshot(field(body, 'id', 'number'));
    const items = s.map((c: Component) => (c.factoryPid === ASSET_FACTORY ? AssetSource.ofProps(c) : c));
    return new JsonPieces(configsJson(items, svc.effective, svc.registry, { definition: false, mask: true }));
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
  'DEL factoryComponents/byPid': async (svc, body, by, outboxes) => {
    const all = svc.components();
    const asked = pids(body);
    // A connection goes whole, whichever of its two pids is named (Kura's CloudConnectionFactory).
    const conns = new Set<string>();
    for (const p of asked) {
      const conn = connectionOfPid(p);
      const c = conn && all.find((x) => x.pid === p);
      // (An asset or driver may have a pid of that form: it is deleted as itself.)
      if (!conn || !c || (c.factoryPid !== undefined && !isConnectionFactory(c.factoryPid))) continue;
      if (conn.name === DEFAULT_CONNECTION) throw bad(`Invalid parameter. pid ${p}: the MQTT connection ${DEFAULT_CONNECTION} cannot be deleted (disable it with enabled false)`);
      refuseUnlessAdmin(by, 'delete', p);
      conns.add(conn.name);
    }
    const gone = new Set(asked.filter((p) => all.find((c) => c.pid === p)?.factoryPid)); // Kura: other pids are a no-op
    for (const n of conns) for (const p of connectionPids(n)) gone.add(p);
    // What each deleted connection's outbox holds stays in its folder (docs/mqtt.md "Connections"): said, not dropped.
    const held = [...conns].map((n) => ({ name: n, pending: outboxes?.list().find((c) => c.name === n)?.outbox.pending ?? 0 }));
    const changed = await svc.change((layer) => {
      for (const p of gone) {
        delete layer.components[p];
        if (!layer.deleted.includes(p)) layer.deleted.push(p);
      }
    }, snap(body), { by });
    const kept = held.map((h) => `MQTT connection ${h.name} deleted; the ${h.pending} message${h.pending === 1 ? '' : 's'} its outbox held ${h.pending === 1 ? 'is' : 'are'} kept in dataDir/mqtt-${h.name}, sent when a connection of that name is created again`);
    return message([changed, ...kept].filter(Boolean).join('; ') || undefined);
  },
  'GET factoryComponents/ocd': (svc) => factoryConfigs(svc),
  'POST factoryComponents/ocd/byFactoryPid': (svc, body) => factoryConfigs(svc, pids(body)),
  'GET configurableComponents': (svc) => ({ pids: svc.components().map((c) => c.pid) }),
  'GET configurableComponents/pidsWithFactory': (svc) => ({ components: svc.components().map(({ pid, factoryPid }) => ({ pid, factoryPid })) }),
  'GET configurableComponents/configurations': (svc) => shown(svc, svc.components(), { definition: true, mask: true }),
  'POST configurableComponents/configurations/byPid': (svc, body) => shown(svc, byPids(svc, body), { definition: true, mask: true }),
  'POST configurableComponents/configurations/byPid/_default': (svc, body) => shown(svc, byPids(svc, body), { definition: true, mask: false, defaultsOnly: true }),
  // gatewayd's extension: the channel definitions of assets, also of one without channels.
  'POST configurableComponents/channelDefinitions/byPid': (svc, body) => ({
    configs: byPids(svc, body).filter((c) => c.factoryPid === ASSET_FACTORY).map((c) => ({ pid: c.pid, definition: ocdDto(channelOcd(c.pid, svc.effective, svc.registry)) })),
  }),
  'PUT configurableComponents/configurations/_update': async (svc, body, by) => message(await configs(body, svc, false, by)),
  // gatewayd's extension: back to the image's configuration (the runtime layer dropped).
  'EXEC _reset': async (svc, body, by) => message(await svc.reset(snap(body), by)),
};

/** configuration/v2 over REST and CONF-V2 over MQTT, on the request-handler core (src/core/). */
export const configurationFamily = (svc: Svc, outboxes?: ConnectionOutboxes): Family => ({
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
      // One request at a time, in arrival order: reads see no half-made change. A reply made in
      // pieces is made from the configuration in force when its turn came, and written after it.
      handler: async (req) => {
        const body = method === 'GET' ? undefined : await req.body();
        const release = STREAMED.has(k) ? await svc.streamTurn() : undefined;
        // A snapshot's answer is made from the snapshot parsed whole: no other request (a change)
        // runs beside it until it is written (docs/configuration-v2.md "How large a configuration can grow").
        let written: (() => void) | undefined;
        const hold = k === 'POST snapshots/byId' ? new Promise<void>((resolve) => (written = resolve)) : undefined;
        let out: unknown;
        try {
          out = await svc.serial(async () => fn(svc, body, actorOf(req), outboxes), hold);
        } finally {
          if (!(out instanceof JsonPieces)) release?.(), written?.();
        }
        if (out instanceof JsonPieces) {
          return new JsonPieces(out.pieces, (err) => {
            release?.();
            written?.();
            if (err) svc.log.error('configuration reply failed', { path, error: (err as Error)?.message ?? String(err) });
          });
        }
        return out ? rawJson(json(out)) : undefined;
      },
    };
  }),
});
