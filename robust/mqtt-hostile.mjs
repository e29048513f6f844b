// Part: hostile MQTT input (docs/mqtt.md "ASSET-V1": the bounds of a message and a request), against gatewayd on a real Mosquitto with a
// persistent session (kura-protobuf, as a Kura cloud speaks it):
//   - gzip bombs: ~32 KB KuraPayloads inflating to ~1.9 M metrics, with request.id and requester;
//   - metric floods: plain protobuf with 100,000 metrics;
//   - a 512 KB EXEC/read body listing the same asset over and over;
//   - over-size messages (150 MB, QoS 1) on the device's request topic, then a daemon restart: the
//     broker must not deliver them again (a crash loop otherwise).
// A legitimate requester's GET/assets must be answered after every attack. Reported: the reply code
// each attack got (or "none"), daemon RSS before/peak/after, over-size messages received again after
// the restart (must be 0), crashes.

import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import mqttPacket from 'mqtt-packet';
import { freePort, startDaemon, tempDir, track, waitForPort } from './lib/daemon.mjs';
import { sleep } from './lib/http.mjs';

const MOSQUITTO = '/usr/sbin/mosquitto';

// ---- a minimal KuraPayload codec (kurapayload.proto: metric = field 5000, body = 5001) ----
const varint = (n) => {
  const out = [];
  while (n >= 0x80) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return Buffer.from(out);
};
const field = (no, bytes) => Buffer.concat([varint(no * 8 + 2), varint(bytes.length), bytes]);
const stringMetric = (name, value) => field(5000, Buffer.concat([field(1, Buffer.from(name)), Buffer.from([0x10, 5]), field(8, Buffer.from(value))]));
/** A metric with an empty name, INT32, no value: 8 bytes, the smallest there is. */
const TINY_METRIC = Buffer.from('c2b802040a001003', 'hex');

function request(id, body = '[]', extra = Buffer.alloc(0)) {
  return Buffer.concat([stringMetric('request.id', id), stringMetric('requester.client.id', 'robust-req'), extra, field(5001, Buffer.from(body))]);
}

/** response.code of a reply (INT32 metric), or undefined. */
function responseCode(buf) {
  if (buf[0] === 0x1f && buf[1] === 0x8b) buf = zlib.gunzipSync(buf);
  const i = buf.indexOf(Buffer.from('response.code'));
  if (i < 0) return undefined;
  // name, then 10 03 (type INT32), then 30 <varint> (int_value)
  let p = i + 'response.code'.length;
  while (p < buf.length && buf[p] !== 0x30) p++;
  let v = 0;
  let shift = 0;
  for (p++; p < buf.length; p++) {
    v += (buf[p] & 0x7f) * 2 ** shift;
    shift += 7;
    if (!(buf[p] & 0x80)) break;
  }
  return v;
}

function broker(port, dir) {
  const conf = path.join(dir, 'mosquitto.conf');
  fs.writeFileSync(conf, [`user ${os.userInfo().username}`, 'allow_anonymous true', 'persistence true', `persistence_location ${dir}/`, 'log_dest none', `listener ${port} 127.0.0.1`].join('\n') + '\n');
  const child = track(spawn(MOSQUITTO, ['-c', conf], { stdio: 'ignore' }));
  return {
    async ready() {
      await waitForPort(port, 'mosquitto');
    },
    stop: () => child.kill('SIGTERM'),
  };
}

