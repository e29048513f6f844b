// The one way a harness starts the built daemon: the tests (test/helpers/daemon.ts), the benchmark
// (bench/lib/gatewayd.ts) and the attack run (robust/lib/daemon.mjs) all spawn gatewayd, read its
// log lines and wait for its ready line through this file. Plain JavaScript so that robust/ (run by
// node directly) can import it as well as the TypeScript harnesses (types in launch.d.mts).

import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const BUNDLE = path.join(ROOT, 'dist', 'gatewayd.js');
/** The image's launcher (installed as /usr/bin/gatewayd): its node flags and environment are the device's. */
export const LAUNCHER = path.join(ROOT, 'rootfs', 'usr', 'bin', 'gatewayd');
export const READY = /msg="gatewayd ready"/;

/**
 * The node flags the launcher passes: literal `--flag` words after the node executable on the line
 * that runs it, and those in NODE_OPTIONS or a *FLAGS/*ARGS/*OPTS variable it sets. Words after the
 * bundle are gatewayd's own options, not node's. Undefined when there is no launcher.
 */
export function launcherNodeFlags(file = LAUNCHER) {
  if (!fs.existsSync(file)) return undefined;
  const flags = [];
  const isFlag = (w) => /^--[a-z][\w-]*(=[^\s"'$]+)?$/.test(w);
  const unquote = (w) => w.replace(/^["']|["']$/g, '');
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

/**
 * The launcher's heap bound (`--max-*-space-size` flags) as NODE_OPTIONS text, for a test that
 * starts the bundle itself under the device's heap: NODE_OPTIONS refuses some of the launcher's
 * other flags (`--no-memory-reducer`).
 */
export function launcherHeapOptions(file = LAUNCHER) {
  return (launcherNodeFlags(file) ?? []).filter((f) => /^--max-[a-z-]+-space-size=/.test(f)).join(' ');
}

/** The environment the launcher exports (`export NAME=${NAME:-default}` or `export NAME=value`). */
export function launcherEnv(file = LAUNCHER) {
  const env = {};
  if (!fs.existsSync(file)) return env;
  for (const raw of fs.readFileSync(file, 'utf8').split('\n')) {
    const m = /^\s*export\s+([A-Za-z_]\w*)=(?:\$\{\1:-([^}]*)\}|["']?([^"'\s$]*)["']?)\s*$/.exec(raw);
    if (m && m[1] !== 'NODE_OPTIONS') env[m[1]] = m[2] ?? m[3] ?? '';
  }
  return env;
}

/** The device's settings: the launcher's node flags and exported environment. */
export function deviceSettings(file = LAUNCHER) {
  return { flags: launcherNodeFlags(file) ?? [], env: launcherEnv(file) };
}

// What the bundle is built from (the Makefile's SOURCES): a file here newer than the bundle makes it stale.
const BUILD_INPUTS = ['src', 'console', path.join('build', 'build.mjs'), path.join('build', 'mqtt311.mjs'), path.join('build', 'shims'), 'package.json', 'package-lock.json'];

/** The newest modification time (ms) of the files under `paths` (relative to `root`); 0 for none. */
export function newestMtime(root, paths = BUILD_INPUTS) {
  let newest = 0;
  const visit = (p) => {
    let st;
    try {
      st = fs.statSync(p);
    } catch {
      return;
    }
    if (st.isDirectory()) for (const e of fs.readdirSync(p)) visit(path.join(p, e));
    else newest = Math.max(newest, st.mtimeMs);
  };
  for (const p of paths) visit(path.join(root, p));
  return newest;
}

/** True when the bundle is missing or older than a file it is built from. */
export function bundleIsStale(root = ROOT, bundle = path.join(root, 'dist', 'gatewayd.js')) {
  let built;
  try {
    built = fs.statSync(bundle).mtimeMs;
  } catch {
    return true;
  }
  return newestMtime(root) > built;
}

/**
 * Builds the bundle when it is missing or stale, so a test never runs yesterday's daemon against
 * today's sources (`make test` builds first; a single file run with `node --import tsx` may not
 * have). Test files run in parallel: one builds under a lock folder while the others wait for it,
 * then look again. `build` is the command (for this helper's own test).
 */
export function ensureFreshBundle({ root = ROOT, build = [process.execPath, path.join(root, 'build', 'build.mjs')], timeoutMs = 120_000 } = {}) {
  if (!bundleIsStale(root)) return false;
  const lock = path.join(root, 'dist', '.build-lock');
  fs.mkdirSync(path.dirname(lock), { recursive: true });
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      fs.mkdirSync(lock);
      break;
    } catch (err) {
      if (err.code !== 'EEXIST') throw err;
      // A lock left by a build that was killed: older than any build takes.
      try {
        if (Date.now() - fs.statSync(lock).mtimeMs > timeoutMs) fs.rmSync(lock, { recursive: true, force: true });
      } catch {}
      if (Date.now() > until) throw new Error(`waited ${timeoutMs} ms for ${lock}`);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
    }
  }
  try {
    if (!bundleIsStale(root)) return false; // built by another test file while this one waited
    const r = spawnSync(build[0], build.slice(1), { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
    if (r.status !== 0) throw new Error(`bundle build failed (${build.join(' ')}: exit ${r.status ?? r.signal})`);
    return true;
  } finally {
    fs.rmSync(lock, { recursive: true, force: true });
  }
}

/** Writes `config` as `<dir>/gatewayd.json` and returns the file's path. */
export function writeConfigFile(dir, config) {
  const file = path.join(dir, 'gatewayd.json');
  fs.writeFileSync(file, JSON.stringify(config, null, 2));
  return file;
}

/**
 * Reads a process's stdout and stderr as lines (gatewayd logs one line per event). `keep`: 'all'
 * (default), or the number of most recent lines to keep. `waitFor(re)` resolves with the first line
 * matching `re`, logged already or later, and rejects on timeout or when the process exits first.
 */
export function watchLines(proc, { keep = 'all', onLine } = {}) {
  const lines = [];
  const waiters = [];
  const listeners = onLine ? [onLine] : [];
  const exited = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
  for (const stream of [proc.stdout, proc.stderr]) {
    if (!stream) continue;
    let buf = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk) => {
      buf += chunk;
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        lines.push(line);
        if (keep !== 'all' && lines.length > keep) lines.splice(0, lines.length - keep);
        for (const l of listeners) l(line);
        for (let w = waiters.length - 1; w >= 0; w--) if (waiters[w].re.test(line)) waiters.splice(w, 1)[0].resolve(line);
      }
    });
  }
  const waitFor = (re, timeoutMs = 15_000) =>
    new Promise((resolve, reject) => {
      const found = lines.find((l) => re.test(l));
      if (found !== undefined) return resolve(found);
      const last = () => lines.slice(-10).join('\n');
      const timer = setTimeout(() => reject(new Error(`timed out waiting for log ${re}; last lines:\n${last()}`)), timeoutMs);
      waiters.push({
        re,
        resolve: (l) => {
          clearTimeout(timer);
          resolve(l);
        },
      });
      exited.then(({ code, signal }) => {
        clearTimeout(timer);
        reject(new Error(`daemon exited (${code ?? signal}) before logging ${re}; last lines:\n${last()}`));
      });
    });
  return { lines, exited, waitFor, onLine: (fn) => listeners.push(fn) };
}

// The test runner (tap) loads its process-tracking hook into every node process it starts, and hooks
// child_process so that every child of a test inherits the hook through NODE_OPTIONS, whatever
// environment the spawn gives. Coverage is off (package.json "tap"), so in a daemon the hook only
// costs start-up time (about half of a daemon's start) and memory the device does not have.
const RUNNER_HOOK = /@tapjs[\\/]processinfo[\\/]/;

/** NODE_OPTIONS as words: node takes double-quoted words with backslash escapes. */
function nodeOptionsWords(text) {
  return [...text.matchAll(/"((?:\\.|[^"\\])*)"|(\S+)/g)].map((m) => (m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : m[2]));
}

