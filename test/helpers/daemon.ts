// Starts the real, built daemon (dist/gatewayd.js) on ephemeral ports with a config written by the
// test, and gives back a small HTTP(S) client bound to it. Every test that talks to gatewayd uses this.

import { spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './ports.js';
import { BUNDLE, READY, ROOT, ensureFreshBundle, spawnGatewayd, watchLines, withoutRunnerHook, writeConfigFile, type LineWatch } from './launch.mjs';

export { BUNDLE, ROOT };

/** Builds the bundle when it is missing or older than its sources (make test builds it first). */
export function ensureBundle(): string {
  ensureFreshBundle();
  return BUNDLE;
}

export interface TestLike {
  teardown(fn: () => unknown): void;
  /** tap's: false once an assertion of the test has failed. */
  passing?(): boolean;
}

export interface Response {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  json<T = any>(): T;
}

export interface RequestOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer | object;
  /** Use HTTPS on this port (default: the first HTTP port). */
  port?: number;
  tls?: boolean;
  cert?: string;
  key?: string;
  ca?: string;
  timeoutMs?: number;
}

export interface Daemon {
  proc: ChildProcess;
  dir: string;
  dataDir: string;
  configFile: string;
  ports: { http: number[]; https: number[]; clientAuth: number[] };
  /** Every line the daemon logged (stdout and stderr). */
  logs: string[];
  request(pathname: string, opts?: RequestOptions): Promise<Response>;
  /** Resolves with the first log line matching `re` (already logged or future). */
  waitForLog(re: RegExp, timeoutMs?: number): Promise<string>;
  signal(sig: NodeJS.Signals): void;
  /** Sends SIGTERM and resolves with the exit code. */
  stop(): Promise<number | null>;
  exited: Promise<number | null>;
}

export interface StartOptions {
  /** Number of plain HTTP ports (default 1). */
  http?: number;
  https?: number;
  clientAuth?: number;
  /** Reuse this directory (restart on the same dataDir). */
  dir?: string;
  env?: Record<string, string>;
  /** Do not wait for the ready line (for start-up failure tests). */
  noWait?: boolean;
  args?: string[];
  /** The command that runs the daemon, before `--config FILE` (default: this node and the bundle). */
  command?: string[];
}

/**
 * `config` is the configuration file's content; `http.*.ports` are filled in with free ports unless
 * given, and `dataDir` defaults to `<dir>/data`. Use `(ports) => config` to place the chosen ports
 * elsewhere in the config (e.g. `rest.allowed.ports`).
 */
export async function startDaemon(
  t: TestLike,
  config: Record<string, any> | ((p: Daemon['ports'], dir: string) => Record<string, any>) = {},
  opts: StartOptions = {},
): Promise<Daemon> {
  ensureBundle();
  const dir = opts.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-test-'));
  const ports = {
    http: await Promise.all(Array.from({ length: opts.http ?? 1 }, () => freePort())),
    https: await Promise.all(Array.from({ length: opts.https ?? 0 }, () => freePort())),
    clientAuth: await Promise.all(Array.from({ length: opts.clientAuth ?? 0 }, () => freePort())),
  };
  const cfg = typeof config === 'function' ? config(ports, dir) : structuredClone(config);
  cfg.dataDir ??= path.join(dir, 'data');
  cfg.http ??= {};
  cfg.http['http.ports'] ??= ports.http;
  cfg.http['https.ports'] ??= ports.https;
  cfg.http['https.client.auth.ports'] ??= ports.clientAuth;
  cfg.http['bind.address'] ??= '127.0.0.1';
  const configFile = writeConfigFile(dir, cfg);
  const spawned = spawnGatewayd({ configFile, cwd: dir, args: opts.args, env: opts.env, command: opts.command });
  const { proc } = spawned;
  const d = watchProcess(t, proc, ports, cfg.dataDir, configFile, dir, spawned);
  if (!opts.dir) {
    t.teardown(async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      await d.exited;
      fs.rmSync(dir, { recursive: true, force: true });
    });
  }
  if (!opts.noWait) await d.waitForLog(READY, 15_000);
  return d;
}

