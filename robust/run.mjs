#!/usr/bin/env node
// The robustness harness: `make robustness` (bounded, CI-sized) and `make soak` (bigger counts).
// Attacks a running gatewayd (the built dist/gatewayd.js) part by part and prints one table:
// cases tried, failures, 5xx answers, crashes, bytes of state lost, RSS before/after.
//
//   node robust/run.mjs [--soak] [--parts=fuzz,hostile,field,field-soak,broker,powercut,mqtt-hostile,trickle,channel-flood,slow-bodies,long-names,hash-flood,session-flood,outage,config-size,snapshot-flood] [--seed=N] [--scale=F]
//
// Exit status 1 when any part has a failure (or could not run under CI=true), 0 otherwise.
// A part whose capability or peer is missing is reported as NOT RUN with the reason, never faked.

import { cleanup, deviceSettings } from './lib/daemon.mjs';

const args = process.argv.slice(2);
const soak = args.includes('--soak');
const partsArg = args.find((a) => a.startsWith('--parts='))?.slice(8);
const seed = Number(args.find((a) => a.startsWith('--seed='))?.slice(7) ?? 9);

// Bounded run: about 5–8 minutes on 2 cores. Soak: the same attacks, longer.
// `--scale=0.05` shrinks every count, for a quick look while developing the harness.
const scale = Number(args.find((a) => a.startsWith('--scale='))?.slice(8) ?? 1);
const SIZES = Object.fromEntries(
  Object.entries(
    soak
      ? { fuzz: 1_000_000, loginFlood: 1_000_000, slowloris: 1000, brokerRestarts: 100, powerCuts: 300, bombs: 200, bigMessages: 10, channelFloods: 2000, attackSeconds: 300, longNames: 30_000, sessionLogins: 2000, queueFlood: 1600, outageMessages: 36_000, configRequests: 300, snapshotFlood: 4000 }
      : { fuzz: 100_000, loginFlood: 100_000, slowloris: 500, brokerRestarts: 20, powerCuts: 50, bombs: 20, bigMessages: 3, channelFloods: 200, attackSeconds: 30, longNames: 3000, sessionLogins: 100, queueFlood: 160, outageMessages: 3600, configRequests: 30, snapshotFlood: 400 },
  ).map(([k, v]) => [k, Math.max(1, Math.round(v * scale))]),
);

const PARTS = {
  fuzz: async () => (await import('./fuzz-http.mjs')).runFuzz({ count: SIZES.fuzz, seed }),
  hostile: async () => (await import('./hostile.mjs')).runHostile({ slowloris: SIZES.slowloris, loginFlood: SIZES.loginFlood }),
  field: async () => (await import('./field.mjs')).runField({}),
  // Devices polled for 30 minutes with faults injected (1 minute in the bounded run).
  'field-soak': async () => (await import('./field-soak.mjs')).runFieldSoak({ durationMs: Math.max(10_000, Math.round((soak ? 30 * 60_000 : 60_000) * scale)) }),
  broker: async () => (await import('./broker.mjs')).runBroker({ restarts: SIZES.brokerRestarts }),
  powercut: async () => (await import('./powercut.mjs')).runPowerCuts({ cuts: SIZES.powerCuts, seed }),
  'mqtt-hostile': async () => (await import('./mqtt-hostile.mjs')).runMqttHostile({ bombs: SIZES.bombs, bigMessages: SIZES.bigMessages }),
  trickle: async () => (await import('./trickle.mjs')).runTrickle({ floodRequests: SIZES.queueFlood }),
  'channel-flood': async () => (await import('./channel-flood.mjs')).runChannelFlood({ requests: SIZES.channelFloods }),
  // The HTTP edge and the login path (robust/hostile-auth.mjs): each attack against its own daemon while a
  // legitimate client is served.
  'slow-bodies': async () => (await import('./hostile-auth.mjs')).runSlowBodies({ seconds: SIZES.attackSeconds }),
  'long-names': async () => (await import('./hostile-auth.mjs')).runLongNames({ attempts: SIZES.longNames }),
  'hash-flood': async () => (await import('./hostile-auth.mjs')).runHashFlood({ seconds: SIZES.attackSeconds }),
  'session-flood': async () => (await import('./hostile-auth.mjs')).runSessionFlood({ loginsEach: SIZES.sessionLogins }),
  // An hour of a 1,000-channel asset's telemetry (ten under --soak) with the broker down, under MemoryMax.
  outage: async () => (await import('./outage.mjs')).runOutage({ messages: SIZES.outageMessages }),
  // Configuration requests at the documented channel bound (docs/configuration-v2.md "How large a configuration can grow").
  'config-size': async () => (await import('./config-size.mjs')).runConfigSize({ requests: SIZES.configRequests }),
  // Snapshots and uploads on a small data partition: its reserve (docs/installation.md "What dataDir holds").
  'snapshot-flood': async () => (await import('./snapshot-flood.mjs')).runSnapshotFlood({ requests: SIZES.snapshotFlood }),
};
const selected = partsArg ? partsArg.split(',') : Object.keys(PARTS);

