// The footprint section (bench/README.md; docs/installation.md "Footprint"): idle RSS, RSS after 10,000 requests and after 1,000 sessions, against an idle bare
// node:http server; the same with and without the launcher's node flags; start-up time to the
// ready line against `node -e 0`; bundle size.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { hammer, login, request, sessionHeaders, type Target } from '../lib/client.js';
import { BUNDLE, LAUNCHER, launcherEnv, launcherNodeFlags, startGatewayd } from '../lib/gatewayd.js';
import { ROOT, rssKiB, sleep, startJsonChild } from '../lib/proc.js';
import type { Results } from '../lib/results.js';
import { withScope } from '../lib/scope.js';
import { ASSET, demoConfig, PASSWORD, USER, type Options } from '../lib/setup.js';
import { BUNDLE_LIMIT } from '../../build/bundle-limit.mjs';

const READ = `/services/assets/${ASSET}/_read`;
const SETTLE_MS = 2000;


interface Rss {
  idle: number[];
  requests: number[];
  sessions: number[];
}

/** One gatewayd life: idle RSS, then after `requests` authenticated reads, then after `sessions` logins. */
async function gatewaydRss(launcher: boolean, requests: number, sessions: number, out: Rss): Promise<boolean> {
  return withScope(async (scope) => {
    const { config, http } = await demoConfig();
    const gw = await startGatewayd(scope, config, { launcher });
    await sleep(SETTLE_MS);
    out.idle.push(rssKiB(gw.pid) / 1024);
    const t: Target = { port: http };
    const s = await login(t, USER, PASSWORD);
    const headers = s ? sessionHeaders(s) : {};
    if (requests === 0) return !!s; // an idle-only life
    await hammer(requests, 8, () => request(t, READ, { headers }));
    await sleep(SETTLE_MS);
    out.requests.push(rssKiB(gw.pid) / 1024);
    if (!s) return false;
    // Logins run a memory-hard hash each; 4 in flight keep both cores busy.
    await hammer(sessions, 4, async () => {
      const x = await login(t, USER, PASSWORD);
      return { status: x ? 200 : 404, headers: {}, body: Buffer.alloc(0) };
    });
    await sleep(SETTLE_MS);
    out.sessions.push(rssKiB(gw.pid) / 1024);
    return true;
  });
}

/**
 * `node -e 0`: spawn to exit in ms, and the CPU ms it used (all threads; it prints its own
 * process.cpuUsage() as it ends). `launcher`: with the launcher's node flags and environment.
 */
function nodeE0(launcher = false): Promise<{ ms: number; cpuMs: number }> {
  return new Promise((resolve, reject) => {
    const flags = launcher ? launcherNodeFlags() ?? [] : [];
    const env = launcher ? { ...process.env, ...launcherEnv() } : process.env;
    const t0 = process.hrtime.bigint();
    const p = spawn(process.execPath, [...flags, '-e', 'const u=process.cpuUsage();process.stdout.write(String((u.user+u.system)/1000))'], { stdio: ['ignore', 'pipe', 'ignore'], env });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.once('error', reject);
    p.once('close', () => resolve({ ms: Number(process.hrtime.bigint() - t0) / 1e6, cpuMs: Number(out) }));
  });
}

