// Part: requests naming too many channels (docs/rest-api.md "assets": 1000 channels per request). A `rest.assets` user posts `_read`
// bodies listing 99,000 channel names and `_write` bodies with 20,000 entries (each under the 1 MiB
// body limit), several at once, while a legitimate client keeps reading an asset. Every attack must
// be answered 400 naming the limit (`Too many channels in one request: N, the limit is 1000`), the
// legitimate reads must keep succeeding, and the daemon must stay up with bounded memory.
// Reported: answers by status, the legitimate client's errors, RSS before/peak/after, crashes.

import { startDaemon } from './lib/daemon.mjs';
import { agent, loginHeaders, send, sleep } from './lib/http.mjs';

const PW = 'Channel-flood-pw-1';
const LIMIT_TEXT = /^Too many channels in one request: \d+, the limit is 1000$/;

export async function runChannelFlood({ requests = 200, concurrency = 4 } = {}) {
  const d = await startDaemon({
    identities: {
      attacker: { password: PW, permissions: ['rest.assets'], passwordChangeNeeded: false },
      legit: { password: PW, permissions: ['rest.assets'], passwordChangeNeeded: false },
    },
    assets: { demo: { 'driver.pid': 'sim', channels: { t: { type: 'READ_WRITE', 'value.type': 'INTEGER', simulation: 'memory' } } } },
  });
  const port = d.port;
  const legitAgent = agent(1, '127.0.0.5');
  const floodAgent = agent(concurrency, '127.0.0.6');
  try {
    const legit = await loginHeaders(port, 'legit', PW, legitAgent);
    const attacker = await loginHeaders(port, 'attacker', PW, floodAgent);
    const json = { ...attacker, 'content-type': 'application/json' };
    const readBody = JSON.stringify({ channels: Array.from({ length: 99_000 }, (_, i) => `c${i}`) });
    const writeBody = JSON.stringify({ channels: Array.from({ length: 20_000 }, (_, i) => ({ name: `c${i}`, type: 'INTEGER', value: '1' })) });
    const rssBefore = d.rss();
    let rssPeak = rssBefore;
    const answers = new Map();
    const failures = [];
    let c5xx = 0;
    let next = 0;
    let done = false;
    const worker = async () => {
      while (next < requests) {
        const i = next++;
        const write = i % 2 === 1;
        const r = await send(port, { method: 'POST', path: `/services/assets/demo/${write ? '_write' : '_read'}`, headers: json, body: write ? writeBody : readBody }, floodAgent, 60_000);
        answers.set(r.status, (answers.get(r.status) ?? 0) + 1);
        if (r.status >= 500) c5xx++;
        if (r.status !== 400 || !LIMIT_TEXT.test(r.body ?? '')) {
          if (failures.length < 10) failures.push({ kind: 'answer', request: write ? '_write 20,000 entries' : '_read 99,000 names', detail: `${r.status} ${String(r.body ?? r.error).slice(0, 120)}` });
        }
        if (i % 10 === 0) rssPeak = Math.max(rssPeak, d.rss());
      }
    };
    const legitStats = { ok: 0, errors: 0 };
    const legitLoop = (async () => {
      while (!done) {
        const r = await send(port, { method: 'GET', path: '/services/assets/demo/_read', headers: legit }, legitAgent, 30_000);
        if (r.status === 200) legitStats.ok++;
        else legitStats.errors++;
        await sleep(20);
      }
    })();
    const t0 = Date.now();
    await Promise.all(Array.from({ length: concurrency }, worker));
    done = true;
    await legitLoop;
    const seconds = (Date.now() - t0) / 1000;
    rssPeak = Math.max(rssPeak, d.rss());
    const after = await send(port, { method: 'POST', path: '/services/assets/demo/_write', headers: { ...legit, 'content-type': 'application/json' }, body: JSON.stringify({ channels: [{ name: 't', type: 'INTEGER', value: '7' }] }) }, legitAgent);
    const writeAfter = after.status === 200 && /"channelFlag":"SUCCESS"/.test(after.body ?? '');
    if (!writeAfter) failures.push({ kind: 'service', request: 'legitimate _write after the flood', detail: `${after.status} ${String(after.body ?? after.error).slice(0, 120)}` });
    if (legitStats.errors > 0) failures.push({ kind: 'service', request: 'legitimate reads during the flood', detail: `${legitStats.errors} failed` });
    const rssAfter = d.rss();
    const alive = d.alive();
    const wrong = [...answers].filter(([s]) => s !== 400).reduce((n, [, v]) => n + v, 0);
    return {
      row: { part: '8 channel flood', cases: requests, failures: wrong + legitStats.errors + (writeAfter ? 0 : 1) + d.crashes, http5xx: c5xx, crashes: d.crashes, lostBytes: 0, rssBefore, rssAfter, rssPeak },
      notes: [
        `${requests} requests in ${seconds.toFixed(1)} s (${concurrency} at once), half _read with 99,000 names (${(readBody.length / 1024).toFixed(0)} KB), half _write with 20,000 entries (${(writeBody.length / 1024).toFixed(0)} KB); answers ${[...answers].map(([k, v]) => `${k}:${v}`).join(' ')}`,
        `legitimate client: ${legitStats.ok} reads answered, ${legitStats.errors} errors; a write after the flood ${writeAfter ? 'succeeded' : 'FAILED'}; daemon ${alive ? 'alive' : 'DEAD'}`,
      ],
      failures,
    };
  } finally {
    legitAgent.destroy();
    floodAgent.destroy();
    if (d.alive()) await d.stop();
  }
}