/** The requester: one MQTT connection, QoS 1 publishes, replies by request id. */
async function requester(port) {
  const s = net.connect({ host: '127.0.0.1', port });
  const parser = mqttPacket.parser({ protocolVersion: 4 });
  const waiting = new Map();
  let id = 1;
  let connected;
  const up = new Promise((r) => (connected = r));
  parser.on('packet', (p) => {
    if (p.cmd === 'connack') s.write(mqttPacket.generate({ cmd: 'subscribe', messageId: id++, subscriptions: [{ topic: '$EDC/acct/robust-req/ASSET-V1/REPLY/#', qos: 0 }] }));
    else if (p.cmd === 'suback') connected();
    else if (p.cmd === 'publish') waiting.get(p.topic.split('/').pop())?.(responseCode(p.payload));
  });
  s.on('data', (b) => parser.parse(b));
  s.on('error', () => {});
  s.write(mqttPacket.generate({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clean: true, clientId: 'robust-req', keepalive: 60 }));
  await up;
  return {
    /** Publishes and waits for the reply's response.code; 'none' after `ms`. */
    ask(topic, payload, rid, ms = 15_000) {
      return new Promise((resolve) => {
        const timer = setTimeout(() => (waiting.delete(rid), resolve('none')), ms);
        waiting.set(rid, (code) => (clearTimeout(timer), waiting.delete(rid), resolve(code)));
        s.write(mqttPacket.generate({ cmd: 'publish', topic, payload, qos: 1, messageId: id++ % 65535 || 1, dup: false, retain: false }));
      });
    },
    close: () => s.destroy(),
  };
}

function pubFile(port, topic, file) {
  return new Promise((resolve) => {
    const p = spawn('/usr/bin/mosquitto_pub', ['-h', '127.0.0.1', '-p', String(port), '-t', topic, '-q', '1', '-f', file], { stdio: 'ignore' });
    p.on('exit', (code) => resolve(code));
  });
}

