// A broker outage against the daemon as the image runs it (docs/mqtt.md "Telemetry"): a 1,000-channel
// asset published as json (about 75 KB a message) while the broker is down, for an hour's worth of
// messages at a poll a second (time compressed: a poll every 10 ms), inside the systemd unit's
// `MemoryMax` (a memory cgroup where the test can make one, else the daemon's RSS against it), with
// the launcher's node flags and environment. Guaranteed: the daemon stays up within the bound, the
// outbox's files within `outbox.max.bytes`, the oldest messages dropped first and counted in
// system/v1 status; after a hard kill the daemon comes up again within the bound (the log is read in
// chunks); once the broker is back, what was kept is delivered, oldest first, without a gap.

import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BUNDLE, ROOT, startDaemon, type Daemon } from '../helpers/daemon.js';
import { deviceSettings } from '../helpers/launch.mjs';
import { makeMemoryCgroup, processRss, unitMemoryMax } from '../helpers/memory-cgroup.mjs';
import { mosquittoSkip, startMosquitto } from '../helpers/mosquitto.js';
import { until } from '../helpers/mqtt-fixture.js';
import { MqttClient } from '../../src/mqtt/client.js';
import { silentLogger } from '../../src/log.js';

const CHANNELS = 1000;
/** An hour of a poll a second. */
const MESSAGES = Number(process.env.OUTAGE_MESSAGES ?? 3600);
const MiB = 1024 * 1024;
/** `outbox.max.bytes` by default (docs/configuration.md "mqtt"). */
const OUTBOX_MAX_BYTES = 16 * MiB;

t.setTimeout(600_000);

