// Part: a broker outage (docs/mqtt.md "Telemetry"). A 1,000-channel asset published as json (about
// 75 KB a message) while Mosquitto is down, polled every 10 ms so that an hour of a poll a second
// (3,600 messages; ten hours under `make soak`) passes in well under a minute; the daemon runs as the
// image runs it, inside a memory cgroup with the systemd unit's `MemoryMax` when one can be made
// (else its RSS is compared with it). Then a SIGKILL (the OOM killer's or a power cut's), a restart
// at the real pace of a poll a second, and the broker back: what the outbox kept must arrive in
// order, without a gap, after the messages from before the outage and before the new ones.
// A failure is: the daemon killed or over MemoryMax, the outbox's files over `outbox.max.bytes`,
// nothing dropped (the bound not reached), a restart that is not ready, a kept message not
// delivered or delivered out of order.

import fs from 'node:fs';
import path from 'node:path';
import { ROOT, freePort, startDaemon, tempDir } from './lib/daemon.mjs';
import { agent, send, sleep } from './lib/http.mjs';
import { broker as mosquitto, subscriber } from './broker.mjs';
import { makeMemoryCgroup, processRss, unitMemoryMax } from '../test/helpers/memory-cgroup.mjs';

const MOSQUITTO = '/usr/sbin/mosquitto';
const PW = 'Outage-admin-pw-1';
/** `outbox.max.bytes` by default (docs/configuration.md "mqtt"). */
const OUTBOX_MAX_BYTES = 16 * 1024 * 1024;
/** Messages the service has in flight at most (src/mqtt/service.ts): the broker may hold some of them. */
const IN_FLIGHT = 32;
const mb = (b) => `${(b / 1048576).toFixed(1)} MB`;

