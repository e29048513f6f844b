// Part: configuration requests at the documented channel bound (docs/configuration-v2.md "How large
// a configuration can grow"). A daemon with one Modbus asset of 12,000 channels (five properties
// each) under the launcher's heap bound gets, from a `rest.configuration` user, several at once:
// property changes, snapshots written, read back and rolled back to, every configuration with its
// definitions (about 40 MB, read to the end, or left unread by a client that stalls), and creates
// of 2,000 more channels past the bound. Every change and read must succeed, every create must be
// refused 413 naming the bound, a legitimate client must keep reading the asset's status, and the
// daemon must not abort. Reported: answers by kind, reply sizes, RSS before/peak/after.

import http from 'node:http';
import { startDaemon } from './lib/daemon.mjs';
import { send, sleep } from './lib/http.mjs';

const PW = 'Config-size-pw-12';
const C = '/services/configuration/v2';
const AUTH = { authorization: `Basic ${Buffer.from(`admin:${PW}`).toString('base64')}`, 'content-type': 'application/json' };
const channel = (i) => ({ type: 'READ', 'value.type': 'INTEGER', 'unit.id': 1, 'primary.table': 'HOLDING_REGISTERS', 'memory.address': i + 1 });

/** A large answer read to its end (or left unread, `stall`): status, bytes, whether it ends as JSON should. */
function readLarge(port, path, body, stallMs = 0) {
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, path, method: 'POST', headers: AUTH, agent: false }, (res) => {
      let bytes = 0;
      let tail = '';
      res.on('data', (c) => {
        bytes += c.length;
        tail = (tail + c.toString('latin1')).slice(-16);
      });
      res.on('end', () => resolve({ status: res.statusCode, bytes, complete: tail.endsWith('}]}') }));
      if (stallMs > 0) {
        res.pause();
        setTimeout(() => (req.destroy(), resolve({ status: res.statusCode, bytes, stalled: true })), stallMs);
      }
    });
    req.setTimeout(180_000, () => req.destroy());
    req.on('error', (err) => resolve({ status: 0, error: err.message }));
    req.end(JSON.stringify(body));
  });
}

