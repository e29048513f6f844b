// Custom authentication providers (Kura RestServiceTest 7–11): an in-process daemon, because a
// provider is code handed to the auth layer (deployment packages do it through the plug-in API).
import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Daemon } from '../../src/daemon.js';
import { validateConfig } from '../../src/configuration/config.js';
import { DriverRegistry } from '../../src/drivers/registry.js';
import { builtinDrivers } from '../../src/drivers/builtin.js';
import { silentLogger } from '../../src/log.js';
import type { AuthRequest } from '../../src/auth/provider.js';
import { request } from '../helpers/daemon.js';
import { freePort } from '../helpers/ports.js';

const ASSETS = '/services/assets';
const basicHeader = (u: string, p: string) => ({ authorization: `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}` });

async function startInProcess(t: { same(a: unknown, b: unknown): unknown; teardown(fn: () => unknown): void }) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-custom-'));
  const port = await freePort();
  const registry = new DriverRegistry(builtinDrivers());
  const { config, problems } = validateConfig({
    dataDir: path.join(dir, 'data'),
    http: { 'http.ports': [port], 'bind.address': '127.0.0.1' },
    rest: { 'login.throttle.max.delay': 0 },
    identities: {
      admin: { password: 'admin', permissions: ['kura.admin'] },
      foo: { password: 'bar', permissions: ['rest.assets'] },
    },
  }, registry, dir);
  t.same(problems.filter((p) => p.severity === 'error'), []);
  const daemon = new Daemon({ config, log: silentLogger, registry });
  await daemon.start();
  t.teardown(async () => {
    await daemon.stop(0);
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const req = (p: string, o: Parameters<typeof request>[2] = {}) => request({ http: [port], https: [], clientAuth: [] }, p, o);
  return { daemon, req, providers: daemon.auth!.providers };
}

/** Kura's test provider: BASIC `user:password` mapped to another identity. */
function mapping(name: string, user: string, password: string, to: string, priority?: number) {
  const p = {
    name,
    priority,
    calls: 0,
    enabled: 0,
    disabled: 0,
    authenticate(req: AuthRequest) {
      p.calls++;
      const h = req.headers.authorization;
      return h === basicHeader(user, password).authorization ? to : undefined;
    },
    onEnabled() {
      p.enabled++;
    },
    onDisabled() {
      p.disabled++;
    },
  };
  return p;
}

t.test('custom providers', async (t) => {
  const { req, providers } = await startInProcess(t);

  t.test('7/8: onEnabled on register, onDisabled on unregister', async (t) => {
    const p = mapping('lifecycle', 'x', 'y', 'admin');
    providers.register(p);
    t.equal(p.enabled, 1);
    t.equal(p.disabled, 0);
    providers.unregister(p);
    t.equal(p.disabled, 1);
    t.same(providers.list(), []);
  });

  t.test('9: an unprioritised provider authenticates what the built-ins do not', async (t) => {
    const p = mapping('custom', 'bar', 'baz', 'admin');
    providers.register(p);
    t.teardown(() => providers.unregister(p));
    const r = await req(ASSETS, { headers: basicHeader('bar', 'baz') });
    t.equal(r.status, 200, 'admin via the custom provider (kura.admin implies rest.assets)');
    t.equal(p.calls, 1);
  });

  t.test('10: low priority (1000): built-in BASIC wins and the provider is not asked', async (t) => {
    const p = mapping('low', 'foo', 'bar', 'admin', 1000);
    providers.register(p);
    t.teardown(() => providers.unregister(p));
    const r = await req('/services/session/v1/currentIdentity', { headers: basicHeader('foo', 'bar') });
    t.equal(r.status, 200);
    t.equal(r.json().name, 'foo', 'authenticated by BASIC');
    t.equal(p.calls, 0, 'provider not invoked');
  });

  t.test('11: high priority (1): the provider runs first', async (t) => {
    const p = mapping('high', 'foo', 'bar', 'admin', 1);
    providers.register(p);
    t.teardown(() => providers.unregister(p));
    const r = await req('/services/session/v1/currentIdentity', { headers: basicHeader('foo', 'bar') });
    t.equal(r.json().name, 'admin', 'authenticated by the provider');
    t.equal(p.calls, 1);
  });

  t.test('a throwing provider declines; the next one still runs', async (t) => {
    const bad = { name: 'throws', priority: 10, authenticate: () => { throw new Error('boom'); } };
    const rejects = { name: 'rejects', priority: 11, authenticate: () => Promise.reject(new Error('boom')) };
    const good = mapping('good', 'bar', 'baz', 'foo', 12);
    for (const p of [bad, rejects, good]) providers.register(p);
    t.teardown(() => [bad, rejects, good].forEach((p) => providers.unregister(p)));
    t.equal((await req(ASSETS, { headers: basicHeader('bar', 'baz') })).status, 200);
    t.equal((await req(ASSETS)).status, 401);
  });

  t.test('a name that is not an identity reaches only routes without a role', async (t) => {
    const p = { name: 'ghost', authenticate: () => ({ name: 'ghost' }) };
    providers.register(p);
    t.teardown(() => providers.unregister(p));
    t.equal((await req(ASSETS)).status, 403);
    const r = await req('/services/session/v1/currentIdentity');
    t.same(r.json(), { name: 'ghost', passwordChangeNeeded: false, permissions: [] });
  });

  t.test('COMPATIBILITY.md: two providers with the same priority both run (Kura drops one)', async (t) => {
    const a = mapping('same-a', 'a', 'a', 'foo', 5);
    const b = mapping('same-b', 'b', 'b', 'admin', 5);
    providers.register(a);
    providers.register(b);
    t.teardown(() => [a, b].forEach((p) => providers.unregister(p)));
    t.equal((await req('/services/session/v1/currentIdentity', { headers: basicHeader('b', 'b') })).json().name, 'admin');
    t.equal(a.calls, 1, 'the first ran and declined');
  });

  t.test('the verifyPassword and identity helpers (Kura example provider with headers)', async (t) => {
    const p = {
      name: 'example',
      priority: 50,
      async authenticate(req: AuthRequest) {
        const user = req.headers['x-example-username'];
        const password = req.headers['x-example-password'];
        if (typeof user !== 'string' || typeof password !== 'string') return undefined;
        if (req.identity(user)?.passwordChangeNeeded !== false) return undefined;
        return (await req.verifyPassword(user, password)) ? user : undefined;
      },
    };
    providers.register(p);
    t.teardown(() => providers.unregister(p));
    t.equal((await req(ASSETS, { headers: { 'x-example-username': 'foo', 'x-example-password': 'bar' } })).status, 200);
    t.equal((await req(ASSETS, { headers: { 'x-example-username': 'foo', 'x-example-password': 'nope' } })).status, 401);
  });

  t.test('a provider that never answers is given up after 5 s; the request goes on', async (t) => {
    const p = { name: 'hangs', priority: 1, authenticate: () => new Promise<undefined>(() => {}) };
    providers.register(p);
    t.teardown(() => providers.unregister(p));
    const r = await req(ASSETS, { headers: basicHeader('foo', 'bar'), timeoutMs: 9000 });
    t.equal(r.status, 200, 'BASIC after the hung provider');
  });

  t.test('malformed providers are refused with the reason', async (t) => {
    t.throws(() => providers.register({ name: 'x' }), /authenticate must be a function/);
    t.throws(() => providers.register({ authenticate() {} }), /needs a name/);
    t.throws(() => providers.register({ name: 'y', authenticate() {}, priority: 'high' }), /priority must be a number/);
    const p = { name: 'dup', authenticate: () => undefined };
    providers.register(p);
    t.throws(() => providers.register({ name: 'dup', authenticate: () => undefined }), /already registered/);
    providers.unregister(p);
  });
});