export async function runMqttHostile({ bombs = 20, bigMessages = 3, bigMb = 150 } = {}) {
  if (!fs.existsSync(MOSQUITTO) || spawnSync(MOSQUITTO, ['-h']).error) {
    return { row: { part: '6 hostile MQTT', notRun: true, reason: `${MOSQUITTO} is not installed` } };
  }
  const dir = tempDir('mqtt-hostile');
  const port = await freePort();
  const b = broker(port, dir);
  await b.ready();
  const config = {
    'log.level': 'info',
    mqtt: { enabled: true, 'broker-url': `mqtt://127.0.0.1:${port}`, 'client-id': 'gw', 'topic.context.account-name': 'acct', 'clean-session': false },
    assets: { demo: { 'driver.pid': 'sim', channels: { t: { type: 'READ', 'value.type': 'DOUBLE', simulation: 'sine' } } } },
  };
  const d = await startDaemon(config, { dir });
  const connected = async () => {
    for (let i = 0; i < 300 && !d.logs.some((l) => /mqtt connected/.test(l)); i++) await sleep(100);
  };
  await connected();
  const req = await requester(port);
  const base = '$EDC/acct/gw/ASSET-V1';
  const failures = [];
  const notes = [];
  let cases = 0;
  let rid = 0;
  const rssBefore = d.rss();
  let rssPeak = rssBefore;
  const sample = () => {
    const r = d.rss();
    rssPeak = Math.max(rssPeak, r);
    phasePeak = Math.max(phasePeak, r);
  };
  const sampler = setInterval(sample, 50);
  let phasePeak = 0;
  const phases = [];
  const legit = async (after) => {
    phases.push(`${after} ${(phasePeak / 1048576).toFixed(0)} MB`);
    phasePeak = 0;
    const code = await req.ask(`${base}/GET/assets`, request(`ok${++rid}`), `ok${rid}`, 30_000);
    if (code !== 200) failures.push({ kind: 'legit client not served', request: `GET/assets after ${after}`, detail: `response.code ${code}` });
  };

  try {
    await legit('start');
    // Item 2: gzip bombs. 1.9 M tiny metrics after request.id/requester: 15 MB inflated, ~22 KB gzipped.
    const codes = new Map();
    const count = (what, c) => codes.set(`${what} → ${c}`, (codes.get(`${what} → ${c}`) ?? 0) + 1);
    for (let i = 0; i < bombs; i++) {
      cases++;
      const id = `bomb${i}`;
      const p = zlib.gzipSync(Buffer.concat([request(id), Buffer.alloc(1_900_000 * TINY_METRIC.length).fill(TINY_METRIC)]), { level: 9 });
      count(`gzip bomb (${(p.length / 1024).toFixed(0)} KB → 1.9 M metrics)`, await req.ask(`${base}/GET/assets`, p, id, 5000));
    }
    await legit('gzip bombs');
    // Metric floods without gzip: 100,000 metrics in 800 KB.
    for (let i = 0; i < Math.max(1, bombs / 4); i++) {
      cases++;
      const id = `flood${i}`;
      count('100,000 metrics, plain', await req.ask(`${base}/GET/assets`, request(id, '[]', Buffer.alloc(100_000 * 8).fill(TINY_METRIC)), id, 5000));
    }
    await legit('metric floods');
    // 512 KB EXEC/read naming the same asset ~30,000 times.
    const same = JSON.stringify(Array(30_000).fill({ name: 'demo' }));
    for (let i = 0; i < Math.max(1, bombs / 4); i++) {
      cases++;
      const id = `same${i}`;
      count(`EXEC/read of ${(same.length / 1024).toFixed(0)} KB, one asset 30,000 times`, await req.ask(`${base}/EXEC/read`, request(id, same), id, 15_000));
    }
    await legit('repeated-asset reads');
    for (const [k, n] of codes) notes.push(`${n} × ${k}`);

    // Item 3: over-size messages, QoS 1, persistent session; then a restart.
    const big = path.join(dir, 'big.bin');
    const fd = fs.openSync(big, 'w');
    const block = Buffer.alloc(1 << 20, 0x5b);
    for (let i = 0; i < bigMb; i++) fs.writeSync(fd, block);
    fs.closeSync(fd);
    const skipped = () => d.logs.filter((l) => /over the size limit skipped/.test(l)).length;
    for (let i = 0; i < bigMessages; i++) {
      cases++;
      const code = await pubFile(port, `${base}/EXEC/read/big${i}`, big);
      if (code !== 0) failures.push({ kind: 'harness', request: `mosquitto_pub ${bigMb} MB`, detail: `exit ${code}` });
      for (let w = 0; w < 600 && skipped() < i + 1 && d.alive(); w++) await sleep(100);
    }
    const skippedFirst = skipped();
    await legit(`${bigMessages} × ${bigMb} MB`);
    sample();
    const rssAfter = d.rss();
    // Restart: the broker must not deliver any of them again.
    await d.stop();
    await pubFile(port, `${base}/EXEC/read/big-offline`, big);
    cases++;
    await d.start();
    await connected();
    for (let w = 0; w < 600 && skipped() < skippedFirst + 1 && d.alive(); w++) await sleep(100);
    await legit('restart');
    await d.stop();
    await d.start();
    await connected();
    await legit('second restart');
    await sleep(2000);
    const redelivered = skipped() - skippedFirst - 1;
    notes.push(`${bigMessages} × ${bigMb} MB QoS 1 on the request topic while connected, 1 while offline (persistent session): skipped and acknowledged ${skipped()} (expected ${bigMessages + 1}), received again after restarts: ${redelivered}`);
    if (skippedFirst !== bigMessages) failures.push({ kind: 'over-size message', request: `${bigMessages} × ${bigMb} MB`, detail: `${skippedFirst} logged as skipped` });
    if (redelivered !== 0) failures.push({ kind: 'redelivery', request: 'restart after over-size messages', detail: `${redelivered} received again` });
    notes.push(`daemon RSS ${(rssBefore / 1048576).toFixed(1)} MB before, peak ${(rssPeak / 1048576).toFixed(1)} MB (messages of ${bigMb} MB, bombs of 15 MB inflated)`);
    notes.push(`peak RSS per phase: ${phases.join(', ')}`);
    clearInterval(sampler);
    return {
      row: { part: '6 hostile MQTT', cases, failures: failures.length, http5xx: 0, crashes: d.crashes, lostBytes: 0, rssBefore, rssAfter, rssPeak },
      notes,
      failures,
      internalErrors: d.errors.filter((l) => !/over the size limit/.test(l)).slice(0, 5),
    };
  } finally {
    clearInterval(sampler);
    req.close();
    if (d.alive()) await d.stop();
    b.stop();
  }
}
