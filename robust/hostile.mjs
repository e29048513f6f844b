// Part 2: hostile clients. 500 slowloris connections (headers dribbled one byte pair at a time,
// reconnecting whenever the daemon drops them) and a login flood of wrong passwords — mostly from one
// address, partly from many (127.x.y.z, which defeats per-address throttling and leans on the bounded
// hash queue) — while a legitimate client with a session keeps reading an asset. Reported: its p50/p99
// before and during the attack and their ratio (figures, never a pass/fail on wall-clock), slowloris
// sockets the daemon failed to drop within twice its header timeout, flood answers other than 401/429,
// and RSS (session store and throttle tables must stay bounded).

import net from 'node:net';
import { startDaemon } from './lib/daemon.mjs';
import { agent, loginHeaders, percentile, rng, send, sleep } from './lib/http.mjs';

const PW = 'Legit-user-pw-1';
const HEADERS_TIMEOUT_MS = 10_000; // src/http/server.ts DEFAULT_LIMITS.headersTimeoutMs

async function sampleLatency(port, auth, ag, { count, until }) {
  const lat = [];
  let errors = 0;
  while (until ? !until() : lat.length + errors < count) {
    const t0 = process.hrtime.bigint();
    const r = await send(port, { method: 'GET', path: '/services/assets/demo/_read', headers: auth }, ag, 30_000);
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    if (r.status === 200) lat.push(ms);
    else errors++;
    await sleep(20);
  }
  return { lat, errors };
}

function slowloris(port, count) {
  let stopped = false;
  const stats = { opened: 0, droppedByDaemon: 0, heldTooLong: 0, maxHeldMs: 0, answers: new Map() };
  const sockets = new Set();
  const open = () => {
    if (stopped) return;
    const s = net.connect({ host: '127.0.0.1', port });
    sockets.add(s);
    stats.opened++;
    const t0 = Date.now();
    let timer;
    let got = '';
    s.on('connect', () => {
      s.write('GET /services/assets HTTP/1.1\r\nHost: x\r\n');
      let n = 0;
      timer = setInterval(() => s.write(`X-${n++}: ${'a'}\r\n`), 1000);
    });
    s.on('data', (c) => (got += c.toString('latin1')));
    let error;
    s.on('error', (err) => (error = err.code ?? err.message));
    s.on('close', () => {
      clearInterval(timer);
      sockets.delete(s);
      const held = Date.now() - t0;
      if (!stopped) {
        stats.droppedByDaemon++;
        const st = /^HTTP\/1\.1 (\d{3})/.exec(got)?.[1] ?? (error ? `error ${error}` : 'closed');
        stats.answers.set(st, (stats.answers.get(st) ?? 0) + 1);
        stats.maxHeldMs = Math.max(stats.maxHeldMs, held);
        if (held > 2 * HEADERS_TIMEOUT_MS + 2000) stats.heldTooLong++;
        open();
      }
    });
  };
  for (let i = 0; i < count; i++) open();
  return {
    stats,
    stop: () => {
      stopped = true;
      for (const s of sockets) s.destroy();
    },
  };
}

