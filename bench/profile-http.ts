// The cost of one HTTP read, repeatable on a busy machine: keep-alive GETs of the demo asset
// (session cookie + XSRF token, BASIC) from wrk against dist/gatewayd.js, and the same against the
// bare node:http ceiling answering gatewayd's own bytes and against Fastify (bench/baselines/),
// interleaved, in the same conditions as `make bench`'s HTTP section. Reported per request: server CPU microseconds (scheduler nanoseconds of all the
// server's threads, /proc/<pid>/task/*/schedstat) or, with --callgrind, instructions counted by
// valgrind while the requests ran, minus an idle stretch of the same length.
//
//   node bench/out/profile-http.mjs [--seconds 5] [--repeats 3] [--connections 10]
//        [--only session,basic,bare,fastify] [--callgrind] [--cpu-prof DIR] [--bundle A.js --bundle B.js]
//        [--node-flags "--max-semi-space-size=1 …" | --launcher-flags] [--idle S] [--tls]
//        [--baseline-flags "…"]
//
// --bundle (repeatable): measure these bundles instead of dist/gatewayd.js, side by side (A/B).
// --node-flags: node flags for gatewayd (not the baselines); --launcher-flags: the launcher's own
// (rootfs/usr/bin/gatewayd's NODE_FLAGS), as a device runs it. --baseline-flags: node flags for the
// baselines (the bare ceiling and Fastify), to tell what a flag costs from what gatewayd's code costs.
// --tls: every request over HTTPS keep-alive (the same test certificate for every server), as in
// `make bench`'s HTTPS rows.
// --idle S: every server sits idle S seconds before each warm-up. V8 shrinks the heap of a process
// that has gone idle (its memory reducer), and what gatewayd costs per request after that is what a
// device that was idle for a while pays (docs/installation.md "The launcher").
//
// --cpu-prof DIR: gatewayd runs with node's --cpu-prof (one .cpuprofile per repetition, its whole
// life: start-up and warm-up are a small part of a 20,000-request run).
// --callgrind: every server runs under valgrind with instrumentation off; it is switched on for the
// measured requests (callgrind_control -i on), so start-up and warm-up are not counted. About 50×
// slower than native: a 20 s run makes some thousands of requests.

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BUNDLE, READY, launcherNodeFlags, watchLines, writeConfigFile } from '../test/helpers/launch.mjs';
import { basicHeaders, login, request, sessionHeaders } from './lib/client.js';
import { OUT, runWrk, sleep, threadCpuMs } from './lib/proc.js';
import { ASSET, demoConfig, PASSWORD, USER } from './lib/setup.js';
import { makePki } from '../test/helpers/certs.js';

const READ = `/services/assets/${ASSET}/_read`;

interface Args {
  seconds: number;
  repeats: number;
  connections: number;
  only: string[];
  callgrind: boolean;
  cpuProf?: string;
  /** Bundles to compare (A/B of a change); default dist/gatewayd.js. */
  bundles: string[];
  nodeFlags: string[];
  baselineFlags: string[];
  idleS: number;
  tls: boolean;
}

function parseArgs(argv: string[]): Args {
  const a: Args = { seconds: 5, repeats: 3, connections: 10, only: ['session', 'basic', 'bare', 'fastify'], callgrind: false, bundles: [], nodeFlags: [], baselineFlags: [], idleS: 0, tls: false };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const v = () => argv[++i] ?? '';
    if (k === '--seconds') a.seconds = Number(v());
    else if (k === '--repeats') a.repeats = Number(v());
    else if (k === '--connections') a.connections = Number(v());
    else if (k === '--only') a.only = v().split(',');
    else if (k === '--callgrind') a.callgrind = true;
    else if (k === '--cpu-prof') a.cpuProf = path.resolve(v());
    else if (k === '--bundle') a.bundles.push(path.resolve(v()));
    else if (k === '--node-flags') a.nodeFlags = v().split(/\s+/).filter(Boolean);
    else if (k === '--launcher-flags') a.nodeFlags = launcherNodeFlags() ?? [];
    else if (k === '--baseline-flags') a.baselineFlags = v().split(/\s+/).filter(Boolean);
    else if (k === '--idle') a.idleS = Number(v());
    else if (k === '--tls') a.tls = true;
    else throw new Error(`unknown option ${k}`);
  }
  if (a.bundles.length === 0) a.bundles.push(BUNDLE);
  return a;
}

interface Server {
  name: string;
  proc: ChildProcess;
  pid: number;
  port: number;
  headers: Record<string, string>;
  cgFile?: string;
  stop(): Promise<void>;
}

const valgrindArgs = (file: string) => ['valgrind', '--tool=callgrind', '--dump-instr=no', '--instr-atstart=no', '--smc-check=all-non-file', `--callgrind-out-file=${file}`];

