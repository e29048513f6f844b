// Which names exist cannot be told from a failed login (docs/rest-api.md "Password checks"), by a
// prober that spreads itself to stay under both throttles (one probe per name and per address)
// while wrong logins from many addresses keep the hash queue busy: a name that is no identity, an
// identity with a password (scrypt or Kura's SHA-256 form) and one without a password are answered
// alike, in times drawn from the same distribution (medians of interleaved probes within 2×).
import t from 'tap';
import { startDaemon } from '../helpers/daemon.js';
import { background, compareKinds, kuraHash, login } from '../helpers/login-probe.js';

t.setTimeout(120_000);

t.test('wrong logins from many addresses, throttling on, probes from fresh addresses: no kind of name stands out', async (t) => {
  const rounds = 8;
  const identities: Record<string, object> = {};
  for (let r = 0; r < rounds; r++) {
    identities[`holder${r}`] = { password: `Holder-pw-${r}`, permissions: ['rest.assets'] };
    identities[`certonly${r}`] = { permissions: ['rest.assets'] };
    identities[`legacy${r}`] = { passwordHash: kuraHash(`Legacy-pw-${r}`), permissions: ['rest.assets'] };
  }
  // Default throttle: each name is probed once and each address sends one probe, as a prober
  // that spreads itself to stay under both throttles does.
  const d = await startDaemon(t, { identities });
  const bg = background(d, 4, (i) => `127.61.${(i >> 8) & 255}.${(i & 255) + 1}`);
  t.teardown(bg.stop);
  while (bg.answered() < 8) await new Promise((r) => setTimeout(r, 20));
  let probes = 0;
  const from = () => `127.62.0.${++probes}`;
  const names: Record<string, (r: number) => string> = { unknown: (r) => `ghost${r}`, password: (r) => `holder${r}`, 'no password': (r) => `certonly${r}`, 'Kura hash': (r) => `legacy${r}` };
  await compareKinds(t, rounds, [{ label: 'login/password', kinds: Object.keys(names), probe: (kind, r) => login(d, from(), names[kind](r)) }]);
  await bg.stop();
  t.equal(d.proc.exitCode, null, 'daemon alive');
});
