// The MQTT section (bench/README.md): ASSET-V1 EXEC/read round trip (p50/p99) and requests/s through Mosquitto in the bare
// `json` encoding (docs/mqtt.md "Encodings"), against a bare echo through the same broker (the ceiling). The
// load generator and the echo are processes of their own.

import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startMosquitto } from '../../test/helpers/mosquitto.js';
import { startGatewayd } from '../lib/gatewayd.js';
import { sleep, startJsonChild, type JsonChild } from '../lib/proc.js';
import type { Results } from '../lib/results.js';
import { withScope } from '../lib/scope.js';
import { ASSET, demoConfig, type Options } from '../lib/setup.js';
import { percentile } from '../lib/stats.js';

const WINDOW = 16;

async function ask(child: JsonChild, cmd: object, timeoutMs = 60_000): Promise<Record<string, any>> {
  child.send(cmd);
  const out = await child.next(timeoutMs);
  if (out.error) throw new Error(out.error);
  return out;
}

export async function mqttSection(res: Results, opt: Options): Promise<void> {
  await withScope(async (scope) => {
    const broker = await startMosquitto();
    scope.teardown(() => broker.close());
    const { config } = await demoConfig();
    config.mqtt = { enabled: true, 'broker-url': broker.url, 'client-id': 'gatewayd', 'payload.encoding': 'json', 'clean-session': true };
    const gw = await startGatewayd(scope, config, { launcher: true });
    const toGw = await startJsonChild(scope, 'mqtt-load', [String(broker.port), 'gatewayd', ASSET]);

    // The ready line does not wait for MQTT (docs/mqtt.md): ask until gatewayd has subscribed.
    let sample: string | undefined;
    for (let i = 0; i < 20 && !sample; i++) {
      try {
        sample = (await ask(toGw, { cmd: 'sample' })).payload;
      } catch {
        await sleep(250);
      }
    }
    if (!sample) throw new Error(`gatewayd never answered EXEC/read; its log:\n${gw.logs.slice(-5).join('\n')}`);
    const replyFile = path.join(gw.dir, 'reply.json');
    fs.writeFileSync(replyFile, sample);
    await startJsonChild(scope, 'mqtt-echo', [String(broker.port), 'echo', replyFile]);
    const toEcho = await startJsonChild(scope, 'mqtt-load', [String(broker.port), 'echo', ASSET]);

    const n = opt.quick ? 300 : 2000;
    const r = { gw: { p50: [] as number[], p99: [] as number[], rps: [] as number[] }, echo: { p50: [] as number[], p99: [] as number[], rps: [] as number[] } };
    for (const who of ['gw', 'echo'] as const) await ask(who === 'gw' ? toGw : toEcho, { cmd: 'latency', n: 200 }); // warm-up
    // Round trips are sub-millisecond, so the machine's other work moves them between seconds:
    // gatewayd and the echo alternate in blocks of n/10 requests, and each repetition's
    // percentiles are taken over its n round trips on each side.
    const BLOCKS = 10;
    for (let rep = 0; rep < opt.repeats; rep++) {
      const rtts = { gw: [] as number[], echo: [] as number[] };
      for (let b = 0; b < BLOCKS; b++) {
        for (const who of ['gw', 'echo'] as const) {
          const lat = await ask(who === 'gw' ? toGw : toEcho, { cmd: 'latency', n: Math.ceil(n / BLOCKS) });
          rtts[who].push(...(lat.rtts as number[]));
        }
      }
      for (const who of ['gw', 'echo'] as const) {
        const thr = await ask(who === 'gw' ? toGw : toEcho, { cmd: 'throughput', ms: opt.seconds * 1000, window: WINDOW });
        r[who].p50.push(percentile(rtts[who], 50));
        r[who].p99.push(percentile(rtts[who], 99));
        r[who].rps.push(thr.rps);
        process.stderr.write(`  ${who}: p50 ${r[who].p50.at(-1)!.toFixed(3)} ms, p99 ${r[who].p99.at(-1)!.toFixed(3)} ms, ${Math.round(thr.rps)} req/s\n`);
      }
    }
    const goal = { op: '<=' as const, value: 1.5, text: '≤ 1.5× echo' };
    res.add('MQTT', 'rtt-p50', 'ASSET-V1 EXEC/read round trip through Mosquitto, p50 (one in flight)', 'ms', r.gw.p50, 'bare echo through the same broker', r.echo.p50, goal,
      `${n} sequential requests per repetition and side, alternating with the echo in blocks of ${n / 10}; bare json encoding, QoS 0`);
    res.add('MQTT', 'rtt-p99', 'ASSET-V1 EXEC/read round trip, p99 (one in flight)', 'ms', r.gw.p99, 'bare echo', r.echo.p99, goal);
    res.add('MQTT', 'rps', `ASSET-V1 EXEC/read requests/s (${WINDOW} in flight)`, 'req/s', r.gw.rps, 'bare echo', r.echo.rps);
  });
  await outboxWrites(res, opt);
}

