// changePassword: check order, strength rules, session end (Kura RestServiceTest 27, 28, 37–42;
// docs/rest-api.md "session/v1" and "Password checks").
import t from 'tap';
import fs from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { startDaemon } from '../helpers/daemon.js';
import { Browser, login } from '../helpers/session-client.js';

const S = '/services/session/v1';
const ASSETS = '/services/assets';
const change = (b: Browser, currentPassword: string, newPassword: string) =>
  b.request(`${S}/changePassword`, { method: 'POST', body: { currentPassword, newPassword } });
const PREFIX = 'The new password does not satisfy password strenght requirements: ';

const rules = (min: number, digits = false, special = false, cases = false) => ({
  'new.password.min.length': min,
  'new.password.require.digits': digits,
  'new.password.require.special.characters': special,
  'new.password.require.both.cases': cases,
});

const flaggedFoo = { foo: { password: 'bar', permissions: ['rest.assets'], passwordChangeNeeded: true } };

t.test('minimum length 1, other rules off', async (t) => {
  const d = await startDaemon(t, { rest: { 'login.throttle.max.delay': 0 }, console: rules(1), identities: flaggedFoo });

  t.test('27: the same password is refused', async (t) => {
    const b = await login(d, 'foo', 'bar');
    const r = await change(b, 'bar', 'bar');
    t.equal(r.status, 400);
    t.same(r.json(), { message: 'Password change failed as previous password equals new one' });
  });

  t.test('a wrong current password is 401 and the session survives', async (t) => {
    const b = await login(d, 'foo', 'bar');
    const r = await change(b, 'nope', 'baz');
    t.equal(r.status, 401);
    t.same(r.json(), { message: 'Authentication failed as username or password not matching' });
    t.equal((await b.request(`${S}/xsrfToken`)).status, 200);
  });

  t.test('28: after a change the session is over; a new login reaches resources', async (t) => {
    const b = await login(d, 'foo', 'bar');
    const other = new Browser(d);
    await other.loginPassword('foo', 'bar');
    const r = await change(b, 'bar', 'baz');
    t.equal(r.status, 204);
    t.equal(r.body, '');
    t.equal((await b.request(`${S}/currentIdentity`)).status, 401, 'currentIdentity with the old cookie');
    t.equal((await b.request(`${S}/xsrfToken`)).status, 401, 'xsrfToken with the old cookie');
    t.equal((await other.request(`${S}/xsrfToken`)).status, 401, 'other sessions of the identity end too');
    t.equal((await new Browser(d).loginPassword('foo', 'bar')).status, 401, 'old password refused');
    const b2 = new Browser(d);
    const r2 = await b2.loginPassword('foo', 'baz');
    t.equal(r2.status, 200);
    t.equal(r2.body, '{"passwordChangeNeeded":false}', 'the change flag is cleared');
    await b2.fetchToken();
    t.equal((await b2.request(ASSETS)).status, 200);
  });
});

t.test('the body is checked before authentication', async (t) => {
  const d = await startDaemon(t, { identities: { foo: { password: 'bar' } } });
  for (const body of [{}, { currentPassword: 'a' }, { newPassword: 'b' }, { currentPassword: ' ', newPassword: 'abcdefgh1' }]) {
    const r = await d.request(`${S}/changePassword`, { method: 'POST', body });
    t.equal(r.status, 400, JSON.stringify(body));
    t.same(r.json(), { message: 'currentPassword or newPassword have not been provided' });
  }
  const r = await d.request(`${S}/changePassword`, { method: 'POST', body: { currentPassword: 'bar', newPassword: 'abcdefgh1' } });
  t.equal(r.status, 401);
  t.same(r.json(), { message: 'Current session is not valid' });
  const bad = await d.request(`${S}/changePassword`, { method: 'POST', body: '{"currentPassword":', headers: { 'content-type': 'application/json' } });
  t.equal(bad.status, 400, 'malformed JSON is 400');
});