function spawnServer(argv: string[], cwd: string): { proc: ChildProcess; lines: ReturnType<typeof watchLines> } {
  const proc = spawn(argv[0], argv.slice(1), { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  return { proc, lines: watchLines(proc, { keep: 200 }) };
}

function stopper(proc: ChildProcess): () => Promise<void> {
  return async () => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGTERM');
    const t = setTimeout(() => proc.kill('SIGKILL'), 20_000);
    await exited;
    clearTimeout(t);
  };
}

/** The node process itself (valgrind execs node in place: same pid). */
async function startGw(bundle: string, dir: string, config: Record<string, unknown>, port: number, args: Args, rep: number): Promise<Omit<Server, 'name' | 'headers'>> {
  const configFile = writeConfigFile(dir, config);
  const cgFile = args.callgrind ? path.join(dir, `gw.cg.${rep}`) : undefined;
  const prof = args.cpuProf ? ['--cpu-prof', '--cpu-prof-dir', args.cpuProf] : [];
  const argv = [...(cgFile ? valgrindArgs(cgFile) : []), process.execPath, ...prof, ...args.nodeFlags, bundle, '--config', configFile];
  const { proc, lines } = spawnServer(argv, dir);
  await lines.waitFor(READY, args.callgrind ? 300_000 : 20_000);
  return { proc, pid: proc.pid!, port, cgFile, stop: stopper(proc) };
}

async function startChild(dir: string, entry: string, argvTail: string[], args: Args, rep: number): Promise<{ proc: ChildProcess; pid: number; ready: any; cgFile?: string; stop(): Promise<void> }> {
  const cgFile = args.callgrind ? path.join(dir, `${entry}.cg.${rep}`) : undefined;
  const argv = [...(cgFile ? valgrindArgs(cgFile) : []), process.execPath, ...args.baselineFlags, path.join(OUT, `${entry}.mjs`), ...argvTail];
  const { proc, lines } = spawnServer(argv, dir);
  const line = await lines.waitFor(/"ready":true/, args.callgrind ? 300_000 : 20_000);
  return { proc, pid: proc.pid!, ready: JSON.parse(line), cgFile, stop: stopper(proc) };
}

function callgrindControl(pid: number, ...opts: string[]): void {
  const r = spawnSync('callgrind_control', [...opts, String(pid)], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`callgrind_control ${opts.join(' ')} ${pid}: ${r.stderr || r.stdout}`);
}

/** Instructions in the newest dump of a callgrind output file (`file`, `file.1`, …). */
function lastDumpIr(file: string): number {
  const dir = path.dirname(file);
  const base = path.basename(file);
  const dumps = fs.readdirSync(dir).filter((f) => f === base || f.startsWith(`${base}.`));
  const newest = dumps.map((f) => path.join(dir, f)).sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs)[0];
  if (!newest) throw new Error(`no callgrind dump ${file}`);
  const m = /^(?:summary|totals): (\d+)/m.exec(fs.readFileSync(newest, 'utf8'));
  for (const f of dumps) fs.rmSync(path.join(dir, f));
  return m ? Number(m[1]) : NaN;
}

/** One measured phase: cost per request (µs of CPU, or instructions with --callgrind). */
async function measure(s: Server, args: Args): Promise<number> {
  const url = `${args.tls ? 'https' : 'http'}://127.0.0.1:${s.port}${READ}`;
  const run = async (seconds: number) => {
    const r = await runWrk(url, s.headers, { seconds, connections: args.connections });
    if (r.bad > 0) throw new Error(`${s.name}: ${r.bad} non-200 answers or socket errors`);
    return r.requests;
  };
  if (args.idleS > 0) await sleep(args.idleS * 1000);
  // One request alone first: BASIC's first check hashes the password (then it is cached).
  const one = await request({ port: s.port, tls: args.tls }, READ, { headers: s.headers });
  if (one.status !== 200) throw new Error(`${s.name}: HTTP ${one.status}`);
  // Under valgrind V8 still tiers functions up for a long time (compiler work counted as the
  // request's): warm up as long as the measured run.
  await run(args.callgrind ? args.seconds : 2);
  if (args.callgrind) {
    callgrindControl(s.pid, '-i', 'on');
    const t0 = Date.now();
    const n = await run(args.seconds);
    const wallMs = Date.now() - t0;
    callgrindControl(s.pid, '-d');
    const busy = lastDumpIr(s.cgFile!);
    // The same wall time idle: timers and sweeps that would have run anyway.
    await sleep(wallMs);
    callgrindControl(s.pid, '-d');
    const idle = lastDumpIr(s.cgFile!);
    callgrindControl(s.pid, '-i', 'off');
    return (busy - idle) / n;
  }
  const c0 = threadCpuMs(s.pid);
  const u0 = userSeconds(s.pid);
  const n = await run(args.seconds);
  const c1 = threadCpuMs(s.pid);
  const u1 = userSeconds(s.pid);
  process.stderr.write(`  (${s.name}: user ${(((u1 - u0) * 1e6) / n).toFixed(1)} µs/request)\n`);
  return ((c1 - c0) * 1000) / n;
}

