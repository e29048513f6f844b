// Scale on one device (bench/README.md "Scale"), after EMQX Neuron's published benchmark design. 10 Modbus TCP
// devices × 1,000 INT16 holding registers, one asset of 1,000 channels per device, polled every
// second (10,000 tags/s), telemetry published to Mosquitto in the `json` encoding. gatewayd runs as
// the image runs it (rootfs/usr/bin/gatewayd: its node flags and environment).
//
// Measured over steady windows after a warm-up: gatewayd's CPU share of one core, RSS steady and
// peak against an idle gatewayd (same launcher, same HTTP and MQTT configuration, no assets, running
// alongside), poll-deadline misses from each asset's poll status, each tag's end-to-end latency
// (Modbus response timestamp in the payload → arrival at a subscriber), requests on the wire. Then a
// ramp of tags per device at the same 1 s poll until polls start missing.
//
// The devices (load/modbus-farm.ts) and the subscriber (load/telemetry-sub.ts) are processes of their
// own; their CPU is not gatewayd's.
//
// The channel history's memory (docs/rest-api.md "History"): the same load on a fresh gatewayd with
// its history full, and on the same daemon built without the history (bench/lib/no-history-plugin.mjs),
// one after the other; heap in use and RSS sampled meanwhile, the difference checked against the
// documented bound.

import { login, request, sessionHeaders, type Target } from '../lib/client.js';
import { startGatewayd, type Gatewayd } from '../lib/gatewayd.js';
import { ROOT, cpuSeconds, rssKiB, sleep, startJsonChild, type JsonChild } from '../lib/proc.js';
import type { Results } from '../lib/results.js';
import { withScope, type Scope } from '../lib/scope.js';
import { PASSWORD, USER, type Options } from '../lib/setup.js';
import { median } from '../lib/stats.js';
import { pollMisses, type PollCounters } from '../lib/telemetry.js';
import { freePort } from '../../test/helpers/ports.js';
import { startMosquitto } from '../../test/helpers/mosquitto.js';
import { HISTORY_SAMPLES_MIN, HISTORY_SAMPLES_TOTAL } from '../../src/assets/history.js';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const DEVICES = 10;
const TAGS = 1000;
const INTERVAL_MS = 1000;
const ACCOUNT = 'bench';
const CLIENT = 'gwscale';
/** Tags per device of the ramp's levels after the main one (× 10 devices at a 1 s poll: tags/s). */
const RAMP = [2000, 4000, 8000, 16000];
/** The heap bound (MB) for the levels from the first one that aborted at the launcher's 48 MB. */
const BIG_HEAP_MB = 256;