/**
 * Bytes and fsyncs gatewayd writes to files under `dir` during `ms`, counted by strace (write,
 * pwrite64, writev, fsync, fdatasync, with each descriptor's path).
 */
async function traceWrites(pid: number, dir: string, ms: number): Promise<{ bytes: number; syncs: number }> {
  const out = path.join(path.dirname(dir), `strace-${Date.now()}.txt`);
  const st = spawn('strace', ['-f', '-qq', '-y', '-e', 'trace=write,pwrite64,writev,fsync,fdatasync', '-o', out, '-p', String(pid)], { stdio: 'ignore' });
  await sleep(ms);
  await new Promise<void>((resolve) => {
    st.once('exit', () => resolve());
    st.kill('SIGINT');
  });
  let bytes = 0;
  let syncs = 0;
  for (const line of fs.readFileSync(out, 'utf8').split('\n')) {
    const m = /(write|pwrite64|writev|fsync|fdatasync)\(\d+<([^>]*)>.*?(?:= (\d+))?$/.exec(line);
    if (!m || !m[2]!.startsWith(dir)) continue;
    if (m[1]!.includes('sync')) syncs++;
    else bytes += Number(m[3] ?? 0);
  }
  fs.rmSync(out, { force: true });
  return { bytes, syncs };
}

/** Flash-friendly telemetry (docs/mqtt.md "Telemetry"): at a 100 ms poll writes nothing to dataDir while the broker acknowledges. */
async function outboxWrites(res: Results, opt: Options): Promise<void> {
  const what = 'bytes written to dataDir per hour of telemetry (100 ms poll), broker connected';
  const baseline = 'the same with the broker down (store-and-forward)';
  if (spawnSync('strace', ['-V']).error) return res.notMeasured('MQTT', 'outbox-writes', what, baseline, 'strace is not installed');
  await withScope(async (scope) => {
    const broker = await startMosquitto();
    scope.teardown(() => broker.close());
    const { config } = await demoConfig();
    config.assets[ASSET]['poll.interval'] = 100;
    config.mqtt = { enabled: true, 'broker-url': broker.url, 'client-id': 'gatewayd', 'payload.encoding': 'json' };
    const gw = await startGatewayd(scope, config, { launcher: true });
    const dataDir = path.join(gw.dir, 'data');
    const ms = (opt.quick ? 5 : 20) * 1000;
    const perHour = (x: number) => Math.round((x / ms) * 3_600_000);
    await sleep(3000); // connected, and what was stored before the first connection acknowledged
    const on = await traceWrites(gw.pid, dataDir, ms);
    await broker.stop();
    await sleep(2000);
    const off = await traceWrites(gw.pid, dataDir, ms);
    res.add('MQTT', 'outbox-writes', what, 'B/h', [perHour(on.bytes)], baseline, [perHour(off.bytes)], { op: '<=', value: 0.01, text: '≤ 1 % of offline' },
      `strace of write/fsync on files under dataDir for ${ms / 1000} s each: connected ${on.syncs} fsyncs, offline ${off.syncs} fsyncs (${perHour(off.syncs)}/h); before store-and-forward every message cost a write and an fsync while connected too`);
  });
}
