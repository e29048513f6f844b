// Brute-force throttling (contract §5, rest.login.throttle.max.delay): failed password attempts for
// one identity or from one address are refused for a growing window up to the bound; the correct
// password works again once the bound has passed; a client certificate is never delayed.
import t from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import { startDaemon } from '../helpers/daemon.js';
import { Browser, basic } from '../helpers/session-client.js';
import { haveOpenssl, makePki } from '../helpers/certs.js';

const S = '/services/session/v1';
const tryLogin = (d: Parameters<typeof basic>[0], u: string, p: string) => new Browser(d).loginPassword(u, p);

t.test('per identity: the correct password is refused inside the window, works after the bound', async (t) => {
  const d = await startDaemon(t, { rest: { 'login.throttle.max.delay': 1000 }, identities: { foo: { password: 'bar', permissions: ['rest.assets'] }, other: { password: 'other' } } });
  t.equal((await tryLogin(d, 'foo', 'x1')).status, 401);
  t.equal((await tryLogin(d, 'foo', 'x2')).status, 401);
  t.equal((await tryLogin(d, 'foo', 'bar')).status, 200, 'two typos cost nothing');
  for (let i = 0; i < 3; i++) t.equal((await tryLogin(d, 'foo', `y${i}`)).status, 401);
  const refused = await tryLogin(d, 'foo', 'bar');
  t.equal(refused.status, 401, 'correct password refused while throttled');
  t.same(refused.json(), { message: 'Authentication failed as username or password not matching' }, 'same answer as a wrong password');
  t.equal((await basic(d, 'foo', 'bar').request('/services/assets')).status, 401, 'BASIC is throttled too');
  await d.waitForLog(/password attempt refused: throttled.*identity=foo/);
  t.equal((await tryLogin(d, 'other', 'other')).status, 200, 'another identity from the same address is not affected');
  await sleep(1100);
  t.equal((await tryLogin(d, 'foo', 'bar')).status, 200, 'works again once the bound has passed');
});

t.test('per address: many names guessed from one address slow that address down', async (t) => {
  const d = await startDaemon(t, { rest: { 'login.throttle.max.delay': 800 }, identities: { foo: { password: 'bar' } } });
  for (let i = 0; i < 11; i++) t.equal((await tryLogin(d, `guess${i}`, 'x')).status, 401);
  t.equal((await tryLogin(d, 'foo', 'bar')).status, 401, 'address throttled');
  await sleep(900);
  t.equal((await tryLogin(d, 'foo', 'bar')).status, 200);
});

t.test('max.delay 0 turns throttling off', async (t) => {
  const d = await startDaemon(t, { rest: { 'login.throttle.max.delay': 0 }, identities: { foo: { password: 'bar' } } });
  for (let i = 0; i < 15; i++) await tryLogin(d, 'foo', `x${i}`);
  t.equal((await tryLogin(d, 'foo', 'bar')).status, 200);
});

t.test('a correct client certificate is never delayed', { skip: !haveOpenssl() && !process.env.CI ? 'openssl missing' : false }, async (t) => {
  const pki = makePki();
  t.teardown(() => import('node:fs').then((fs) => fs.rmSync(pki.dir, { recursive: true, force: true })));
  const d = await startDaemon(t, {
    rest: { 'login.throttle.max.delay': 60000 },
    http: { 'https.keystore.cert': pki.serverCert, 'https.keystore.key': pki.serverKey, 'https.truststore': pki.caCert },
    identities: { foo: { password: 'bar', permissions: ['rest.assets'] } },
  }, { http: 1, clientAuth: 1 });
  for (let i = 0; i < 12; i++) await tryLogin(d, 'foo', `x${i}`);
  t.equal((await tryLogin(d, 'foo', 'bar')).status, 401, 'password throttled for a minute');
  const cert = pki.client('foo');
  const opts = { port: d.ports.clientAuth[0], tls: true, cert: cert.cert, key: cert.key, ca: pki.caCert };
  t.equal((await d.request('/services/assets', opts)).status, 200, 'stateless certificate');
  const b = new Browser(d, opts);
  t.equal((await b.request(`${S}/login/certificate`, { method: 'POST' })).status, 200, 'certificate login');
});