export async function runHostile({ slowloris: slowCount = 500, loginFlood = 100_000, concurrency = 64 } = {}) {
  const d = await startDaemon({
    identities: { legit: { password: PW, permissions: ['rest.assets'], passwordChangeNeeded: false }, admin: { password: 'Admin-pw-123', permissions: ['kura.admin'], passwordChangeNeeded: false } },
    assets: { demo: { 'driver.pid': 'sim', channels: { t: { type: 'READ', 'value.type': 'DOUBLE', simulation: 'sine' } } } },
  });
  const port = d.port;
  const legitAgent = agent(1, '127.0.0.3');
  const auth = await loginHeaders(port, 'legit', PW, legitAgent);
  await sampleLatency(port, auth, legitAgent, { count: 100 }); // warm-up
  const rssBefore = d.rss();
  const before = await sampleLatency(port, auth, legitAgent, { count: 300 });

  // The attack: slowloris for as long as the flood lasts (at least 2.5 header timeouts).
  const t0 = Date.now();
  const minEnd = t0 + 2.5 * HEADERS_TIMEOUT_MS;
  const slow = slowloris(port, slowCount);
  let rssPeak = rssBefore;
  const flood = { sent: 0, status: new Map(), wrong200: 0, c5xx: 0, hangs: 0 };
  const floodAgent = agent(concurrency);
  const r = rng(42);
  let next = 0;
  let floodDone = false;
  const failures = [];
  const worker = async () => {
    while (next < loginFlood) {
      const i = next++;
      const distributed = r.chance(0.1);
      const username = r.chance(0.5) ? 'legit' : r.chance(0.5) ? 'admin' : `user${r.int(1e9)}`;
      const body = JSON.stringify({ username, password: `wrong-${i}` });
      // A tenth comes from many source addresses (loopback is a /8), each unthrottled at first.
      const ag = distributed ? new (await import('node:http')).Agent({ keepAlive: false, localAddress: `127.${1 + r.int(250)}.${r.int(256)}.${1 + r.int(250)}` }) : floodAgent;
      const res = await send(port, { method: 'POST', path: '/services/session/v1/login/password', headers: { 'content-type': 'application/json' }, body }, ag, 30_000);
      flood.sent++;
      const key = res.status <= 0 ? `conn:${res.error}` : String(res.status);
      flood.status.set(key, (flood.status.get(key) ?? 0) + 1);
      if (res.status === 200) {
        flood.wrong200++;
        if (failures.length < 5) failures.push({ kind: 'wrong password accepted', request: body, detail: res.body });
      } else if (res.status >= 500) {
        flood.c5xx++;
        if (failures.length < 5) failures.push({ kind: '5xx', request: body, detail: `${res.status} ${res.body}` });
      } else if (res.status === -1) flood.hangs++;
      if (i % 5000 === 0) rssPeak = Math.max(rssPeak, d.rss());
      if (i % 20000 === 0 && i > 0) process.stderr.write(`  hostile: ${i}/${loginFlood} login attempts, ${slow.stats.opened} slowloris sockets opened, rss ${(d.rss() / 1048576).toFixed(1)} MB\n`);
    }
  };
  const floodP = Promise.all(Array.from({ length: concurrency }, worker)).then(() => (floodDone = true));
  const during = await sampleLatency(port, auth, legitAgent, { until: () => floodDone && Date.now() >= minEnd });
  await floodP;
  const attackSeconds = (Date.now() - t0) / 1000;
  rssPeak = Math.max(rssPeak, d.rss());
  slow.stop();
  floodAgent.destroy();
  await sleep(1000);

  // After the attack: the right password works again within the throttle bound, from a new address.
  const fresh = agent(1, '127.0.0.4');
  let loginAfter = 'failed';
  for (let i = 0; i < 20; i++) {
    try {
      await loginHeaders(port, 'legit', PW, fresh);
      loginAfter = `ok after ${i} retries`;
      break;
    } catch {
      await sleep(500);
    }
  }
  fresh.destroy();
  const rssAfter = d.rss();
  const alive = d.alive();
  legitAgent.destroy();
  await d.stop();

  const p = (a, q) => percentile(a, q).toFixed(1);
  const ratio = percentile(during.lat, 99) / percentile(before.lat, 99);
  const failuresCount = flood.c5xx + flood.wrong200 + flood.hangs + slow.stats.heldTooLong + d.crashes + (loginAfter === 'failed' ? 1 : 0) + during.errors;
  if (loginAfter === 'failed') failures.push({ kind: 'lockout', request: 'legit login after the attack', detail: 'the right password did not work within 10 s' });
  return {
    row: { part: '2 hostile clients', cases: flood.sent + slow.stats.opened, failures: failuresCount, http5xx: flood.c5xx, crashes: d.crashes, lostBytes: 0, rssBefore, rssAfter, rssPeak },
    notes: [
      `attack lasted ${attackSeconds.toFixed(0)} s: ${flood.sent} login attempts (${(flood.sent / attackSeconds).toFixed(0)}/s, 10% from random 127.x.y.z addresses), ${slowCount} slowloris sockets held open (${slow.stats.opened} opened in all)`,
      `legitimate client (session, GET /services/assets/demo/_read): before p50 ${p(before.lat, 50)} ms p99 ${p(before.lat, 99)} ms (${before.lat.length} requests); during p50 ${p(during.lat, 50)} ms p99 ${p(during.lat, 99)} ms (${during.lat.length} requests, ${during.errors} errors); p99 ratio ${ratio.toFixed(1)}×`,
      `login flood answers: ${[...flood.status].map(([k, v]) => `${k}:${v}`).join(' ')}; wrong password accepted: ${flood.wrong200}`,
      `slowloris: dropped by the daemon ${slow.stats.droppedByDaemon} times (answers ${[...slow.stats.answers].map(([k, v]) => `${k}:${v}`).join(' ')}), longest hold ${(slow.stats.maxHeldMs / 1000).toFixed(1)} s (header timeout ${HEADERS_TIMEOUT_MS / 1000} s), held too long: ${slow.stats.heldTooLong}`,
      `right password after the attack: ${loginAfter}; daemon ${alive ? 'alive' : 'DEAD'}`,
    ],
    failures,
  };
}