export async function footprintSection(res: Results, opt: Options): Promise<void> {
  const requests = opt.quick ? 1000 : 10_000;
  const sessions = opt.quick ? 50 : 1000;
  // RSS hardly varies between runs (within 2 % here), and each loaded life costs 1,000 memory-hard
  // hashes (about a minute of CPU on two cores): idle figures get 3 lives, loaded ones the first 2.
  const reps = Math.min(3, opt.repeats);
  const loadedReps = Math.min(2, reps);

  // Baseline: an idle bare node:http server (the HTTP section's ceiling process).
  const bare: number[] = [];
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-bench-fp-'));
  try {
    const spec = path.join(tmp, 'bare.json');
    fs.writeFileSync(spec, JSON.stringify({ headers: { 'content-type': 'application/json' }, body: Buffer.from('[]').toString('base64') }));
    for (let i = 0; i < reps; i++) {
      await withScope(async (scope) => {
        const b = await startJsonChild(scope, 'bare-http', [spec]);
        await sleep(SETTLE_MS);
        bare.push(rssKiB(b.pid) / 1024);
      });
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }

  const plain: Rss = { idle: [], requests: [], sessions: [] };
  let sessionsMeasured = true;
  for (let i = 0; i < reps; i++) {
    sessionsMeasured = (await gatewaydRss(false, i < loadedReps ? requests : 0, i < loadedReps ? sessions : 0, plain)) && sessionsMeasured;
    process.stderr.write(`  RSS: idle ${plain.idle.at(-1)!.toFixed(1)} MiB, after ${requests} requests ${plain.requests[i]?.toFixed(1) ?? '—'} MiB, after ${sessions} sessions ${plain.sessions[i]?.toFixed(1) ?? '—'} MiB (bare ${bare[i].toFixed(1)} MiB)\n`);
  }
  res.add('Footprint', 'rss-idle', 'idle RSS', 'MiB', plain.idle, 'idle bare node:http server', bare, { op: '<=', value: 1.2, text: '≤ 1.2× bare node' }, `${SETTLE_MS / 1000} s after the ready line; gatewayd with the simulator demo asset, no MQTT`);
  res.add('Footprint', 'rss-requests', `RSS after ${requests.toLocaleString('en-US')} authenticated reads`, 'MiB', plain.requests, 'idle bare node:http server', bare);
  if (sessionsMeasured) res.add('Footprint', 'rss-sessions', `RSS after ${requests.toLocaleString('en-US')} reads and ${sessions.toLocaleString('en-US')} sessions`, 'MiB', plain.sessions, 'idle bare node:http server', bare);
  else res.notMeasured('Footprint', 'rss-sessions', `RSS after ${sessions} sessions`, 'idle bare node:http server', 'the session API is not wired into the daemon yet');

  const flags = launcherNodeFlags();
  if (!flags) {
    res.notMeasured('Footprint', 'rss-launcher', 'idle / loaded RSS through the launcher', 'the same without it', `no launcher yet (${path.relative(ROOT, LAUNCHER)} does not exist)`);
  } else {
    const env = Object.entries(launcherEnv()).map(([k, v]) => `${k}=${v}`);
    const how = [...flags, ...env].join(' ') || 'no flags or environment';
    const flagged: Rss = { idle: [], requests: [], sessions: [] };
    for (let i = 0; i < reps; i++) {
      await gatewaydRss(true, i < loadedReps ? requests : 0, i < loadedReps ? sessions : 0, flagged);
      process.stderr.write(`  RSS through the launcher (${how}): idle ${flagged.idle[i].toFixed(1)} MiB, after requests ${flagged.requests[i]?.toFixed(1) ?? '—'} MiB, after sessions ${flagged.sessions[i]?.toFixed(1) ?? '—'} MiB\n`);
    }
    const note = `started through ${path.relative(ROOT, LAUNCHER)} from a staged image tree, so with its node flags and its environment: ${how}`;
    res.add('Footprint', 'rss-launcher-idle', 'idle RSS through the launcher', 'MiB', flagged.idle, 'gatewayd without it (plain node)', plain.idle, undefined, note);
    res.add('Footprint', 'rss-launcher-idle-vs-bare', 'idle RSS through the launcher', 'MiB', flagged.idle, 'idle bare node:http server', bare, { op: '<=', value: 1.2, text: '≤ 1.2× bare node' });
    res.add('Footprint', 'rss-launcher-requests', `RSS after ${requests.toLocaleString('en-US')} reads, through the launcher`, 'MiB', flagged.requests, 'gatewayd without it', plain.requests);
    if (sessionsMeasured) res.add('Footprint', 'rss-launcher-sessions', `RSS after ${requests.toLocaleString('en-US')} reads and ${sessions.toLocaleString('en-US')} sessions, through the launcher`, 'MiB', flagged.sessions, 'gatewayd without it', plain.sessions);
  }

  // Start-up: spawn → ready line, against spawn → exit of `node -e 0`, alternating. A first boot
  // (empty dataDir: the seeded identity's password is hashed) and a restart on that dataDir (what a
  // device does on every later boot) are reported apart; so are plain node and the launcher (its
  // flags and environment, as on the device). Wall-clock times on a shared machine measure the
  // neighbours too: the CPU rows (all threads, up to the ready line) do not.
  const boots = { plain: { first: [] as number[], restart: [] as number[], firstCpu: [] as number[], restartCpu: [] as number[], node0: [] as number[], node0Cpu: [] as number[] } };
  const viaLauncher = flags ? { first: [] as number[], restart: [] as number[], firstCpu: [] as number[], restartCpu: [] as number[], node0: [] as number[], node0Cpu: [] as number[] } : undefined;
  const starts = Math.max(5, reps);
  for (let i = 0; i < starts; i++) {
    for (const [launcher, b] of [[false, boots.plain], ...(viaLauncher ? [[true, viaLauncher] as const] : [])] as const) {
      const n = await nodeE0(launcher);
      b.node0.push(n.ms);
      b.node0Cpu.push(n.cpuMs);
      await withScope(async (scope) => {
        const { config } = await demoConfig();
        const gw = await startGatewayd(scope, config, { launcher });
        b.first.push(gw.readyMs);
        b.firstCpu.push(gw.readyCpuMs);
        await gw.stop();
        const again = await startGatewayd(scope, config, { dir: gw.dir, launcher });
        b.restart.push(again.readyMs);
        b.restartCpu.push(again.readyCpuMs);
      });
    }
  }
  const p = boots.plain;
  const goal = { op: '<=' as const, value: 3, text: '≤ 3× node -e 0' };
  res.add('Footprint', 'startup-restart', 'start-up to the `gatewayd ready` line, existing dataDir (every later boot)', 'ms', p.restart, '`node -e 0` (spawn to exit)', p.node0, goal,
    'spawn to the ready line: reading the config, opening dataDir, loading identities, attaching drivers, listening');
  res.add('Footprint', 'startup-first', 'start-up to the ready line, first boot (empty dataDir)', 'ms', p.first, '`node -e 0`', p.node0, goal, 'also creates dataDir and hashes the seeded identity\'s password (scrypt)');
  res.add('Footprint', 'startup-restart-cpu', 'CPU to the ready line, later boot (all threads)', 'ms', p.restartCpu, 'CPU of `node -e 0`', p.node0Cpu, undefined,
    'CPU time the process used up to its ready line (/proc/<pid>/task/*/schedstat), against the CPU time `node -e 0` uses in its whole life (its process.cpuUsage()): what start-up costs whatever else shares the cores' +
    (process.env.NODE_EXTRA_CA_CERTS ? `; NODE_EXTRA_CA_CERTS was set (${process.env.NODE_EXTRA_CA_CERTS}), so both sides first parsed those certificates, which a device does not` : ''));
  res.add('Footprint', 'startup-first-cpu', 'CPU to the ready line, first boot (all threads)', 'ms', p.firstCpu, 'CPU of `node -e 0`', p.node0Cpu);
  if (viaLauncher) {
    const v = viaLauncher;
    const note = `both started with the launcher's node flags and environment (${[...(flags ?? []), ...Object.entries(launcherEnv()).map(([k, x]) => `${k}=${x}`)].join(' ')}); gatewayd through ${path.relative(ROOT, LAUNCHER)} itself`;
    res.add('Footprint', 'startup-launcher-restart', 'start-up to the ready line through the launcher, later boot', 'ms', v.restart, '`node -e 0` with the launcher\'s flags', v.node0, { op: '<=', value: 2, text: '≤ 2× node -e 0' }, note);
    res.add('Footprint', 'startup-launcher-first', 'start-up to the ready line through the launcher, first boot', 'ms', v.first, '`node -e 0` with the launcher\'s flags', v.node0);
    res.add('Footprint', 'startup-launcher-restart-cpu', 'CPU to the ready line through the launcher, later boot', 'ms', v.restartCpu, 'CPU of `node -e 0` with the launcher\'s flags', v.node0Cpu, { op: '<=', value: 2, text: '≤ 2× node -e 0' });
    res.add('Footprint', 'startup-launcher-first-cpu', 'CPU to the ready line through the launcher, first boot', 'ms', v.firstCpu, 'CPU of `node -e 0` with the launcher\'s flags', v.node0Cpu);
    res.add('Footprint', 'startup-launcher-flags-cpu', 'CPU to the ready line, later boot: through the launcher', 'ms', v.restartCpu, 'the same with plain node', p.restartCpu, undefined,
      'the launcher\'s V8 heap flags make this Node reject the code cache it ships for its own built-in modules (V8 checks the flags a cache was made with), so every built-in gatewayd loads is compiled from source (docs/installation.md "Start-up time")');
  }

  const size = fs.statSync(BUNDLE).size / 1024;
  res.add('Footprint', 'bundle', 'bundle size (dist/gatewayd.js)', 'KiB', [size], 'the build\'s limit', [BUNDLE_LIMIT / 1024], { op: '<=', value: 1, text: 'within the limit' });
}