export async function runOutage({ messages = 3600, channels = 1000 } = {}) {
  if (!fs.existsSync(MOSQUITTO)) return { row: { part: '13 broker outage', notRun: true, reason: `${MOSQUITTO} is not installed` } };
  const limit = unitMemoryMax(ROOT);
  const cg = makeMemoryCgroup(`gatewayd-robust-outage-${process.pid}`, limit);
  const dir = tempDir('outage');
  const port = await freePort();
  const b = mosquitto(port, dir);
  await b.start();
  const got = [];
  const sub = subscriber(port, 'acct/#', (topic, payload) => {
    if (topic !== 'acct/gw/assets/big') return;
    try {
      const el = JSON.parse(payload.toString());
      got.push({ n: Number(el.channels[0].value), ts: el.channels[0].timestamp });
    } catch {
      /* a malformed message shows as a gap below */
    }
  });
  while (!sub.connected) await sleep(20);
  const config = {
    'log.level': 'info',
    rest: { 'auth.basic.enabled': true, 'login.throttle.max.delay': 0 },
    identities: { admin: { password: PW, passwordChangeNeeded: false, permissions: ['kura.admin'] } },
    assets: { big: { 'driver.pid': 'sim', 'poll.interval': 10, channels: Object.fromEntries(Array.from({ length: channels }, (_, i) => [`c${i}`, { type: 'READ', 'value.type': 'INTEGER', simulation: 'counter' }])) } },
    mqtt: { enabled: true, 'broker-url': `mqtt://127.0.0.1:${port}`, 'client-id': 'gw', 'topic.context.account-name': 'acct', 'payload.encoding': 'json', 'keep-alive': 5 },
  };
  const d = await startDaemon(config, { wrap: cg?.wrap });
  const ag = agent(2);
  const admin = { authorization: `Basic ${Buffer.from(`admin:${PW}`).toString('base64')}` };
  const status = async () => {
    const r = await send(d.port, { method: 'GET', path: '/services/system/v1/status', headers: admin }, ag);
    return r.status === 200 ? JSON.parse(r.body).mqtt : undefined;
  };
  const outboxDir = path.join(d.dataDir, 'mqtt');
  // A segment listed may be gone before it is measured (the outbox drops its oldest): it counts 0.
  const diskBytes = () => fs.readdirSync(outboxDir).reduce((n, f) => n + (fs.statSync(path.join(outboxDir, f), { throwIfNoEntry: false })?.size ?? 0), 0);
  const failures = [];
  const peak = { rss: 0, cgroup: 0, disk: 0 };
  const sample = () => {
    if (!d.alive()) return;
    peak.rss = Math.max(peak.rss, processRss(d.proc.pid).peak);
    peak.cgroup = Math.max(peak.cgroup, cg?.rss() ?? 0);
    peak.disk = Math.max(peak.disk, diskBytes());
  };
  const sampler = setInterval(sample, 100);
  const notes = [cg ? `daemon in a memory cgroup (v${cg.version}) limited to the unit's MemoryMax, ${mb(limit)}` : `no memory cgroup could be made: RSS compared with the unit's MemoryMax, ${mb(limit)}`];
  let produced = 0;
  let oom = 0;
  try {
    for (let w = 0; w < 300 && got.length < 3; w++) await sleep(100);
    if (got.length < 3) throw new Error('no telemetry before the outage');
    const rssBefore = d.rss();
    await b.kill('SIGKILL');
    const lastBefore = got.at(-1).n;
    const t0 = Date.now();
    let st = await status();
    while (d.alive() && (st?.outboxPending ?? 0) + (st?.outboxDropped ?? 0) < messages && Date.now() - t0 < 20 * 60_000) {
      await sleep(500);
      st = (await status()) ?? st;
    }
    sample();
    produced = (st?.outboxPending ?? 0) + (st?.outboxDropped ?? 0);
    const outageMs = Date.now() - t0;
    oom = cg?.oomKills() ?? 0;
    if (!d.alive() || oom > 0) failures.push({ kind: 'crash', request: `${produced} messages offline`, detail: oom ? `killed by the OOM killer (cgroup limit ${mb(limit)})` : d.errors.at(-1) });
    if (peak.rss >= limit || peak.cgroup >= limit) failures.push({ kind: 'memory', request: 'the outage', detail: `peak RSS ${mb(peak.rss)}, cgroup ${mb(peak.cgroup)} (MemoryMax ${mb(limit)})` });
    if (peak.disk > OUTBOX_MAX_BYTES) failures.push({ kind: 'disk', request: 'the outage', detail: `outbox files ${mb(peak.disk)} (outbox.max.bytes ${mb(OUTBOX_MAX_BYTES)})` });
    if (d.alive() && !(st?.outboxDropped > 0)) failures.push({ kind: 'bound', request: 'the outage', detail: `nothing dropped after ${produced} messages` });
    notes.push(`${produced} messages in ${(outageMs / 1000).toFixed(0)} s offline: ${st?.outboxDropped} dropped, ${st?.outboxPending} kept; peak RSS ${mb(peak.rss)}${cg ? `, cgroup ${mb(peak.cgroup)}` : ''}; outbox files at most ${mb(peak.disk)}`);

    // The kill, a restart polling at the real pace, the broker back.
    await d.kill('SIGKILL');
    const killedAt = Date.now();
    d.config.assets.big['poll.interval'] = 1000;
    fs.writeFileSync(d.configFile, JSON.stringify(d.config));
    const before = d.logs.length;
    const r0 = Date.now();
    try {
      await d.start();
    } catch (err) {
      failures.push({ kind: 'restart', request: 'start after the outage', detail: err.message.split('\n')[0] });
      throw err;
    }
    const restartMs = Date.now() - r0;
    const waiting = d.logs.slice(before).find((l) => /messages waiting from before the restart/.test(l));
    const kept = Number(/pending=(\d+)/.exec(waiting ?? '')?.[1] ?? 0);
    await b.start();
    for (let w = 0; w < 1200 && got.filter((g) => g.ts > killedAt).length < 3; w++) await sleep(100);
    await sleep(500);
    sample();
    const dropped2 = (await status())?.outboxDropped ?? 0;
    const first = new Map();
    got.forEach((g, i) => g.ts < killedAt && g.n > lastBefore + IN_FLIGHT && !first.has(g.n) && first.set(g.n, i));
    const ns = [...first.keys()];
    const at = [...first.values()];
    const newAt = got.findIndex((g) => g.ts > killedAt);
    if (ns.length !== kept - dropped2) failures.push({ kind: 'state lost', request: 'kept messages', detail: `${kept} read back at start, ${dropped2} dropped since, ${ns.length} delivered` });
    if (!ns.every((n, i) => i === 0 || n === ns[i - 1] + 1)) failures.push({ kind: 'gap', request: 'kept messages', detail: `delivered ${ns.slice(0, 10).join(',')}…` });
    if (!at.every((x, i) => i === 0 || x > at[i - 1]) || (newAt >= 0 && at.some((x) => x > newAt))) failures.push({ kind: 'order', request: 'kept messages', detail: 'not delivered oldest first, before the new ones' });
    oom = cg?.oomKills() ?? 0;
    const rssAfter = d.rss();
    notes.push(`restart ready in ${restartMs} ms with ${kept} messages read back; after the broker returned ${ns.length} of them delivered in order (${ns[0]}…${ns.at(-1)}), ${dropped2} pushed out by new ones first; peak RSS ${mb(peak.rss)} over the run`);
    return { row: { part: '13 broker outage', cases: produced, failures: failures.length, http5xx: 0, crashes: d.crashes + oom, lostBytes: 0, rssBefore, rssAfter, rssPeak: peak.rss }, notes, failures };
  } catch (err) {
    return { row: { part: '13 broker outage', cases: produced, failures: failures.length + 1, http5xx: 0, crashes: d.crashes + oom, lostBytes: 0, rssPeak: peak.rss }, notes, failures: [...failures, { kind: 'harness', request: 'outage', detail: err.message.split('\n')[0] }] };
  } finally {
    clearInterval(sampler);
    ag.destroy();
    if (d.alive()) await d.stop();
    sub.stop();
    await b.kill('SIGTERM');
    try {
      cg?.remove();
    } catch {
      /* a process still in it: the cgroup goes with the next reboot */
    }
  }
}
