// Loads, starts and stops the extension modules of installed packages (contract: src/plugins/api.ts).
//
// Everything a package registers goes through its own scoped PluginApi, so stopping the package
// can undo exactly that: its timers, disposers, driver factories and authentication providers.

import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Logger } from '../log.js';
import type { DriverFactory } from '../drivers/driver.js';
import { hopTimer, TIMER_MAX_MS } from '../core/timers.js';
import { PLUGIN_API_VERSION, type AuthProvider, type Extension, type PluginApi, type PluginTimer, type RequestHandler } from './api.js';

/** Where driver factories go (src/drivers/registry.ts's DriverRegistry fits). */
export interface DriverFactorySink {
  register(factory: DriverFactory): void;
  unregister(name: string): void;
}

/** Where authentication providers go (the auth layer supplies it). */
export interface AuthProviderSink {
  register(provider: AuthProvider): void;
  unregister(provider: AuthProvider): void;
}

/** Where MQTT applications go (the daemon's MqttApplications fits). */
export interface MqttApplicationSink {
  register(app: RequestHandler): void;
  unregister(appId: string): boolean;
}

export interface PluginHostOptions {
  log: Logger;
  drivers: DriverFactorySink;
  auth?: AuthProviderSink;
  applications?: MqttApplicationSink;
  /** Test seam; the default imports the module by file URL. */
  importModule?: (url: string) => Promise<unknown>;
}

/** A package whose extensions can be started: `dir` is absolute, `extensions` relative to it. */
export interface LoadablePackage {
  name: string;
  version: string;
  dir: string;
  extensions: string[];
}

// The bundle is an ES module (build/build.mjs), and esbuild leaves an `import()` of a computed
// specifier alone, so the same native dynamic import loads extensions in the bundle and under tap.
const nativeImport = (url: string): Promise<unknown> => import(url);

interface Running {
  pkg: LoadablePackage;
  extensions: { file: string; module: Extension }[];
  timers: Map<number, NodeJS.Timeout>;
  disposers: (() => void | Promise<void>)[];
  factories: string[];
  providers: AuthProvider[];
  apps: string[];
  stopped: boolean;
}

export class PluginHost {
  private readonly running = new Map<string, Running>();
  private loads = 0;
  private timerIds = 0;

  constructor(private readonly opts: PluginHostOptions) {}

  /** Names of the packages whose code is running. */
  active(): string[] {
    return [...this.running.keys()];
  }

  /** Driver factory names registered by a running package. */
  factoriesOf(name: string): string[] {
    return [...(this.running.get(name)?.factories ?? [])];
  }

  /**
   * Imports and activates the package's extensions in order. On failure everything it registered
   * so far is undone and the error names the package and the module.
   */
  async activate(pkg: LoadablePackage): Promise<void> {
    if (this.running.has(pkg.name)) await this.deactivate(pkg.name);
    if (pkg.extensions.length === 0) return;
    const state: Running = { pkg, extensions: [], timers: new Map(), disposers: [], factories: [], providers: [], apps: [], stopped: false };
    this.running.set(pkg.name, state);
    const log = this.opts.log.child({ package: pkg.name });
    const api = this.makeApi(state, log);
    const load = ++this.loads;
    for (const file of pkg.extensions) {
      try {
        const abs = path.resolve(pkg.dir, file);
        // A query per load: a reinstalled package must run its new code, not the cached module.
        const url = `${pathToFileURL(abs).href}?load=${load}`;
        const mod = (await (this.opts.importModule ?? nativeImport)(url)) as Partial<Extension>;
        if (typeof mod?.activate !== 'function') throw new Error('it does not export an activate(api) function');
        state.extensions.push({ file, module: mod as Extension });
        await mod.activate(api);
      } catch (err) {
        await this.deactivate(pkg.name);
        throw new Error(`package ${pkg.name}: extension ${file} failed to activate: ${(err as Error)?.message ?? String(err)}`);
      }
    }
    log.info('package extensions active', { version: pkg.version, extensions: pkg.extensions.join(',') });
  }

