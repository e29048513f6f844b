// Session authentication of resources: XSRF token on every request, logout, locked sessions
// (Kura RestServiceTest 22–26, 35; docs/rest-api.md "session/v1", "Authentication").
import t from 'tap';
import { startDaemon } from '../helpers/daemon.js';
import { Browser, login } from '../helpers/session-client.js';

const S = '/services/session/v1';
const ASSETS = '/services/assets';
const basicHeader = (u: string, p: string) => ({ authorization: `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}` });

t.test('session with BASIC enabled', async (t) => {
  const d = await startDaemon(t, {
    rest: { 'login.throttle.max.delay': 0 },
    identities: {
      foo: { password: 'bar', permissions: ['rest.assets'] },
      flagged: { password: 'bar', permissions: ['rest.assets'], passwordChangeNeeded: true },
    },
  });

  t.test('22: resource through session auth with the token', async (t) => {
    const b = await login(d, 'foo', 'bar');
    t.equal((await b.request(ASSETS)).status, 200);
  });

  t.test('23: without the token the session does not authenticate', async (t) => {
    const b = new Browser(d);
    await b.loginPassword('foo', 'bar');
    const r = await b.request(ASSETS);
    t.equal(r.status, 401);
    t.equal(r.headers['www-authenticate'], 'Basic realm="kura-rest-api"');
    t.equal(r.body, '', 'bodiless');
  });

  t.test('wrong token value (case-sensitive comparison): 401', async (t) => {
    const b = new Browser(d);
    await b.loginPassword('foo', 'bar');
    const token = await b.fetchToken();
    t.equal((await b.request(ASSETS, { headers: { 'x-xsrf-token': token.toUpperCase() } })).status, 401);
    t.equal((await b.request(ASSETS, { headers: { 'x-xsrf-token': 'x' } })).status, 401);
    t.equal((await b.request(ASSETS, { headers: { 'X-XSRF-TOKEN': token } })).status, 200, 'header name is case-insensitive');
  });

  t.test('the token is required on GET too', async (t) => {
    const b = new Browser(d);
    await b.loginPassword('foo', 'bar');
    await b.fetchToken();
    delete b.headers['x-xsrf-token'];
    const r = await b.request(`${S}/currentIdentity`);
    t.equal(r.status, 401);
    t.same(r.json(), { message: 'Current session is not valid' });
  });

  t.test('24: logout ends the session and expires every cookie', async (t) => {
    const b = await login(d, 'foo', 'bar');
    t.equal((await b.request(ASSETS)).status, 200);
    const oldId = b.sessionId;
    const r = await b.request(`${S}/logout`, { method: 'POST', headers: { cookie: `JSESSIONID=${oldId}; other=1` } });
    t.equal(r.status, 204);
    t.equal(r.body, '');
    const set = r.headers['set-cookie']!;
    t.equal(set.length, 2, 'one Set-Cookie per request cookie');
    for (const [i, name] of ['JSESSIONID', 'other'].entries()) {
      t.match(set[i], new RegExp(`^${name}=; Path=/; Max-Age=0`));
    }
    t.equal((await d.request(ASSETS, { headers: { cookie: `JSESSIONID=${oldId}`, 'x-xsrf-token': b.headers['x-xsrf-token'] } })).status, 401);
    t.equal((await b.request(`${S}/xsrfToken`)).status, 401);
  });

  t.test('25: logout needs the token', async (t) => {
    const b = new Browser(d);
    await b.loginPassword('foo', 'bar');
    const r = await b.request(`${S}/logout`, { method: 'POST' });
    t.equal(r.status, 401);
    t.same(r.json(), { message: 'Current session is not valid' });
    await b.fetchToken();
    t.equal((await b.request(ASSETS)).status, 200, 'session still alive');
  });

  t.test('logout with BASIC and no session: 204, nothing to end', async (t) => {
    const r = await d.request(`${S}/logout`, { method: 'POST', headers: basicHeader('foo', 'bar') });
    t.equal(r.status, 204);
    t.equal(r.headers['set-cookie'], undefined);
  });

  t.test('26: a locked session gets a token and nothing else', async (t) => {
    const b = new Browser(d);
    const r = await b.loginPassword('flagged', 'bar');
    t.equal(r.status, 200);
    t.equal(r.body, '{"passwordChangeNeeded":true}');
    await b.fetchToken();
    t.equal((await b.request(ASSETS)).status, 401, 'resource: 401, not 403');
    t.equal((await b.request(`${S}/currentIdentity`)).status, 401);
    t.equal((await b.request(`${S}/logout`, { method: 'POST' })).status, 401, 'a locked session cannot log out');
    t.equal((await b.request(`${S}/xsrfToken`)).status, 200);
    t.equal((await b.request('/services/identity/v1/passwordRequirements')).status, 200, 'public endpoints still answer');
  });

  t.test('valid BASIC wins over a session without token; wrong BASIC falls through to a valid session', async (t) => {
    const b = new Browser(d);
    await b.loginPassword('foo', 'bar');
    const token = await b.fetchToken();
    const r1 = await b.request(ASSETS, { headers: { ...basicHeader('foo', 'bar'), 'x-xsrf-token': '' } });
    t.equal(r1.status, 200, 'BASIC, no token needed');
    const r2 = await b.request(ASSETS, { headers: { ...basicHeader('foo', 'wrong'), 'x-xsrf-token': token } });
    t.equal(r2.status, 200, 'session with token');
  });

  t.test('BASIC refuses an identity that must change its password, and a lower-case scheme', async (t) => {
    t.equal((await d.request(ASSETS, { headers: basicHeader('flagged', 'bar') })).status, 401);
    const lower = { authorization: `basic ${Buffer.from('foo:bar').toString('base64')}` };
    t.equal((await d.request(ASSETS, { headers: lower })).status, 401);
    t.equal((await d.request(ASSETS, { headers: basicHeader('foo', 'bar') })).status, 200);
  });

  t.test('a forged or unknown cookie is just anonymous', async (t) => {
    const r = await d.request(ASSETS, { headers: { cookie: 'JSESSIONID=AAAAAAAAAAAAAAAAAAAAAA', 'x-xsrf-token': 'x' } });
    t.equal(r.status, 401);
  });
});

t.test('35: session auth works with BASIC disabled, and no challenge is sent', async (t) => {
  const d = await startDaemon(t, { rest: { 'auth.basic.enabled': false }, identities: { foo: { password: 'bar', permissions: ['rest.assets'] } } });
  const b = await login(d, 'foo', 'bar');
  t.equal((await b.request(ASSETS)).status, 200);
  const anon = await d.request(ASSETS);
  t.equal(anon.status, 401);
  t.equal(anon.headers['www-authenticate'], undefined, 'no WWW-Authenticate while BASIC is off');
  const bad = await d.request(`${S}/login/password`, { method: 'POST', body: { username: 'foo', password: 'x' } });
  t.equal(bad.status, 401);
  t.equal(bad.headers['www-authenticate'], undefined);
});
