// Parts: attacks on the HTTP edge and the login path (docs/configuration.md "Limits against hostile clients", docs/rest-api.md
// "Password checks"), each against its
// own daemon run with the image launcher's flags, each while a legitimate client is served:
//   slow-bodies   16 anonymous logins sending their 16,000-byte body one byte per packet (half as
//                 1-byte chunks), reconnecting when cut, plus 700 connections that never send a
//                 request (beyond the 512-connection bound); a legitimate user logs in every 250 ms.
//   long-names    3000 failed logins with distinct 15 KB user names from 300 addresses; a legitimate
//                 user logs in every 250 ms.
//   hash-flood    wrong passwords for made-up names from 64 addresses (6 connections each) for 30 s;
//                 a legitimate user logs in again and again with the right password, and a prober
//                 from fresh addresses times wrong logins for unknown names, identities with a
//                 password (scrypt, Kura's SHA-256) and without one: same answers, medians within 2×.
//   session-flood 5 identities log in 100 times each into a store of 100 sessions; the
//                 administrator's session, opened first, must keep working throughout.
// A failure is: a legitimate request not answered 200, a crash, an attack answered 5xx, a slow body
// not cut by the body deadline, a kind of name that answers or times differently under the flood. Figures (not pass/fail): attack counts and answers, RSS.

import { createHash } from 'node:crypto';
import net from 'node:net';
import { startDaemon } from './lib/daemon.mjs';
import { agent, loginHeaders, send, sleep } from './lib/http.mjs';

const PW = 'Hostile-auth-pw-1';
const LOGIN = '/services/session/v1/login/password';
const BODY_TIMEOUT_MS = 20_000; // http body.timeout default (docs/configuration.md)
const count = (m, k) => m.set(k, (m.get(k) ?? 0) + 1);
const fmt = (m) => [...m].map(([k, v]) => `${k}:${v}`).join(' ');

/** Logs in with the right password every `everyMs` until `until()`; returns answers by status. */
async function legitLogins(port, user, until, everyMs = 250, addr = '127.0.0.9') {
  const ag = agent(1, addr);
  const answers = new Map();
  while (!until()) {
    const r = await send(port, { method: 'POST', path: LOGIN, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: user, password: PW }) }, ag, 60_000);
    count(answers, r.status > 0 ? r.status : `conn:${r.error}`);
    await sleep(everyMs);
  }
  ag.destroy();
  return answers;
}

async function withDaemon(config, part, attack) {
  const d = await startDaemon(config);
  const rssBefore = d.rss();
  let rssPeak = rssBefore;
  const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, d.rss())), 250);
  const failures = [];
  try {
    const res = await attack(d, failures);
    clearInterval(sampler);
    rssPeak = Math.max(rssPeak, d.rss());
    const legitBad = [...res.legit].filter(([k]) => k !== 200).reduce((n, [, v]) => n + v, 0);
    const legitOk = res.legit.get(200) ?? 0;
    if (legitBad > 0) failures.push({ kind: 'legitimate client', request: res.legitWhat, detail: `answers ${fmt(res.legit)}` });
    if (legitOk === 0) failures.push({ kind: 'legitimate client', request: res.legitWhat, detail: 'never served' });
    const alive = d.alive();
    const rssAfter = d.rss();
    await d.stop();
    return {
      row: { part, cases: res.cases, failures: failures.length + d.crashes, http5xx: res.c5xx ?? 0, crashes: d.crashes, lostBytes: 0, rssBefore, rssAfter, rssPeak },
      notes: [...res.notes, `legitimate client (${res.legitWhat}): ${fmt(res.legit)}; daemon ${alive ? 'alive' : 'DEAD'}`],
      failures,
    };
  } finally {
    clearInterval(sampler);
  }
}

const identities = (names) => Object.fromEntries(names.map((n) => [n, { password: PW, permissions: n === 'admin' ? ['kura.admin'] : ['rest.assets'], passwordChangeNeeded: false }]));

