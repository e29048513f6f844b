// Starts the built bundle (dist/gatewayd.js, never the sources) with a benchmark configuration and
// optional node flags (the launcher's), and measures the time from spawn to the ready line.

import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { ROOT } from './proc.js';
import type { Scope } from './scope.js';

export const BUNDLE = path.join(ROOT, 'dist', 'gatewayd.js');
export const LAUNCHER = path.join(ROOT, 'rootfs', 'usr', 'bin', 'gatewayd');

export interface Gatewayd {
  proc: ChildProcess;
  pid: number;
  dir: string;
  /** Milliseconds from spawn to the `gatewayd ready` line. */
  readyMs: number;
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
}

export async function startGatewayd(scope: Scope, config: Record<string, any>, opts: StartOptions = {}): Promise<Gatewayd> {
  if (!fs.existsSync(BUNDLE)) throw new Error(`${BUNDLE} missing: run make build`);
  const dir = opts.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-bench-'));
  if (!opts.dir) scope.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  let command = [process.execPath, BUNDLE];
  if (opts.launcher) {
    // <prefix>/bin/gatewayd finds <prefix>/lib/gatewayd/gatewayd.mjs beside itself.
    const bin = path.join(dir, 'image', 'usr', 'bin');
    const lib = path.join(dir, 'image', 'usr', 'lib', 'gatewayd');
    fs.mkdirSync(bin, { recursive: true });
    fs.mkdirSync(lib, { recursive: true });
    fs.copyFileSync(LAUNCHER, path.join(bin, 'gatewayd'));
    fs.copyFileSync(BUNDLE, path.join(lib, 'gatewayd.mjs'));
    // The launcher runs `node` from PATH: make it this very node.
    command = ['/bin/sh', path.join(bin, 'gatewayd')];
  }
  const cfg = structuredClone(config);
  cfg.dataDir ??= path.join(dir, 'data');
  const file = path.join(dir, 'gatewayd.json');
  fs.writeFileSync(file, JSON.stringify(cfg, null, 2));
  const t0 = process.hrtime.bigint();
  const env = opts.launcher ? { ...process.env, PATH: `${path.dirname(process.execPath)}:${process.env.PATH ?? ''}` } : process.env;
  const proc = spawn(command[0], [...command.slice(1), '--config', file], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }
  };
  scope.teardown(stop);
  const logs: string[] = [];
  const readyMs = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`gatewayd not ready after 20 s:\n${logs.slice(-10).join('\n')}`)), 20_000);
    exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`gatewayd exited (${proc.exitCode}) before ready:\n${logs.slice(-10).join('\n')}`));
    });
    for (const stream of [proc.stdout!, proc.stderr!]) {
      readline.createInterface({ input: stream }).on('line', (line) => {
        if (logs.length < 2000) logs.push(line);
        if (line.includes('msg="gatewayd ready"')) {
          clearTimeout(timer);
          resolve(Number(process.hrtime.bigint() - t0) / 1e6);
        }
      });
    }
  });
  return { proc, pid: proc.pid!, dir, readyMs, logs, stop };
}

/** The environment the launcher exports (`export NAME=${NAME:-default}` or `export NAME=value`). */
export function launcherEnv(file = LAUNCHER): Record<string, string> {
  const env: Record<string, string> = {};
  if (!fs.existsSync(file)) return env;
  for (const raw of fs.readFileSync(file, 'utf8').split('\n')) {
    const m = /^\s*export\s+([A-Za-z_]\w*)=(?:\$\{\1:-([^}]*)\}|["']?([^"'\s$]*)["']?)\s*$/.exec(raw);
    if (m && m[1] !== 'NODE_OPTIONS') env[m[1]] = m[2] ?? m[3] ?? '';
  }
  return env;
}

/**
 * The node flags the packaged launcher passes (rootfs/usr/bin/gatewayd, a shell script written by
 * the packaging engineer): literal `--flag` words after the node executable on the line that runs
 * it, and those in NODE_OPTIONS or a *FLAGS/*ARGS variable it sets. Words after the bundle are
 * gatewayd's own options, not node's. Undefined when there is no launcher.
 */
export function launcherNodeFlags(file = LAUNCHER): string[] | undefined {
  if (!fs.existsSync(file)) return undefined;
  const flags: string[] = [];
  const isFlag = (w: string) => /^--[a-z][\w-]*(=[^\s"'$]+)?$/.test(w);
  const unquote = (w: string) => w.replace(/^["']|["']$/g, '');
  for (const raw of fs.readFileSync(file, 'utf8').split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const assign = /^(?:export\s+)?(NODE_OPTIONS|[A-Z_]*(?:FLAGS|ARGS|OPTS))=["']?([^"'\n]*)["']?/.exec(line);
    if (assign && !/GATEWAYD_ARGS/.test(assign[1])) {
      flags.push(...assign[2].split(/\s+/).map(unquote).filter(isFlag));
      continue;
    }
    const words = line.split(/\s+/).map(unquote);
    const at = words.findIndex((w) => /(^|\/)node(js)?$/.test(w) || /^\$\{?NODE\}?$/.test(w));
    if (at < 0) continue;
    for (const w of words.slice(at + 1)) {
      if (!w.startsWith('-')) break; // the script: what follows is gatewayd's
      if (isFlag(w)) flags.push(w);
    }
  }
  return [...new Set(flags)];
}
