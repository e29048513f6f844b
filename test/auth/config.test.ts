// The rest configuration parameters and their dependencies (docs/configuration.md "`rest`: authentication and sessions"):
// session endpoints 404 when sessions are off except changePassword and authenticationInfo.
import t from 'tap';
import fs from 'node:fs';
import { startDaemon } from '../helpers/daemon.js';
import { Browser, login } from '../helpers/session-client.js';

const S = '/services/session/v1';
const basicHeader = (u: string, p: string) => ({ authorization: `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}` });

t.test('session management disabled from start-up', async (t) => {
  const d = await startDaemon(t, { rest: { 'session.management.enabled': false }, console: { 'new.password.min.length': 1 }, identities: { foo: { password: 'bar', permissions: ['rest.assets'] } } });
  for (const [method, p] of [['POST', '/login/password'], ['POST', '/login/certificate'], ['GET', '/xsrfToken'], ['POST', '/logout'], ['GET', '/currentIdentity']]) {
    const r = await d.request(`${S}${p}`, { method, body: method === 'POST' ? { username: 'foo', password: 'bar' } : undefined });
    t.equal(r.status, 404, `${method} ${p}`);
    t.equal(r.body, '', 'bodiless');
  }
  t.equal((await d.request(`${S}/authenticationInfo`)).status, 200);
  const r = await d.request(`${S}/changePassword`, { method: 'POST', body: {} });
  t.equal(r.status, 400, 'changePassword still reachable');
  const ok = await d.request(`${S}/changePassword`, { method: 'POST', body: { currentPassword: 'bar', newPassword: 'baz' }, headers: basicHeader('foo', 'bar') });
  t.equal(ok.status, 204, 'and works with BASIC');
  t.equal((await d.request('/services/assets', { headers: basicHeader('foo', 'baz') })).status, 200);
});

t.test('password authentication disabled', async (t) => {
  const d = await startDaemon(t, { rest: { 'auth.password.enabled': false }, identities: { foo: { password: 'bar' } } });
  t.equal((await d.request(`${S}/login/password`, { method: 'POST', body: { username: 'foo', password: 'bar' } })).status, 404);
  t.equal((await d.request(`${S}/authenticationInfo`)).body, '{"passwordAuthenticationEnabled":false,"certificateAuthenticationEnabled":false}');
});

t.test('session management switched off and on by SIGHUP: sessions pause, are kept, and resume', async (t) => {
  const d = await startDaemon(t, { identities: { foo: { password: 'bar', permissions: ['rest.assets'] } } });
  const b = await login(d, 'foo', 'bar');
  const cfg = JSON.parse(fs.readFileSync(d.configFile, 'utf8'));
  const reload = async (rest: Record<string, unknown>) => {
    cfg.rest = rest;
    fs.writeFileSync(d.configFile, JSON.stringify(cfg));
    const n = d.logs.filter((l) => l.includes('configuration reloaded')).length;
    d.signal('SIGHUP');
    for (let i = 0; i < 100 && d.logs.filter((l) => l.includes('configuration reloaded')).length === n; i++) await new Promise((r) => setTimeout(r, 20));
  };
  await reload({ 'session.management.enabled': false });
  t.equal((await b.request('/services/assets')).status, 401, 'COMPATIBILITY.md: a disabled session layer authenticates nothing (Kura keeps it until restart)');
  t.equal((await b.request(`${S}/xsrfToken`)).status, 404);
  await reload({});
  t.equal((await b.request('/services/assets')).status, 200, 'the session was kept');
});

t.test('allowed.ports with the plain port listed: that port works', async (t) => {
  const d = await startDaemon(t, (p) => ({ rest: { 'allowed.ports': [p.http[0]] } }), { http: 2 });
  t.equal((await d.request(`${S}/authenticationInfo`, { port: d.ports.http[0] })).status, 200);
  const r = await d.request(`${S}/authenticationInfo`, { port: d.ports.http[1] });
  t.equal(r.status, 404);
  t.equal((await d.request('/services/nothing', { port: d.ports.http[1] })).status, 404);
});

t.test('check-config reports bad rest and console values with their key paths', async (t) => {
  const { runCli } = await import('../helpers/daemon.js');
  const os = await import('node:os');
  const path = await import('node:path');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-authcfg-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const f = path.join(dir, 'c.json');
  fs.writeFileSync(f, JSON.stringify({
    rest: { 'login.throttle.max.delay': -1, 'session.max.count': 0, 'allowed.ports': ['x'] },
    console: { 'new.password.min.length': 'eight' },
    identities: { 'bad name': { password: 'x' }, ok: { password: 'x', passwordHash: 'y' } },
  }));
  const r = runCli(['check-config', '--config', f]);
  t.equal(r.status, 1);
  for (const k of ['rest.login.throttle.max.delay', 'rest.session.max.count', 'rest.allowed.ports[0]', 'console.new.password.min.length', 'identities.bad name', 'identities.ok']) {
    t.match(r.stdout, `error: ${k}`, k);
  }
});
