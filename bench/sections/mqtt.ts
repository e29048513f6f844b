// The MQTT section (bench/README.md): ASSET-V1 EXEC/read round trip (p50/p99) and requests/s through Mosquitto in the bare
// `json` encoding (docs/mqtt.md "Encodings"), against a bare echo through the same broker (the ceiling). The
// load generator and the echo are processes of their own.

import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startMosquitto } from '../../test/helpers/mosquitto.js';
import { startGatewayd } from '../lib/gatewayd.js';
import { rssKiB, sleep, startJsonChild, threadCpuMs, type JsonChild } from '../lib/proc.js';
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
  await connections(res, opt);
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

/** Telemetry messages arriving under `filter` on a broker, counted by a subscriber in this process. */
async function countMessages(scope: { teardown(fn: () => unknown): void }, url: string, filter: string, clientId: string): Promise<{ n: number }> {
  const count = { n: 0 };
  const c = new MqttClient({ url, clientId, keepAlive: 30, clean: true, log: silentLogger });
  c.on('message', () => count.n++);
  c.start();
  scope.teardown(() => c.end());
  for (let i = 0; i < 100 && !c.isConnected; i++) await sleep(50);
  await c.subscribe(filter, 0);
  return count;
}

/**
 * Connections, plural (docs/mqtt.md "Connections"): CPU per poll of a daemon with a Kura-style
 * connection and a local json one, against the same daemon with the Kura-style one only, both
 * running at once on the same asset and brokers (every channel changes each poll, so each poll is
 * one message per connection); and the memory an added connection costs (RSS and heap of a daemon
 * with 10 connections against one with 1).
 */
async function connections(res: Results, opt: Options): Promise<void> {
  await withScope(async (scope) => {
    const cloud = await startMosquitto();
    scope.teardown(() => cloud.close());
    const plant = await startMosquitto();
    scope.teardown(() => plant.close());
    const channels = Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`c${i}`, { type: 'READ', 'value.type': 'INTEGER', simulation: 'counter' }]));
    const base = async () => {
      const { config } = await demoConfig();
      config.assets[ASSET] = { 'driver.pid': 'sim', 'poll.interval': 50, channels };
      return config;
    };
    const kura = (clientId: string) => ({ enabled: true, 'broker-url': cloud.url, 'client-id': clientId, 'payload.encoding': 'kura-protobuf', 'clean-session': true });
    const local = (clientId: string) => ({ enabled: true, 'broker-url': plant.url, 'client-id': clientId, 'payload.encoding': 'json', 'clean-session': true, 'applications.disabled': ['ASSET-V1', 'CONF-V2', 'CONF-V1', 'DEPLOY-V2', 'INVENTORY-V1', 'KEYS-V1'] });
    const oneCfg = await base();
    oneCfg.mqtt = kura('gw-one');
    const twoCfg = await base();
    twoCfg.mqtt = { connections: { default: kura('gw-two'), local: local('gw-two-local') } };
    const polls = { one: await countMessages(scope, cloud.url, 'account/gw-one/assets/#', 'count-one'), two: await countMessages(scope, cloud.url, 'account/gw-two/assets/#', 'count-two') };
    const localGot = await countMessages(scope, plant.url, 'account/gw-two-local/assets/#', 'count-local');
    const gw = { one: await startGatewayd(scope, oneCfg, { launcher: true }), two: await startGatewayd(scope, twoCfg, { launcher: true }) };
    await sleep(3000);
    const windowMs = (opt.quick ? 3 : 10) * 1000;
    const per = { one: [] as number[], two: [] as number[] };
    let localPolls = 0;
    let twoPolls = 0;
    for (let rep = 0; rep < opt.repeats; rep++) {
      const c0 = { one: threadCpuMs(gw.one.pid), two: threadCpuMs(gw.two.pid) };
      const n0 = { one: polls.one.n, two: polls.two.n, local: localGot.n };
      await sleep(windowMs);
      for (const k of ['one', 'two'] as const) per[k].push((threadCpuMs(gw[k].pid) - c0[k]) / Math.max(1, polls[k].n - n0[k]));
      localPolls += localGot.n - n0.local;
      twoPolls += polls.two.n - n0.two;
      process.stderr.write(`  connections: one ${per.one.at(-1)!.toFixed(3)} ms/poll, two ${per.two.at(-1)!.toFixed(3)} ms/poll\n`);
    }
    res.add('MQTT', 'connections-cpu', 'CPU per poll, a Kura-style connection and a local json one (20 changing channels, 50 ms poll)', 'ms', per.two, 'the Kura-style connection alone, running at once', per.one, { op: '<=', value: 1.3, text: '≤ 1.3× one connection' },
      `CPU of all threads (schedstat) ÷ polls arriving at the cloud broker, ${windowMs / 1000} s windows; the local broker got ${localPolls} of the two-connection daemon's ${twoPolls} polls in the windows`);
    await gw.one.stop();
    await gw.two.stop();

    // Memory per connection: 10 connections against 1, each on the local broker, after a settle.
    const many = await base();
    many.mqtt = { connections: Object.fromEntries(Array.from({ length: 10 }, (_, i) => [i === 0 ? 'default' : `c${i}`, local(`gw-mem-${i}`)])) };
    const single = await base();
    single.mqtt = local('gw-mem-single');
    for (const c of [many, single]) {
      c.rest = { 'auth.basic.enabled': true, 'login.throttle.max.delay': 0 };
      c.identities.bench.permissions = ['rest.assets', 'rest.system'];
    }
    const m = { ten: await startGatewayd(scope, many, { launcher: true }), one: await startGatewayd(scope, single, { launcher: true }) };
    const port = (c: Record<string, any>) => c.http['http.ports'][0];
    const auth = `Basic ${Buffer.from('bench:Bench-pass-1').toString('base64')}`;
    const heap = async (c: Record<string, any>) => ((await (await fetch(`http://127.0.0.1:${port(c)}/services/system/v1/status`, { headers: { authorization: auth } })).json()) as any).memory.heapUsed / 1024;
    await sleep(5000);
    const rss = { ten: [] as number[], one: [] as number[] };
    const heaps = { ten: [] as number[], one: [] as number[] };
    for (let i = 0; i < 5; i++) {
      rss.ten.push(rssKiB(m.ten.pid));
      rss.one.push(rssKiB(m.one.pid));
      heaps.ten.push(await heap(many));
      heaps.one.push(await heap(single));
      await sleep(1000);
    }
    const med = (x: number[]) => [...x].sort((a, b) => a - b)[Math.floor(x.length / 2)];
    const rssPer = (med(rss.ten) - med(rss.one)) / 9;
    const heapPer = (med(heaps.ten) - med(heaps.one)) / 9;
    res.add('MQTT', 'connection-rss', 'RSS per added MQTT connection (json, local broker, one 20-channel asset at 50 ms)', 'KiB', [rssPer], '', [], undefined,
      `(RSS of a daemon with 10 connections − one with 1) ÷ 9, medians of 5 samples after 5 s: ${Math.round(med(rss.ten))} KiB vs ${Math.round(med(rss.one))} KiB`);
    res.add('MQTT', 'connection-heap', 'JS heap per added MQTT connection (same)', 'KiB', [heapPer], '', [], undefined,
      `system/v1 status memory.heapUsed, the same two daemons: ${Math.round(med(heaps.ten))} KiB vs ${Math.round(med(heaps.one))} KiB (includes garbage not yet collected)`);
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