t.test('an hour-long broker outage of a 1,000-channel json asset, within MemoryMax', mosquittoSkip(), async (t) => {
  const limit = unitMemoryMax(ROOT);
  t.equal(limit, 160 * MiB, 'the unit says MemoryMax=160M');
  const cg = makeMemoryCgroup(`gatewayd-outage-${process.pid}`, limit);
  // RSS can always be read on Linux; the cgroup makes the bound the kernel's, as on the device.
  if (!cg && !fs.existsSync(`/proc/${process.pid}/status`)) throw new Error('neither a memory cgroup nor /proc: the memory bound cannot be checked');
  t.comment(cg ? `daemon in memory cgroup v${cg.version} ${cg.dir}, limit ${limit} bytes` : 'no memory cgroup can be made here: measuring RSS against the bound');

  const broker = await startMosquitto();
  t.teardown(() => broker.close());
  // The receiving end: a persistent QoS 1 session, so what the device sends as the broker comes
  // back is kept for it while it reconnects.
  const got: { n: number; ts: number; channels: number }[] = [];
  const sub = new MqttClient({ url: broker.url, clientId: 'outage-sub', keepAlive: 30, clean: false, reconnectMin: 100, reconnectMax: 500, log: silentLogger });
  sub.on('message', (_topic: string, payload: Buffer) => {
    const el = JSON.parse(payload.toString());
    got.push({ n: Number(el.channels[0].value), ts: el.channels[0].timestamp, channels: el.channels.length });
  });
  sub.start();
  await until(() => sub.isConnected, 5000, 'subscriber');
  await sub.subscribe('acct/gw-out/assets/#', 1);
  t.teardown(() => sub.end());

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-outage-'));
  const channels = Object.fromEntries(Array.from({ length: CHANNELS }, (_, i) => [`c${i}`, { type: 'READ', 'value.type': 'INTEGER', simulation: 'counter' }]));
  const config = {
    rest: { 'auth.basic.enabled': true, 'login.throttle.max.delay': 0 },
    identities: { admin: { password: 'Adm1n-Secret!', passwordChangeNeeded: false, permissions: ['kura.admin'] } },
    assets: { big: { 'driver.pid': 'sim', 'poll.interval': 10, channels } },
    mqtt: { enabled: true, 'broker-url': broker.url, 'client-id': 'gw-out', 'topic.context.account-name': 'acct', 'payload.encoding': 'json', 'keep-alive': 5 },
  };
  const device = deviceSettings();
  const command = [...(cg?.wrap ?? []), process.execPath, ...device.flags, BUNDLE];
  let daemon: Daemon | undefined;
  t.teardown(async () => {
    if (daemon && daemon.proc.exitCode === null && daemon.proc.signalCode === null) {
      daemon.proc.kill('SIGKILL');
      await daemon.exited;
    }
    cg?.remove();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const start = async () => (daemon = await startDaemon(t, config, { dir, command, env: device.env }));
  const admin = { authorization: `Basic ${Buffer.from('admin:Adm1n-Secret!').toString('base64')}` };
  const outbox = async (d: Daemon) => (await d.request('/services/system/v1/status', { headers: admin })).json().mqtt;
  const outboxDir = path.join(dir, 'data', 'mqtt');
  // A segment listed may be gone before it is measured (the outbox drops its oldest): it counts 0.
  const dirBytes = () => fs.readdirSync(outboxDir).reduce((n, f) => n + (fs.statSync(path.join(outboxDir, f), { throwIfNoEntry: false })?.size ?? 0), 0);

  /** Peak memory seen while `d` runs: the cgroup's anonymous memory, sampled, and the process's VmHWM. */
  const watchMemory = (d: Daemon) => {
    const peak = { cgroup: 0, rss: 0 };
    const sample = () => {
      peak.cgroup = Math.max(peak.cgroup, cg?.rss() ?? 0);
      peak.rss = Math.max(peak.rss, processRss(d.proc.pid!).peak);
    };
    const timer = setInterval(sample, 100);
    return {
      peak,
      stop: () => {
        sample();
        clearInterval(timer);
      },
    };
  };
  const mb = (b: number) => `${(b / MiB).toFixed(1)} MB`;

  // 1. Connected, then the broker goes away.
  const d1 = await start();
  const mem1 = watchMemory(d1);
  await d1.waitForLog(/msg="mqtt connected"/, 30_000);
  await until(() => got.length >= 3, 30_000, 'telemetry while connected');
  t.equal(got[0]!.channels, CHANNELS, 'each message carries every channel');
  await broker.stop();
  const lastBefore = got.at(-1)!.n;

  // 2. The outage: an hour of messages.
  let status = await outbox(d1);
  let worstDisk = 0;
  const t0 = Date.now();
  while (status.outboxPending + status.outboxDropped < MESSAGES) {
    if (d1.proc.exitCode !== null || d1.proc.signalCode !== null) break;
    await new Promise((r) => setTimeout(r, 500));
    status = await outbox(d1).catch(() => status);
    worstDisk = Math.max(worstDisk, status.outboxBytes, dirBytes());
    if (Date.now() - t0 > 400_000) break;
  }
  const outageMs = Date.now() - t0;
  mem1.stop();
  t.ok(d1.proc.exitCode === null && d1.proc.signalCode === null, `the daemon is up after ${status.outboxPending + status.outboxDropped} messages in ${(outageMs / 1000).toFixed(0)} s offline`);
  t.equal(cg?.oomKills() ?? 0, 0, 'no process killed by the OOM killer');
  t.ok(mem1.peak.rss < limit && mem1.peak.cgroup < limit, `peak memory ${mb(mem1.peak.rss)} RSS, ${mb(mem1.peak.cgroup)} in the cgroup (bound ${mb(limit)})`);
  t.ok(status.outboxPending + status.outboxDropped >= MESSAGES, 'an hour of messages produced');
  t.ok(status.outboxDropped > 0, `${status.outboxDropped} dropped, ${status.outboxPending} kept (status outboxDropped)`);
  t.equal(status.outboxMaxBytes, OUTBOX_MAX_BYTES);
  t.ok(worstDisk <= OUTBOX_MAX_BYTES, `the outbox's files took at most ${mb(worstDisk)} (outbox.max.bytes ${mb(OUTBOX_MAX_BYTES)})`);

  // 3. Killed as the OOM killer or a power cut would; it must come up again, within the bound. From
  // now on the asset polls at its real pace, a second.
  d1.proc.kill('SIGKILL');
  await d1.exited;
  const killedAt = Date.now();
  config.assets.big['poll.interval'] = 1000;
  const d2 = await start();
  const mem2 = watchMemory(d2);
  const waiting = await d2.waitForLog(/messages waiting from before the restart/);
  const kept = Number(/pending=(\d+)/.exec(waiting)![1]);
  t.ok(kept > 100, `${kept} messages read back at start`);

  // 4. The broker returns: what was kept arrives, oldest first, then the new messages. Those
  // produced until the connection is up may push the oldest kept ones out (the disk bound is full).
  await broker.start();
  const life2 = () => got.filter((g) => g.ts > killedAt);
  await until(() => life2().length >= 3, 120_000, 'the kept messages delivered, then new ones');
  await new Promise((r) => setTimeout(r, 500));
  mem2.stop();
  const dropped2 = (await outbox(d2)).outboxDropped;
  // Up to 32 messages were in flight when the broker stopped (src/mqtt/service.ts WINDOW); it may
  // have taken some of them and delivers them now: those are not what the outbox kept.
  const inFlight = lastBefore + 32;
  const first = new Map<number, number>();
  got.forEach((g, i) => g.ts < killedAt && g.n > inFlight && !first.has(g.n) && first.set(g.n, i));
  const ns = [...first.keys()];
  t.ok(ns.length > 100 && ns.every((n, i) => i === 0 || n === ns[i - 1]! + 1), `delivered ${ns.length}: ${ns[0]}…${ns.at(-1)}, no gap`);
  t.ok([...first.values()].every((at, i, a) => i === 0 || at > a[i - 1]!), 'in the order they were produced');
  t.ok(ns[0]! > inFlight + 1, `the oldest went first: ${ns[0]! - lastBefore - 1} messages after the last delivered before the outage were dropped`);
  t.equal(ns.length, kept - dropped2, `every message kept was delivered, but the ${dropped2} oldest that new ones pushed out before the broker was back`);
  t.ok(got.indexOf(life2()[0]!) > Math.max(...first.values()), 'the new messages after the old ones');
  t.ok(d2.proc.exitCode === null, 'the restarted daemon is up');
  t.equal(cg?.oomKills() ?? 0, 0, 'no OOM kill');
  t.ok(mem2.peak.rss < limit && mem2.peak.cgroup < limit, `peak memory after the restart ${mb(mem2.peak.rss)} RSS, ${mb(mem2.peak.cgroup)} in the cgroup`);
  t.comment(`outage of ${(outageMs / 1000).toFixed(0)} s: ${status.outboxPending + status.outboxDropped} messages, ${status.outboxDropped} dropped, ${kept} kept, ${ns.length} delivered in order; peak RSS ${mb(mem1.peak.rss)} / ${mb(mem2.peak.rss)} (before / after the restart); outbox files at most ${mb(worstDisk)}`);
  t.equal(await d2.stop(), 0);
});
