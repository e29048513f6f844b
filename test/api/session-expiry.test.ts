// Inactivity expiry, bounded session store, reload without dropping sessions (Kura RestServiceTest
// 29–31; docs/rest-api.md "session/v1"; SIGHUP, docs/configuration.md "Reloading").
import t from 'tap';
import fs from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { startDaemon, type Daemon } from '../helpers/daemon.js';
import { Browser, login } from '../helpers/session-client.js';

const S = '/services/session/v1';
const ASSETS = '/services/assets';
const foo = { foo: { password: 'bar', permissions: ['rest.assets'] } };

t.test('inactivity interval of 1 s', async (t) => {
  const d = await startDaemon(t, { rest: { 'session.inactivity.interval': 1 }, identities: foo });

  t.test('29/30: an idle session expires; resources and xsrfToken answer 401', async (t) => {
    const b = await login(d, 'foo', 'bar');
    t.equal((await b.request(ASSETS)).status, 200);
    await sleep(2100);
    t.equal((await b.request(ASSETS)).status, 401);
    t.equal((await b.request(`${S}/xsrfToken`)).status, 401, 'the expired session was dropped');
  });

  t.test('30: xsrfToken on an expired session', async (t) => {
    const b = await login(d, 'foo', 'bar');
    await sleep(2100);
    t.equal((await b.request(`${S}/xsrfToken`)).status, 401);
  });

  t.test('31: activity extends the session', async (t) => {
    const b = await login(d, 'foo', 'bar');
    t.equal((await b.request(ASSETS)).status, 200);
    for (let i = 0; i < 3; i++) {
      await sleep(500);
      t.equal((await b.request(ASSETS)).status, 200, `request ${i + 1} after 500 ms`);
    }
    await sleep(2100);
    t.equal((await b.request(ASSETS)).status, 401);
  });

  t.test('requests without a valid token do not extend the session', async (t) => {
    const b = await login(d, 'foo', 'bar');
    const token = b.headers['x-xsrf-token'];
    delete b.headers['x-xsrf-token'];
    for (let i = 0; i < 3; i++) {
      await sleep(500);
      t.equal((await b.request(ASSETS)).status, 401);
    }
    t.equal((await b.request(ASSETS, { headers: { 'x-xsrf-token': token } })).status, 401, 'expired after >1 s without a valid request');
  });
});

t.test('bounded store: the least recently active session is evicted first', async (t) => {
  const d = await startDaemon(t, { rest: { 'session.max.count': 3 }, identities: foo });
  const a = await login(d, 'foo', 'bar');
  const b = await login(d, 'foo', 'bar');
  const c = await login(d, 'foo', 'bar');
  t.equal((await a.request(ASSETS)).status, 200, 'a is now the most recently active');
  const e = await login(d, 'foo', 'bar');
  t.equal((await b.request(ASSETS)).status, 401, 'b (oldest idle) evicted');
  for (const [n, x] of [['a', a], ['c', c], ['e', e]] as const) t.equal((await x.request(ASSETS)).status, 200, `${n} kept`);
  // A flood of logins cannot grow the store: many more logins, still only 3 live sessions.
  const flood: Browser[] = [];
  for (let i = 0; i < 10; i++) flood.push(await login(d, 'foo', 'bar'));
  let live = 0;
  for (const x of [a, c, e, ...flood]) if ((await x.request(`${S}/xsrfToken`)).status === 200) live++;
  t.equal(live, 3);
});

t.test('SIGHUP applies rest and console without dropping sessions', async (t) => {
  const d: Daemon = await startDaemon(t, { identities: foo });
  const b = await login(d, 'foo', 'bar');
  t.equal((await d.request('/services/identity/v1/passwordRequirements')).json().passwordMinimumLength, 8);
  const basic = { authorization: `Basic ${Buffer.from('foo:bar').toString('base64')}` };
  t.equal((await d.request(ASSETS, { headers: basic })).status, 200);
  const cfg = JSON.parse(fs.readFileSync(d.configFile, 'utf8'));
  // 5 s: long enough that a reload on a loaded machine does not outlast it, short enough to wait out.
  cfg.rest = { 'auth.basic.enabled': false, 'session.inactivity.interval': 5 };
  cfg.console = { 'new.password.min.length': 12, 'access.banner.enabled': true, 'access.banner.content': 'hi' };
  cfg.identities = { foo: { password: 'changed-in-file', permissions: [] } };
  fs.writeFileSync(d.configFile, JSON.stringify(cfg));
  t.equal((await b.request(ASSETS)).status, 200, 'the session is active just before the reload');
  d.signal('SIGHUP');
  await d.waitForLog(/configuration reloaded/);
  t.equal((await b.request(ASSETS)).status, 200, 'the session survived the reload');
  t.ok(d.logs.some((l) => /identities in the configuration only seed a new dataDir/.test(l)), 'an edited identities section is reported');
  t.equal((await new Browser(d).loginPassword('foo', 'bar')).status, 200, 'and does not change the store');
  t.equal((await d.request(ASSETS, { headers: basic })).status, 401, 'BASIC now off');
  t.equal((await d.request('/services/identity/v1/passwordRequirements')).json().passwordMinimumLength, 12);
  t.equal((await d.request(`${S}/authenticationInfo`)).json().message, 'hi');
  await sleep(6100);
  t.equal((await b.request(ASSETS)).status, 401, 'the new interval applies to existing sessions');
});
