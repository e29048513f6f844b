// The Node-RED section (bench/README.md "Node-RED"): gatewayd against Node-RED with node-red-contrib-modbus on the same work. One
// pymodbus device (bench/load/ticking_device.py: 50 INT32 channels in 100 holding registers, new
// values every 50 ms, requests counted), polled every 100 ms, every value published to the same
// Mosquitto, where a subscriber in this process counts the polls that arrive. Three contenders, one
// at a time, interleaved per repetition: gatewayd through the image's launcher, Node-RED's typical
// flow (a read node per channel) and its best-case flow (one block read, split in a function node).
// Node-RED is installed by bench/peers.sh (make bench), never a dependency of the product.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { startMosquitto } from '../../test/helpers/mosquitto.js';
import { freePort } from '../../test/helpers/ports.js';
import { startGatewayd } from '../lib/gatewayd.js';
import { BenchMqtt } from '../lib/mqtt.js';
import { CHANNELS, noderedFlow, noderedSettings, parseTelemetry, PollCounter, REGISTERS, TOPICS, UNIT, channelName, type Flow, type Telemetry } from '../lib/nodered.js';
import { OUT, rssKiB, sleep, threadCpuMs } from '../lib/proc.js';
import { TICK_MS, TickingDevice as Device } from '../lib/ticking-device.js';
import type { Results } from '../lib/results.js';
import { withScope, type Scope } from '../lib/scope.js';
import type { Options } from '../lib/setup.js';
import { median } from '../lib/stats.js';
import { deviceSettings } from '../../test/helpers/launch.mjs';

const POLL_MS = 100;
const OUTAGE_MS = 5000;
/** When the steady window starts, seconds after the contender's first values arrived. */
const STEADY_S = 30;
const ACCOUNT = 'account';
const GW_CLIENT = 'gatewayd';
const ASSET = 'plc';
const GW_TOPIC = TOPICS.gatewayd(ACCOUNT, GW_CLIENT, ASSET);
/** Where bench/peers.sh installs Node-RED (outside the product's node_modules). */
export const PEERS = path.join(OUT, 'peers', 'node_modules');
const RED_JS = path.join(PEERS, 'node-red', 'red.js');

type Who = Telemetry['who'];
const WHO: Who[] = ['gatewayd', 'best', 'typical'];
const LABEL: Record<Who, string> = { gatewayd: 'gatewayd', best: "Node-RED's best flow (one block read + split)", typical: "Node-RED's typical flow (one read node per channel)" };

function peerVersion(name: string): string {
  try {
    return JSON.parse(fs.readFileSync(path.join(PEERS, name, 'package.json'), 'utf8')).version;
  } catch {
    return 'missing';
  }
}

/** The subscriber: every contender's telemetry, counted per contender, with wake-ups for waiters. */
class Subscriber {
  counters: Record<Who, PollCounter> = { gatewayd: new PollCounter(), best: new PollCounter(), typical: new PollCounter() };
  private watchers = new Set<(who: Who, t: Telemetry, at: number) => void>();

  constructor(client: BenchMqtt) {
    client.onMessage = (topic, payload) => {
      const t = parseTelemetry(topic, payload, GW_TOPIC);
      if (!t) return;
      const at = Date.now();
      this.counters[t.who].add(t);
      for (const w of this.watchers) w(t.who, t, at);
    };
  }

  /** Resolves with the arrival time of the first message of `who` that `pred` accepts. */
  waitFor(who: Who, pred: (t: Telemetry) => boolean, timeoutMs: number): Promise<number | undefined> {
    return new Promise((resolve) => {
      const done = (v: number | undefined) => {
        clearTimeout(timer);
        this.watchers.delete(w);
        resolve(v);
      };
      const w = (w: Who, t: Telemetry, at: number) => {
        if (w === who && pred(t)) done(at);
      };
      const timer = setTimeout(() => done(undefined), timeoutMs);
      this.watchers.add(w);
    });
  }
}

interface Contender {
  pid: number;
  logs: () => string;
  stop(): Promise<void>;
}

