// Fair queueing of password hashing (HashLimiter, docs/rest-api.md "Password checks"): a
// wrong-password flood from many addresses fills the hash queue; a client that knows its password,
// from another address, must still get its turn, and the daemon's own hashing is never refused.
// The limiter's order on its own, then a real flood against the real daemon.

import t from 'tap';
import http from 'node:http';
import { HashBusyError, HashLimiter } from '../../src/auth/password-hash.js';
import { startDaemon, type Daemon } from '../helpers/daemon.js';

/** A limiter of one slot held until `release()`, and a way to queue checks and own hashing behind it. */
function heldLimiter(maxWaiting = 32) {
  const lim = new HashLimiter(1, maxWaiting);
  let release!: () => void;
  const blocker = lim.run(() => new Promise<void>((r) => (release = r)));
  const order: string[] = [];
  const tried: Promise<string>[] = [];
  const settle = (p: Promise<unknown>) => p.then(() => 'ok', (e) => (e instanceof HashBusyError ? 'busy' : 'error'));
  return {
    order,
    check: (client: string, name: string, failures: number, label: string) => tried.push(settle(lim.run(async () => void order.push(label), { client, name, failures }))) - 1,
    own: (label: string) => tried.push(settle(lim.run(async () => void order.push(label)))) - 1,
    finish: async () => {
      release();
      await blocker;
      return Promise.all(tried);
    },
  };
}

t.test('the client with the fewest failures goes first; clients take turns; the most failed is refused first', async (t) => {
  const l = heldLimiter();
  // 64 addresses flood made-up names, 4 checks each, with the failures their flood has earned; then
  // the real user from a 65th address.
  for (let a = 0; a < 64; a++) for (let i = 0; i < 4; i++) l.check(`10.0.0.${a}`, `made-up-${a}-${i}`, 20 + (a % 3), `flood-${a}-${i}`);
  const user = l.check('10.9.9.9', 'admin', 0, 'admin');
  const results = await l.finish();
  t.equal(results[user], 'ok', 'the client without failures got its turn');
  t.equal(l.order[0], 'admin', 'and was served first');
  t.equal(results.filter((r) => r === 'ok').length, 32, 'at most 32 waited in all');
  const served = l.order.slice(1).map((x) => Number(x.split('-')[1]));
  t.ok(served.every((a) => a % 3 === 0), 'the flood kept was that of the addresses with the fewest failures');
  const firstEight = served.slice(0, 8);
  t.equal(new Set(firstEight).size, 8, `addresses served one at a time: ${firstEight.join(' ')}`);
});

t.test('at most four checks wait per client and name', async (t) => {
  const l = heldLimiter();
  const ids = Array.from({ length: 5 }, (_, i) => l.check('10.0.0.1', 'same', 0, `c${i}`));
  const other = l.check('10.0.0.1', 'other', 0, 'other');
  const results = await l.finish();
  t.same(ids.map((i) => results[i]), ['ok', 'ok', 'ok', 'ok', 'busy']);
  t.equal(results[other], 'ok', 'another name from the same client still waits');
  t.equal(l.order[1], 'other', 'and the client\'s names take turns');
});

t.test('the daemon\'s own hashing waits its turn and is never refused', async (t) => {
  const l = heldLimiter(2);
  const own = Array.from({ length: 40 }, (_, i) => l.own(`own${i}`));
  const checks = Array.from({ length: 5 }, (_, i) => l.check(`10.0.1.${i}`, 'x', 0, `check${i}`));
  const results = await l.finish();
  t.same(own.map((i) => results[i]), own.map(() => 'ok'), 'all 40 own hashes ran');
  t.same(checks.map((i) => results[i]), ['ok', 'ok', 'busy', 'busy', 'busy'], 'checks are bounded as before, own hashing not counted');
  t.same(l.order.slice(0, 4), ['own0', 'check0', 'own1', 'check1'], 'own hashing and checks alternate');
});

t.test('the client\'s standing, never the name, decides: checks for any names of one client are served alike', async (t) => {
  const l = heldLimiter();
  for (let i = 0; i < 6; i++) l.check('10.0.2.1', i % 2 ? `known${i}` : `unknown${i}`, 3, `n${i}`);
  await l.finish();
  t.same(l.order, ['n0', 'n1', 'n2', 'n3', 'n4', 'n5'], 'in the order they came');
});

function login(d: Daemon, username: string, password: string, localAddress: string): Promise<number> {
  const body = JSON.stringify({ username, password });
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port: d.ports.http[0], localAddress, method: 'POST', path: '/services/session/v1/login/password', agent: false, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.setTimeout(60_000, () => req.destroy());
    req.on('error', () => resolve(0));
    req.end(body);
  });
}

t.test('a wrong-password flood from 64 addresses does not make the right password fail', async (t) => {
  const d = await startDaemon(t, { identities: { legit: { password: 'Legit-pw-123', permissions: ['rest.assets'] } } });
  let stop = false;
  let flood = 0;
  const worker = async (a: number, w: number) => {
    for (let i = 0; !stop; i++) {
      await login(d, `nobody-${a}-${w}-${i}`, 'wrong-password', `127.4.0.${a + 1}`);
      flood++;
    }
  };
  const workers = Array.from({ length: 64 * 6 }, (_, i) => worker(i % 64, Math.floor(i / 64)));
  while (flood < 200) await new Promise((r) => setTimeout(r, 50));
  const legit: number[] = [];
  for (let i = 0; i < 8; i++) legit.push(await login(d, 'legit', 'Legit-pw-123', '127.5.0.1'));
  const during = flood;
  stop = true;
  await Promise.all(workers);
  t.ok(during >= 200, `flood attempts while the right password was tried: ${during}`);
  t.same(legit, legit.map(() => 200), `every login with the right password succeeded during the flood: ${legit.join(' ')}`);
  t.equal(d.proc.exitCode, null, 'daemon alive');
});
