// Part: field soak. Several real Modbus devices (Debian's pymodbus: five units over Modbus TCP and
// two units over RTU on a socat pty pair) polled by the built daemon for a long time (30 minutes
// with --soak, 1 minute in the bounded run) while faults are injected on a schedule: one unit
// silent, every unit silent, answers late, the TCP device killed and restarted. Every few seconds
// each asset's `GET /services/assets/{pid}/_status` must show a poll that started recently (no
// silent stall), and memory is sampled: it must stay flat (medians of the last fifth of the run
// against the first fifth after warm-up: RSS within 16 MB, the JS heap in use within 4 MB).

import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { startDaemon, track } from './lib/daemon.mjs';
import { agent, send, sleep } from './lib/http.mjs';

const PYTHON = '/usr/bin/python3';
const SCRIPT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'test', 'helpers', 'pymodbus_server.py');
const POLL_MS = 200;
const TIMEOUT_MS = 300;
const TCP_UNITS = [1, 2, 3, 4, 5];
const RTU_UNITS = [1, 2];

/** A pymodbus device process; `send` writes one command line (pymodbus_server.py's protocol). */
async function pymodbus(args) {
  const proc = track(spawn(PYTHON, [SCRIPT, ...args], { stdio: ['pipe', 'pipe', 'pipe'] }));
  proc.stderr.resume();
  const port = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('pymodbus did not start')), 15_000);
    readline.createInterface({ input: proc.stdout }).on('line', (line) => {
      if (line.includes('"ready"')) {
        clearTimeout(timer);
        resolve(JSON.parse(line).port);
      }
    });
    proc.once('exit', (code) => reject(new Error(`pymodbus exited with ${code}`)));
  });
  return {
    port,
    proc,
    send: (cmd) => proc.stdin.writable && proc.stdin.write(`${JSON.stringify(cmd)}\n`),
    stop: () => new Promise((resolve) => {
      if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
      proc.once('exit', () => resolve());
      proc.kill('SIGKILL');
    }),
  };
}

