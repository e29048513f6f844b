// Fair queueing of password hashing (HashLimiter): a wrong-password flood from many addresses, or
// against made-up names, fills the hash queue; a known identity's login from another address must
// still get its turn. The limiter's order on its own, then a real flood against the real daemon.

import t from 'tap';
import http from 'node:http';
import { HashBusyError, HashLimiter } from '../../src/auth/password-hash.js';
import { startDaemon, type Daemon } from '../helpers/daemon.js';

t.test('the limiter serves groups and address prefixes round-robin and sheds from the largest', async (t) => {
  const lim = new HashLimiter(1, 32);
  let release!: () => void;
  const order: string[] = [];
  const blocker = lim.run(() => new Promise<void>((r) => (release = r)));
  const tried: Promise<string>[] = [];
  const attempt = (group: string, key: string, label: string) =>
    tried.push(lim.run(async () => void order.push(label), { group, key }).then(() => 'ok', (e) => (e instanceof HashBusyError ? 'busy' : 'error')));
  // 64 addresses flood made-up names, 4 checks each; then the real user, from a 65th address.
  for (let a = 0; a < 64; a++) for (let i = 0; i < 4; i++) attempt('?', `10.0.0.${a}`, `flood-${a}-${i}`);
  attempt('=admin', '10.9.9.9', 'admin');
  release();
  await blocker;
  const results = await Promise.all(tried);
  t.equal(results[256], 'ok', 'the known identity got its turn');
  t.equal(results.filter((r) => r === 'ok').length, 32, 'at most 32 waited in all');
  t.ok(order.indexOf('admin') >= 0 && order.indexOf('admin') <= 1, `the known identity was served among the first two (position ${order.indexOf('admin')})`);
  const firstKeys = order.slice(0, 6).filter((l) => l !== 'admin').map((l) => l.split('-')[1]);
  t.equal(new Set(firstKeys).size, firstKeys.length, `the flood was served one address at a time: ${order.slice(0, 6).join(' ')}`);
});

t.test('at most four checks wait per address prefix', async (t) => {
  const lim = new HashLimiter(1, 32);
  let release!: () => void;
  const blocker = lim.run(() => new Promise<void>((r) => (release = r)));
  const r = Array.from({ length: 5 }, () => lim.run(async () => {}, { group: '?', key: '10.0.0.1' }).then(() => 'ok', () => 'busy'));
  release();
  await blocker;
  t.same(await Promise.all(r), ['ok', 'ok', 'ok', 'ok', 'busy']);
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
