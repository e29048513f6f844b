#!/usr/bin/env node
// CPU per poll of the Modbus poll → telemetry publish path (bench/README.md "CPU per poll of the telemetry path"), outside
// `make bench`: the built bundle (dist/gatewayd.js) run with the launcher's node flags and
// environment, a pymodbus device whose 100 holding registers change on every read, an asset of 50
// INT32 channels polled every 100 ms, telemetry to a Mosquitto broker counted by a subscriber.
//
//   node bench/profile-poll.mjs                          # kura-protobuf and json, 3 × 30 s each
//   node bench/profile-poll.mjs --seconds 10 --repeats 1 --encodings json
//   node bench/profile-poll.mjs --callgrind --seconds 20 # instructions per poll under valgrind
//   node bench/profile-poll.mjs --cpu-prof DIR           # V8 profiles of the polling daemon
//   node bench/profile-poll.mjs --bundles /tmp/before.js,dist/gatewayd.js   # before/after, interleaved
//   node bench/profile-poll.mjs --env MALLOC_TRIM_THRESHOLD_=1048576 --node-flags '--perf-basic-prof'
//
// Per repetition, interleaved: the polling daemon, then an idle daemon (the same configuration with
// `poll.interval` 0: connected, nothing polled) over the same window. Reported: CPU µs per poll
// (utime+stime of all threads from /proc/<pid>/task/*/schedstat over the window ÷ messages the
// subscriber received), the idle daemon's CPU per second, and the polling daemon's CPU minus the
// idle one per poll. With --callgrind, instructions counted from a zeroed counter
// (callgrind_control -z) to a dump (-d) over the window, the same way.

import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { BUNDLE, READY, deviceSettings, spawnGatewayd, writeConfigFile } from '../test/helpers/launch.mjs';

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(`--${name}`);
  return i < 0 ? def : args[i + 1];
};
const SECONDS = Number(opt('seconds', '30'));
const REPEATS = Number(opt('repeats', '3'));
const ENCODINGS = opt('encodings', 'kura-protobuf,json').split(',');
const CALLGRIND = args.includes('--callgrind');
const CPU_PROF = opt('cpu-prof', '');
const IDLE = !args.includes('--no-idle'); // --no-idle: skip the idle daemon (its cost is then taken as 0)
const WARMUP = Number(opt('warmup', CALLGRIND ? '15' : '3'));
const INTERVAL = Number(opt('interval', '100'));
const CHANNELS = 50;
const GZIP = opt('gzip', 'default');
// Bundles to compare, interleaved per repetition (e.g. a build of main saved aside, then this one).
const BUNDLES = opt('bundles', BUNDLE).split(',').map((b) => path.resolve(b)); // kura-protobuf: 'default' leaves encode.gzip at its default (true)

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const cleanups = [];
const cleanup = async () => {
  for (const f of cleanups.splice(0).reverse()) await f().catch(() => {});
};
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => cleanup().then(() => process.exit(130)));

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

async function waitForPort(port, ms = 10_000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const ok = await new Promise((resolve) => {
      const s = net.connect({ host: '127.0.0.1', port }, () => (s.destroy(), resolve(true)));
      s.on('error', () => resolve(false));
    });
    if (ok) return;
    await sleep(50);
  }
  throw new Error(`nothing listens on ${port}`);
}

/** CPU ns of all threads of a process (schedstat: exact, unlike the 10 ms ticks of /proc/<pid>/stat). */
function cpuNs(pid) {
  let ns = 0;
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // the thread ended meanwhile
    }
  }
  return ns;
}

/** utime and stime of the process in ms (10 ms ticks): how the CPU splits between user and kernel. */
function userSys(pid) {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').slice(fs.readFileSync(`/proc/${pid}/stat`, 'utf8').lastIndexOf(')') + 2).split(' ');
  return { user: Number(f[11]) * 10, sys: Number(f[12]) * 10 };
}