t.test('default minimum length 8, message format, length before same-password', async (t) => {
  const d = await startDaemon(t, { identities: { foo: { password: 'bar' } } });
  const b = await login(d, 'foo', 'bar');
  const r1 = await change(b, 'bar', 'abc');
  t.equal(r1.status, 400);
  t.same(r1.json(), { message: `${PREFIX}Password length must be at least 8 characters` });
  const r2 = await change(b, 'bar', 'bar');
  t.same(r2.json(), { message: `${PREFIX}Password length must be at least 8 characters` }, 'the length is checked before the same-password rule');
});

t.test('37: credentials changed out of band end the session', async (t) => {
  const d = await startDaemon(t, {
    rest: { 'auth.basic.enabled': false },
    identities: { foo: { password: 'bar', permissions: ['rest.assets'] }, admin: { password: 'adminpass', permissions: ['kura.admin'] } },
  });
  const b = await login(d, 'foo', 'bar');
  t.equal((await b.request(ASSETS)).status, 200);
  const admin = await login(d, 'admin', 'adminpass');
  const r = await admin.request('/services/identity/v1/identities', { method: 'PUT', body: { userName: 'foo', password: 'bazbazbaz' } });
  t.equal(r.status, 200);
  t.equal((await b.request(ASSETS)).status, 401);
});

t.test('38–42: strength rules, first failing rule reported, in Kura order', async (t) => {
  const cases: [string, ReturnType<typeof rules>, string, string | undefined][] = [
    ['38 too short', rules(4), 'baz', 'Password length must be at least 4 characters'],
    ['39 no digits', rules(4, true), 'nodigits', 'Password must contain at least one digit'],
    ['40 no special', rules(4, true, true), 'nospecialcharacters1', 'Password must contain at least one non alphanumeric character'],
    ['41 no both cases', rules(4, true, true, true), 'nobothcases1@', 'Password must contain both uppercase and lowercase characters'],
    ['both cases before special', rules(4, true, true, true), 'nocases1', 'Password must contain both uppercase and lowercase characters'],
    ['digits before cases', rules(2, true, true, true), 'ab', 'Password must contain at least one digit'],
    ['line terminator fails enabled regex rules', rules(1, true), '1\u20282', 'Password must contain at least one digit'],
    ['non-ASCII counts as special', rules(4, false, true), 'abcdé', undefined],
    ['42 all rules satisfied', rules(4, true, true, true), '1validPW@', undefined],
  ];
  // One daemon; the console section is changed with SIGHUP between cases (docs/configuration.md "Reloading").
  const d = await startDaemon(t, { rest: { 'login.throttle.max.delay': 0 }, console: rules(1), identities: flaggedFoo });
  const cfg = JSON.parse(fs.readFileSync(d.configFile, 'utf8'));
  let reloads = 0;
  let password = 'bar';
  for (const [name, console, pw, failure] of cases) {
    cfg.console = console;
    fs.writeFileSync(d.configFile, JSON.stringify(cfg));
    d.signal('SIGHUP');
    reloads++;
    while (d.logs.filter((l) => l.includes('configuration reloaded')).length < reloads) await sleep(20);
    const b = await login(d, 'foo', password);
    const r = await change(b, password, pw);
    if (failure) {
      t.equal(r.status, 400, name);
      t.same(r.json(), { message: PREFIX + failure }, name);
    } else {
      t.equal(r.status, 204, name);
      t.equal((await new Browser(d).loginPassword('foo', pw)).status, 200, `${name}: the new password works`);
      password = pw;
    }
  }
});

t.test('changePassword with BASIC and with a certificate-only identity', async (t) => {
  const d = await startDaemon(t, { console: rules(1), identities: { foo: { password: 'bar' }, certonly: { permissions: [] } } });
  const basic = { authorization: `Basic ${Buffer.from('foo:bar').toString('base64')}` };
  const r = await d.request(`${S}/changePassword`, { method: 'POST', body: { currentPassword: 'bar', newPassword: 'qux' }, headers: basic });
  t.equal(r.status, 204);
  t.equal((await new Browser(d).loginPassword('foo', 'qux')).status, 200);
  t.equal((await new Browser(d).loginPassword('certonly', 'anything')).status, 401, 'no password: password login refused');
});