export async function runConfigSize({ requests = 30, channels = 12_000, concurrency = 3 } = {}) {
  const assetChannels = {};
  for (let i = 0; i < channels; i++) assetChannels[`ch${i}`] = channel(i);
  const d = await startDaemon(
    {
      identities: { admin: { password: PW, permissions: ['kura.admin'], passwordChangeNeeded: false } },
      rest: { 'login.throttle.max.delay': 0 },
      // Nothing listens on port 1: every poll fails at once, as against a device that went away.
      drivers: { plc: { factory: 'modbus', 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': 1 } },
      assets: { big: { 'driver.pid': 'plc', 'poll.interval': 2000, channels: assetChannels } },
    },
    { env: {} },
  );
  const port = d.port;
  // A connection per request: a kept-alive one idle through a long answer elsewhere may be closed by
  // the server just as the next request goes out on it (a client race, not the daemon's answer).
  const ag = new http.Agent({ keepAlive: false });
  const v2 = (method, p, body) => send(port, { method, path: `${C}/${p}`, headers: AUTH, body: body === undefined ? undefined : JSON.stringify(body) }, ag, 180_000);
  const more = { 'driver.pid': { type: 'STRING', value: 'plc' } };
  for (let i = 0; i < 2000; i++) for (const [k, v] of Object.entries(channel(i))) more[`x${i}#${['type', 'value.type'].includes(k) ? '+' : ''}${k}`] = { type: typeof v === 'number' ? 'INTEGER' : 'STRING', value: v };
  const KINDS = ['update', 'write', 'byId', 'configurations', 'create-more', 'update', 'stall', 'rollback', 'byPid', 'create-more'];
  const answers = {};
  const failures = [];
  let c5xx = 0;
  let largest = 0;
  const rssBefore = d.rss();
  let rssPeak = rssBefore;
  const fail = (request, detail) => failures.length < 10 && failures.push({ kind: 'answer', request, detail });
  const cases = {
    update: async (i) => {
      const r = await v2('PUT', 'configurableComponents/configurations/_update', { configs: [{ pid: 'big', properties: { 'poll.interval': { type: 'INTEGER', value: 2000 + i } } }] });
      return r.status === 200 ? undefined : `${r.status} ${String(r.body ?? r.error).slice(0, 160)}`;
    },
    write: async () => {
      const r = await v2('POST', 'snapshots/_write', {});
      return r.status === 200 ? undefined : `${r.status} ${String(r.body ?? r.error).slice(0, 160)}`;
    },
    byId: async () => {
      const list = await v2('GET', 'snapshots');
      if (list.status !== 200) return `snapshots: ${list.status} ${String(list.body ?? list.error).slice(0, 160)}`;
      const r = await readLarge(port, `${C}/snapshots/byId`, { id: JSON.parse(list.body).ids.at(-1) });
      largest = Math.max(largest, r.bytes ?? 0);
      return r.status === 200 && r.complete ? undefined : JSON.stringify(r);
    },
    rollback: async () => {
      const r = await v2('POST', 'snapshots/_rollback', {});
      return r.status === 200 ? undefined : `${r.status} ${String(r.body ?? r.error).slice(0, 160)}`;
    },
    configurations: async () => {
      const r = await new Promise((resolve) => {
        http.get({ host: '127.0.0.1', port, path: `${C}/configurableComponents/configurations`, headers: AUTH, agent: false }, (res) => {
          let bytes = 0;
          let tail = '';
          res.on('data', (c) => ((bytes += c.length), (tail = (tail + c.toString('latin1')).slice(-16))));
          res.on('end', () => resolve({ status: res.statusCode, bytes, complete: tail.endsWith('}]}') }));
        }).on('error', (err) => resolve({ status: 0, error: err.message }));
      });
      largest = Math.max(largest, r.bytes ?? 0);
      return r.status === 200 && r.complete ? undefined : JSON.stringify(r);
    },
    byPid: async () => {
      const r = await readLarge(port, `${C}/configurableComponents/configurations/byPid`, { pids: ['big'] });
      largest = Math.max(largest, r.bytes ?? 0);
      return r.status === 200 && r.complete ? undefined : JSON.stringify(r);
    },
    stall: async () => {
      const r = await readLarge(port, `${C}/configurableComponents/configurations/byPid`, { pids: ['big'] }, 3000);
      return r.status === 200 ? undefined : JSON.stringify(r);
    },
    'create-more': async () => {
      const r = await v2('POST', 'factoryComponents', { configs: [{ factoryPid: 'org.eclipse.kura.wire.WireAsset', pid: 'more', properties: more }] });
      return r.status === 413 && /^\{"message":"Configuration too large for this daemon's heap bound/.test(r.body ?? '') ? undefined : `${r.status} ${String(r.body ?? r.error).slice(0, 160)}`;
    },
  };
  let next = 0;
  let done = false;
  const worker = async () => {
    while (next < requests) {
      const i = next++;
      const kind = KINDS[i % KINDS.length];
      const why = await cases[kind](i);
      answers[kind] = answers[kind] ?? { ok: 0, failed: 0 };
      answers[kind][why ? 'failed' : 'ok']++;
      if (why) fail(kind, why);
      if (/^5\d\d /.test(why ?? '')) c5xx++;
      rssPeak = Math.max(rssPeak, d.rss());
      if (!d.alive()) break;
    }
  };
  const legit = { ok: 0, errors: 0 };
  const legitLoop = (async () => {
    while (!done && d.alive()) {
      const r = await send(port, { method: 'GET', path: '/services/assets/big/_status', headers: AUTH }, ag, 30_000);
      if (r.status === 200) legit.ok++;
      else legit.errors++;
      rssPeak = Math.max(rssPeak, d.rss());
      await sleep(200);
    }
  })();
  const t0 = Date.now();
  try {
    await Promise.all(Array.from({ length: concurrency }, worker));
    done = true;
    await legitLoop;
    const seconds = (Date.now() - t0) / 1000;
    const after = d.alive() ? await cases.update(1) : 'daemon gone';
    if (after) failures.push({ kind: 'service', request: 'a change after the attack', detail: after });
    if (legit.errors > 0) failures.push({ kind: 'service', request: 'legitimate status reads', detail: `${legit.errors} failed` });
    const oom = d.errors.filter((l) => /heap out of memory|Reached heap limit/.test(l)).length + d.logs.filter((l) => /heap out of memory|Reached heap limit/.test(l)).length;
    const failed = Object.values(answers).reduce((n, a) => n + a.failed, 0);
    return {
      row: { part: '14 configuration size', cases: requests, failures: failed + legit.errors + (after ? 1 : 0) + d.crashes, http5xx: c5xx, crashes: d.crashes, lostBytes: 0, rssBefore, rssAfter: d.rss(), rssPeak },
      notes: [
        `${channels} Modbus channels; ${requests} requests in ${seconds.toFixed(0)} s (${concurrency} at once): ${Object.entries(answers).map(([k, a]) => `${k} ${a.ok} ok${a.failed ? `/${a.failed} FAILED` : ''}`).join(', ')}`,
        `largest answer read ${(largest / 1048576).toFixed(1)} MB; legitimate client ${legit.ok} status reads, ${legit.errors} errors; heap exhaustion lines ${oom}; daemon ${d.alive() ? 'alive' : 'DEAD'}`,
      ],
      failures,
    };
  } finally {
    done = true;
    ag.destroy();
    if (d.alive()) await d.stop();
  }
}
