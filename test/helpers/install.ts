// Installing gatewayd into a temporary image tree (build/install.sh, what `make install` runs) and
// starting the installed tree the way its systemd unit or BusyBox init script would, with dataDir
// and ports redirected. Also: snapshots of a tree (to show nothing outside dataDir was written), a
// wrapper that records every write-like system call (strace), and unprivileged users for the run.

import { spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT, ensureBundle, request, watchProcess, type Daemon } from './daemon.js';

export { watchProcess };

export { ROOT };

export interface TestLike {
  teardown(fn: () => unknown): void;
}

/** A 0755 temp dir (mkdtemp makes 0700, which an unprivileged daemon user could not enter). */
export function openTempDir(t: TestLike, prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  fs.chmodSync(dir, 0o755);
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export interface Installed {
  destdir: string;
  prefix: string;
  /** Absolute path of an image path inside the staging tree. */
  at(imagePath: string): string;
  output: string;
}

/** Runs build/install.sh (the recipe of `make install`) into a fresh DESTDIR. */
export function install(t: TestLike, env: Record<string, string> = {}): Installed {
  ensureBundle();
  const destdir = path.join(openTempDir(t, 'gatewayd-image-'), 'root');
  const prefix = env.PREFIX ?? '/usr';
  const r = spawnSync('sh', [path.join(ROOT, 'build', 'install.sh')], {
    cwd: ROOT,
    env: { ...process.env, DESTDIR: destdir, PREFIX: prefix, ...env },
    encoding: 'utf8',
    timeout: 30_000,
  });
  if (r.status !== 0) throw new Error(`install.sh failed (${r.status}): ${r.stderr}${r.stdout}`);
  return { destdir, prefix, at: (p) => path.join(destdir, p), output: r.stdout };
}

export interface FileState {
  mode: number;
  size: number;
  mtimeMs: number;
  uid: number;
  sha256?: string;
  link?: string;
}

/** Every entry under `dir` with its mode, size, mtime, owner and content hash. */
export function snapshotTree(dir: string): Map<string, FileState> {
  const out = new Map<string, FileState>();
  const walk = (d: string) => {
    for (const name of fs.readdirSync(d)) {
      const p = path.join(d, name);
      const st = fs.lstatSync(p);
      const s: FileState = { mode: st.mode, size: st.size, mtimeMs: st.mtimeMs, uid: st.uid };
      if (st.isSymbolicLink()) s.link = fs.readlinkSync(p);
      else if (st.isFile()) s.sha256 = crypto.createHash('sha256').update(fs.readFileSync(p)).digest('hex');
      out.set(path.relative(dir, p), s);
      if (st.isDirectory()) walk(p);
    }
  };
  walk(dir);
  return out;
}

/** Human-readable differences between two snapshots ([] when equal). */
export function diffTrees(before: Map<string, FileState>, after: Map<string, FileState>): string[] {
  const diffs: string[] = [];
  for (const [p, s] of after) {
    const b = before.get(p);
    if (!b) diffs.push(`added ${p}`);
    else if (JSON.stringify(b) !== JSON.stringify(s)) diffs.push(`changed ${p}`);
  }
  for (const p of before.keys()) if (!after.has(p)) diffs.push(`removed ${p}`);
  return diffs;
}

/** The user the installed daemon runs as in tests: `nobody` when we are root, else ourselves. */
export function daemonUser(): { uid: number; gid: number; name: string; home: string } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const r = spawnSync('id', ['-g', 'nobody'], { encoding: 'utf8' });
  const uid = Number(spawnSync('id', ['-u', 'nobody'], { encoding: 'utf8' }).stdout.trim());
  const gid = Number(r.stdout.trim());
  if (!Number.isInteger(uid) || !Number.isInteger(gid) || r.status !== 0) return undefined;
  return { uid, gid, name: 'nobody', home: '/nonexistent' };
}

/** Creates dataDir as systemd's StateDirectory= would: 0700, owned by the daemon user. */
export function makeStateDir(dir: string): void {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const u = daemonUser();
  if (u) fs.chownSync(dir, u.uid, u.gid);
}

export interface ProductionPorts {
  https: number;
  clientAuth: number;
}

/**
 * The installed production configuration with only what a test must redirect changed: dataDir,
 * the listening ports (kept in the same roles), the bind address, image paths (the truststore)
 * moved under DESTDIR, and the MQTT broker URL.
 */