/**
 * Wraps a started process that logs like gatewayd (the bundle, or an installed launcher) as a
 * `Daemon`: collects its log lines, waits for patterns, talks HTTP to its ports, kills it at teardown.
 */
export function watchProcess(t: TestLike, proc: ChildProcess, ports: Daemon['ports'], dataDir: string, configFile: string, dir: string, watch: LineWatch = watchLines(proc)): Daemon {
  if (process.env.GATEWAYD_TEST_LOGS) watch.onLine((line) => process.stderr.write(`[gatewayd ${proc.pid}] ${line}\n`));
  const exited = watch.exited.then(({ code }) => code);
  const { lines: logs, waitFor: waitForLog } = watch;
  t.teardown(async () => {
    // A failed test shows how the daemon ended: its exit and its last lines, which a CI log
    // otherwise loses with the temporary directory.
    if (t.passing && !t.passing()) {
      const state = proc.exitCode !== null || proc.signalCode !== null ? `exited (${proc.exitCode ?? proc.signalCode})` : 'running';
      process.stderr.write(`# gatewayd ${proc.pid} ${state}; its last log lines:\n${logs.slice(-40).map((l) => `#   ${l}`).join('\n')}\n`);
    }
    if (proc.exitCode === null && proc.signalCode === null) {
      proc.kill('SIGKILL');
      await exited;
    }
  });
  return {
    proc,
    dir,
    dataDir,
    configFile,
    ports,
    logs,
    exited,
    waitForLog,
    request: (p, o) => request(ports, p, o),
    signal: (sig) => proc.kill(sig),
    stop: async () => {
      proc.kill('SIGTERM');
      return exited;
    },
  };
}

export function request(ports: Daemon['ports'], pathname: string, o: RequestOptions = {}): Promise<Response> {
  const secure = o.tls ?? (o.port !== undefined && !ports.http.includes(o.port));
  const port = o.port ?? (secure ? ports.https[0] ?? ports.clientAuth[0] : ports.http[0]);
  let body: Buffer | undefined;
  const headers: Record<string, string> = { ...o.headers };
  if (o.body !== undefined) {
    if (Buffer.isBuffer(o.body)) body = o.body;
    else if (typeof o.body === 'string') body = Buffer.from(o.body);
    else {
      body = Buffer.from(JSON.stringify(o.body));
      headers['content-type'] ??= 'application/json';
    }
  }
  // Node sends a DELETE/GET body unframed unless its length is given (DELETE /identities has one).
  if (body !== undefined) headers['content-length'] ??= String(body.length);
  const mod = secure ? https : http;
  return new Promise((resolve, reject) => {
    const req = mod.request(
      {
        host: '127.0.0.1',
        port,
        path: pathname,
        method: o.method ?? 'GET',
        headers,
        agent: false,
        ...(secure ? { rejectUnauthorized: !!o.ca, ca: o.ca && fs.readFileSync(o.ca), cert: o.cert && fs.readFileSync(o.cert), key: o.key && fs.readFileSync(o.key), servername: 'localhost' } : {}),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text, json: () => JSON.parse(text) });
        });
        res.on('error', reject);
      },
    );
    req.setTimeout(o.timeoutMs ?? 10_000, () => req.destroy(new Error(`request ${pathname} timed out`)));
    req.on('error', reject);
    req.end(body);
  });
}

/** Runs the bundle as a command (check-config, passwd, --version) and returns its output. */
export function runCli(args: string[], opts: { input?: string; env?: Record<string, string> } = {}) {
  ensureBundle();
  const env = { ...process.env, ...opts.env };
  const [cmd, ...argv] = withoutRunnerHook([process.execPath, BUNDLE, ...args], env.NODE_OPTIONS);
  const r = spawnSync(cmd, argv, { input: opts.input, encoding: 'utf8', env, timeout: 20_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}
