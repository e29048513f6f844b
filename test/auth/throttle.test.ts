// Brute-force throttling (docs/configuration.md "rest", rest.login.throttle.max.delay): failed
// password attempts for one identity or from one address are refused for a growing window up to the
// bound; the correct password works again once the bound has passed; a client certificate is never
// delayed.
import t from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import crypto from 'node:crypto';
import http from 'node:http';
import v8 from 'node:v8';
import vm from 'node:vm';
import { startDaemon } from '../helpers/daemon.js';
import { launcherHeapOptions } from '../helpers/launch.mjs';
import { BASE_DELAY_MS, LoginThrottle } from '../../src/auth/throttle.js';

v8.setFlagsFromString('--expose-gc');
import { Browser, basic } from '../helpers/session-client.js';
import { haveOpenssl, makePki } from '../helpers/certs.js';

const S = '/services/session/v1';
const tryLogin = (d: Parameters<typeof basic>[0], u: string, p: string) => new Browser(d).loginPassword(u, p);

/**
 * Failed attempts spaced so that each one counts (one refused inside a window does not, and how
 * many are refused depends on the machine's speed), until the last opened a window of at least
 * `target` ms: windows of BASE_DELAY_MS (250 ms) doubling after `free` failures (src/auth/throttle.ts).
 * Each attempt's status is returned; the caller's next attempt then has the whole window to arrive in.
 */
async function openWindow(attempt: (i: number) => Promise<{ status: number }>, free: number, target: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; ; i++) {
    statuses.push((await attempt(i)).status);
    const over = i + 1 - free;
    if (over <= 0) continue;
    const window = BASE_DELAY_MS * 2 ** (over - 1);
    if (window >= target) return statuses;
    await sleep(window + 50);
  }
}

t.test('per identity: the correct password is refused inside the window, works after the bound', async (t) => {
  const d = await startDaemon(t, { rest: { 'login.throttle.max.delay': 2000 }, identities: { foo: { password: 'bar', permissions: ['rest.assets'] }, other: { password: 'other' } } });
  t.equal((await tryLogin(d, 'foo', 'x1')).status, 401);
  t.equal((await tryLogin(d, 'foo', 'x2')).status, 401);
  t.equal((await tryLogin(d, 'foo', 'bar')).status, 200, 'two typos cost nothing');
  // The success cleared the record: two free failures, then windows of 250, 500, 1000 and 2000 ms (the bound).
  t.same(await openWindow((i) => tryLogin(d, 'foo', `y${i}`), 2, 2000), Array(6).fill(401), 'six failures, each counted');
  const refused = await tryLogin(d, 'foo', 'bar');
  t.equal(refused.status, 401, 'correct password refused while throttled');
  t.same(refused.json(), { message: 'Authentication failed as username or password not matching' }, 'same answer as a wrong password');
  t.equal((await basic(d, 'foo', 'bar').request('/services/assets')).status, 401, 'BASIC is throttled too');
  await d.waitForLog(/password attempt refused: throttled.*identity=foo/);
  t.equal((await tryLogin(d, 'other', 'other')).status, 200, 'another identity from the same address is not affected');
  await sleep(2100);
  t.equal((await tryLogin(d, 'foo', 'bar')).status, 200, 'works again once the bound has passed');
});

t.test('per address: many names guessed from one address slow that address down', async (t) => {
  const d = await startDaemon(t, { rest: { 'login.throttle.max.delay': 2000 }, identities: { foo: { password: 'bar' } } });
  // Each name fails once (free for the name); the address has ten free, then 250 … 2000 ms.
  t.same(await openWindow((i) => tryLogin(d, `guess${i}`, 'x'), 10, 2000), Array(14).fill(401), 'fourteen names guessed, each counted');
  t.equal((await tryLogin(d, 'foo', 'bar')).status, 401, 'address throttled');
  await sleep(2100);
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
  await openWindow((i) => tryLogin(d, 'foo', `x${i}`), 2, 4000);
  t.equal((await tryLogin(d, 'foo', 'bar')).status, 401, 'password throttled');
  const cert = pki.client('foo');
  const opts = { port: d.ports.clientAuth[0], tls: true, cert: cert.cert, key: cert.key, ca: pki.caCert };
  t.equal((await d.request('/services/assets', opts)).status, 200, 'stateless certificate');
  const b = new Browser(d, opts);
  t.equal((await b.request(`${S}/login/certificate`, { method: 'POST' })).status, 200, 'certificate login');
});

// Memory bounded whatever a client sends (README "Robustness", part 10): failed logins with
// distinct 15 KB names from a few hundred addresses must not fill the throttle's tables with the
// names themselves until the heap (48 MB under the launcher) gives out.
t.test('distinct 15 KB user names from 300 addresses: the throttle stays bounded, the daemon serves', async (t) => {
  const d = await startDaemon(t, { identities: { foo: { password: 'Foo-pw-123' } } }, { env: { NODE_OPTIONS: launcherHeapOptions() } });
  const post = (username: string, localAddress: string) =>
    new Promise<number>((resolve) => {
      const body = JSON.stringify({ username, password: 'wrong' });
      const req = http.request({ host: '127.0.0.1', port: d.ports.http[0], localAddress, method: 'POST', path: `${S}/login/password`, agent: false, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.setTimeout(60_000, () => req.destroy());
      req.on('error', () => resolve(0));
      req.end(body);
    });
  const big = 'n'.repeat(15_000);
  let next = 0;
  const answers = new Map<number, number>();
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < 3000) {
        const i = next++;
        const s = await post(`${big}${i}`, `127.6.${Math.floor((i % 300) / 250)}.${((i % 300) % 250) + 1}`);
        answers.set(s, (answers.get(s) ?? 0) + 1);
      }
    }),
  );
  t.same([...answers.keys()], [401], `every attempt refused with 401 (${[...answers].map(([k, v]) => `${k}:${v}`).join(' ')})`);
  t.equal(d.proc.exitCode, null, 'daemon alive');
  t.equal((await tryLogin(d, 'foo', 'Foo-pw-123')).status, 200, 'the right password works');
  t.ok(d.logs.every((l) => l.length < 1000), 'log lines do not carry the whole name');
});

t.test('the throttle tables hold no more than a bounded key per record', async (t) => {
  const gc = vm.runInNewContext('gc') as () => void;
  const th = new LoginThrottle(5000);
  gc();
  const before = process.memoryUsage().heapUsed;
  // Flat, distinct 15 KB strings, as a parsed request body gives them.
  for (let i = 0; i < 5000; i++) th.failed(crypto.randomBytes(7500).toString('hex'), `10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`);
  for (let i = 0; i < 5000; i++) th.failed(`name${i}`, `2001:db8:1:2:${i.toString(16)}::1`);
  gc();
  const grown = process.memoryUsage().heapUsed - before;
  t.ok(grown < 8 * 1024 * 1024, `heap grown by ${(grown / 1048576).toFixed(1)} MB for 10,000 failures (names of 15 KB: 75 MB if kept)`);
  t.ok(th.wait('x', '2001:db8:1:2::77') > 0, 'an IPv6 client is throttled by its /64, whatever its host part');
  t.equal(th.wait('x', '2001:db8:1:3::77'), 0, 'the next /64 is not');
});