async function ptyPair() {
  const socat = track(spawn('socat', ['-d', '-d', 'pty,raw,echo=0', 'pty,raw,echo=0'], { stdio: ['ignore', 'ignore', 'pipe'] }));
  const ptys = [];
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('socat did not report its ptys')), 5000);
    readline.createInterface({ input: socat.stderr }).on('line', (line) => {
      const m = /PTY is (\S+)/.exec(line);
      if (m) ptys.push(m[1]);
      if (/starting data transfer loop/.test(line)) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  return { socat, driverSide: ptys[0], deviceSide: ptys[1] };
}

function peersMissing() {
  const py = spawnSync(PYTHON, ['-c', 'import pymodbus, serial_asyncio'], { encoding: 'utf8' });
  if (py.status !== 0) return `${PYTHON} with pymodbus is not available`;
  if (spawnSync('socat', ['-V']).status !== 0) return 'socat is not installed';
  return undefined;
}

export async function runFieldSoak({ durationMs }) {
  const missing = peersMissing();
  if (missing) return { row: { part: 'field soak', notRun: true, reason: missing } };
  let tcp = await pymodbus(['--tcp', '0', '--units', TCP_UNITS.join(',')]);
  const tcpPort = tcp.port;
  const pair = await ptyPair();
  const rtu = await pymodbus(['--rtu', pair.deviceSide, '--baud', '19200', '--units', RTU_UNITS.join(',')]);
  const channels = { v: { type: 'READ', 'value.type': 'INTEGER', 'memory.address': 1 } };
  const assets = {};
  for (const u of TCP_UNITS) assets[`tcp${u}`] = { 'driver.pid': 'plc', 'poll.interval': POLL_MS, channels: { v: { ...channels.v, 'unit.id': u } } };
  for (const u of RTU_UNITS) assets[`rtu${u}`] = { 'driver.pid': 'line', 'poll.interval': POLL_MS, channels: { v: { ...channels.v, 'unit.id': u } } };
  const d = await startDaemon({
    identities: { admin: { password: 'Admin-pw-123', permissions: ['kura.admin'], passwordChangeNeeded: false } },
    drivers: {
      plc: { factory: 'modbus', 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': tcpPort, 'modbus.timeout': TIMEOUT_MS, 'modbus.transaction.retry': 0, 'unit.backoff.max': 5000 },
      line: { factory: 'modbus', 'access.type': 'RTU', 'modbus.rtu.port.name': pair.driverSide, 'modbus.rtu.baudrate': 19200, 'modbus.timeout': TIMEOUT_MS, 'modbus.transaction.retry': 0, 'unit.backoff.max': 5000 },
    },
    assets,
  });
  const ag = agent(2);
  const auth = { authorization: `Basic ${Buffer.from('admin:Admin-pw-123').toString('base64')}` };
  const stats = { cases: 0, failures: 0, c5xx: 0 };
  const failures = [];
  const fail = (kind, request, detail) => {
    stats.failures++;
    if (failures.length < 10) failures.push({ kind, request, detail });
  };
  // Faults, one after the other, each for a few seconds, then healthy again.
  const faults = [
    ['unit 3 silent', () => tcp.send({ cmd: 'mode', silent_units: [3] })],
    ['RTU unit 2 silent', () => rtu.send({ cmd: 'mode', silent_units: [2] })],
    ['answers 150 ms late', () => tcp.send({ cmd: 'mode', delay_ms: 150 })],
    ['every TCP unit silent', () => tcp.send({ cmd: 'mode', silent: true })],
    ['TCP device killed', () => tcp.stop()],
  ];
  const heal = async () => {
    if (tcp.proc.exitCode !== null || tcp.proc.signalCode !== null) tcp = await pymodbus(['--tcp', String(tcpPort), '--units', TCP_UNITS.join(',')]);
    tcp.send({ cmd: 'mode' });
    rtu.send({ cmd: 'mode' });
  };
  const rss = [];
  const heap = [];
  const polls = {};
  let worstAge = 0;
  let faultNo = 0;
  const t0 = Date.now();
  const warmUp = Math.min(60_000, durationMs / 5);
  let nextFault = t0 + 5000;
  let healAt = Infinity;
  while (Date.now() - t0 < durationMs && d.alive()) {
    const now = Date.now();
    if (now >= nextFault) {
      const [, inject] = faults[faultNo++ % faults.length];
      await inject();
      healAt = now + 8000;
      nextFault = now + 20_000;
    } else if (now >= healAt) {
      await heal();
      healAt = Infinity;
    }
    for (const pid of Object.keys(assets)) {
      const r = await send(d.port, { method: 'GET', path: `/services/assets/${pid}/_status`, headers: auth }, ag, 10_000);
      stats.cases++;
      if (r.status >= 500) stats.c5xx++;
      if (r.status !== 200) {
        fail('status not 200', pid, `${r.status} ${r.body.slice(0, 120)}`);
        continue;
      }
      const st = JSON.parse(r.body);
      // A poll starts every period; a poll in progress may wait for one timeout per queued request.
      const age = Date.now() - st.lastPoll;
      if (st.polls > 0) worstAge = Math.max(worstAge, age);
      if (st.polls > 0 && age > POLL_MS + 8 * TIMEOUT_MS + 2000) fail('poll stalled', pid, `last poll ${age} ms ago: ${r.body.slice(0, 200)}`);
      polls[pid] = st.polls;
    }
    if (Date.now() - t0 >= warmUp) {
      rss.push(d.rss());
      // The JS heap too (system/v1 status), to tell a leak from the allocator keeping pages.
      const sys = await send(d.port, { method: 'GET', path: '/services/system/v1/status', headers: auth }, ag, 10_000);
      if (sys.status === 200) heap.push(JSON.parse(sys.body).memory.heapUsed);
    }
    await sleep(3000);
  }
  await heal();
  const rssBefore = rss[0] ?? d.rss();
  const fifth = Math.max(1, Math.floor(rss.length / 5));
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
  const early = median(rss.slice(0, fifth));
  const late = median(rss.slice(-fifth));
  const growth = late - early;
  if (growth > 16 * 1048576) fail('memory grew', 'RSS', `${(early / 1048576).toFixed(1)} MB → ${(late / 1048576).toFixed(1)} MB`);
  const heapEarly = median(heap.slice(0, fifth));
  const heapLate = median(heap.slice(-fifth));
  if (heapLate - heapEarly > 4 * 1048576) fail('JS heap grew', 'heapUsed', `${(heapEarly / 1048576).toFixed(1)} MB → ${(heapLate / 1048576).toFixed(1)} MB`);
  const notes = [
    `${Math.round((Date.now() - t0) / 1000)} s, ${faultNo} faults injected (${faults.map((f) => f[0]).join(', ')}, in turn)`,
    `polls per asset: ${Object.entries(polls).map(([k, v]) => `${k} ${v}`).join(', ')}; longest time since a poll started: ${worstAge} ms`,
    `RSS median first fifth after warm-up ${(early / 1048576).toFixed(1)} MB, last fifth ${(late / 1048576).toFixed(1)} MB (${rss.length} samples)`,
    `JS heap used, median first fifth ${(heapEarly / 1048576).toFixed(1)} MB, last fifth ${(heapLate / 1048576).toFixed(1)} MB`,
    `daemon ${d.alive() ? 'alive' : 'DEAD'}`,
  ];
  const rssAfter = d.rss();
  const crashes = d.crashes;
  ag.destroy();
  await d.stop();
  await tcp.stop();
  await rtu.stop();
  pair.socat.kill('SIGTERM');
  return {
    row: { part: 'field soak', cases: stats.cases, failures: stats.failures + crashes, http5xx: stats.c5xx, crashes, lostBytes: 0, rssBefore, rssAfter, rssPeak: Math.max(0, ...rss) },
    notes,
    failures,
  };
}
