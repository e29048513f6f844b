// The MQTT section (bench/README.md): ASSET-V1 EXEC/read round trip (p50/p99) and requests/s through Mosquitto in the bare
// `json` encoding (docs/mqtt.md "Encodings"), against a bare echo through the same broker (the ceiling). The
// load generator and the echo are processes of their own.

import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startMosquitto } from '../../test/helpers/mosquitto.js';
import { startGatewayd } from '../lib/gatewayd.js';
import { sleep, startJsonChild, threadCpuMs, type JsonChild } from '../lib/proc.js';
import { MqttClient } from '../../src/mqtt/client.js';
import { silentLogger } from '../../src/log.js';
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
  await sparkplugCpu(res, opt);
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

/**
 * A Sparkplug connection's CPU per poll (docs/mqtt.md "Sparkplug B"): two daemons side by side, each
 * polling the same 50-channel simulator asset every 50 ms with every value changed each poll, one
 * publishing Kura telemetry in the bare `json` encoding, the other as a Sparkplug edge node (DDATA
 * through the same outbox). The CPU each used (all threads, the scheduler's counters) over the polls a subscriber saw.
 */
async function sparkplugCpu(res: Results, opt: Options): Promise<void> {
  await withScope(async (scope) => {
    const broker = await startMosquitto();
    scope.teardown(() => broker.close());
    const channels: Record<string, unknown> = {};
    for (let i = 0; i < 50; i++) channels[`c${i}`] = { type: 'READ', 'value.type': 'DOUBLE', simulation: 'random' };
    const start = async (id: string, mqtt: Record<string, unknown>) => {
      const { config } = await demoConfig();
      config.assets = { line: { 'driver.pid': 'sim', 'poll.interval': 50, channels } };
      config.mqtt = { enabled: true, 'broker-url': broker.url, 'client-id': id, ...mqtt };
      return startGatewayd(scope, config);
    };
    const json = await start('gw-json', { 'payload.encoding': 'json' });
    const spark = await start('gw-spark', { type: 'sparkplug', 'sparkplug.group.id': 'bench' });
    const seen = { json: 0, spark: 0 };
    const sub = new MqttClient({ url: broker.url, clientId: 'bench-sub', keepAlive: 30, clean: true, log: silentLogger });
    sub.on('message', (topic: string) => (topic.startsWith('spBv1.0/') ? topic.includes('/DDATA/') && seen.spark++ : seen.json++));
    sub.start();
    scope.teardown(() => sub.end());
    for (let i = 0; i < 40 && !sub.isConnected; i++) await sleep(100);
    await sub.subscribe('account/gw-json/assets/#', 0);
    await sub.subscribe('spBv1.0/bench/DDATA/#', 0);
    await sleep(2000);
    const per = { json: [] as number[], spark: [] as number[] };
    for (let rep = 0; rep < opt.repeats; rep++) {
      const before = { json: threadCpuMs(json.pid), spark: threadCpuMs(spark.pid), seen: { ...seen } };
      await sleep(Math.max(opt.seconds, 10) * 1000);
      for (const [k, gw] of [['json', json], ['spark', spark]] as const) {
        const polls = seen[k] - before.seen[k];
        per[k].push((threadCpuMs(gw.pid) - before[k]) / polls);
      }
      process.stderr.write(`  sparkplug ${per.spark.at(-1)!.toFixed(3)} ms/poll, json ${per.json.at(-1)!.toFixed(3)} ms/poll\n`);
    }
    res.add('MQTT', 'sparkplug-cpu', 'Sparkplug edge node: CPU per poll of 50 changed channels (DDATA)', 'ms', per.spark, 'a Kura connection, bare json telemetry, side by side', per.json, { op: '<=', value: 1.0, text: '≤ 1.0× json' },
      '50 DOUBLE simulator channels, poll.interval 50 ms, every value new each poll; CPU of each daemon (all threads, /proc/<pid>/task/*/schedstat) over at least 10 s ÷ the polls a subscriber received');
  });
}
