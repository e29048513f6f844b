// Node's http.Server checks its connections' header and request timeouts on an interval
// (`connectionsCheckingInterval`) that runs from listen() to close(), with or without connections.
// At the 1 s gatewayd sets (server.ts) an idle daemon woke once a second per listener, and every
// wake from idle costs CPU (on one virtual machine about 1 ms each: bench/README.md, Node-RED
// section). ConnectionsCheck stops that interval while its listener has no connection and starts it
// again, with the same callback and period, when one arrives; checks are unchanged while any
// connection is open.
//
// Node keeps the interval under a symbol of the server (lib/_http_server.js,
// `setupConnectionsTracking`, Node 18 to 22) and clears it in close(). Where it is not found in
// that form, nothing is changed and Node's own behaviour stays.

import type http from 'node:http';

const DESCRIPTION = 'http.server.connectionsCheckingInterval';

interface NodeTimeout {
  _onTimeout: unknown;
  _idleTimeout: number;
}

export class ConnectionsCheck {
  private readonly key: symbol | undefined;
  private readonly check: (() => void) | undefined;
  private readonly ms: number = 0;
  private running = true;

  /** After the server is listening (Node sets the interval up on 'listening'). */
  constructor(private readonly server: http.Server) {
    const key = Object.getOwnPropertySymbols(server).find((s) => s.description === DESCRIPTION);
    const t = key && (server as unknown as Record<symbol, NodeTimeout | undefined>)[key];
    if (t && typeof t._onTimeout === 'function' && t._idleTimeout > 0) {
      this.key = key;
      this.check = t._onTimeout as () => void;
      this.ms = t._idleTimeout;
    }
  }

  /** Node's interval was found (and is under this object's control). */
  get controlled(): boolean {
    return this.check !== undefined;
  }

  /** Whether the interval runs (always, where it is not controlled). */
  get active(): boolean {
    return this.running;
  }

  /** The listener has no connection left. */
  pause(): void {
    if (!this.check || !this.running) return;
    this.running = false;
    clearInterval((this.server as unknown as Record<symbol, NodeJS.Timeout>)[this.key!]);
  }

  /** A connection arrived. */
  resume(): void {
    if (!this.check || this.running || !this.server.listening) return;
    this.running = true;
    // Where Node's close() finds it, as Node's own was.
    (this.server as unknown as Record<symbol, NodeJS.Timeout>)[this.key!] = setInterval(this.check, this.ms).unref();
  }
}
