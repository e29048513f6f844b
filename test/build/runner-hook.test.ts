// The daemon a test starts runs with the NODE_OPTIONS the test gives it and nothing of the test
// runner's: tap adds its process-tracking hook to every node it spawns, which in a daemon only
// costs start-up time and memory (README "Developing"). The same for the bundle run as a command.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCli, startDaemon, BUNDLE } from '../helpers/daemon.js';
import { launcherHeapOptions, withoutRunnerHook } from '../helpers/launch.mjs';

/** The environment of a running process, as the kernel holds it. */
function environOf(pid: number): Record<string, string> {
  const entries = fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter(Boolean);
  return Object.fromEntries(entries.map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]));
}

const HOOK = /@tapjs[\\/]processinfo/;

t.test('a daemon gets no runner hook, and keeps the NODE_OPTIONS it is given, quoted words included', async (t) => {
  const plain = await startDaemon(t, {});
  const cmdline = fs.readFileSync(`/proc/${plain.proc.pid}/cmdline`, 'utf8').split('\0');
  t.equal(cmdline[0], process.execPath, 'the spawned pid is node itself (signals and /proc reach the daemon)');
  t.ok(cmdline.includes(BUNDLE), 'running the bundle');
  t.notMatch(environOf(plain.proc.pid!).NODE_OPTIONS ?? '', HOOK, 'no runner hook in its NODE_OPTIONS');

  const heap = launcherHeapOptions();
  t.ok(heap.length > 0, `the launcher's heap flags: ${heap}`);
  const given = `${heap} "--title=gatewayd under test"`;
  const d = await startDaemon(t, {}, { env: { NODE_OPTIONS: given } });
  t.equal(environOf(d.proc.pid!).NODE_OPTIONS, given, 'exactly the NODE_OPTIONS the test gave');
  t.equal(fs.readFileSync(`/proc/${d.proc.pid}/cmdline`, 'utf8').split('\0')[0], 'gatewayd under test', 'node read the quoted word whole');
  t.equal(await d.stop(), 0);
  t.equal(await plain.stop(), 0);
});

t.test('the bundle as a command gets no runner hook either', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-runner-hook-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const preload = path.join(dir, 'report.cjs');
  fs.writeFileSync(preload, "process.stderr.write('NODE_OPTIONS=' + process.env.NODE_OPTIONS + '\\n');\n");
  const r = runCli(['--version'], { env: { NODE_OPTIONS: `--require ${preload}` } });
  t.equal(r.status, 0, r.stderr);
  t.equal(r.stderr, `NODE_OPTIONS=--require ${preload}\n`, 'runCli: only the given NODE_OPTIONS reach the bundle');
  // Through the shell the daemon would be given by a test's `command`: what it sees is what node sees.
  const argv = withoutRunnerHook(['/bin/sh', '-c', 'printf %s "$NODE_OPTIONS"'], '--require /dev/null');
  const out = spawnSync(argv[0], argv.slice(1), { encoding: 'utf8' });
  t.equal(out.stdout, '--require /dev/null', 'only the given NODE_OPTIONS reach the command');
});
