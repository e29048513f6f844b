// Which names exist cannot be told from a failed login (docs/rest-api.md "Password checks"): under
// a small queue of wrong logins from the prober's own address, a name that is no identity, an
// identity with a password (scrypt or Kura's SHA-256 form), one without a password (certificate
// only) and, over BASIC, one that must change its password are answered alike — the same status,
// body and challenge — and in times drawn from the same distribution (medians of interleaved
// probes within 2×). Spread probes with throttling on: login-timing-spread.test.ts.
import t from 'tap';
import { startDaemon } from '../helpers/daemon.js';
import { background, basicRead, compareKinds, kuraHash, login } from '../helpers/login-probe.js';

// 128 probes behind the background's hashes: on a loaded machine more than the 30 s a file run on
// its own gets by default.
t.setTimeout(120_000);

t.test('a small queue of wrong logins from the prober\'s own address: no kind of name stands out', async (t) => {
  // Throttling off, so that every probe reaches the hash queue (a throttled attempt is refused
  // before it, by name and address alike for every name: test/auth/throttle.test.ts).
  const d = await startDaemon(t, {
    rest: { 'login.throttle.max.delay': 0 },
    identities: {
      holder: { password: 'Holder-pw-1', permissions: ['rest.assets'] },
      holder2: { password: 'Holder-pw-2', permissions: ['rest.assets'] },
      certonly: { permissions: ['rest.assets'] },
      certonly2: { permissions: ['rest.assets'] },
      legacy: { passwordHash: kuraHash('Legacy-pw-1'), permissions: ['rest.assets'] },
      mustchange: { password: 'Mustchange-pw-1', permissions: ['rest.assets'], passwordChangeNeeded: true },
    },
  });
  const prober = '127.60.0.1';
  const bg = background(d, 6, () => prober);
  t.teardown(bg.stop);
  while (bg.answered() < 8) await new Promise((r) => setTimeout(r, 20));
  // Each probe of a round has a name of its own: one client's checks take turns by name, so a name
  // probed twice at once would wait longer whatever it is. 16 rounds: each of the 8 probes meets
  // each place in the queue twice.
  const byLogin: Record<string, string> = { unknown: 'ghost', password: 'holder', 'no password': 'certonly', 'Kura hash': 'legacy' };
  const byBasic: Record<string, string> = { unknown: 'ghost2', password: 'holder2', 'no password': 'certonly2', 'must change': 'mustchange' };
  await compareKinds(t, 16, [
    { label: 'login/password', kinds: Object.keys(byLogin), probe: (kind) => login(d, prober, byLogin[kind]) },
    { label: 'BASIC', kinds: Object.keys(byBasic), probe: (kind) => basicRead(d, prober, byBasic[kind]) },
  ]);
  await bg.stop();
  t.equal(d.proc.exitCode, null, 'daemon alive');
});
