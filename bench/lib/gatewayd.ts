// Starts the built bundle (dist/gatewayd.js, never the sources) with a benchmark configuration and
// optional node flags (the launcher's), and measures the time from spawn to the ready line.

import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BUNDLE, LAUNCHER, READY, launcherEnv, launcherNodeFlags, spawnGatewayd, writeConfigFile } from '../../test/helpers/launch.mjs';
import { threadCpuMs } from './proc.js';
import type { Scope } from './scope.js';

export { BUNDLE, LAUNCHER, launcherEnv, launcherNodeFlags };

export interface Gatewayd {
  proc: ChildProcess;
  pid: number;
  dir: string;
  /** Milliseconds from spawn to the `gatewayd ready` line. */
  readyMs: number;
  /** CPU milliseconds (all threads) the process had used when it logged the ready line. */
  readyCpuMs: number;
  logs: string[];
  stop(): Promise<void>;
}

export interface StartOptions {
  /**
   * Run through the packaged launcher (rootfs/usr/bin/gatewayd) exactly as the image does: its node
   * flags and its environment (malloc arenas, thread pool), with the bundle staged where it looks.
   */
  launcher?: boolean;
  /** Reuse this directory (and its dataDir): a restart instead of a first boot. */
  dir?: string;
  /** More environment, e.g. `GATEWAYD_NODE_FLAGS` (flags the launcher appends to its own). */
  env?: Record<string, string>;
  /** Another build of the bundle to run instead of dist/gatewayd.js (with `launcher` only). */
  bundle?: string;
}

export async function startGatewayd(scope: Scope, config: Record<string, any>, opts: StartOptions = {}): Promise<Gatewayd> {
  const bundle = opts.bundle ?? BUNDLE;
  if (!fs.existsSync(bundle)) throw new Error(`${bundle} missing: run make build`);
  if (opts.bundle && !opts.launcher) throw new Error('startGatewayd: another bundle runs through the launcher only');
  const dir = opts.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-bench-'));
  if (!opts.dir) scope.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  let command: string[] | undefined;
  if (opts.launcher) {
    // <prefix>/bin/gatewayd finds <prefix>/lib/gatewayd/gatewayd.mjs beside itself.
    const bin = path.join(dir, 'image', 'usr', 'bin');
    const lib = path.join(dir, 'image', 'usr', 'lib', 'gatewayd');
    fs.mkdirSync(bin, { recursive: true });
    fs.mkdirSync(lib, { recursive: true });
    fs.copyFileSync(LAUNCHER, path.join(bin, 'gatewayd'));
    fs.copyFileSync(bundle, path.join(lib, 'gatewayd.mjs'));
    // The launcher runs `node` from PATH: make it this very node.
    command = ['/bin/sh', path.join(bin, 'gatewayd')];
  }
  const cfg = structuredClone(config);
  cfg.dataDir ??= path.join(dir, 'data');
  const configFile = writeConfigFile(dir, cfg);
  const env = { ...(opts.launcher ? { PATH: `${path.dirname(process.execPath)}:${process.env.PATH ?? ''}` } : {}), ...opts.env };
  let readyAt: bigint | undefined;
  let readyCpuMs = NaN;
  let pid = 0;
  const spawned = spawnGatewayd({
    configFile, cwd: dir, env, command, keep: 2000,
    onLine: (line) => {
      if (readyAt !== undefined || !READY.test(line)) return;
      readyAt = process.hrtime.bigint();
      readyCpuMs = threadCpuMs(pid);
    },
  });
  pid = spawned.proc.pid!;
  const { proc, lines: logs } = spawned;
  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
      await spawned.exited;
      clearTimeout(timer);
    }
  };
  scope.teardown(stop);
  await spawned.waitFor(READY, 20_000);
  const readyMs = Number(readyAt! - spawned.spawnedAt) / 1e6;
  return { proc, pid: proc.pid!, dir, readyMs, readyCpuMs, logs, stop };
}
