// An MQTT message larger than the packet bound (docs/mqtt.md "ASSET-V1"; README "Robustness", part 6): detected from its fixed header,
// skipped while it streams (never buffered), acknowledged so a persistent session does not deliver
// it again, logged once. Unit test of the stream splitter, then the real daemon and a real
// Mosquitto with a 96 MB message: the daemon's peak RSS stays far below the message size, it keeps
// answering requests, and after restarts it does not receive the message again (no crash loop).

import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFile, spawn } from 'node:child_process';
import mqttPacket from 'mqtt-packet';
import { PacketGate } from '../../src/mqtt/client.js';
import { startDaemon, type Daemon } from '../helpers/daemon.js';
import { startMosquitto, mosquittoSkip } from '../helpers/mosquitto.js';

const gen = (p: mqttPacket.Packet) => mqttPacket.generate(p, { protocolVersion: 4 });

t.test('PacketGate splits at packet boundaries and skips an over-size PUBLISH', async (t) => {
  const small = gen({ cmd: 'publish', topic: 'a/b', payload: Buffer.from('hello'), qos: 1, messageId: 7, dup: false, retain: false });
  const big = gen({ cmd: 'publish', topic: 'x/y', payload: Buffer.alloc(300_000, 1), qos: 1, messageId: 9, dup: false, retain: false });
  const big2 = gen({ cmd: 'publish', topic: 'q2', payload: Buffer.alloc(200_000, 2), qos: 2, messageId: 11, dup: false, retain: false });
  const ping = gen({ cmd: 'pingresp' });
  const stream = Buffer.concat([small, big, ping, big2, small]);
  for (const step of [1, 7, 1000, stream.length]) {
    const passed: Buffer[] = [];
    const skipped: { topic: string; qos: number; messageId?: number; bytes: number }[] = [];
    const fatal: string[] = [];
    const gate = new PacketGate(100_000, (b) => passed.push(Buffer.from(b)), (p) => skipped.push(p), (w) => fatal.push(w));
    for (let i = 0; i < stream.length; i += step) gate.push(stream.subarray(i, i + step));
    t.same(Buffer.concat(passed), Buffer.concat([small, ping, small]), `chunks of ${step}: only the small packets pass, whole`);
    t.same(skipped, [
      { topic: 'x/y', qos: 1, messageId: 9, bytes: big.length - 4 },
      { topic: 'q2', qos: 2, messageId: 11, bytes: big2.length - 4 },
    ], `chunks of ${step}: both big PUBLISHes reported once with topic and id`);
    t.same(fatal, []);
  }
  const fatal: string[] = [];
  const gate = new PacketGate(100, () => {}, () => t.fail('not a publish'), (w) => fatal.push(w));
  gate.push(gen({ cmd: 'suback', messageId: 1, granted: Array(200).fill(1) }));
  t.match(fatal, [/packet type 9 .* exceeds the limit of 100/], 'an over-size SUBACK is fatal');
  const bad: string[] = [];
  new PacketGate(100, () => {}, () => {}, (w) => bad.push(w)).push(Buffer.from([0x30, 0xff, 0xff, 0xff, 0xff, 0x01]));
  t.same(bad, ['malformed remaining length']);
});

/** Peak resident set of a process (VmHWM), bytes. */
function peakRss(pid: number): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m![1]) * 1024;
}

function pub(port: number, topic: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) =>
    execFile('/usr/bin/mosquitto_pub', ['-h', '127.0.0.1', '-p', String(port), '-t', topic, '-q', '1', ...args], { timeout: 120_000 }, (err) => (err ? reject(err) : resolve())),
  );
}

/** A bare-JSON ASSET-V1 request answered by the daemon (published until the reply shows). */
function request(port: number, id: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const sub = spawn('/usr/bin/mosquitto_sub', ['-h', '127.0.0.1', '-p', String(port), '-t', `$EDC/account/me/ASSET-V1/REPLY/${id}`, '-C', '1', '-W', '30']);
    let out = '';
    sub.stdout.on('data', (d) => (out += d));
    sub.on('error', reject);
    const send = () => execFile('/usr/bin/mosquitto_pub', ['-h', '127.0.0.1', '-p', String(port), '-t', `$EDC/account/gatewayd/ASSET-V1/GET/assets/me/${id}`, '-m', '[]']);
    const again = setInterval(send, 1000);
    setTimeout(send, 300);
    sub.on('close', () => {
      clearInterval(again);
      resolve(out.trim());
    });
  });
}

const SKIPPED = /over the size limit skipped and acknowledged/;

t.test('a 96 MB message against the real daemon and Mosquitto, persistent session', mosquittoSkip(), async (t) => {
  const broker = await startMosquitto();
  t.teardown(() => broker.close());
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-oversize-'));
  t.teardown(() => fs.rmSync(tmp, { recursive: true, force: true }));
  const big = path.join(tmp, 'big.bin');
  const fd = fs.openSync(big, 'w');
  const block = Buffer.alloc(1024 * 1024, 0x5b);
  for (let i = 0; i < 96; i++) fs.writeSync(fd, block);
  fs.closeSync(fd);

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-oversize-d-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const config = {
    assets: { demo: { 'driver.pid': 'sim', channels: { v: { type: 'READ', 'value.type': 'INTEGER', simulation: 'constant', initial: 1 } } } },
    mqtt: { enabled: true, 'broker-url': broker.url, 'client-id': 'gatewayd', 'clean-session': false, 'payload.encoding': 'json' },
  };
  const start = async (): Promise<Daemon> => {
    const d = await startDaemon(t, config, { dir });
    await d.waitForLog(/msg="mqtt connected"/, 30_000);
    return d;
  };

  let d = await start();
  t.match(await request(broker.port, 'r1'), /demo/, 'answers before');
  const before = peakRss(d.proc.pid!);
  await pub(broker.port, '$EDC/account/gatewayd/ASSET-V1/EXEC/read/me/big1', ['-f', big]);
  await d.waitForLog(SKIPPED, 120_000);
  const grown = peakRss(d.proc.pid!) - before;
  t.ok(grown < 24 * 1024 * 1024, `peak RSS grew by ${(grown / 1048576).toFixed(1)} MB for a 96 MB message (bounded, not buffered)`);
  t.match(await request(broker.port, 'r2'), /demo/, 'still answers after the skipped message');
  t.equal(d.logs.filter((l) => SKIPPED.test(l)).length, 1, 'logged once');
  t.equal(await d.stop(), 0);

  // Offline: the persistent session queues the next big message for the daemon.
  await pub(broker.port, '$EDC/account/gatewayd/ASSET-V1/EXEC/read/me/big2', ['-f', big]);
  d = await start();
  await d.waitForLog(SKIPPED, 120_000);
  t.match(await request(broker.port, 'r3'), /demo/, 'answers after receiving the queued big message');
  t.equal(await d.stop(), 0);

  // Acknowledged: the broker does not deliver it again.
  d = await start();
  t.match(await request(broker.port, 'r4'), /demo/, 'answers after a restart');
  await new Promise((r) => setTimeout(r, 1000));
  t.equal(d.logs.filter((l) => SKIPPED.test(l)).length, 0, 'no redelivery after the restart');
  t.equal(await d.stop(), 0);
});
