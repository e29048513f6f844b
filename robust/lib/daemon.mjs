// The daemon under attack: the BUILT bundle (dist/gatewayd.js) started on ephemeral loopback ports
// with a configuration this harness writes. It can be SIGKILLed and restarted on the same dataDir;
// an exit nobody asked for is counted as a crash (and the daemon is started again so the run goes on).

import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { BUNDLE, READY, ROOT, deviceSettings, spawnGatewayd, writeConfigFile } from '../../test/helpers/launch.mjs';

export { BUNDLE, ROOT, deviceSettings };

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

/** Resolves once something accepts connections on `port` (a broker just started), else throws. */
export async function waitForPort(port, what = 'server') {
  for (let i = 0; i < 200; i++) {
    const ok = await new Promise((resolve) => {
      const s = net.connect({ host: '127.0.0.1', port });
      s.once('connect', () => (s.destroy(), resolve(true)));
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`${what} did not start`);
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
  const configFile = writeConfigFile(dir, cfg);

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
      // The image's heap bound and thread pool (the launcher's flags and environment): the attack
      // meets the daemon as it runs in the field.
      const spawned = spawnGatewayd({
        configFile,
        cwd: dir,
        env: opts.env,
        device: true,
        // `wrap`: a command prefix the daemon runs under (a memory cgroup, test/helpers/memory-cgroup.mjs).
        command: opts.wrap && [...opts.wrap, process.execPath, ...deviceSettings().flags, BUNDLE],
        keep: 0,
        onLine: (line) => {
          // One log across restarts: the last lines, every error line, all lines when asked.
          d.logs.push(line);
          if (d.logs.length > LOG_KEEP) d.logs.splice(0, d.logs.length - LOG_KEEP);
          d.allLines?.push(line);
          if (/level=error/.test(line)) d.errors.push(line);
          d.onLine?.(line);
        },
      });
      const proc = track(spawned.proc);
      d.proc = proc;
      d.starts++;
      let ready;
      const readyP = new Promise((resolve) => (ready = resolve));
      spawned.onLine((line) => READY.test(line) && ready(true));
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