/**
 * The argv that runs `argv` with exactly the NODE_OPTIONS it would have without the test runner's
 * hook: through env(1), which sets them after the runner has added its own and then execs the
 * command (the same process, so its pid and signals are the command's). Outside the runner, `argv`.
 * `nodeOptions`: the NODE_OPTIONS the caller gives the command (default: this process's).
 */
export function withoutRunnerHook(argv, nodeOptions = process.env.NODE_OPTIONS) {
  const hooked = RUNNER_HOOK.test(process.env.NODE_OPTIONS ?? '') || process.execArgv.some((a) => RUNNER_HOOK.test(a));
  if (!hooked) return argv;
  const words = nodeOptionsWords(nodeOptions ?? '').filter((w) => !RUNNER_HOOK.test(w));
  const text = words.map((w) => (/[\s"\\]/.test(w) ? `"${w.replace(/[\\"]/g, '\\$&')}"` : w)).join(' ');
  return ['env', ...(text === '' ? ['-u', 'NODE_OPTIONS'] : [`NODE_OPTIONS=${text}`]), ...argv];
}

/**
 * Spawns the bundle on `configFile`: `node [flags] dist/gatewayd.js --config FILE [args]`. With
 * `device: true` the launcher's node flags and environment are applied, as on the device (measure
 * memory this way). `command` replaces `node [flags] BUNDLE` (e.g. an installed launcher script).
 */
export function spawnGatewayd({ configFile, cwd, args = [], env = {}, device = false, command, keep, onLine }) {
  if (!command) ensureFreshBundle();
  const dev = device ? deviceSettings() : { flags: [], env: {} };
  const childEnv = { ...process.env, ...dev.env, ...env };
  const argv = withoutRunnerHook(command ?? [process.execPath, ...dev.flags, BUNDLE], childEnv.NODE_OPTIONS);
  const spawnedAt = process.hrtime.bigint();
  const proc = spawn(argv[0], [...argv.slice(1), '--config', configFile, ...args], {
    cwd,
    env: childEnv,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return { proc, spawnedAt, ...watchLines(proc, { keep, onLine }) };
}
