// Child processes of the benchmark: baselines and load generators (bundled to bench/out/*.mjs) that
// speak one JSON object per stdout line, RSS from /proc, and the wrk load generator.

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { Scope } from './scope.js';

/** bench/out, where bench/build.mjs puts the bundled entry points (this file is bundled there too). */
export const OUT = path.dirname(fileURLToPath(import.meta.url));
export const ROOT = path.resolve(OUT, '..', '..');

export interface JsonChild {
  proc: ChildProcess;
  pid: number;
  /** The first JSON line (the child's "ready" report). */
  ready: Record<string, any>;
  /** Resolves with the next JSON line the child prints. */
  next(timeoutMs?: number): Promise<Record<string, any>>;
  send(obj: object): void;
  stop(): Promise<void>;
}

/** Starts `node [nodeArgs] bench/out/<entry>.mjs args` and waits for its first JSON line. */
export async function startJsonChild(scope: Scope, entry: string, args: string[], opts: { nodeArgs?: string[]; timeoutMs?: number } = {}): Promise<JsonChild> {
  const proc = spawn(process.execPath, [...(opts.nodeArgs ?? []), path.join(OUT, `${entry}.mjs`), ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      proc.kill('SIGKILL');
      await exited;
    }
  };
  scope.teardown(stop);
  const queue: Record<string, any>[] = [];
  const waiters: ((v: Record<string, any>) => void)[] = [];
  let stderr = '';
  proc.stderr!.on('data', (d) => {
    stderr = (stderr + d).slice(-2000);
  });
  readline.createInterface({ input: proc.stdout! }).on('line', (line) => {
    let obj: Record<string, any>;
    try {
      obj = JSON.parse(line);
    } catch {
      return;
    }
    const w = waiters.shift();
    if (w) w(obj);
    else queue.push(obj);
  });
  const next = (timeoutMs = 120_000) =>
    new Promise<Record<string, any>>((resolve, reject) => {
      const q = queue.shift();
      if (q) return resolve(q);
      const timer = setTimeout(() => reject(new Error(`${entry}: no answer within ${timeoutMs} ms; stderr: ${stderr}`)), timeoutMs);
      const onExit = () => reject(new Error(`${entry} exited (${proc.exitCode ?? proc.signalCode}); stderr: ${stderr}`));
      exited.then(onExit);
      waiters.push((v) => {
        clearTimeout(timer);
        resolve(v);
      });
    });
  const ready = await next(opts.timeoutMs ?? 15_000);
  if (ready.error) throw new Error(`${entry}: ${ready.error}`);
  return { proc, pid: proc.pid!, ready, next, send: (o) => proc.stdin!.write(JSON.stringify(o) + '\n'), stop };
}

/** Resident set size of a process in KiB (VmRSS), or NaN when it is gone. */
export function rssKiB(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+)\s+kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : NaN;
  } catch {
    return NaN;
  }
}

let clockTicks: number | undefined;

/**
 * CPU seconds (user + system, all threads) a process has used so far, from /proc/<pid>/stat.
 * Requests per CPU-second is what a server costs whatever else shares the cores; wall-clock
 * requests/s on a busy machine mostly measures the neighbours.
 */
export function cpuSeconds(pid: number): number {
  clockTicks ??= Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may contain spaces) start at field 3; utime is 14, stime 15.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / clockTicks;
  } catch {
    return NaN;
  }
}

/**
 * CPU milliseconds a live process has run so far, all threads, from the scheduler's nanosecond
 * counters (/proc/<pid>/task/<tid>/schedstat): fine enough for a start-up of a few hundred ms, where
 * /proc/<pid>/stat's 10 ms ticks are not.
 */
export function threadCpuMs(pid: number): number {
  let ns = 0;
  try {
    for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
      try {
        ns += Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      } catch {
        // the thread ended meanwhile
      }
    }
  } catch {
    return NaN;
  }
  return ns / 1e6;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface WrkResult {
  rps: number;
  /** Latency percentiles in milliseconds. */
  p50: number;
  p99: number;
  requests: number;
  /** Non-2xx answers and socket errors: a run with any is not a valid figure. */
  bad: number;
}

export function haveWrk(): boolean {
  return spawnSync('wrk', ['--version'], { encoding: 'utf8' }).error === undefined;
}

function toMs(v: string, unit: string): number {
  const x = Number(v);
  return unit === 'us' ? x / 1000 : unit === 's' ? x * 1000 : unit === 'm' ? x * 60_000 : x;
}

/** Parses wrk's `--latency` report. */
export function parseWrk(out: string): WrkResult {
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN);
  const pct = (p: string) => {
    const m = new RegExp(`^\\s+${p}%\\s+([\\d.]+)(us|ms|s|m)\\s*$`, 'm').exec(out);
    return m ? toMs(m[1], m[2]) : NaN;
  };
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? NaN);
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0);
  const sock = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  const sockErrs = sock ? Number(sock[1]) + Number(sock[2]) + Number(sock[3]) + Number(sock[4]) : 0;
  return { rps, p50: pct('50'), p99: pct('99'), requests, bad: non2xx + sockErrs };
}

/** One wrk run: one thread (the other core serves), keep-alive connections. */
export function runWrk(url: string, headers: Record<string, string>, opts: { seconds: number; connections: number }): Promise<WrkResult> {
  const args = ['-t1', `-c${opts.connections}`, `-d${opts.seconds}s`, '--latency'];
  for (const [k, v] of Object.entries(headers)) args.push('-H', `${k}: ${v}`);
  args.push(url);
  return new Promise((resolve, reject) => {
    const p = spawn('wrk', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (out += d));
    p.once('error', reject);
    p.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`wrk exited ${code}: ${out}`));
      resolve(parseWrk(out));
    });
  });
}

export interface STimeResult {
  /** Connections per wall-clock second (one at a time, each with one request). */
  cps: number;
  n: number;
  /** Fraction of handshakes that resumed the first session. */
  resumed: number;
}

/** Parses `openssl s_time -reuse` output; `wallS` is the wall time the run took. */
export function parseSTime(out: string, wallS: number): STimeResult | undefined {
  const m = /(\d+) connections in [\d.]+s/.exec(out);
  if (!m) return undefined;
  // The progress line has one mark per connection: 'r' for a resumed session, '*' for a new one.
  const marks = /^[r*.]{10,}$/m.exec(out)?.[0] ?? '';
  const n = Number(m[1]);
  return { cps: n / wallS, n, resumed: marks.length ? (marks.match(/r/g)?.length ?? 0) / marks.length : NaN };
}

/**
 * New TLS connections per second with session resumption: `openssl s_time -reuse` (a C client, so
 * the server rather than the client is the limit) resumes the first session on every connection and
 * sends `GET path HTTP/1.0` on each. Wall time is measured here (s_time rounds to whole seconds).
 */
export function runSTime(port: number, pathname: string, seconds: number): Promise<STimeResult> {
  const args = ['s_time', '-connect', `127.0.0.1:${port}`, '-reuse', '-time', String(seconds), '-www', pathname];
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const p = spawn('openssl', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (out += d));
    p.once('error', reject);
    p.once('exit', (code) => {
      const r = parseSTime(out, Number(process.hrtime.bigint() - t0) / 1e9);
      if (code !== 0 || !r) return reject(new Error(`openssl s_time exited ${code}: ${out.slice(-500)}`));
      resolve(r);
    });
  });
}
