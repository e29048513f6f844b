// cloudconnection/v1, `/services/cloudconnection/v1` (role `cloudconnection`; docs/rest-api.md
// "cloudconnection/v1"): the MQTT connections of the daemon (docs/mqtt.md "Connections") — each
// one's state and counters, and the operator's connect and disconnect, by name in the path, the
// list carrying the outbox. Beside them, Kura's own resources that name a connection by its
// CloudEndpoint PID (`org.eclipse.kura.cloud.CloudService[-<name>]`) in a body: `instances`,
// `cloudEndpoint/connect`, `…/disconnect`, `…/isConnected` and `…/stackComponentPids`, so that a
// Kura client works unchanged (COMPATIBILITY.md "cloudconnection/v1").

import { RequestError } from '../core/errors.js';
import { PayloadReply, type CoreRequest, type Family } from '../core/family.js';
import { isPlainObject } from '../core/schema.js';
import { clip } from '../channels/values.js';
import { CLOUD_FACTORY, connectionOfPid, connectionPids } from '../configuration/model.js';
import { redactUrl } from '../deploy/fetch.js';

/** One connection as the daemon reports it (src/mqtt/service.ts ConnectionStats, with its name and type). */
export interface ConnectionState {
  name: string;
  type: string;
  connected: boolean;
  held: boolean;
  brokerUrl: string;
  clientId: string;
  outbox: { pending: number; dropped: number; bytes: number };
  published: number;
  reconnects: number;
  lastError: { at: number; message: string } | null;
}

export interface CloudConnectionDeps {
  list(): ConnectionState[];
  /** False: no connection of that name. */
  connect(name: string): Promise<boolean>;
  disconnect(name: string): Promise<boolean>;
}

/** The answer's fields in a fixed order; the broker URL without user information. */
const shown = (c: ConnectionState) => ({
  name: c.name,
  type: c.type,
  connected: c.connected,
  brokerUrl: redactUrl(c.brokerUrl),
  outbox: { pending: c.outbox.pending, dropped: c.outbox.dropped, bytes: c.outbox.bytes },
  clientId: c.clientId,
  // Disconnected on request: stays so until `_connect` (or a restart).
  disconnectedOnRequest: c.held,
  published: c.published,
  reconnects: c.reconnects,
  lastError: c.lastError && { at: c.lastError.at, message: c.lastError.message },
});

// A name is at most 64 characters (docs/configuration.md "Connections"): no longer text is echoed.
const noSuch = (name: string) => new RequestError(404, `no connection named ${JSON.stringify(clip(name))}`);

/** Bound on a Kura request body: two PIDs of at most 200 characters and their keys. */
const KURA_BODY_LIMIT = 4096;

/** A connection's CloudEndpoint PID (its CloudService component's). */
const endpointPid = (name: string) => connectionPids(name)[1];

/** A Kura request body's string field (at most 200 characters, as a PID is); 400 otherwise. */
function pidField(body: unknown, key: string): string {
  const v = isPlainObject(body) ? body[key] : undefined;
  if (typeof v !== 'string' || v === '' || v.length > 200) throw new RequestError(400, `${key} is required: a CloudEndpoint PID (e.g. ${CLOUD_FACTORY})`);
  return v;
}

export function cloudConnectionFamily(d: CloudConnectionDeps): Family {
  const op = (what: 'connect' | 'disconnect') => async (req: { params: Record<string, string> }) => {
    const name = req.params.name;
    if (!(await d[what](name))) throw noSuch(name);
    return new PayloadReply({ status: 204 });
  };
  /** The connection a Kura body's `cloudEndpointPid` names: a CloudService PID of one that exists; 404 otherwise. */
  const endpoint = async (req: CoreRequest): Promise<ConnectionState> => endpointOf(await req.body({ limit: KURA_BODY_LIMIT }));
  const endpointOf = (body: unknown): ConnectionState => {
    const pid = pidField(body, 'cloudEndpointPid');
    const conn = connectionOfPid(pid);
    const c = conn?.factoryPid === CLOUD_FACTORY ? d.list().find((x) => x.name === conn.name) : undefined;
    if (!c) throw new RequestError(404, `no CloudEndpoint ${JSON.stringify(clip(pid, 80))}`);
    return c;
  };
  const kuraOp = (what: 'connect' | 'disconnect') => async (req: CoreRequest) => {
    const c = await endpoint(req);
    await d[what](c.name);
    return new PayloadReply({ status: 204 });
  };
  return {
    name: 'cloudconnection/v1',
    rest: '/services/cloudconnection/v1',
    role: 'cloudconnection',
    errors: 'json',
    routes: [
      { method: 'GET', path: 'connections', handler: () => d.list().map(shown) },
      {
        method: 'GET',
        path: 'connections/:name',
        handler: (req) => {
          const c = d.list().find((x) => x.name === req.params.name);
          if (!c) throw noSuch(req.params.name);
          return shown(c);
        },
      },
      { method: 'EXEC', path: 'connections/:name/_connect', handler: op('connect') },
      { method: 'EXEC', path: 'connections/:name/_disconnect', handler: op('disconnect') },
      // Kura's shapes (its CloudConnectionRestService): the connections as CloudService endpoints, no publishers or subscribers.
      {
        method: 'GET',
        path: 'instances',
        handler: () => ({
          cloudEndpointInstances: d.list().map((c) => ({ cloudConnectionFactoryPid: CLOUD_FACTORY, cloudEndpointPid: endpointPid(c.name), state: c.connected ? 'CONNECTED' : 'DISCONNECTED', cloudEndpointType: 'CLOUD_CONNECTION_MANAGER' })),
          pubsubInstances: [],
        }),
      },
      { method: 'POST', path: 'cloudEndpoint/connect', handler: kuraOp('connect') },
      { method: 'POST', path: 'cloudEndpoint/disconnect', handler: kuraOp('disconnect') },
      { method: 'POST', path: 'cloudEndpoint/isConnected', handler: async (req) => ({ connected: (await endpoint(req)).connected }) },
      {
        method: 'POST',
        path: 'cloudEndpoint/stackComponentPids',
        handler: async (req) => {
          const body = await req.body({ limit: KURA_BODY_LIMIT });
          const factory = pidField(body, 'cloudConnectionFactoryPid');
          if (factory !== CLOUD_FACTORY) throw new RequestError(404, `no cloud connection factory ${JSON.stringify(clip(factory, 80))}; the one here is ${CLOUD_FACTORY}`);
          const [transport, cloud] = connectionPids(endpointOf(body).name);
          // Kura's stack has a DataService between the two; here there is none (COMPATIBILITY.md).
          return { pids: [cloud, transport] };
        },
      },
    ],
  };
}
