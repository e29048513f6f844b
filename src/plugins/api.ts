/**
 * The plug-in API: what JavaScript code inside a deployment package may do.
 *
 * A package declares its extension modules in its manifest's main section, in load order:
 *
 *     Gatewayd-Extension: driver/extension.js, more.mjs
 *
 * Each is an ES module (`.mjs`, or `.js` — the store marks the package folder `"type":"module"`
 * unless the package brings its own root `package.json`). It exports:
 *
 *     export async function activate(api) { api.registerDriverFactory(myFactory); }
 *     export async function deactivate() { ... }   // optional
 *
 * `activate` runs when the package is installed, at every start (packages start in install order)
 * and when its bundle is started (docs/packages.md "Bundles"); `deactivate` runs when the package is
 * uninstalled or replaced by another version, when its bundle is stopped, and at shutdown. After `deactivate`, gatewayd also clears every timer made with `api.setTimeout` /
 * `api.setInterval`, runs every `api.onDispose` callback (close your sockets and servers there),
 * and unregisters the driver factories, authentication providers and MQTT applications the package
 * registered; assets
 * using one of its drivers then answer `Driver not attached` for their channels until a factory of
 * that name is registered again.
 *
 * Isolation — be clear about what there is none of: an extension runs in the daemon's own process,
 * thread and heap, with the daemon's user and file permissions and full access to `node:*` modules.
 * A package can read the configuration and the identity store, open any socket, block the event
 * loop or exit the process. Nothing here is a sandbox: the wrappers only let gatewayd undo what a
 * well-behaved package set up. Install only packages you trust; set `deploy.trust.anchors` to make
 * gatewayd refuse packages that are not signed by a key you trust. A thrown error in `activate` or
 * in a timer callback is caught and logged; an unhandled promise rejection or a stray event-emitter
 * error from package code is not (it is the daemon's, and may stop it). Replacing a package loads
 * the new module under a new URL; the old module's code stays in memory until the process restarts
 * (ES modules cannot be unloaded).
 */

import type { Logger } from '../log.js';
import type { DriverFactory } from '../drivers/driver.js';

/** The plug-in API version; bumped when a change could break existing extensions. */
export const PLUGIN_API_VERSION = 1;

/**
 * An authentication provider as the auth layer defines it (src/auth/). The plug-in layer only
 * passes it through; its shape is checked by whoever receives it.
 */
export type AuthProvider = { readonly name: string } & Record<string, unknown>;

/**
 * An MQTT application (Kura's RequestHandler) as src/mqtt/applications.ts defines it: requests to
 * `<prefix>/<account>/<device>/<appId>/<METHOD>/…` are handed to `handle`, whose answer is the reply.
 */
export type RequestHandler = { readonly appId: string; handle(request: any, context: any): Promise<unknown> };

/** A timer made through the API (opaque; pass it back to clearTimeout/clearInterval). */
export type PluginTimer = { readonly id: number };

export interface PluginApi {
  readonly apiVersion: number;
  /** The package this extension belongs to; `dir` is its folder (read-only by convention). */
  readonly package: { readonly name: string; readonly version: string; readonly dir: string };
  /** A logger whose lines carry `package=<name>`. */
  readonly log: Logger;
  /**
   * Adds a driver factory usable in `drivers.<id>.factory`; its name must not be taken. Its optional
   * `ocd` (property definitions) is what configuration/v2 shows for the factory PID
   * `org.eclipse.kura.driver.<name>` (docs/configuration-v2.md).
   */
  registerDriverFactory(factory: DriverFactory): void;
  /** Adds an authentication provider (throws when the daemon has no auth layer to take it). */
  registerAuthProvider(provider: AuthProvider): void;
  /** Adds an MQTT application (listed in BIRTH's `application_ids`, re-published); removed at stop. */
  registerRequestHandler(app: RequestHandler): void;
  /** As Node's, except that a delay beyond 2^31 - 1 ms is honoured (Node's fires after 1 ms). */
  setTimeout(fn: () => void, ms: number): PluginTimer;
  setInterval(fn: () => void, ms: number): PluginTimer;
  clearTimeout(timer: PluginTimer): void;
  clearInterval(timer: PluginTimer): void;
  /** Runs `fn` when the package stops (after `deactivate`): close sockets, servers, files here. */
  onDispose(fn: () => void | Promise<void>): void;
}

/** What an extension module exports. */
export interface Extension {
  activate(api: PluginApi): void | Promise<void>;
  deactivate?(): void | Promise<void>;
}
