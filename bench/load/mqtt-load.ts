// MQTT load generator (a process of its own): ASSET-V1 EXEC/read requests in the bare `json`
// encoding (docs/mqtt.md "Encodings") to TARGET's client id, replies matched by request id.
//
//   node bench/out/mqtt-load.mjs PORT TARGET ASSET
//   → {"ready":true}; then stdin commands, one JSON line each, answered on stdout:
//   {"cmd":"latency","n":N}          N sequential round trips → {"p50":ms,"p99":ms,"n":N,"rtts":[ms…]}
//   {"cmd":"throughput","ms":T,"window":W}  W requests in flight for T ms → {"rps":x,"n":count}
//   {"cmd":"sample"}                 one reply's payload → {"payload":"…"}

import { serveCommands } from '../lib/commands.js';
import { BenchMqtt } from '../lib/mqtt.js';
import { percentile } from '../lib/stats.js';

const [port, target, asset] = process.argv.slice(2);
const me = `bench-load-${process.pid}`;
const c = await BenchMqtt.connect(Number(port), me);
const body = JSON.stringify([{ name: asset }]);
const waiting = new Map<string, (payload: Buffer) => void>();
const replyPrefix = `$EDC/account/${me}/ASSET-V1/REPLY/`;
c.onMessage = (topic, payload) => {
  const id = topic.slice(replyPrefix.length);
  const w = waiting.get(id);
  if (w) {
    waiting.delete(id);
    w(payload);
  }
};
await c.subscribe(`${replyPrefix}+`);
let seq = 0;

function roundTrip(): Promise<Buffer> {
  const id = String(++seq);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      waiting.delete(id);
      reject(new Error(`no reply to request ${id} within 5 s`));
    }, 5000);
    waiting.set(id, (p) => {
      clearTimeout(timer);
      resolve(p);
    });
    c.publish(`$EDC/account/${target}/ASSET-V1/EXEC/read/${me}/${id}`, body);
  });
}

function check(p: Buffer): void {
  // A reply that is not the asset's read records (e.g. {"response.code":400,…}) is not a valid figure.
  if (p[0] !== 0x5b || !p.includes('"channels"')) throw new Error(`unexpected reply: ${p.toString().slice(0, 200)}`);
}

async function latency(n: number) {
  const rtts: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = process.hrtime.bigint();
    check(await roundTrip());
    rtts.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return { p50: percentile(rtts, 50), p99: percentile(rtts, 99), n, rtts };
}

async function throughput(ms: number, window: number) {
  const end = Date.now() + ms;
  let n = 0;
  const t0 = process.hrtime.bigint();
  const worker = async () => {
    while (Date.now() < end) {
      check(await roundTrip());
      n++;
    }
  };
  await Promise.all(Array.from({ length: window }, worker));
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  return { rps: n / s, n };
}

process.stdout.write(JSON.stringify({ ready: true }) + '\n');
serveCommands(async (cmd) => {
  if (cmd.cmd === 'latency') return latency(cmd.n);
  if (cmd.cmd === 'throughput') return throughput(cmd.ms, cmd.window);
  if (cmd.cmd === 'sample') return { payload: (await roundTrip()).toString() };
  return { error: `unknown command ${cmd.cmd}` };
}, () => c.close());