function kill(proc) {
  return new Promise((resolve) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
    proc.once('exit', () => resolve());
    proc.kill('SIGTERM');
    setTimeout(() => proc.kill('SIGKILL'), 10_000).unref();
  });
}

// The device: pymodbus (Debian's, as the tests use), 100 holding registers from PDU address 0 whose
// 50 INT32 values change on every read.
const DEVICE_PY = `
import asyncio, sys
from pymodbus.datastore import ModbusSequentialDataBlock, ModbusServerContext, ModbusSlaveContext
from pymodbus.framer.socket_framer import ModbusSocketFramer
from pymodbus.server.async_io import ModbusTcpServer

class Changing(ModbusSequentialDataBlock):
    n = 0
    def getValues(self, address, count=1):
        Changing.n += 1
        regs = []
        for c in range(${CHANNELS}):
            v = (Changing.n * 1000 + c * 7) & 0x7fffffff
            regs += [v >> 16, v & 0xffff]
        return (regs + [0] * (address + count))[address:address + count]

async def main():
    ctx = ModbusServerContext(slaves={1: ModbusSlaveContext(hr=Changing(0, [0] * ${CHANNELS * 2}), zero_mode=True)}, single=False)
    server = ModbusTcpServer(ctx, ModbusSocketFramer, None, ("127.0.0.1", int(sys.argv[1])), allow_reuse_address=True)
    await server.serve_forever()

asyncio.run(main())
`;