/** Item 1: one-byte-per-packet login bodies and never-used connections. */
export function runSlowBodies({ seconds = 30, slow = 16, idle = 700 } = {}) {
  return withDaemon({ identities: identities(['legit']) }, '9 slow bodies', async (d, failures) => {
    const port = d.port;
    let stop = false;
    const st = { opened: 0, answers: new Map(), maxHeldMs: 0, bytes: 0, idleOpened: 0 };
    const sockets = new Set();
    const openSlow = (i) => {
      if (stop) return;
      const s = net.connect({ port, host: '127.0.0.1', localAddress: '127.0.0.11' });
      sockets.add(s);
      st.opened++;
      s.setNoDelay(true);
      const chunked = i % 2 === 1;
      const t0 = Date.now();
      let got = '';
      let timer;
      s.on('connect', () => {
        s.write(`POST ${LOGIN} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${chunked ? 'Transfer-Encoding: chunked' : 'Content-Length: 16000'}\r\n\r\n`);
        let n = 0;
        timer = setInterval(() => n++ < 16_000 && (st.bytes++, s.write(chunked ? '1\r\na\r\n' : 'a')), 1);
      });
      s.on('data', (c) => (got += c.toString('latin1')));
      s.on('error', () => {});
      s.on('close', () => {
        clearInterval(timer);
        sockets.delete(s);
        if (stop) return;
        const held = Date.now() - t0;
        st.maxHeldMs = Math.max(st.maxHeldMs, held);
        count(st.answers, /^HTTP\/1\.1 (\d{3})/.exec(got)?.[1] ?? 'closed');
        if (held > BODY_TIMEOUT_MS + 10_000 && failures.length < 5) failures.push({ kind: 'slow body not cut', request: `login body one byte per packet${chunked ? ' (chunked)' : ''}`, detail: `held ${held} ms` });
        openSlow(i);
      });
    };
    const openIdle = () => {
      if (stop) return;
      const s = net.connect({ port, host: '127.0.0.1', localAddress: '127.0.0.12' });
      sockets.add(s);
      st.idleOpened++;
      s.on('error', () => {});
      s.on('close', () => {
        sockets.delete(s);
        setTimeout(openIdle, 1000);
      });
    };
    for (let i = 0; i < slow; i++) openSlow(i);
    for (let i = 0; i < idle; i++) openIdle();
    const end = Date.now() + seconds * 1000;
    const legit = await legitLogins(port, 'legit', () => Date.now() > end);
    stop = true;
    for (const s of sockets) s.destroy();
    const c5xx = [...st.answers].filter(([k]) => Number(k) >= 500).reduce((n, [, v]) => n + v, 0);
    return {
      cases: st.opened + st.idleOpened,
      c5xx,
      legit,
      legitWhat: 'password login every 250 ms',
      notes: [
        `${seconds} s: ${slow} slow login bodies at a time (${st.opened} connections, ${st.bytes} body bytes sent), answered ${fmt(st.answers)}, longest held ${(st.maxHeldMs / 1000).toFixed(1)} s (body deadline ${BODY_TIMEOUT_MS / 1000} s); ${idle} idle connections at a time (${st.idleOpened} opened) against the 512-connection bound`,
      ],
    };
  });
}

/** Item 4: failed logins with distinct 15 KB names from 300 addresses. */
export function runLongNames({ attempts = 3000, concurrency = 32 } = {}) {
  return withDaemon({ identities: identities(['legit']) }, '10 long user names', async (d, failures) => {
    const port = d.port;
    const big = 'n'.repeat(15_000);
    const answers = new Map();
    const agents = Array.from({ length: 300 }, (_, a) => agent(1, `127.13.${Math.floor(a / 250)}.${(a % 250) + 1}`));
    let next = 0;
    let done = false;
    const worker = async () => {
      while (next < attempts) {
        const i = next++;
        const r = await send(port, { method: 'POST', path: LOGIN, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: `${big}${i}`, password: 'wrong' }) }, agents[i % 300], 60_000);
        count(answers, r.status > 0 ? r.status : `conn:${r.error}`);
        // A connection the daemon dropped at its connection bound is fine; an answer other than 401 is not.
        if (r.status !== 401 && (r.status > 0 || r.status === -1) && failures.length < 5) failures.push({ kind: 'answer', request: '15 KB user name, wrong password', detail: `${r.status} ${r.error ?? ''}` });
      }
    };
    const t0 = Date.now();
    const floodP = Promise.all(Array.from({ length: concurrency }, worker)).then(() => (done = true));
    const legit = await legitLogins(port, 'legit', () => done);
    await floodP;
    for (const a of agents) a.destroy();
    return {
      cases: attempts,
      c5xx: [...answers].filter(([k]) => Number(k) >= 500).reduce((n, [, v]) => n + v, 0),
      legit,
      legitWhat: 'password login every 250 ms',
      notes: [`${attempts} failed logins with distinct 15 KB names from 300 addresses in ${((Date.now() - t0) / 1000).toFixed(1)} s: ${fmt(answers)}`],
    };
  });
}