  /** Stops a package's code: deactivate(), then its timers, disposers, factories and providers. */
  async deactivate(name: string): Promise<void> {
    const state = this.running.get(name);
    if (!state) return;
    this.running.delete(name);
    const log = this.opts.log.child({ package: name });
    const attempt = async (what: string, fn: () => void | Promise<void>) => {
      try {
        await fn();
      } catch (err) {
        log.warn(`${what} failed`, { error: (err as Error)?.message ?? String(err) });
      }
    };
    for (const { file, module } of [...state.extensions].reverse()) {
      if (typeof module.deactivate === 'function') await attempt(`deactivate of ${file}`, () => module.deactivate!());
    }
    state.stopped = true;
    for (const t of state.timers.values()) clearTimeout(t);
    state.timers.clear();
    for (const d of state.disposers.reverse()) await attempt('dispose callback', d);
    for (const f of state.factories) await attempt(`unregistering driver factory ${f}`, () => this.opts.drivers.unregister(f));
    for (const p of state.providers) await attempt(`unregistering auth provider ${p.name}`, () => this.opts.auth?.unregister(p));
    for (const a of state.apps) await attempt(`unregistering MQTT application ${a}`, () => void this.opts.applications?.unregister(a));
    log.info('package extensions stopped');
  }

  async deactivateAll(): Promise<void> {
    for (const name of [...this.running.keys()].reverse()) await this.deactivate(name);
  }

  private makeApi(state: Running, log: Logger): PluginApi {
    const live = (what: string) => {
      if (state.stopped) throw new Error(`package ${state.pkg.name} is stopped; ${what} refused`);
    };
    const guard = (fn: () => void) => () => {
      try {
        fn();
      } catch (err) {
        // A throwing timer callback must not take the daemon down.
        log.error('timer callback failed', { error: (err as Error)?.message ?? String(err) });
      }
    };
    const addTimer = (fn: () => void, ms: number, repeat: boolean): PluginTimer => {
      live('timer');
      const id = ++this.timerIds;
      const run = guard(fn);
      // Node sets a delay beyond 2^31 - 1 ms to 1 ms (src/core/timers.ts): a package's long delay
      // (a property, a back-off it doubles) is waited for in steps instead, as asked.
      if (Number(ms) > TIMER_MAX_MS) {
        const fire = () => {
          if (!repeat) state.timers.delete(id);
          run();
        };
        hopTimer(fire, Number(ms), repeat, (handle) => void state.timers.set(id, handle.unref()));
        return Object.freeze({ id });
      }
      const handle = repeat
        ? setInterval(run, ms)
        : setTimeout(() => {
            state.timers.delete(id);
            run();
          }, ms);
      handle.unref();
      state.timers.set(id, handle);
      return Object.freeze({ id });
    };
    const clear = (t: PluginTimer) => {
      const h = state.timers.get(t?.id);
      if (h) clearTimeout(h);
      state.timers.delete(t?.id);
    };
    return Object.freeze({
      apiVersion: PLUGIN_API_VERSION,
      package: Object.freeze({ name: state.pkg.name, version: state.pkg.version, dir: state.pkg.dir }),
      log,
      registerDriverFactory: (factory: DriverFactory) => {
        live('registerDriverFactory');
        if (!factory || typeof factory.name !== 'string' || typeof factory.create !== 'function') {
          throw new Error('registerDriverFactory needs a DriverFactory with a name and create()');
        }
        this.opts.drivers.register(factory);
        state.factories.push(factory.name);
        log.info('driver factory registered', { factory: factory.name });
      },
      registerAuthProvider: (provider: AuthProvider) => {
        live('registerAuthProvider');
        if (!this.opts.auth) throw new Error('this daemon does not accept authentication providers');
        if (!provider || typeof provider.name !== 'string') throw new Error('registerAuthProvider needs a provider with a name');
        this.opts.auth.register(provider);
        state.providers.push(provider);
        log.info('authentication provider registered', { provider: provider.name });
      },
      registerRequestHandler: (app: RequestHandler) => {
        live('registerRequestHandler');
        if (!this.opts.applications) throw new Error('this daemon does not accept MQTT applications');
        if (!app || typeof app.appId !== 'string' || typeof app.handle !== 'function') throw new Error('registerRequestHandler needs { appId, handle(request, context) }');
        this.opts.applications.register(app);
        state.apps.push(app.appId);
        log.info('MQTT application registered', { app: app.appId });
      },
      setTimeout: (fn: () => void, ms: number) => addTimer(fn, ms, false),
      setInterval: (fn: () => void, ms: number) => addTimer(fn, ms, true),
      clearTimeout: clear,
      clearInterval: clear,
      onDispose: (fn: () => void | Promise<void>) => {
        live('onDispose');
        state.disposers.push(fn);
      },
    });
  }
}
