// CONF-V1, Kura's CloudConfigurationHandler (the application Eclipse Kapua's Configuration tab, its
// "Configuration Put" job step and its snapshot rollback speak), over the configuration service of
// configuration/v2 and CONF-V2: one model, three front ends (docs/mqtt.md "CONF-V1"). Bodies are
// Kura's esf XML (src/api/conf-v1/esf-xml.ts); a change is configuration/v2's update, with its
// validation, its messages and its rule on properties reserved to kura.admin.
//
//   GET/configurations            every component with a definition, with its ocd:OCD
//   GET/configurations/<pid>      that component (none: an empty esf:configurations, as Kura)
//   PUT/configurations            the configurations of the body (Kura's merge), then a snapshot
//   PUT/configurations/<pid>      only the body's configuration of that pid, then a snapshot
//   GET/snapshots                 esf:snapshot-ids, oldest first
//   GET/snapshots/<id>            the snapshot's configurations, without definitions
//   EXEC/snapshot                 a new snapshot: esf:snapshot-ids with its id
//   EXEC/rollback[/<id>]          back to snapshot <id> (without: the one before the latest)
//
// Where Kura differs (COMPATIBILITY.md "CONF-V1"): a PUT or a rollback is applied before the reply,
// so a refusal is the reply's error (Kura answers 200 and applies a second later, logging what
// fails), and passwords are never shown (Kura shows them base64-encoded).

import { decodeConfigurations, snapshotIdsXml, configurationsXml, ESF_NAMESPACE } from './esf-xml.js';
import { configurationDtos } from './configurations.js';
import { actorOf, updateConfigurations } from '../configuration.js';
import { XmlError } from '../../core/xml.js';
import { RequestError, notSupported } from '../../core/errors.js';
import { PayloadReply, TextPieces, type CoreRequest, type Family, type Method } from '../../core/family.js';
import { ASSET_FACTORY, componentOf, type Component, type ComponentRef } from '../../configuration/model.js';
import { AssetSource, shownOf } from '../../configuration/reply.js';
import { ConfigError, type ConfigurationService } from '../../configuration/service.js';
import type { ChangeActor } from '../../configuration/reserved.js';

type Svc = ConfigurationService;
const bad = (text: string) => new ConfigError(400, text);

/** The XML of the components `refs` of the configuration in force now, made while it is sent. */
function configurationsOf(svc: Svc, refs: ComponentRef[], onlyDefined: boolean): Iterable<string> {
  const raw = svc.effective;
  return configurationsXml(configurationDtos(shownOf(raw, refs, (pid) => componentOf(raw, pid)), raw, svc.registry, { definition: true, onlyDefined }));
}

/** A snapshot id as Kura reads it (Long.parseLong); not a number: 400. */
function snapshotId(text: string): number {
  const id = /^[+-]?\d{1,19}$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(id)) throw bad(`The snapshot id ${text} is not a number`);
  return id;
}

/** A LONG the XML carried beyond what a configuration value holds exactly (a JavaScript number: ±2^53). */
function refuseInexact(pid: string, properties: Record<string, { value: unknown }>): void {
  for (const [k, p] of Object.entries(properties)) {
    const v = [p.value].flat().find((x) => typeof x === 'bigint');
    if (v !== undefined) throw bad(`Invalid property for type LONG: ${v} (${pid} property ${k}: beyond ±9007199254740991, the largest integer a configuration value holds exactly)`);
  }
}

/** PUT/configurations[/<pid>]: the XML read (bounded), then configuration/v2's update with a snapshot. */
async function put(svc: Svc, body: Buffer | undefined, by: ChangeActor, pid: string | undefined): Promise<undefined> {
  if (body === undefined || body.length === 0) throw bad(`The request has no body: PUT/configurations takes <esf:configurations> in namespace ${ESF_NAMESPACE}`);
  let decoded;
  try {
    decoded = decodeConfigurations(body);
  } catch (err) {
    if (err instanceof XmlError) throw bad(`Invalid configurations XML: ${err.message}`);
    throw err;
  }
  // Kura applies, of PUT/configurations/<pid>, only the body's configuration of that pid.
  const chosen = pid === undefined ? decoded : decoded.filter((c) => c.pid === pid);
  if (pid !== undefined && chosen.length === 0) throw bad(`The body has no configuration of pid ${pid}`);
  for (const c of chosen) refuseInexact(c.pid, c.properties);
  // A password sent back as the placeholder (keepStored) is left out: its stored value stays.
  const configs = chosen.map((c) => ({ pid: c.pid, properties: c.properties }));
  return svc.serial(async () => {
    await updateConfigurations(svc, { configs, takeSnapshot: true }, by);
    return undefined;
  });
}