const PROBE_KINDS = ['unknown', 'password', 'no password', 'Kura hash'];
const probeName = (kind, r) => ({ unknown: `ghost${r}`, password: `holder${r}`, 'no password': `certonly${r}`, 'Kura hash': `legacy${r}` })[kind];
/** The identities name probes look for: one of each kind per round, each probed once. */
function probedIdentities(rounds) {
  const out = {};
  for (let r = 0; r < rounds; r++) {
    out[`holder${r}`] = { password: `Probed-pw-${r}`, permissions: ['rest.assets'], passwordChangeNeeded: false };
    out[`certonly${r}`] = { permissions: ['rest.assets'], passwordChangeNeeded: false };
    out[`legacy${r}`] = { passwordHash: createHash('sha256').update(`Probed-pw-${r}`).digest('base64'), permissions: ['rest.assets'], passwordChangeNeeded: false };
  }
  return out;
}
const median = (a) => {
  const s = [...a].sort((x, y) => x - y);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/**
 * Which names exist, probed under the flood (docs/rest-api.md "Password checks"): a wrong login for
 * a name of each kind per round, sent together in an order rotated each round, each from a fresh address and each
 * name once (under both throttles). Every answer must be the same 401, and the kinds' median times
 * within 2× of one another (where the names leaked, they differed by one or two orders of magnitude).
 */
async function probeNames(port, rounds, failures) {
  const times = new Map(PROBE_KINDS.map((k) => [k, []]));
  const shapes = new Set();
  let n = 0;
  const probe = async (kind, r) => {
    const ag = agent(1, `127.16.${n >> 8}.${(n & 255) + 1}`);
    n++;
    const t0 = process.hrtime.bigint();
    const res = await send(port, { method: 'POST', path: LOGIN, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: probeName(kind, r), password: 'wrong' }) }, ag, 60_000);
    times.get(kind).push(Number(process.hrtime.bigint() - t0) / 1e6);
    ag.destroy();
    shapes.add(`${res.status} ${res.body ?? res.error}`);
  };
  // A round's probes go out together, one kind after the other: each kind meets the same queue.
  for (let r = 0; r < rounds; r++) await Promise.all(PROBE_KINDS.map((_, i) => probe(PROBE_KINDS[(i + r) % PROBE_KINDS.length], r)));
  const medians = PROBE_KINDS.map((k) => median(times.get(k)));
  const ratio = Math.max(...medians) / Math.max(0.001, Math.min(...medians));
  const shown = PROBE_KINDS.map((k, i) => `${k} ${medians[i].toFixed(0)} ms`).join(', ');
  if (shapes.size !== 1 || ![...shapes][0].startsWith('401 ')) failures.push({ kind: 'name probe', request: 'wrong logins for names of each kind', detail: `answers differ: ${[...shapes].join(' | ')}` });
  if (ratio > 2) failures.push({ kind: 'name probe', request: 'wrong logins for names of each kind', detail: `median times ${shown} (ratio ${ratio.toFixed(2)}, bound 2)` });
  return `name probes under the flood (${rounds} per kind, fresh addresses): answers ${[...shapes].join(' | ')}; medians ${shown}; ratio ${ratio.toFixed(2)}`;
}

/**
 * Item 6: wrong passwords from 64 addresses; the right one must keep working, and which names exist
 * must not show in the answers to probes.
 */
