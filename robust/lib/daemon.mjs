// The daemon under attack: the BUILT bundle (dist/gatewayd.js) started on ephemeral loopback ports
// with a configuration this harness writes. It can be SIGKILLed and restarted on the same dataDir;
// an exit nobody asked for is counted as a crash (and the daemon is started again so the run goes on).

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const BUNDLE = path.join(ROOT, 'dist', 'gatewayd.js');

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** A temp dir removed by `cleanup()` at the end of the run (also on Ctrl-C). */
const dirs = new Set();
export function tempDir(prefix) {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), `gw-robust-${prefix}-`));
  dirs.add(d);
  return d;
}
const children = new Set();
export function track(child) {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}
export function cleanup() {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  dirs.clear();
}

/** Resident set size of a process in bytes (Linux /proc), 0 when gone. */
export function rssOf(pid) {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

const LOG_KEEP = 2000;
const LAUNCHER = path.join(ROOT, 'rootfs', 'usr', 'bin', 'gatewayd');

/**
 * The device's settings, read from the image's launcher so the attack meets the heap bound and
 * thread pool it will meet in the field: its NODE_FLAGS and its exported defaults.
 */
export function deviceSettings() {
  const out = { flags: [], env: {} };
  let text = '';
  try {
    text = fs.readFileSync(LAUNCHER, 'utf8');
  } catch {
    return out;
  }
  const flags = /^NODE_FLAGS="([^"]*)"/m.exec(text);
  if (flags) out.flags = flags[1].split(/\s+/).filter(Boolean);
  for (const m of text.matchAll(/^export (\w+)=\$\{\w+:-([^}]*)\}/gm)) out.env[m[1]] = m[2];
  return out;
}
const DEVICE = deviceSettings();

/**
 * Starts gatewayd. `config` is the file's content; `http.ports`, `https.ports` and `dataDir` are filled
 * in. Logs are scanned as they come (`onLine`); only the last lines are kept, plus every error line.
 */
export async function startDaemon(config, opts = {}) {
  if (!fs.existsSync(BUNDLE)) throw new Error(`${BUNDLE} is missing: run node build/build.mjs first`);
  const dir = opts.dir ?? tempDir('daemon');
  const cfg = structuredClone(config);
  cfg.dataDir ??= path.join(dir, 'data');
  cfg.http ??= {};
  cfg.http['http.ports'] ??= [await freePort()];
  cfg.http['https.ports'] ??= [];
  cfg.http['bind.address'] ??= '127.0.0.1';
  cfg['log.level'] ??= 'warn';
  const configFile = path.join(dir, 'gatewayd.json');
  fs.writeFileSync(configFile, JSON.stringify(cfg, null, 2));

  const d = {
    dir,
    config: cfg,
    configFile,
    dataDir: cfg.dataDir,
    port: cfg.http['http.ports'][0],
    proc: undefined,
    /** Last lines, every error line, and all lines when `keepAll`. */
    logs: [],
    errors: [],
    allLines: opts.keepAll ? [] : undefined,
    crashes: 0,
    starts: 0,
    exitedUnexpectedly: false,
    onLine: opts.onLine,
    expectExit: false,
    async start(waitMs = 20_000) {
      d.expectExit = false;
      d.exitedUnexpectedly = false;
      const proc = track(
        spawn(process.execPath, [...DEVICE.flags, BUNDLE, '--config', configFile], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...DEVICE.env, ...opts.env } }),
      );
      d.proc = proc;
      d.starts++;
      let ready;
      const readyP = new Promise((resolve) => (ready = resolve));
      for (const stream of [proc.stdout, proc.stderr]) {
        let buf = '';
        stream.setEncoding('utf8');
        stream.on('data', (chunk) => {
          buf += chunk;
          let i;
          while ((i = buf.indexOf('\n')) >= 0) {
            const line = buf.slice(0, i);
            buf = buf.slice(i + 1);
            d.logs.push(line);
            if (d.logs.length > LOG_KEEP) d.logs.splice(0, d.logs.length - LOG_KEEP);
            d.allLines?.push(line);
            if (/level=error/.test(line)) d.errors.push(line);
            if (/msg="gatewayd ready"/.test(line)) ready(true);
            d.onLine?.(line);
          }
        });
      }
      d.exited = new Promise((resolve) =>
        proc.once('exit', (code, signal) => {
          if (!d.expectExit) {
            d.crashes++;
            d.exitedUnexpectedly = true;
            d.errors.push(`process exited unexpectedly: code=${code} signal=${signal}`);
          }
          ready(false);
          resolve({ code, signal });
        }),
      );
      const timer = setTimeout(() => ready(false), waitMs);
      const ok = await readyP;
      clearTimeout(timer);
      if (!ok) throw new Error(`gatewayd did not become ready; last lines:\n${d.logs.slice(-8).join('\n')}`);
      return d;
    },
    alive() {
      return d.proc !== undefined && d.proc.exitCode === null && d.proc.signalCode === null;
    },
    rss() {
      return d.proc ? rssOf(d.proc.pid) : 0;
    },
    /** SIGKILL: a power cut as far as the process is concerned. */
    async kill(signal = 'SIGKILL') {
      if (!d.alive()) return;
      d.expectExit = true;
      d.proc.kill(signal);
      await d.exited;
    },
    async stop() {
      await d.kill('SIGTERM');
    },
    /** Restarts after an unexpected exit so the run can go on (the crash stays counted). */
    async ensureUp() {
      if (!d.alive()) await d.start();
    },
  };
  if (!opts.noStart) await d.start();
  return d;
}
