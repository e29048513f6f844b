// cloudconnection/v1, `/services/cloudconnection/v1` (role `cloudconnection`; docs/rest-api.md
// "cloudconnection/v1"): the MQTT connections of the daemon (docs/mqtt.md "Connections") — each
// one's state and counters, and the operator's connect and disconnect. Kura's CloudConnection REST
// service names a connection by its CloudEndpoint PID in a body; here the name is in the path, and
// the list carries the outbox (COMPATIBILITY.md "cloudconnection/v1").

import { RequestError } from '../core/errors.js';
import { PayloadReply, type Family } from '../core/family.js';
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
const noSuch = (name: string) => new RequestError(404, `no connection named ${JSON.stringify(name.length > 64 ? `${name.slice(0, 64)}…` : name)}`);

export function cloudConnectionFamily(d: CloudConnectionDeps): Family {
  const op = (what: 'connect' | 'disconnect') => async (req: { params: Record<string, string> }) => {
    const name = req.params.name;
    if (!(await d[what](name))) throw noSuch(name);
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
    ],
  };
}