export function runHashFlood({ seconds = 30, addresses = 64, perAddress = 6, probeRounds = 8 } = {}) {
  return withDaemon({ identities: { ...identities(['legit']), ...probedIdentities(probeRounds) } }, '11 wrong-password flood', async (d, failures) => {
    const port = d.port;
    const answers = new Map();
    let stop = false;
    let sent = 0;
    const worker = async (a, w) => {
      const ag = agent(1, `127.14.0.${a + 1}`);
      for (let i = 0; !stop; i++) {
        const r = await send(port, { method: 'POST', path: LOGIN, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: `nobody-${a}-${w}-${i}`, password: 'wrong' }) }, ag, 60_000);
        sent++;
        count(answers, r.status > 0 ? r.status : `conn:${r.error}`);
      }
      ag.destroy();
    };
    const workers = Array.from({ length: addresses * perAddress }, (_, i) => worker(i % addresses, Math.floor(i / addresses)));
    await sleep(2000);
    const t0 = Date.now();
    const end = t0 + seconds * 1000;
    let probed;
    const probes = probeNames(port, probeRounds, failures).then((note) => (probed = note));
    // The flood lasts until both the legitimate client's time and the probes are over.
    const legit = await legitLogins(port, 'legit', () => Date.now() > end && probed !== undefined, 100);
    await probes;
    const lasted = (Date.now() - t0) / 1000;
    stop = true;
    await Promise.all(workers);
    return {
      cases: sent,
      c5xx: [...answers].filter(([k]) => Number(k) >= 500).reduce((n, [, v]) => n + v, 0),
      legit,
      legitWhat: 'right-password login, again and again, from another address',
      notes: [`${lasted.toFixed(0)} s: ${sent} wrong-password logins for made-up names from ${addresses} addresses (${perAddress} connections each): ${fmt(answers)}`, probed],
    };
  });
}

/** Item 7: many identities log in again and again; the administrator's session stays. */
export function runSessionFlood({ identitiesCount = 5, loginsEach = 100, maxSessions = 100 } = {}) {
  const flooders = Array.from({ length: identitiesCount }, (_, i) => `op${i}`);
  return withDaemon({ identities: identities(['admin', ...flooders]), rest: { 'session.max.count': maxSessions }, assets: { demo: { 'driver.pid': 'sim', channels: { t: { type: 'READ', 'value.type': 'DOUBLE', simulation: 'sine' } } } } }, '12 session flood', async (d) => {
    const port = d.port;
    const adminAgent = agent(1, '127.0.0.15');
    const admin = await loginHeaders(port, 'admin', PW, adminAgent);
    const answers = new Map();
    let done = false;
    const floodP = Promise.all(
      flooders.map(async (u, k) => {
        const ag = agent(1, `127.15.0.${k + 1}`);
        for (let i = 0; i < loginsEach; i++) {
          const r = await send(port, { method: 'POST', path: LOGIN, headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: u, password: PW }) }, ag, 60_000);
          count(answers, r.status > 0 ? r.status : `conn:${r.error}`);
        }
        ag.destroy();
      }),
    ).then(() => (done = true));
    const legit = new Map();
    while (!done) {
      const r = await send(port, { method: 'GET', path: '/services/assets/demo/_read', headers: admin }, adminAgent, 30_000);
      count(legit, r.status > 0 ? r.status : `conn:${r.error}`);
      await sleep(100);
    }
    await floodP;
    const r = await send(port, { method: 'GET', path: '/services/session/v1/currentIdentity', headers: admin }, adminAgent);
    count(legit, r.status);
    adminAgent.destroy();
    return {
      cases: identitiesCount * loginsEach,
      c5xx: [...answers].filter(([k]) => Number(k) >= 500).reduce((n, [, v]) => n + v, 0),
      legit,
      legitWhat: "administrator's session (opened first): asset reads during the flood, currentIdentity after",
      notes: [`${identitiesCount} identities × ${loginsEach} logins into a store of ${maxSessions} sessions (32 per identity): ${fmt(answers)}`],
    };
  });
}
