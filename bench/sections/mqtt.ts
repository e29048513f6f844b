// Issue 8 §3: ASSET-V1 EXEC/read round trip (p50/p99) and requests/s through Mosquitto in the bare
// `json` encoding (docs/mqtt.md "Encodings"), against a bare echo through the same broker (the ceiling). The
// load generator and the echo are processes of their own.

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
    const gw = await startGatewayd(scope, config);
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
}