/** User-mode CPU seconds of all threads (/proc/<pid>/stat utime, clock ticks of 10 ms). */
function userSeconds(pid: number): number {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(f.slice(f.lastIndexOf(')') + 2).split(' ')[11]) / 100;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  if (args.cpuProf) fs.mkdirSync(args.cpuProf, { recursive: true });
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-profile-http-'));
  const results = new Map<string, number[]>();
  const unit = args.callgrind ? 'instructions' : 'CPU µs';
  const stops: (() => Promise<void>)[] = [];
  let tls: { cert: string; key: string } | undefined;
  try {
    if (args.tls) {
      const pki = makePki(fs.mkdtempSync(path.join(tmp, 'pki-')));
      tls = { cert: pki.serverCert, key: pki.serverKey };
    }
    for (let rep = 0; rep < args.repeats; rep++) {
      // Fresh servers per repetition (a valgrind process measures one phase at a time).
      const servers: Server[] = [];
      let sample: Awaited<ReturnType<typeof request>> | undefined;
      let sessionH: Record<string, string> = {};
      for (const [b, bundle] of args.bundles.entries()) {
        const tag = args.bundles.length > 1 ? ` [${path.basename(bundle)}]` : '';
        const { config, http, https } = await demoConfig(tls);
        const gwDir = path.join(tmp, `gw${rep}-${b}`);
        fs.mkdirSync(gwDir);
        (config as Record<string, unknown>).dataDir = path.join(gwDir, 'data');
        const gw = await startGw(bundle, gwDir, config, https ?? http, args, rep);
        stops.push(gw.stop);
        const session = await login({ port: http }, USER, PASSWORD);
        if (!session) throw new Error('login failed');
        sessionH = sessionHeaders(session);
        sample = await request({ port: http }, READ, { headers: sessionH });
        if (sample.status !== 200) throw new Error(`gatewayd read: HTTP ${sample.status}`);
        if (args.only.includes('session')) servers.push({ ...gw, name: `gatewayd session${tag}`, headers: sessionH });
        if (args.only.includes('basic')) servers.push({ ...gw, name: `gatewayd BASIC${tag}`, headers: basicHeaders(USER, PASSWORD) });
      }
      if (!sample) throw new Error('no bundle');
      if (args.only.includes('bare')) {
        const spec = path.join(tmp, 'bare.json');
        const keep = ['cache-control', 'x-content-type-options', 'content-type'];
        fs.writeFileSync(spec, JSON.stringify({ headers: Object.fromEntries(keep.filter((k) => sample.headers[k]).map((k) => [k, String(sample.headers[k])])), body: sample.body.toString('base64'), ...tls }));
        const b = await startChild(tmp, 'bare-http', [spec], args, rep);
        stops.push(b.stop);
        // The same request as the session read (bench/sections/http.ts): Node parses its cookie and
        // XSRF header lines for the ceiling as it does for gatewayd.
        servers.push({ ...b, name: `bare node:http${tls ? 's' : ''}`, port: tls ? b.ready.https : b.ready.http, headers: sessionH });
      }
      if (args.only.includes('fastify')) {
        const f = await startChild(tmp, 'fastify', tls ? [tls.cert, tls.key] : [], args, rep);
        stops.push(f.stop);
        servers.push({ ...f, name: tls ? 'Fastify https' : 'Fastify', port: tls ? f.ready.https : f.ready.http, headers: { Cookie: f.ready.cookie, 'X-XSRF-Token': f.ready.xsrf } });
      }
      // Each repetition starts with another contender: the one measured first is not always favoured.
      const order = servers.map((_, i) => servers[(i + rep) % servers.length]!);
      for (const s of order) {
        const v = await measure(s, args);
        results.set(s.name, [...(results.get(s.name) ?? []), v]);
        process.stderr.write(`  rep ${rep + 1}: ${s.name}: ${v.toFixed(args.callgrind ? 0 : 1)} ${unit}/request\n`);
      }
      while (stops.length) await stops.pop()!();
    }
  } finally {
    while (stops.length) await stops.pop()!().catch(() => {});
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  const first = [...results.keys()].find((k) => k.startsWith('gatewayd session'));
  const gw = median(results.get(first ?? '') ?? [NaN]);
  process.stdout.write(`${unit} per request, median of ${args.repeats} (wrk ${args.seconds} s, ${args.connections} connections):\n`);
  for (const [name, xs] of results) {
    const m = median(xs);
    // Rates per CPU-second (or per instruction) are the inverse of the costs.
    const ratio =
      name === first || Number.isNaN(gw) ? '' : name.startsWith('gatewayd') ? `   this ÷ ${first} rate ${(gw / m).toFixed(3)}` : `   ${first} ÷ ${name} rate ${(m / gw).toFixed(3)}`;
    process.stdout.write(`  ${name.padEnd(36)} ${m.toFixed(args.callgrind ? 0 : 1).padStart(10)}${ratio}\n`);
  }
}

main().catch((err) => {
  process.stderr.write(`profile-http: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