const mb = (b) => (b ? `${(b / 1048576).toFixed(1)} MB` : '-');

function table(rows) {
  const head = ['part', 'cases', 'failures', '5xx', 'crashes', 'state lost', 'RSS before', 'RSS after (peak)'];
  const body = rows.map((r) =>
    r.notRun
      ? [r.part, 'NOT RUN', '-', '-', '-', '-', '-', '-']
      : [r.part, String(r.cases), String(r.failures), String(r.http5xx), String(r.crashes), `${r.lostBytes} B`, mb(r.rssBefore), `${mb(r.rssAfter)}${r.rssPeak ? ` (${mb(r.rssPeak)})` : ''}`],
  );
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  return [line(head), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...body.map(line)].join('\n');
}

process.on('SIGINT', () => {
  cleanup();
  process.exit(130);
});

const rows = [];
const started = Date.now();
let exitCode = 0;
const device = deviceSettings();
console.log(`gatewayd robustness run (${soak ? 'soak' : 'bounded'}), parts: ${selected.join(', ')}, seed ${seed}`);
console.log(`daemon: node ${process.version} ${device.flags.join(' ')} ${Object.entries(device.env).map(([k, v]) => `${k}=${v}`).join(' ')} (the image launcher's settings)`);
for (const name of selected) {
  const part = PARTS[name];
  if (!part) {
    console.error(`unknown part ${name}; parts are ${Object.keys(PARTS).join(', ')}`);
    process.exit(2);
  }
  const t0 = Date.now();
  console.log(`\n## ${name}`);
  try {
    const res = await part();
    rows.push(res.row);
    for (const n of res.notes ?? []) console.log(`  ${n}`);
    if (res.row.notRun) {
      console.log(`  NOT RUN: ${res.row.reason}`);
      if (process.env.CI === 'true') exitCode = 1;
    }
    for (const f of res.failures ?? []) console.log(`  FAILURE [${f.kind}] seed=${f.seed ?? '-'} ${f.request}\n      → ${f.detail}`);
    for (const l of res.internalErrors ?? []) console.log(`  daemon error line: ${l}`);
    if (res.row.failures > 0 || res.row.crashes > 0 || res.row.lostBytes > 0) exitCode = 1;
  } catch (err) {
    rows.push({ part: name, notRun: true, reason: err.message });
    console.log(`  HARNESS ERROR: ${err.stack ?? err}`);
    exitCode = 1;
  } finally {
    cleanup();
  }
  console.log(`  (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
}
console.log(`\n${table(rows)}`);
console.log(`\ntotal ${((Date.now() - started) / 1000).toFixed(0)} s; ${exitCode === 0 ? 'no failures' : 'FAILURES (see above)'}`);
process.exit(exitCode);
