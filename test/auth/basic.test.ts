// BASIC authentication and role checks (Kura RestServiceTest 1, 3–6, 12, 33; docs/rest-api.md
// "Authentication": the challenge, kura.admin, permission changes applied live), and the BASIC verification cache (scrypt not recomputed per request).
import t from 'tap';
import { startDaemon } from '../helpers/daemon.js';
import { basic, login } from '../helpers/session-client.js';

const ASSETS = '/services/assets';
const CHALLENGE = 'Basic realm="kura-rest-api"';

t.test('BASIC and roles', async (t) => {
  const d = await startDaemon(t, {
    'log.level': 'debug',
    rest: { 'login.throttle.max.delay': 0 },
    identities: {
      fooo: { password: 'barr' },
      foo: { password: 'bar' },
      foo1: { password: 'bar1', permissions: ['rest.assets'] },
      boss: { password: 'boss', permissions: ['kura.admin'] },
      idadmin: { password: 'idadmin', permissions: ['rest.identity', 'rest.assets'] },
    },
  });

  t.test('1: unknown resource: 404 even with credentials', async (t) => {
    const r = await basic(d, 'foo1', 'bar1').request('/services/testservice/foo');
    t.equal(r.status, 404);
    t.equal(r.body, '');
  });

  t.test('3: authenticated without the permission: 403 with the challenge', async (t) => {
    const r = await basic(d, 'fooo', 'barr').request(ASSETS);
    t.equal(r.status, 403);
    t.equal(r.body, '');
    t.equal(r.headers['www-authenticate'], CHALLENGE, 'the BASIC challenge on a 403 too');
  });

  t.test('4: wrong password: 401', async (t) => {
    const r = await basic(d, 'foo', 'baz').request(ASSETS);
    t.equal(r.status, 401);
    t.equal(r.headers['www-authenticate'], CHALLENGE);
  });

  t.test('5: with the permission: 200', async (t) => {
    t.equal((await basic(d, 'foo1', 'bar1').request(ASSETS)).status, 200);
  });

  t.test('6: no credentials: 401', async (t) => {
    const r = await d.request(ASSETS);
    t.equal(r.status, 401);
    t.equal(r.headers['www-authenticate'], CHALLENGE);
  });

  t.test('kura.admin passes every role; currentIdentity does not expand it', async (t) => {
    t.equal((await basic(d, 'boss', 'boss').request(ASSETS)).status, 200);
    t.equal((await basic(d, 'boss', 'boss').request('/services/identity/v1/identities')).status, 200);
    const r = await basic(d, 'boss', 'boss').request('/services/session/v1/currentIdentity');
    t.same(r.json(), { name: 'boss', passwordChangeNeeded: false, permissions: ['kura.admin'] });
  });

  t.test('malformed Authorization headers are ignored', async (t) => {
    for (const h of ['Basic', 'Basic !!!', 'Basic Zm9v', `Basic ${Buffer.from('foo1:bar1').toString('base64')} extra`, 'Bearer x']) {
      t.equal((await d.request(ASSETS, { headers: { authorization: h } })).status, 401, h);
    }
    const colon = { authorization: `Basic ${Buffer.from('foo1:bar1:x').toString('base64')}` };
    t.equal((await d.request(ASSETS, { headers: colon })).status, 401, 'password is everything after the first colon');
  });

  t.test('permission changes apply to a live session at once without ending it', async (t) => {
    const s = await login(d, 'foo', 'bar');
    const admin = basic(d, 'idadmin', 'idadmin');
    t.equal((await s.request(ASSETS)).status, 403);
    t.equal((await admin.request('/services/identity/v1/identities', { method: 'PUT', body: { userName: 'foo', permissions: ['rest.assets'] } })).status, 200);
    t.equal((await s.request(ASSETS)).status, 200);
    t.equal((await admin.request('/services/identity/v1/identities', { method: 'PUT', body: { userName: 'foo', permissions: [] } })).status, 200);
    t.equal((await s.request(ASSETS)).status, 403);
    t.equal((await s.request('/services/session/v1/xsrfToken')).status, 200, 'session still valid');
  });

  t.test('the BASIC cache: scrypt runs once for repeated credentials, again after a change', async (t) => {
    const count = () => d.logs.filter((l) => /msg="password hash computed" identity=foo1\b/.test(l)).length;
    const c = basic(d, 'foo1', 'bar1');
    await c.request(ASSETS);
    const before = count();
    for (let i = 0; i < 5; i++) t.equal((await c.request(ASSETS)).status, 200);
    t.equal(count(), before, 'no hash computed for cached credentials');
    t.equal((await basic(d, 'foo1', 'wrong').request(ASSETS)).status, 401);
    t.equal(count(), before + 1, 'wrong password: computed (never cached)');
    const admin = basic(d, 'idadmin', 'idadmin');
    t.equal((await admin.request('/services/identity/v1/identities', { method: 'PUT', body: { userName: 'foo1', password: 'newpass123' } })).status, 200);
    t.equal((await c.request(ASSETS)).status, 401, 'the old password is no longer accepted from the cache');
    const c2 = basic(d, 'foo1', 'newpass123');
    t.equal((await c2.request(ASSETS)).status, 200);
    t.equal((await c2.request(ASSETS)).status, 200);
    t.ok(d.logs.every((l) => !l.includes('bar1') && !l.includes('newpass123')), 'no password in any log line');
  });
});

t.test('12: BASIC refused when password authentication is disabled', async (t) => {
  const d = await startDaemon(t, { rest: { 'auth.password.enabled': false }, identities: { foo1: { password: 'bar1', permissions: ['rest.assets'] } } });
  const r = await basic(d, 'foo1', 'bar1').request(ASSETS);
  t.equal(r.status, 401);
  t.equal(r.headers['www-authenticate'], undefined, 'BASIC needs password auth: no challenge');
});

t.test('33: BASIC refused when BASIC is disabled', async (t) => {
  const d = await startDaemon(t, { rest: { 'auth.basic.enabled': false }, identities: { foo1: { password: 'bar1', permissions: ['rest.assets'] } } });
  const r = await basic(d, 'foo1', 'bar1').request(ASSETS);
  t.equal(r.status, 401);
  t.equal(r.headers['www-authenticate'], undefined);
});