function gatewaydConfig(modbusPort: number, mqttUrl: string, http: number): Record<string, any> {
  const channels: Record<string, object> = {};
  for (let c = 0; c < CHANNELS; c++) {
    channels[channelName(c)] = { type: 'READ', 'value.type': 'INTEGER', 'unit.id': UNIT, 'primary.table': 'HOLDING_REGISTERS', 'memory.address': 1 + 2 * c, 'data.type': 'INT32' };
  }
  return {
    'log.level': 'warn',
    http: { 'http.ports': [http], 'https.ports': [], 'https.client.auth.ports': [], 'bind.address': '127.0.0.1' },
    drivers: { mb: { factory: 'modbus', 'access.type': 'TCP', 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': modbusPort } },
    assets: { [ASSET]: { 'driver.pid': 'mb', 'poll.interval': POLL_MS, channels } },
    mqtt: { enabled: true, 'broker-url': mqttUrl, 'client-id': GW_CLIENT, 'topic.context.account-name': ACCOUNT, 'payload.encoding': 'json' },
  };
}

async function startContender(scope: Scope, who: Who, dev: Device, mqttPort: number): Promise<Contender> {
  if (who === 'gatewayd') {
    const gw = await startGatewayd(scope, gatewaydConfig(dev.port, `mqtt://127.0.0.1:${mqttPort}`, await freePort()), { launcher: true });
    return { pid: gw.pid, logs: () => gw.logs.slice(-10).join('\n'), stop: gw.stop };
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-bench-nodered-'));
  scope.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const flowFile = path.join(dir, 'flows.json');
  fs.writeFileSync(flowFile, JSON.stringify(noderedFlow(who as Flow, { modbusPort: dev.port, mqttPort, pollMs: POLL_MS, qos: 1, clientId: `nodered-${who}` })));
  fs.writeFileSync(path.join(dir, 'settings.js'), noderedSettings(dir, flowFile));
  // As `node-red` runs it: node red.js, no extra node flags.
  const proc = spawn(process.execPath, [RED_JS, '--settings', path.join(dir, 'settings.js'), '--userDir', dir], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: string[] = [];
  for (const s of [proc.stdout!, proc.stderr!]) {
    readline.createInterface({ input: s }).on('line', (l) => {
      lines.push(l);
      if (lines.length > 200) lines.shift();
    });
  }
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const stop = async () => {
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    proc.kill('SIGTERM');
    const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  };
  scope.teardown(stop);
  // Should the bench process end without its teardown, Node-RED must not outlive it.
  const onExit = () => proc.kill('SIGKILL');
  process.once('exit', onExit);
  scope.teardown(() => process.removeListener('exit', onExit));
  return { pid: proc.pid!, logs: () => lines.slice(-10).join('\n'), stop };
}

interface Window {
  cpuMsPerPoll: number;
  requestsPerPoll: number;
  /** Polls completed ÷ polls due at one per POLL_MS. */
  achieved: number;
  rssMiB: number;
  /** Values published per poll (the same work: 50 on every side). */
  valuesPerPoll: number;
}

/** Starts `who`, checks that its values arrive, measures a window, then (optionally) an outage. */
async function runOne(who: Who, dev: Device, sub: Subscriber, mqttPort: number, windowMs: number, steadyMs: number, outage: boolean): Promise<{ young: Window; steady: Window; recoveryMs?: number }> {
  return withScope(async (scope) => {
    const c = await startContender(scope, who, dev, mqttPort);
    const counter = (sub.counters[who] = new PollCounter());
    // A flow that publishes nothing (or wrong values) is a defect, not a figure: wait for polls.
    const needed = who === 'typical' ? 3 * CHANNELS : 3;
    const deadline = Date.now() + 60_000;
    while (counter.polls(who) < 1 || counter.values < needed) {
      if (Date.now() > deadline) throw new Error(`${LABEL[who]}: no values at the broker within 60 s (${counter.messages} messages, ${counter.bad} bad); its log:\n${c.logs()}`);
      await sleep(100);
    }
    const started = Date.now();
    await sleep(1500); // warm-up: connections
    // Each end of a window is taken just after a message arrived: with one request per poll the
    // next is ~100 ms away, so the device's count and the subscriber's polls cover the same polls
    // (taken at a random instant, a request whose values are still on their way would count in one
    // and not the other).
    const at = async () => {
      await sub.waitFor(who, () => true, 5000);
      const x = { cpu: threadCpuMs(c.pid), polls: counter.polls(who), values: counter.values, t: Date.now() };
      return { ...x, requests: await dev.count() };
    };
    const measure = async (): Promise<Window> => {
      const a = await at();
      await sleep(windowMs);
      const b = await at();
      const rssMiB = rssKiB(c.pid) / 1024;
      if (counter.bad > 0) throw new Error(`${LABEL[who]}: ${counter.bad} value(s) at the broker were not the device's`);
      const polls = b.polls - a.polls;
      const due = (b.t - a.t) / POLL_MS;
      return { cpuMsPerPoll: (b.cpu - a.cpu) / polls, requestsPerPoll: (b.requests - a.requests) / polls, achieved: polls / due, rssMiB, valuesPerPoll: (b.values - a.values) / polls };
    };
    // Two windows in the same life: just after start (V8 has compiled little yet) and in the steady
    // state a device spends its months in (the same warm-up for every contender).
    const young = await measure();
    await sleep(Math.max(0, started + steadyMs - Date.now()));
    const steady = await measure();
    const w: { young: Window; steady: Window; recoveryMs?: number } = { young, steady };
    if (outage) {
      await dev.stop();
      await sleep(OUTAGE_MS);
      const fresh = dev.seqAt(Date.now()); // any value of this tick or later was read from the new process
      await dev.start();
      const back = Date.now();
      const arrived = await sub.waitFor(who, (t) => t.values.some((s) => s.seq >= fresh), 30_000);
      w.recoveryMs = arrived === undefined ? NaN : arrived - back;
    }
    await c.stop();
    return w;
  });
}

/**
 * What this machine charges for one wake-up from a 100 ms sleep: an idle node process (the
 * launcher's flags) whose only work is a 100 ms setInterval, CPU of all threads over the window ÷
 * wakes. Both sides poll on a 100 ms timer and pay it at least once per poll; on a VM it can be a
 * large part of a poll (about 1.2 ms measured on one, where the same empty timer costs ~50 µs at a
 * 1 ms period), and it is no work of either side's.
 */
async function timerWakeMs(windowMs: number): Promise<number> {
  return withScope(async (scope) => {
    const device = deviceSettings();
    const proc = spawn(process.execPath, [...device.flags, '-e', `setInterval(() => {}, ${POLL_MS})`], { stdio: 'ignore', env: { ...process.env, ...device.env } });
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    scope.teardown(async () => {
      proc.kill('SIGKILL');
      await exited;
    });
    await sleep(1500);
    const a = { cpu: threadCpuMs(proc.pid!), t: Date.now() };
    await sleep(windowMs);
    const b = { cpu: threadCpuMs(proc.pid!), t: Date.now() };
    return (b.cpu - a.cpu) / ((b.t - a.t) / POLL_MS);
  });
}

export async function noderedSection(res: Results, opt: Options): Promise<void> {
  if (!fs.existsSync(RED_JS) || peerVersion('node-red-contrib-modbus') === 'missing') {
    throw new Error(`Node-RED is not installed under ${PEERS}: make bench installs it (bench/peers.sh)`);
  }
  const windowMs = (opt.quick ? 2 : 5) * 1000;
  const steadyMs = (opt.quick ? 5 : STEADY_S) * 1000;
  const outageReps = Math.min(opt.quick ? 1 : 2, opt.repeats, 3);
  await withScope(async (scope) => {
    const broker = await startMosquitto();
    scope.teardown(() => broker.close());
    const dev = new Device(await freePort(), Date.now());
    scope.teardown(() => dev.stop());
    await dev.start();
    const client = await BenchMqtt.connect(broker.port, 'bench-subscriber');
    scope.teardown(() => client.close());
    const sub = new Subscriber(client);
    await client.subscribe(`${ACCOUNT}/${GW_CLIENT}/assets/#`);
    await client.subscribe(`${TOPICS.best}/#`);

    const runs: Record<Who, { young: Window; steady: Window; recoveryMs?: number }[]> = { gatewayd: [], best: [], typical: [] };
    const wakes: number[] = [];
    // Each life is ~40 s (two windows 30 s apart): at most 3 repetitions keep the section ~7 min.
    for (let rep = 0; rep < Math.min(opt.repeats, 3); rep++) {
      for (const who of WHO) {
        const w = await runOne(who, dev, sub, broker.port, windowMs, steadyMs, rep < outageReps);
        runs[who].push(w);
        const line = (x: Window) => `${x.cpuMsPerPoll.toFixed(3)} CPU ms/poll, ${x.requestsPerPoll.toFixed(2)} requests/poll, ${(x.achieved * 100).toFixed(0)} % of polls, ${x.valuesPerPoll.toFixed(1)} values/poll, RSS ${x.rssMiB.toFixed(1)} MiB`;
        process.stderr.write(`  ${who}: young ${line(w.young)}; steady ${line(w.steady)}${w.recoveryMs !== undefined ? `, recovery ${w.recoveryMs.toFixed(0)} ms` : ''}\n`);
      }
      wakes.push(await timerWakeMs(windowMs));
      process.stderr.write(`  an idle node process's ${POLL_MS} ms timer: ${wakes[rep].toFixed(3)} CPU ms per wake\n`);
    }
    const pick = (who: Who, k: keyof Window, phase: 'young' | 'steady' = 'steady') => runs[who].map((w) => w[phase][k]);
    const recovery = (who: Who) => runs[who].map((w) => w.recoveryMs).filter((x): x is number => x !== undefined);
    const versions = `Node-RED ${peerVersion('node-red')}, node-red-contrib-modbus ${peerVersion('node-red-contrib-modbus')}, on the same node ${process.version}`;
    const how = `${CHANNELS} INT32 channels / ${REGISTERS} holding registers of one pymodbus device, polled every ${POLL_MS} ms, new values every ${TICK_MS} ms, every value published (QoS 1) to the same Mosquitto; windows of ${windowMs / 1000} s; the steady window starts ${steadyMs / 1000} s after the first values (the young one 1.5 s after)`;
    for (const base of ['best', 'typical'] as const) {
      const goal = base === 'best';
      res.add('Node-RED', `cpu-per-poll-vs-${base}`, 'Modbus poll → MQTT telemetry: CPU per poll (all threads), steady state', 'ms', pick('gatewayd', 'cpuMsPerPoll'), LABEL[base], pick(base, 'cpuMsPerPoll'),
        goal ? { op: '<=', value: 0.5, text: "≤ 0.5× Node-RED's best flow" } : undefined,
        goal ? `${how}. CPU from the scheduler's counters of every thread over the window ÷ polls whose values reached the subscriber. gatewayd runs through its launcher (rootfs/usr/bin/gatewayd), json encoding; ${versions}` : undefined);
      // The same less one timer wake per poll on each side, the wake measured in the same repetition.
      const net = (who: Who) => runs[who].map((w, i) => w.steady.cpuMsPerPoll - wakes[i]);
      res.add('Node-RED', `cpu-per-poll-net-vs-${base}`, `Modbus poll → MQTT telemetry: CPU per poll less one idle ${POLL_MS} ms timer wake, steady state`, 'ms', net('gatewayd'), LABEL[base], net(base), undefined,
        goal ? `each repetition's CPU per poll less what an idle node process with the launcher's flags and only a ${POLL_MS} ms setInterval spends per wake, measured after the contenders in the same repetition (median ${median(wakes).toFixed(3)} ms on this machine; every side polls on a ${POLL_MS} ms timer and pays at least that once per poll). On a virtual machine that wake can be much of a poll; this row shows the work of each side without it` : undefined);
      res.add('Node-RED', `cpu-per-poll-young-vs-${base}`, 'Modbus poll → MQTT telemetry: CPU per poll (all threads), first seconds after start', 'ms', pick('gatewayd', 'cpuMsPerPoll', 'young'), LABEL[base], pick(base, 'cpuMsPerPoll', 'young'), undefined,
        goal ? 'the window 1.5 s after the first values: much of either side still runs unoptimised (V8 compiles hot code after a while), so this is what a freshly started process costs' : undefined);
      res.add('Node-RED', `requests-per-poll-vs-${base}`, 'Modbus poll → MQTT telemetry: requests on the wire per poll', 'requests', pick('gatewayd', 'requestsPerPoll'), LABEL[base], pick(base, 'requestsPerPoll'),
        goal ? { op: '<=', value: 1, text: "≤ Node-RED's best flow" } : undefined, goal ? 'requests the device answered over the window ÷ polls that reached the subscriber' : undefined);
      res.add('Node-RED', `polls-achieved-vs-${base}`, `Modbus poll → MQTT telemetry: polls completed ÷ polls due (one per ${POLL_MS} ms)`, '', pick('gatewayd', 'achieved'), LABEL[base], pick(base, 'achieved'), undefined,
        base === 'typical'
          ? `against the typical flow: its read nodes each poll on their own (its polls are values at the subscriber ÷ ${CHANNELS}) and share the Modbus client's queue: one request at a time, ${CHANNELS} per poll, the default 1 ms apart`
          : `values published per poll (median): gatewayd ${median(pick('gatewayd', 'valuesPerPoll'))}, best flow ${median(pick('best', 'valuesPerPoll'))}`);
      res.add('Node-RED', `rss-vs-${base}`, 'Modbus poll → MQTT telemetry: RSS while polling', 'MiB', pick('gatewayd', 'rssMiB'), LABEL[base], pick(base, 'rssMiB'));
      res.add('Node-RED', `recovery-vs-${base}`, `Device gone for ${OUTAGE_MS / 1000} s: device back → first fresh value at the subscriber`, 'ms', recovery('gatewayd'), LABEL[base], recovery(base), undefined,
        base === 'best' ? `median of ${outageReps} outage(s) per contender; the device is killed and started again on the same port; each side with its default reconnect behaviour (node-red-contrib-modbus: reconnect after 2 s)` : undefined);
    }
  });
}
