// The bundle on ARM (docs/installation.md "ARM") inside `make test`: `make arm-check` (build/arm-check.sh) — the bundle on Debian's
// armhf nodejs under qemu-user: start, login, read the demo asset, stop. It takes about 30 s once
// the armhf packages are cached (a minute more the first time), so it runs when GATEWAYD_ARM_CHECK=1
// or under CI=true, where a missing qemu-user or an unreachable Debian mirror is a failure.

import t from 'tap';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { ROOT, ensureBundle } from '../helpers/daemon.js';

const wanted = process.env.GATEWAYD_ARM_CHECK === '1' || process.env.CI === 'true';
// First run: apt index and ~20 MB of packages, qemu-user maybe; emulated V8 start-up is slow.
t.setTimeout(540_000);

t.test('make arm-check: the bundle on armhf node under qemu-user', { skip: wanted ? false : 'set GATEWAYD_ARM_CHECK=1 (or run make arm-check)' }, async (t) => {
  const bundle = ensureBundle();
  const r = spawnSync('sh', [path.join(ROOT, 'build', 'arm-check.sh')], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, BUNDLE: bundle },
    timeout: 500_000,
  });
  const out = `${r.stdout}${r.stderr}`;
  t.equal(r.status, 0, 'arm-check exits 0', { output: out });
  t.match(out, /node v18\.\d+\.\d+ \(arm\)/, 'ran on 32-bit ARM node 18');
  for (const step of ['started on armhf node', 'login over /services/session/v1/login/password answers 200', 'GET /services/assets/demo/_read answers 200', 'temperature channel read a number', 'SIGTERM stops cleanly']) {
    t.match(out, new RegExp(`^ok - ${step.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}`, 'm'), step);
  }
  t.notMatch(out, /not ok/, 'no failed step');
});