/** gatewayd's configuration: `devices` Modbus TCP driver instances, one asset of `tags` INT16 channels each. */
export function scaleConfig(http: number, brokerPort: number, ports: number[], tags: number, clientId = CLIENT): Record<string, any> {
  const drivers: Record<string, any> = {};
  const assets: Record<string, any> = {};
  ports.forEach((port, d) => {
    const id = `dev${String(d + 1).padStart(2, '0')}`;
    drivers[`mb-${id}`] = { factory: 'modbus', 'access.type': 'TCP', 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': port, 'modbus.timeout': 1000 };
    const channels: Record<string, any> = {};
    for (let i = 1; i <= tags; i++) {
      channels[`c${String(i).padStart(5, '0')}`] = { type: 'READ', 'value.type': 'INTEGER', 'data.type': 'INT16', 'primary.table': 'HOLDING_REGISTERS', 'memory.address': i };
    }
    assets[id] = { 'driver.pid': `mb-${id}`, 'poll.interval': INTERVAL_MS, channels };
  });
  return {
    'log.level': 'warn',
    http: { 'http.ports': [http], 'https.ports': [], 'https.client.auth.ports': [], 'bind.address': '127.0.0.1' },
    // rest.system: the heap in use, from /services/system/v1/status.
    identities: { [USER]: { password: PASSWORD, permissions: ['rest.assets', 'rest.system'], passwordChangeNeeded: false } },
    drivers,
    assets,
    mqtt: {
      enabled: true, 'broker-url': `mqtt://127.0.0.1:${brokerPort}`, 'client-id': clientId,
      'topic.context.account-name': ACCOUNT, 'payload.encoding': 'json',
    },
  };
}

interface Peers {
  brokerPort: number;
  farm: JsonChild;
  sub: JsonChild;
  ports: number[];
}

async function ask(child: JsonChild, cmd: object): Promise<Record<string, any>> {
  child.send(cmd);
  return child.next(30_000);
}

/** Every asset's poll status, one request after the other, with a session (a password hash per BASIC request would cost CPU). */
async function statuses(t: Target, headers: Record<string, string>, assets: string[]): Promise<PollCounters[]> {
  const out: PollCounters[] = [];
  for (const a of assets) {
    const r = await request(t, `/services/assets/${a}/_status`, { headers });
    if (r.status !== 200) throw new Error(`${a}/_status: HTTP ${r.status} ${r.body.toString().slice(0, 200)}`);
    out.push(JSON.parse(r.body.toString()) as PollCounters);
  }
  return out;
}

/** VmHWM: the highest RSS the process ever had, in KiB. */
function peakKiB(pid: number): number {
  try {
    return Number(/VmHWM:\s+(\d+)\s+kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);
  } catch {
    return NaN;
  }
}

interface Window {
  cpuShare: number;
  rssMiB: number;
  idleRssMiB: number;
  misses: number;
  p50: number;
  p99: number;
  reqPerS: number;
  tagsPerS: number;
  errors: number;
  kbPerS: number;
  /** CPU shares of one core of the devices' and the subscriber's processes (not gatewayd's). */
  devCpu: number;
  subCpu: number;
}

/**
 * One steady window of `ms`: CPU share (utime + stime ÷ wall), RSS sampled every second (median),
 * misses, latency percentiles, requests/s at the devices and tags/s at the subscriber.
 */
async function measure(gw: Gatewayd, idle: Gatewayd | undefined, t: Target, peers: Peers, assets: string[], ms: number): Promise<Window> {
  const session = await login(t, USER, PASSWORD);
  if (!session) throw new Error('session login: 404');
  const headers = sessionHeaders(session);
  const s0 = await statuses(t, headers, assets);
  const f0 = (await ask(peers.farm, { cmd: 'stats' })).requests as number[];
  await ask(peers.sub, { cmd: 'reset' });
  const c0 = cpuSeconds(gw.pid);
  const d0 = cpuSeconds(peers.farm.pid);
  const u0 = cpuSeconds(peers.sub.pid);
  const w0 = process.hrtime.bigint();
  const rss: number[] = [];
  const idleRss: number[] = [];
  const end = Date.now() + ms;
  while (Date.now() < end) {
    await sleep(Math.min(1000, end - Date.now()));
    rss.push(rssKiB(gw.pid) / 1024);
    if (idle) idleRss.push(rssKiB(idle.pid) / 1024);
  }
  const c1 = cpuSeconds(gw.pid);
  const d1 = cpuSeconds(peers.farm.pid);
  const u1 = cpuSeconds(peers.sub.pid);
  const wall = Number(process.hrtime.bigint() - w0) / 1e9;
  const st = await ask(peers.sub, { cmd: 'stats' });
  const f1 = (await ask(peers.farm, { cmd: 'stats' })).requests as number[];
  const s1 = await statuses(t, headers, assets);
  if (![c0, c1].every(Number.isFinite) || !rss.every(Number.isFinite)) throw new Error(`gatewayd is gone; its log:\n${gw.logs.slice(-5).join('\n')}`);
  const misses = s0.reduce((sum, a, i) => sum + pollMisses(a, s1[i], wall * 1000), 0);
  const reqs = f1.reduce((sum, x, i) => sum + x - f0[i], 0);
  return {
    cpuShare: (c1 - c0) / wall,
    rssMiB: median(rss),
    idleRssMiB: median(idleRss),
    misses,
    p50: st.p50,
    p99: st.p99,
    reqPerS: reqs / wall,
    tagsPerS: st.tags / wall,
    errors: st.errors,
    kbPerS: st.bytes / 1024 / wall,
    devCpu: (d1 - d0) / wall,
    subCpu: (u1 - u0) / wall,
  };
}

/** Waits until every asset has published telemetry (first polls done, MQTT connected). */
async function firstTelemetry(gw: Gatewayd, sub: JsonChild, assets: string[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const s = await ask(sub, { cmd: 'stats' });
    if (assets.every((a) => (s.perAsset[a] ?? 0) > 0)) return;
    await sleep(500);
  }
  throw new Error(`no telemetry from every asset within ${timeoutMs} ms; gatewayd's log:\n${gw.logs.slice(-5).join('\n')}`);
}

async function startScaled(scope: Scope, peers: Peers, tags: number, env?: Record<string, string>, bundle?: string): Promise<{ gw: Gatewayd; t: Target; assets: string[] }> {
  const http = await freePort();
  const config = scaleConfig(http, peers.brokerPort, peers.ports, tags);
  await ask(peers.sub, { cmd: 'reset' });
  const gw = await startGatewayd(scope, config, { launcher: true, env, bundle });
  const assets = Object.keys(config.assets);
  await firstTelemetry(gw, peers.sub, assets, 60_000);
  return { gw, t: { port: http }, assets };
}

/** The same gatewayd built without the channel history (bench/lib/no-history-plugin.mjs), in bench/out/no-history/. */
function noHistoryBundle(): string {
  const out = path.join(ROOT, 'bench', 'out', 'no-history', 'gatewayd.js');
  execFileSync(process.execPath, [path.join(ROOT, 'build', 'build.mjs')], {
    cwd: ROOT,
    env: { ...process.env, GATEWAYD_OUTFILE: out, GATEWAYD_BUILD_PLUGIN: path.join(ROOT, 'bench', 'lib', 'no-history-plugin.mjs') },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return out;
}

/**
 * What the history bound allows for `channels` tracked channels (docs/rest-api.md "History"): about
 * 12 bytes per sample kept (10 per channel at 10,000 channels) plus about 200 bytes per channel, in MiB.
 */
export function historyBoundMiB(channels: number): number {
  const samples = Math.min(HISTORY_SAMPLES_TOTAL, channels * Math.max(HISTORY_SAMPLES_MIN, Math.floor(HISTORY_SAMPLES_TOTAL / channels)));
  return (samples * 12 + channels * 200) / 1048576;
}

interface Memory {
  /** Medians per window, MiB. */
  heap: number[];
  rss: number[];
  peakHeap: number;
  /** Samples the first channel of the first asset had after the warm-up. */
  samples: number;
}

/** One gatewayd life at the main load: warm-up (the rings fill), then `windows` windows of heap and RSS samples every 250 ms. */
async function memoryLife(peers: Peers, bundle: string | undefined, warmMs: number, windowMs: number, windows: number): Promise<Memory> {
  return withScope(async (s) => {
    const { gw, t, assets } = await startScaled(s, peers, TAGS, undefined, bundle);
    await sleep(warmMs);
    const session = await login(t, USER, PASSWORD);
    if (!session) throw new Error('session login: 404');
    const headers = sessionHeaders(session);
    const get = async (p: string) => {
      const r = await request(t, p, { headers });
      if (r.status !== 200) throw new Error(`${p}: HTTP ${r.status} ${r.body.toString().slice(0, 200)}`);
      return JSON.parse(r.body.toString());
    };
    const samples = (await get(`/services/assets/${assets[0]}/_history?channel=c00001`)).length as number;
    const out: Memory = { heap: [], rss: [], peakHeap: 0, samples };
    for (let w = 0; w < windows; w++) {
      const heap: number[] = [];
      const rss: number[] = [];
      const end = Date.now() + windowMs;
      while (Date.now() < end) {
        const used = (await get('/services/system/v1/status')).memory.heapUsed / 1048576;
        heap.push(used);
        rss.push(rssKiB(gw.pid) / 1024);
        out.peakHeap = Math.max(out.peakHeap, used);
        await sleep(250);
      }
      out.heap.push(median(heap));
      out.rss.push(median(rss));
    }
    if (gw.proc.exitCode !== null || gw.proc.signalCode !== null) throw new Error(`gatewayd exited while measured; its log:\n${gw.logs.slice(-5).join('\n')}`);
    return out;
  });
}

/** The launcher's --max-old-space-size (rootfs/usr/bin/gatewayd). */
const HEAP_BOUND_MIB = 48;

async function historySection(res: Results, opt: Options, peers: Peers): Promise<void> {
  const warmMs = opt.quick ? 12_000 : 15_000;
  const windowMs = opt.quick ? 2000 : 5000;
  const without = noHistoryBundle();
  const full = await memoryLife(peers, undefined, warmMs, windowMs, opt.repeats);
  const none = await memoryLife(peers, without, warmMs, windowMs, opt.repeats);
  process.stderr.write(`  history: heap ${median(full.heap).toFixed(1)} MiB (without ${median(none.heap).toFixed(1)}), RSS ${median(full.rss).toFixed(1)} MiB (without ${median(none.rss).toFixed(1)}), ${full.samples} samples per channel (without: ${none.samples})\n`);
  if (full.samples < HISTORY_SAMPLES_MIN) throw new Error(`the channel history holds ${full.samples} samples of c00001 after the warm-up, not ${HISTORY_SAMPLES_MIN}: it is not full`);
  if (none.samples !== 0) throw new Error(`the build without history kept ${none.samples} samples`);
  const channels = DEVICES * TAGS;
  const bound = historyBoundMiB(channels);
  const load = `${DEVICES} Modbus TCP devices × ${TAGS} INT16 tags, 1 s poll, through the launcher`;
  const ref = 'the same gatewayd built without the channel history (bench/lib/no-history-plugin.mjs), same load, run after it';
  const how = `${opt.repeats} windows of ${windowMs / 1000} s, each the median of samples every 250 ms of heapUsed (GET /services/system/v1/status) and RSS (/proc), after ${warmMs / 1000} s of warm-up, one life each`;
  res.add('Scale', 'scale-history-heap', `${load}: V8 heap in use with the channel history full (${full.samples} samples × ${channels.toLocaleString('en-US')} channels)`, 'MiB', full.heap, ref, none.heap, undefined,
    `${how}; highest sample ${full.peakHeap.toFixed(1)} MiB (without: ${none.peakHeap.toFixed(1)} MiB), against the launcher's old-space bound of ${HEAP_BOUND_MIB} MB`);
  res.add('Scale', 'scale-history-cost', `${load}: heap the channel history takes (with − without)`, 'MiB', full.heap.map((h, i) => h - none.heap[i]!), 'the documented bound (docs/rest-api.md "History": 12 bytes per sample kept + 200 bytes per channel)', [bound],
    { op: '<=', value: 1, text: '≤ the documented bound' }, `window by window; young-generation garbage moves each figure by up to a few MiB, so a single window says little`);
  res.add('Scale', 'scale-history-rss', `${load}: RSS with the channel history full`, 'MiB', full.rss, ref, none.rss, undefined, how);
}

export async function scaleSection(res: Results, opt: Options): Promise<void> {
  const warmMs = opt.quick ? 3000 : 10_000;
  const windowMs = opt.quick ? 3000 : 10_000;
  await withScope(async (scope) => {
    const broker = await startMosquitto();
    scope.teardown(() => broker.close());
    const farm = await startJsonChild(scope, 'modbus-farm', [String(DEVICES)]);
    const sub = await startJsonChild(scope, 'telemetry-sub', [String(broker.port), `${ACCOUNT}/${CLIENT}/assets/+`]);
    const peers: Peers = { brokerPort: broker.port, farm, sub, ports: farm.ready.ports };

    // The idle reference: same launcher, HTTP and MQTT (its own client id), no assets; it runs alongside the loaded one.
    const idle = await startGatewayd(scope, scaleConfig(await freePort(), broker.port, [], 0, `${CLIENT}-idle`), { launcher: true });
    const { gw, t, assets } = await startScaled(scope, peers, TAGS);
    const startMs = gw.readyMs;
    await sleep(warmMs);
    const w: Window[] = [];
    for (let rep = 0; rep < opt.repeats; rep++) {
      w.push(await measure(gw, idle, t, peers, assets, windowMs));
      const x = w.at(-1)!;
      process.stderr.write(`  ${DEVICES}×${TAGS}: cpu ${(x.cpuShare * 100).toFixed(1)} %, rss ${x.rssMiB.toFixed(1)} MiB (idle ${x.idleRssMiB.toFixed(1)}), misses ${x.misses}, p50 ${x.p50} ms, p99 ${x.p99} ms, ${Math.round(x.reqPerS)} req/s, ${Math.round(x.tagsPerS)} tags/s, ${x.errors} errors\n`);
    }
    const peak = peakKiB(gw.pid) / 1024;
    const idlePeak = peakKiB(idle.pid) / 1024;
    const idleCpu = cpuSeconds(idle.pid);
    await gw.stop();
    await idle.stop();

    const col = (k: keyof Window) => w.map((x) => x[k]);
    const load = `${DEVICES} Modbus TCP devices × ${TAGS} INT16 tags, 1 s poll (${(DEVICES * TAGS).toLocaleString('en-US')} tags/s)`;
    const windows = `${opt.repeats} windows of ${windowMs / 1000} s after ${warmMs / 1000} s of warm-up, one gatewayd life through the launcher, json encoding`;
    res.add('Scale', 'scale-cpu', `${load}: gatewayd CPU, share of one core`, '%', col('cpuShare').map((x) => x * 100), 'goal (share of one core)', [], { op: '<=', value: 15, text: '≤ 15 % of one core', on: 'value' }, `${windows}; utime + stime from /proc ÷ wall time`);
    res.add('Scale', 'scale-rss', `${load}: RSS, steady`, 'MiB', col('rssMiB'), 'idle gatewayd (same launcher, HTTP and MQTT, no assets)', col('idleRssMiB'), { op: '<=', value: 1.5, text: '≤ 1.5× idle' },
      'median of 1 s samples per window; the idle gatewayd runs at the same time');
    res.add('Scale', 'scale-rss-peak', `${load}: RSS, peak (VmHWM, start-up included)`, 'MiB', [peak], 'idle gatewayd, peak', [idlePeak]);
    res.add('Scale', 'scale-misses', `${load}: poll-deadline misses per window (all 10 assets)`, 'misses', col('misses'), 'goal', [], { op: '<=', value: 0, text: '0 misses', on: 'value' },
      'periods of an asset\'s 1 s schedule without a poll started on time, from GET /services/assets/{name}/_status (polls, overruns, lastPoll) before and after each window');
    res.add('Scale', 'scale-lat-p50', `${load}: telemetry end-to-end latency, p50`, 'ms', col('p50'), '', [], undefined,
      'per tag: arrival of the message at a subscriber on this machine minus the timestamp of the Modbus response the tag was read from (ms in the payload, so up to 1 ms too high); includes waiting for the other requests of the same poll');
    res.add('Scale', 'scale-lat-p99', `${load}: telemetry end-to-end latency, p99`, 'ms', col('p99'), '', []);
    res.add('Scale', 'scale-req', `${load}: Modbus requests on the wire`, 'req/s', col('reqPerS'), '', [], undefined, `counted at the devices; 1,000 contiguous registers are ${Math.ceil(TAGS / 125)} requests of ≤ 125 per device and poll`);
    res.add('Scale', 'scale-tags', `${load}: tags delivered to the subscriber`, 'tags/s', col('tagsPerS'), '', [], undefined, `every register changes between polls, so every tag is published each cycle; ${median(col('kbPerS')).toFixed(0)} KiB/s of payload; ${w.reduce((s, x) => s + x.errors, 0)} tags with errors; gatewayd ready after ${Math.round(startMs)} ms; idle gatewayd used ${idleCpu.toFixed(2)} CPU-s in its whole life; the devices used ${(median(col('devCpu')) * 100).toFixed(1)} % and the subscriber ${(median(col('subCpu')) * 100).toFixed(1)} % of a core`);

    await historySection(res, opt, peers);

    // Ramp: more tags per device at the same 1 s poll, a fresh gatewayd per level, until polls miss.
    const rampWarm = opt.quick ? 3000 : 5000;
    const rampWindow = opt.quick ? 3000 : 10_000;
    const level = async (tags: number, env?: Record<string, string>): Promise<Window | string> => {
      try {
        return await withScope(async (s) => {
          const { gw: g, t: tt, assets: as } = await startScaled(s, peers, tags, env);
          try {
            await sleep(rampWarm);
            return await measure(g, undefined, tt, peers, as, rampWindow);
          } catch (err) {
            // A daemon that died while measured (V8 at its heap bound aborts): say so, not the socket error.
            await sleep(500);
            const end = g.proc.signalCode ?? g.proc.exitCode;
            if (end === null) throw err;
            const fatal = g.logs.find((l) => /FATAL ERROR/.test(l));
            throw new Error(`gatewayd exited (${end}) while measured${fatal ? `: ${fatal.trim()}` : ''}`);
          }
        });
      } catch (err) {
        return (err as Error).message.split('\n')[0].replace(/; last lines:$/, '');
      }
    };
    const describe = (x: Window | string) =>
      typeof x === 'string' ? `failed (${x})` : `CPU ${(x.cpuShare * 100).toFixed(0)} %, RSS ${x.rssMiB.toFixed(0)} MiB, ${x.misses} misses, ${Math.round(x.tagsPerS).toLocaleString('en-US')} tags/s delivered, p99 ${x.p99} ms (devices ${(x.devCpu * 100).toFixed(0)} %, subscriber ${(x.subCpu * 100).toFixed(0)} % of a core)`;
    const keepsUp = (x: Window | string, rate: number) => typeof x !== 'string' && x.misses === 0 && x.tagsPerS >= rate * 0.9;
    // Under the launcher's flags first. A level that does not start because V8 aborts at the heap
    // bound (--max-old-space-size=48) is a memory limit: that level and the next ones then run with a
    // larger bound, to find the CPU limit too.
    let shipped: number | undefined;
    let bigHeap: number | undefined;
    let env: Record<string, string> | undefined;
    const tried: string[] = [];
    for (const tags of RAMP) {
      const rate = DEVICES * tags;
      let x = await level(tags, env);
      const report = (y: Window | string) => {
        tried.push(`${rate.toLocaleString('en-US')} tags/s${env ? ` (${BIG_HEAP_MB} MB heap)` : ''}: ${describe(y)}`);
        process.stderr.write(`  ramp ${rate} tags/s${env ? `, ${BIG_HEAP_MB} MB heap` : ''}: ${describe(y)}\n`);
      };
      report(x);
      if (!env && typeof x === 'string' && /SIGABRT/.test(x)) {
        shipped ??= rate;
        env = { GATEWAYD_NODE_FLAGS: `--max-old-space-size=${BIG_HEAP_MB}` };
        x = await level(tags, env);
        report(x);
      }
      if (keepsUp(x, rate)) continue;
      if (env) bigHeap = rate;
      else shipped = rate;
      break;
    }
    const what = 'Load at which polls start missing (ramp of tags per device, 1 s poll), launcher as shipped';
    const top = (DEVICES * RAMP.at(-1)!).toLocaleString('en-US');
    const note = `${DEVICES} devices, tags per device raised at the same 1 s poll, a fresh gatewayd per level through the launcher (${rampWarm / 1000} s warm-up, one ${rampWindow / 1000} s window); a level fails when it misses a poll, delivers < 90 % of its tags or does not start: ${tried.join('; ')}`;
    res.add('Scale', 'scale-breaking', what, 'tags/s', shipped === undefined ? [] : [shipped], '', [], undefined, shipped === undefined ? `no failure up to ${top} tags/s: ${note}` : note);
    if (env) {
      res.add('Scale', 'scale-breaking-heap', `The same with GATEWAYD_NODE_FLAGS=--max-old-space-size=${BIG_HEAP_MB} (from the level that did not start)`, 'tags/s', bigHeap === undefined ? [] : [bigHeap], '', [], undefined,
        bigHeap === undefined ? `no failure up to ${top} tags/s with the larger heap bound` : 'the CPU limit: the first level that missed polls or fell behind with the larger heap bound');
    }
  });
}