/** A reply made while it is written: a turn of the configuration service's, held until it is (as configuration/v2's). */
async function streamed(svc: Svc, make: () => Iterable<string>): Promise<TextPieces> {
  const release = await svc.streamTurn();
  let pieces: Iterable<string>;
  try {
    pieces = await svc.serial(async () => make());
  } catch (err) {
    release();
    throw err;
  }
  return new TextPieces(pieces, (err) => {
    release();
    if (err) svc.log.error('CONF-V1 reply failed', { error: (err as Error)?.message ?? String(err) });
  });
}

const ROUTES: Record<string, (svc: Svc, req: CoreRequest) => unknown> = {
  'GET configurations': (svc) => streamed(svc, () => configurationsOf(svc, svc.components(), true)),
  'GET configurations/:pid': (svc, req) => streamed(svc, () => configurationsOf(svc, svc.components().filter((c) => c.pid === req.params.pid), false)),
  'PUT configurations': (svc, req) => put(svc, req.payload, actorOf(req), undefined),
  'PUT configurations/:pid': (svc, req) => put(svc, req.payload, actorOf(req), req.params.pid),
  'GET snapshots': (svc) => new PayloadReply({ body: snapshotIdsXml(svc.store.snapshotIds()) }),
  'GET snapshots/:id': async (svc, req) => {
    const id = snapshotId(req.params.id);
    const release = await svc.streamTurn();
    // Made from the snapshot read whole: no change runs beside it until it is written
    // (docs/configuration-v2.md "How large a configuration can grow").
    let written!: () => void;
    const hold = new Promise<void>((resolve) => (written = resolve));
    let pieces: Iterable<string>;
    try {
      pieces = await svc.serial(async () => {
        const items = svc.readSnapshot(id).map((c: Component) => (c.factoryPid === ASSET_FACTORY ? AssetSource.ofProps(c) : c));
        return configurationsXml(configurationDtos(items, svc.effective, svc.registry, { definition: false }));
      }, hold);
    } catch (err) {
      release();
      written();
      throw err;
    }
    return new TextPieces(pieces, (err) => {
      release();
      written();
      if (err) svc.log.error('CONF-V1 reply failed', { error: (err as Error)?.message ?? String(err) });
    });
  },
  'EXEC snapshot': async (svc) => new PayloadReply({ body: snapshotIdsXml([await svc.serial(() => svc.snapshot())]) }),
  'EXEC rollback': (svc, req) =>
    svc.serial(async () => {
      const ids = svc.store.snapshotIds();
      const id = ids[ids.length - 2];
      if (id === undefined) throw new ConfigError(500, 'Configuration snapshot No Snapshot Available was not found.');
      await svc.rollback(id, actorOf(req));
      return undefined;
    }),
  'EXEC rollback/:id': (svc, req) => {
    const id = snapshotId(req.params.id);
    return svc.serial(async () => {
      await svc.rollback(id, actorOf(req));
      return undefined;
    });
  },
};

/** The resources CONF-V1 knows, and how many levels each takes at most (Kura: more is 400). */
const DEPTH: Record<string, number> = { configurations: 2, snapshots: 2, snapshot: 1, rollback: 2 };

/** CONF-V1 over MQTT, on the request-handler core (src/core/), role `configuration` as configuration/v2. */
export const confV1Family = (svc: Svc): Family => ({
  name: 'CONF-V1',
  appId: 'CONF-V1',
  role: 'configuration',
  errors: 'message',
  routes: Object.entries(ROUTES).map(([k, handler]) => {
    const [method, path] = k.split(' ') as [Method, string];
    return { method, path, handler: (req: CoreRequest) => handler(svc, req) };
  }),
  noMatch(method, resources) {
    // Kura's handler implements GET, PUT and EXEC; POST and DEL are the request handler's default.
    if (method === 'POST' || method === 'DEL') return notSupported(method);
    if (resources.length === 0) return new RequestError(400, `${method} without a resource`);
    const depth = DEPTH[resources[0]];
    if (depth !== undefined && resources.length > depth) return new RequestError(400, `${method}/${resources.join('/')}: too many resources for ${resources[0]}`);
    return new RequestError(404, 'Not found.');
  },
});
