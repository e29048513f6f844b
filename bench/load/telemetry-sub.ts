// Telemetry subscriber of the scale benchmark (bench/README.md "Scale"), a process of its own: subscribes to
// gatewayd's asset topics through the broker and measures each tag's end-to-end latency, from the
// timestamp of the Modbus response it was read from (in the `json` payload) to the message's arrival
// here. Same machine, same clock.
//
//   node bench/out/telemetry-sub.mjs BROKER_PORT TOPIC_FILTER
//   → {"ready":true}; then per stdin line {"cmd":"reset"} → {"ok":true},
//     {"cmd":"stats"} → {"messages","tags","errors","bytes","p50","p99","max","perAsset":{…}}

import { performance } from 'node:perf_hooks';
import { serveCommands } from '../lib/commands.js';
import { BenchMqtt } from '../lib/mqtt.js';
import { Histogram, scanTelemetry } from '../lib/telemetry.js';

const [port, filter] = [Number(process.argv[2]), process.argv[3]];
const hist = new Histogram();
let messages = 0;
let tags = 0;
let errors = 0;
let bytes = 0;
let perAsset: Record<string, number> = {};

const client = await BenchMqtt.connect(port, `scale-sub-${process.pid}`);
client.onMessage = (topic, payload) => {
  // Sub-millisecond arrival time on the epoch clock that gatewayd's Date.now() stamps use.
  const arrival = performance.timeOrigin + performance.now();
  const s = scanTelemetry(payload.toString('utf8'));
  messages++;
  bytes += payload.length;
  tags += s.tags;
  errors += s.errors;
  const asset = topic.slice(topic.lastIndexOf('/') + 1);
  perAsset[asset] = (perAsset[asset] ?? 0) + 1;
  // Channels read in one Modbus response share its stamp: one histogram entry per run of equal stamps.
  let i = 0;
  while (i < s.stamps.length) {
    let j = i + 1;
    while (j < s.stamps.length && s.stamps[j] === s.stamps[i]) j++;
    hist.add(arrival - s.stamps[i], j - i);
    i = j;
  }
};
await client.subscribe(filter);
process.stdout.write(JSON.stringify({ ready: true }) + '\n');

serveCommands((cmd) => {
  if (cmd.cmd === 'reset') {
    hist.reset();
    messages = tags = errors = bytes = 0;
    perAsset = {};
    return { ok: true };
  }
  if (cmd.cmd === 'stats') return { messages, tags, errors, bytes, p50: hist.percentile(50), p99: hist.percentile(99), max: hist.max, perAsset };
  return { error: `unknown command ${cmd.cmd}` };
});