export function redirectConfig(img: Installed, dir: string, opts: { dataDir: string; ports: ProductionPorts; brokerUrl?: string }): { file: string; config: any } {
  const config = JSON.parse(fs.readFileSync(img.at('/etc/gatewayd/gatewayd.json'), 'utf8'));
  config.dataDir = opts.dataDir;
  config.http['https.ports'] = [opts.ports.https];
  config.http['https.client.auth.ports'] = [opts.ports.clientAuth];
  config.http['bind.address'] = '127.0.0.1';
  if (config.http['https.truststore']) config.http['https.truststore'] = img.at(config.http['https.truststore']);
  if (opts.brokerUrl) config.mqtt['broker-url'] = opts.brokerUrl;
  const file = path.join(dir, 'gatewayd.json');
  fs.writeFileSync(file, JSON.stringify(config, null, 2));
  fs.chmodSync(file, 0o644);
  return { file, config };
}

/** `ExecStart=` of a unit file, split into words (our unit has no quoting). */
export function unitDirective(unitText: string, key: string): string[] {
  return unitText
    .split('\n')
    .filter((l) => l.startsWith(`${key}=`))
    .map((l) => l.slice(key.length + 1).trim());
}

export function haveStrace(): boolean {
  return spawnSync('strace', ['-V'], { stdio: 'ignore' }).status === 0;
}

// The system calls that create, change or remove a file or folder.
const WRITE_CALLS = 'creat,mkdir,mkdirat,rename,renameat,renameat2,unlink,unlinkat,rmdir,link,linkat,symlink,symlinkat,truncate,chmod,fchmodat,chown,lchown,fchownat,utimensat,mknod,mknodat,open,openat';

/**
 * Command prefix that records write-like system calls of the whole process tree into `file`; strace
 * itself stays root (to write `file`) and runs the command as `user` when given.
 */
export function straceArgs(file: string, user?: string): string[] {
  return ['strace', '-f', '-qq', '-s', '512', '-o', file, '-e', `trace=${WRITE_CALLS}`, ...(user ? ['-u', user] : [])];
}

/**
 * Paths that the trace shows being written (opened for writing or created, renamed, removed,
 * re-moded), resolved against `cwd`. /dev and /proc are the kernel's, not the filesystem's.
 */
export function writesInTrace(file: string, cwd = '/'): string[] {
  const out = new Set<string>();
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    const m = /^\d+\s+(\w+)\((.*)\)\s+=\s+(-?\d+|\?)/.exec(line);
    if (!m) continue;
    const [, call, args] = m;
    const paths = [...args.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((x) => x[1]);
    if (paths.length === 0) continue;
    if (call === 'open' || call === 'openat') {
      if (!/O_WRONLY|O_RDWR|O_CREAT|O_TRUNC/.test(args)) continue;
    }
    // rename/link name both paths; both are written.
    for (const p of call.startsWith('rename') || call.startsWith('link') || call.startsWith('symlink') ? paths : paths.slice(0, 1)) {
      const abs = path.resolve(cwd, p);
      if (abs === '/dev' || abs.startsWith('/dev/') || abs.startsWith('/proc/')) continue;
      out.add(abs);
    }
  }
  return [...out].sort();
}


/** A client for a daemon started by something else (the init script): only ports and request. */
export function clientFor(ports: Daemon['ports']): Daemon {
  return { ports, request: (p: string, o?: Parameters<Daemon['request']>[1]) => request(ports, p, o) } as unknown as Daemon;
}

/** The environment systemd gives a service with User= (no inherited variables). */
export function serviceEnv(extra: Record<string, string> = {}): Record<string, string> {
  const u = daemonUser();
  const name = u?.name ?? os.userInfo().username;
  return {
    PATH: `${path.dirname(process.execPath)}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`,
    LANG: 'C.UTF-8',
    USER: name,
    LOGNAME: name,
    HOME: u?.home ?? os.homedir(),
    SHELL: '/usr/sbin/nologin',
    ...extra,
  };
}

/**
 * `env -i NAME=value … cmd args`: exactly this environment. (The test runner hooks child_process
 * to add its own NODE_OPTIONS to every child; a service never sees those.)
 */
export function cleanEnv(env: Record<string, string>, argv: string[]): string[] {
  return ['env', '-i', ...Object.entries(env).map(([k, v]) => `${k}=${v}`), ...argv];
}

export function spawnAsDaemonUser(cmd: string, args: string[], opts: SpawnOptions): ChildProcess {
  const u = daemonUser();
  return spawn(cmd, args, { ...opts, ...(u ? { uid: u.uid, gid: u.gid } : {}) });
}

/**
 * Builds the bundle as `make build` does, into `outfile` with `version` (over-the-air tests: an old
 * and a new firmware), optionally through an esbuild plugin module that changes the sources.
 */
export function buildBundle(outfile: string, version: string, plugin?: string): void {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'build', 'build.mjs')], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, GATEWAYD_OUTFILE: outfile, GATEWAYD_VERSION: version, ...(plugin ? { GATEWAYD_BUILD_PLUGIN: plugin } : {}) },
    timeout: 60_000,
  });
  if (r.status !== 0) throw new Error(`build of ${version} failed: ${r.stderr}${r.stdout}`);
}