function config(http, broker, encoding, poll) {
  const channels = {};
  for (let c = 0; c < CHANNELS; c++) {
    channels[`ch${String(c).padStart(2, '0')}`] = {
      type: 'READ', 'value.type': 'INTEGER', 'unit.id': 1, 'primary.table': 'HOLDING_REGISTERS',
      'memory.address': 1 + c * 2, 'data.type': 'INT32',
    };
  }
  const mqtt = { enabled: true, 'broker-url': `mqtt://127.0.0.1:${broker}`, 'client-id': 'gw', 'topic.context.account-name': 'acct', 'payload.encoding': encoding };
  if (GZIP !== 'default') mqtt['encode.gzip'] = GZIP === 'true';
  return {
    'log.level': 'warn',
    http: { 'http.ports': [http], 'https.ports': [], 'https.client.auth.ports': [], 'bind.address': '127.0.0.1' },
    identities: { admin: { password: 'Poll-bench-1', permissions: ['kura.admin'], passwordChangeNeeded: false } },
    drivers: { mb: { factory: 'modbus', 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': devicePort, 'modbus.timeout': 2000 } },
    assets: { plc: { 'driver.pid': 'mb', 'poll.interval': poll ? INTERVAL : 0, channels } },
    mqtt,
  };
}

let devicePort = 0;

/** Messages on the telemetry topic (and their bytes) as a subscriber receives them. */
function subscriber(brokerPort) {
  const sub = spawn('mosquitto_sub', ['-h', '127.0.0.1', '-p', String(brokerPort), '-t', 'acct/gw/assets/#', '-q', '1', '-F', '%l'], { stdio: ['ignore', 'pipe', 'inherit'] });
  cleanups.push(() => kill(sub));
  const counter = { messages: 0, bytes: 0 };
  readline.createInterface({ input: sub.stdout }).on('line', (l) => {
    counter.messages++;
    counter.bytes += Number(l);
  });
  return counter;
}

async function runDaemon(dir, cfg, { valgrind, cpuProf, bundle }, counter) {
  const run = fs.mkdtempSync(path.join(dir, 'gw-'));
  cfg.dataDir = path.join(run, 'data');
  const configFile = writeConfigFile(run, cfg);
  const { flags } = deviceSettings();
  const nodeArgs = [...flags, ...(opt('node-flags', '') ? opt('node-flags', '').split(' ') : []), ...(cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${cpuProf}`] : []), bundle];
  const out = path.join(run, 'callgrind.out');
  const command = valgrind ? ['valgrind', '--tool=callgrind', '--separate-threads=yes', `--callgrind-out-file=${out}`, process.execPath, ...nodeArgs] : [process.execPath, ...nodeArgs];
  const extraEnv = Object.fromEntries(opt('env', '').split(',').filter(Boolean).map((kv) => kv.split('=')));
  const gw = spawnGatewayd({ configFile, cwd: run, env: { ...deviceSettings().env, ...extraEnv }, command, keep: args.includes('--keep') ? 'all' : 200 });
  cleanups.push(() => kill(gw.proc));
  await gw.waitFor(READY, valgrind ? 300_000 : 20_000);
  // Telemetry flowing (or, idle, the connection made): then a warm-up.
  await sleep(WARMUP * 1000);
  const pid = gw.proc.pid;
  const zero = () => spawnSync('callgrind_control', ['-z', String(pid)], { encoding: 'utf8' });
  const dump = () => spawnSync('callgrind_control', ['-d', String(pid)], { encoding: 'utf8' });
  if (valgrind) zero();
  const m0 = counter.messages;
  const c0 = valgrind ? 0 : cpuNs(pid);
  const u0 = userSys(pid);
  const t0 = process.hrtime.bigint();
  await sleep(SECONDS * 1000);
  const c1 = valgrind ? 0 : cpuNs(pid);
  const u1 = userSys(pid);
  const t1 = process.hrtime.bigint();
  const m1 = counter.messages;
  let instructions = NaN;
  let mainInstructions = NaN;
  if (valgrind) {
    dump();
    // One file per thread (callgrind.out.1-01 is the main thread: the event loop, all JavaScript).
    for (const f of fs.readdirSync(run).filter((f) => /^callgrind\.out\.1-\d+$/.test(f))) {
      const m = /^(?:summary|totals): (\d+)/m.exec(fs.readFileSync(path.join(run, f), 'utf8'));
      if (!m) continue;
      instructions = (Number.isNaN(instructions) ? 0 : instructions) + Number(m[1]);
      if (f.endsWith('-01')) mainInstructions = Number(m[1]);
    }
  }
  await kill(gw.proc);
  if (args.includes('--keep')) fs.writeFileSync(path.join(run, 'daemon.log'), gw.lines.join('\n'));
  const errors = gw.lines.filter((l) => /level=(warn|error)/.test(l));
  if (errors.some((l) => !/console files not found/.test(l))) process.stderr.write(`  gatewayd warned: ${errors.slice(0, 3).join(' | ')}\n`);
  return { userMs: u1.user - u0.user, sysMs: u1.sys - u0.sys, cpuMs: (c1 - c0) / 1e6, seconds: Number(t1 - t0) / 1e9, messages: m1 - m0, instructions, mainInstructions };
}

async function main() {
  for (const b of BUNDLES) if (!fs.existsSync(b)) throw new Error(`${b} missing: run node build/build.mjs`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'profile-poll-'));
  if (args.includes('--keep')) console.log(`keeping ${dir}`);
  else cleanups.push(async () => fs.rmSync(dir, { recursive: true, force: true }));
  const brokerPort = await freePort();
  fs.writeFileSync(path.join(dir, 'mosquitto.conf'), `user ${os.userInfo().username}\nallow_anonymous true\nlog_dest none\nlistener ${brokerPort} 127.0.0.1\n`);
  const broker = spawn('/usr/sbin/mosquitto', ['-c', path.join(dir, 'mosquitto.conf')], { stdio: 'ignore' });
  cleanups.push(() => kill(broker));
  devicePort = await freePort();
  fs.writeFileSync(path.join(dir, 'device.py'), DEVICE_PY);
  const device = spawn('/usr/bin/python3', [path.join(dir, 'device.py'), String(devicePort)], { stdio: 'ignore' });
  cleanups.push(() => kill(device));
  await waitForPort(brokerPort);
  await waitForPort(devicePort);
  const counter = subscriber(brokerPort);
  const http = await freePort();
  const load = () => os.loadavg()[0].toFixed(2);
  console.log(`profile-poll: ${CHANNELS} INT32 channels / ${CHANNELS * 2} registers every ${INTERVAL} ms, ${SECONDS} s windows, ${REPEATS} repetition(s), node ${process.version}, load ${load()}${CALLGRIND ? ', callgrind' : ''}`);
  const summary = [];
  for (const encoding of ENCODINGS) {
    const runs = BUNDLES.map(() => ({ poll: [], idle: [] }));
    for (let rep = 0; rep < REPEATS; rep++) {
      for (const [b, bundle] of BUNDLES.entries()) {
        const label = BUNDLES.length > 1 ? `${encoding} ${path.basename(bundle)}` : encoding;
        const mode = { valgrind: CALLGRIND, cpuProf: CPU_PROF && rep === 0 ? CPU_PROF : '', bundle };
        const m0 = counter.messages;
        const b0 = counter.bytes;
        const p = await runDaemon(dir, config(http, brokerPort, encoding, !args.includes('--idle-only')), mode, counter);
        const bytes = (counter.bytes - b0) / Math.max(1, counter.messages - m0);
        const i = IDLE && !args.includes('--idle-only') ? await runDaemon(dir, config(http, brokerPort, encoding, false), { valgrind: CALLGRIND, bundle }, counter) : { cpuMs: 0, userMs: 0, sysMs: 0, seconds: 1, messages: 0, instructions: 0, mainInstructions: 0 };
        runs[b].poll.push(p);
        runs[b].idle.push(i);
        if (CALLGRIND) {
          console.log(`  ${label} #${rep + 1}: ${p.messages} polls in ${p.seconds.toFixed(1)} s, ${(p.instructions / 1e6).toFixed(1)} M instructions (idle ${(i.instructions / 1e6).toFixed(1)} M): ${Math.round((p.instructions - i.instructions) / p.messages)} per poll above idle (main thread ${Math.round((p.mainInstructions - i.mainInstructions) / p.messages)}), ~${Math.round(bytes)} B/message`);
        } else {
          console.log(`  ${label} #${rep + 1}: ${p.messages} polls in ${p.seconds.toFixed(1)} s, CPU ${p.cpuMs.toFixed(0)} ms (user ${p.userMs}, sys ${p.sysMs}) = ${(p.cpuMs * 1000 / p.messages).toFixed(1)} µs/poll; idle ${(i.cpuMs * 1000 / i.seconds).toFixed(0)} µs/s; above idle ${((p.cpuMs - i.cpuMs * p.seconds / i.seconds) * 1000 / p.messages).toFixed(1)} µs/poll; ~${Math.round(bytes)} B/message; load ${load()}`);
        }
      }
    }
    for (const [b, { poll, idle }] of runs.entries()) {
      const label = BUNDLES.length > 1 ? `${encoding} ${BUNDLES[b]}` : encoding;
      const perPoll = poll.map((p) => (p.cpuMs * 1000) / p.messages);
      const idlePerS = idle.map((i) => (i.cpuMs * 1000) / i.seconds);
      const above = poll.map((p, k) => ((p.cpuMs - (idle[k].cpuMs * p.seconds) / idle[k].seconds) * 1000) / p.messages);
      const instr = poll.map((p, k) => (p.instructions - idle[k].instructions) / p.messages);
      const mainInstr = poll.map((p, k) => (p.mainInstructions - idle[k].mainInstructions) / p.messages);
      summary.push(CALLGRIND
        ? `${label}: median ${Math.round(median(instr))} instructions per poll above idle, main thread ${Math.round(median(mainInstr))} (idle ${(median(idle.map((i) => i.instructions / i.seconds)) / 1e6).toFixed(2)} M/s)`
        : `${label}: median ${median(perPoll).toFixed(1)} µs CPU per poll (${(median(above)).toFixed(1)} above idle), idle daemon ${median(idlePerS).toFixed(0)} µs/s`);
    }
  }
  console.log(summary.join('\n'));
}

main().then(cleanup, async (err) => {
  console.error(err);
  await cleanup();
  process.exit(1);
});
