// Right passwords are never refused for arriving together (docs/rest-api.md "Authentication",
// "Password checks"): the daemon's own hashing (seeding a first boot) is paced, never refused by the
// flood limiter, and parallel checks of the same credentials share one verification, for BASIC and
// login/password alike, on a cold cache and after a password change, without ever letting the old
// password back in.
import t from 'tap';
import { startDaemon, type Daemon } from '../helpers/daemon.js';
import { Browser, basic } from '../helpers/session-client.js';

const ASSETS = '/services/assets';
const I = '/services/identity/v1/identities';

const tally = (statuses: number[]) => [...statuses.reduce((m, s) => m.set(s, (m.get(s) ?? 0) + 1), new Map<number, number>())].map(([s, n]) => `${s}×${n}`).join(' ');

/** `n` at a time through `items`, in order; the answers in the items' order. */
async function inBatches<T, R>(items: T[], n: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += n) out.push(...(await Promise.all(items.slice(i, i + n).map(fn))));
  return out;
}

t.test('a first boot seeding 64 identities with passwords starts, and each of them then logs in', async (t) => {
  const names = Array.from({ length: 64 }, (_, i) => `seeded${i}`);
  const identities = Object.fromEntries(names.map((n, i) => [n, { password: `Seeded-pw-${i}`, permissions: ['rest.assets'] }]));
  const d = await startDaemon(t, { identities }, { noWait: true });
  const outcome = await Promise.race([d.waitForLog(/msg="gatewayd ready"/, 120_000).then(() => 'ready', () => 'no ready line'), d.exited.then((code) => `exited ${code}`)]);
  t.equal(outcome, 'ready', `the daemon started (log: ${d.logs.filter((l) => /level=(error|warn)/.test(l)).join(' | ')})`);
  if (outcome !== 'ready') return;
  t.ok(d.logs.some((l) => /identity store seeded from the configuration.*identities=64/.test(l)), 'all 64 seeded');
  // Sixteen logins at a time: distinct identities from one address, each needing a hash of its own.
  const logins = await inBatches(names, 16, (n) => new Browser(d).loginPassword(n, `Seeded-pw-${names.indexOf(n)}`));
  t.equal(tally(logins.map((r) => r.status)), '200×64', 'every seeded identity logs in');
  const reads = await inBatches(names, 16, (n) => basic(d, n, `Seeded-pw-${names.indexOf(n)}`).request(ASSETS));
  t.equal(tally(reads.map((r) => r.status)), '200×64', 'and reads over BASIC');
  t.notOk(d.logs.some((l) => /too many password checks/.test(l)), 'no password check was refused');
});

/** 64 BASIC reads and 16 logins of one identity, all sent at once. */
async function together(d: Daemon, user: string, password: string) {
  const reads = Array.from({ length: 64 }, () => basic(d, user, password).request(ASSETS));
  const logins = Array.from({ length: 16 }, () => new Browser(d).loginPassword(user, password));
  return { reads: (await Promise.all(reads)).map((r) => r.status), logins: (await Promise.all(logins)).map((r) => r.status) };
}

t.test('64 parallel BASIC reads and 16 parallel logins with the right password are all served, cold and after a password change', async (t) => {
  const d = await startDaemon(t, {
    'log.level': 'debug',
    identities: {
      poller: { password: 'Poller-pw-1', permissions: ['rest.assets'] },
      admin: { password: 'Admin-pw-1', permissions: ['kura.admin'] },
    },
  });
  const hashes = () => d.logs.filter((l) => /msg="password hash computed" identity=poller\b/.test(l)).length;

  const cold = await together(d, 'poller', 'Poller-pw-1');
  t.equal(tally(cold.reads), '200×64', 'cold cache, BASIC');
  t.equal(tally(cold.logins), '200×16', 'cold cache, login/password');
  // Each would hash on its own without sharing; a few may arrive after the first verification ended.
  t.ok(hashes() < 10, `the 80 requests shared their verification (${hashes()} hashes for them)`);

  // The password changes while 64 reads with the old one are still being verified: whatever those
  // answer, the old password must not work once the change is made.
  const racing = Array.from({ length: 64 }, () => basic(d, 'poller', 'Poller-pw-1').request(ASSETS));
  const change = await basic(d, 'admin', 'Admin-pw-1').request(I, { method: 'PUT', body: { userName: 'poller', password: 'Poller-pw-2' } });
  t.equal(change.status, 200, 'password changed');
  await Promise.all(racing);

  const after = await together(d, 'poller', 'Poller-pw-2');
  t.equal(tally(after.reads), '200×64', 'after the change, BASIC with the new password');
  t.equal(tally(after.logins), '200×16', 'after the change, login/password with the new password');

  const old = await together(d, 'poller', 'Poller-pw-1');
  t.equal(tally(old.reads), '401×64', 'the old password over BASIC');
  t.equal(tally(old.logins), '401×16', 'the old password at login');
  t.notOk(d.logs.some((l) => /too many password checks/.test(l)), 'no password check was refused');
  t.ok(d.logs.every((l) => !/Poller-pw|Admin-pw/.test(l)), 'no password in any log line');
});
