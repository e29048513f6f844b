// The plug-in host: what stopping a package undoes (timers, disposers, driver factories, auth
// providers), failures during activate, throwing timer callbacks, and fresh code on reinstall.

import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PluginHost, type AuthProviderSink } from '../../src/plugins/host.js';
import { DriverRegistry } from '../../src/drivers/registry.js';
import { createLogger } from '../../src/log.js';
import type { AuthProvider } from '../../src/plugins/api.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-plugins-'));
t.teardown(() => fs.rmSync(tmp, { recursive: true, force: true }));
let n = 0;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Writes a package folder with one extension module and returns it as a LoadablePackage. */
function pkg(name: string, source: string, file = 'ext.mjs') {
  const dir = path.join(tmp, `${name}-${++n}`);
  fs.mkdirSync(dir);
  fs.writeFileSync(path.join(dir, file), source);
  return { name, version: '1.0.0', dir, extensions: [file] };
}

function setup() {
  const lines: string[] = [];
  const log = createLogger('debug', (l) => lines.push(l));
  const registry = new DriverRegistry();
  const providers: AuthProvider[] = [];
  const auth: AuthProviderSink = {
    register: (p) => void providers.push(p),
    unregister: (p) => void providers.splice(providers.indexOf(p), 1),
  };
  return { lines, registry, providers, host: new PluginHost({ log, drivers: registry, auth }) };
}

const FACTORY = (name: string) =>
  `{ name: ${JSON.stringify(name)}, instanceKeys: [], channelKeys: [], validateInstance: () => [], validateChannel: () => [], create: () => ({ read: async () => [], write: async () => [], close: async () => {} }) }`;

t.test('stopping a package undoes everything it set up', async (t) => {
  const { host, registry, providers, lines } = setup();
  const g = globalThis as Record<string, any>;
  g.__plug = { ticks: 0, once: 0, disposed: 0, deactivated: 0 };
  await host.activate(pkg('full', `
    export function activate(api) {
      api.setInterval(() => globalThis.__plug.ticks++, 5);
      api.setTimeout(() => globalThis.__plug.once++, 60_000);
      const cancelled = api.setTimeout(() => globalThis.__plug.once += 100, 1);
      api.clearTimeout(cancelled);
      api.onDispose(() => { globalThis.__plug.disposed++; });
      api.registerDriverFactory(${FACTORY('plugged')});
      api.registerAuthProvider({ name: 'header-auth', authenticate: () => undefined });
      api.log.info('hello from the package');
      globalThis.__plug.api = api;
    }
    export function deactivate() { globalThis.__plug.deactivated++; }
  `));
  t.same(host.active(), ['full']);
  t.ok(registry.get('plugged'));
  t.same(providers.map((p) => p.name), ['header-auth']);
  t.match(lines.join('\n'), /msg="hello from the package" package=full/);
  t.equal(g.__plug.api.package.name, 'full');
  await sleep(40);
  t.ok(g.__plug.ticks > 0, 'interval runs');
  t.equal(g.__plug.once, 0, 'a cleared timeout never fires');

  await host.deactivate('full');
  const ticks = g.__plug.ticks;
  await sleep(40);
  t.equal(g.__plug.ticks, ticks, 'interval stopped');
  t.same([g.__plug.deactivated, g.__plug.disposed], [1, 1]);
  t.equal(registry.get('plugged'), undefined, 'factory unregistered');
  t.same(providers, [], 'auth provider unregistered');
  t.throws(() => g.__plug.api.setTimeout(() => {}, 1), /package full is stopped; timer refused/);
  t.throws(() => g.__plug.api.registerDriverFactory({}), /stopped/);
  await host.deactivate('full'); // idempotent
});

t.test('a failing activate undoes what it registered and names the module', async (t) => {
  const { host, registry } = setup();
  const p = pkg('half', `
    export function activate(api) {
      api.registerDriverFactory(${FACTORY('half-factory')});
      throw new Error('cannot reach the device');
    }
  `);
  await t.rejects(host.activate(p), /package half: extension ext\.mjs failed to activate: cannot reach the device/);
  t.equal(registry.get('half-factory'), undefined);
  t.same(host.active(), []);

  await t.rejects(host.activate(pkg('noexport', 'export const x = 1;')), /does not export an activate\(api\) function/);
  await t.rejects(host.activate(pkg('syntax', 'export function activate( {')), /failed to activate/);
  await t.rejects(host.activate(pkg('badfactory', 'export function activate(api) { api.registerDriverFactory({ name: 1 }); }')), /needs a DriverFactory/);
  const noAuth = new PluginHost({ log: createLogger('error', () => {}), drivers: new DriverRegistry() });
  await t.rejects(noAuth.activate(pkg('auth', "export function activate(api) { api.registerAuthProvider({ name: 'x' }); }")), /does not accept authentication providers/);
});

t.test('a throwing timer callback or deactivate is logged, not fatal', async (t) => {
  const { host, lines, registry } = setup();
  await host.activate(pkg('throwy', `
    export function activate(api) {
      api.setTimeout(() => { throw new Error('tick failed'); }, 1);
      api.registerDriverFactory(${FACTORY('throwy-factory')});
    }
    export function deactivate() { throw new Error('cleanup failed'); }
  `));
  await sleep(30);
  t.match(lines.join('\n'), /level=error msg="timer callback failed" package=throwy error="tick failed"/);
  await host.deactivate('throwy');
  t.match(lines.join('\n'), /deactivate of ext\.mjs failed.*cleanup failed/);
  t.equal(registry.get('throwy-factory'), undefined, 'cleanup continued after the throwing deactivate');
});

t.test('reactivating loads the module afresh', async (t) => {
  const { host } = setup();
  const g = globalThis as Record<string, any>;
  g.__loads = 0;
  const p = pkg('fresh', 'globalThis.__loads++; export function activate() {}', 'ext.js');
  fs.writeFileSync(path.join(p.dir, 'package.json'), '{"type":"module"}');
  await host.activate(p);
  await host.activate(p); // same path again, as after an uninstall and reinstall of the same version
  t.equal(g.__loads, 2, 'module code ran twice, not served from the import cache');
  await host.deactivateAll();
  t.same(host.active(), []);
});
