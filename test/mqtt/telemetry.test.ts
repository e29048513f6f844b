// Telemetry: report-by-exception decisions (deadband, status changes, publish.max.interval), the
// payload shapes, and delivery through the outbox across a broker outage, a daemon restart and a
// reconfiguration, against a real Mosquitto.

import t from 'tap';
import fs from 'node:fs';
import type { ChannelRecord, TypedValue } from '../../src/channels/types.js';
import type { AssetConfig, AssetService } from '../../src/assets/types.js';
import { MetricNames, Telemetry, encodeTelemetry, valueMetric } from '../../src/mqtt/telemetry.js';
import { decodeKuraPayload, encodeKuraPayload, type KuraMetric } from '../../src/mqtt/kura-payload.js';
import { silentLogger } from '../../src/log.js';
import { readEntry } from '../../src/assets/records.js';
import { MqttClient } from '../../src/mqtt/client.js';
import { startMosquitto, mosquittoSkip } from '../helpers/mosquitto.js';
import { channel, makeRuntime, makeService, mqttConfig, outboxOf, storedPending, until } from '../helpers/mqtt-fixture.js';

/** At most the in-flight window can be resent per reconnect (service.ts WINDOW), twice here. */
const WINDOW_BOUND = 32;
const rec = (name: string, value: TypedValue | undefined, error?: string): ChannelRecord =>
  value ? { name, status: 'SUCCESS', valueType: value.type, value, timestamp: 1000 } : { name, status: 'FAILURE', valueType: 'DOUBLE', error, timestamp: 1000 };
const dbl = (v: number): TypedValue => ({ type: 'DOUBLE', value: v });

/** Telemetry for one asset `p` with these channels; `sent` gets the channel names of each publication. */
function reportingOf(channels: AssetConfig['channels'], publishMaxInterval: number, now?: () => number) {
  const asset: AssetConfig = { pid: 'p', driverPid: 'sim', description: '', pollInterval: 100, publishMaxInterval, channels };
  // A minimal AssetService: telemetry only uses get() and onPoll().
  const assets = { get: (pid: string) => (pid === 'p' ? asset : undefined), onPoll: () => () => {} } as unknown as AssetService;
  const sent: string[][] = [];
  const tel = new Telemetry({ assets, log: silentLogger, publish: (_pid, rs) => void sent.push(rs.map((r) => r.name)), now });
  return { tel, sent };
}

t.test('report by exception', async (t) => {
  let now = 0;
  const { tel, sent } = reportingOf([channel('temp', 'DOUBLE', 'READ', {}, { deadband: 0.5 }), channel('s', 'STRING', 'READ'), channel('n', 'DOUBLE', 'READ')], 10_000, () => now);
  const poll = (temp: number | undefined, s: string, n = 1) => tel.onPoll('p', [rec('temp', temp === undefined ? undefined : dbl(temp), 'timeout'), rec('s', { type: 'STRING', value: s }), rec('n', dbl(n))]);

  poll(20, 'a');
  t.same(sent.pop(), ['temp', 's', 'n'], 'first cycle publishes everything');
  now = 100;
  poll(20.2, 'a');
  t.equal(sent.length, 0, 'change inside the deadband: nothing');
  now = 200;
  poll(20.4, 'a');
  t.equal(sent.length, 0, 'still within 0.5 of the last published value');
  now = 300;
  poll(20.6, 'a');
  t.same(sent.pop(), ['temp'], 'drift adds up to the deadband');
  now = 400;
  poll(20.6, 'b');
  t.same(sent.pop(), ['s'], 'string change');
  now = 500;
  poll(20.6, 'b', 1.0000001);
  t.same(sent.pop(), ['n'], 'no deadband: any change');
  now = 600;
  poll(undefined, 'b', 1.0000001);
  t.same(sent.pop(), ['temp'], 'status change');
  now = 700;
  poll(undefined, 'b', 1.0000001);
  t.equal(sent.length, 0, 'same failure again: nothing');
  now = 10_600;
  poll(undefined, 'b', 1.0000001);
  t.same(sent.pop(), ['temp', 's', 'n'], 'publish.max.interval: everything again');
  tel.onPoll('gone', [rec('x', dbl(1))]);
  t.equal(sent.length, 0, 'unknown asset ignored');
});

t.test('report by exception of INTEGER channels (kept as the number itself)', async (t) => {
  const { tel, sent } = reportingOf([channel('i', 'INTEGER', 'READ'), channel('d', 'INTEGER', 'READ', {}, { deadband: 3 })], 0);
  const int = (v: number): TypedValue => ({ type: 'INTEGER', value: v });
  const poll = (i: TypedValue | undefined, d: number) => tel.onPoll('p', [rec('i', i, 'timeout'), rec('d', int(d))]);
  poll(int(7), 100);
  t.same(sent.pop(), ['i', 'd'], 'first cycle publishes everything');
  poll(int(7), 102);
  t.equal(sent.length, 0, 'same integer, change inside the deadband: nothing');
  poll(int(8), 103);
  t.same(sent.pop(), ['i', 'd'], 'integer change; drift adds up to the deadband');
  poll(dbl(8), 103);
  t.same(sent.pop(), ['i'], 'same number of another type: a change');
  poll(int(8), 103);
  t.same(sent.pop(), ['i'], 'and back');
  poll(undefined, 103);
  t.same(sent.pop(), ['i'], 'failure');
  poll(int(0), 101);
  t.same(sent.pop(), ['i'], 'value again (0)');
  poll(int(0), 101);
  t.equal(sent.length, 0, '0 again: nothing');
});

t.test('payload shapes', async (t) => {
  const records = [rec('temp', dbl(1e7)), rec('bad', undefined, 'Driver not attached'), rec('l', { type: 'LONG', value: 2n ** 62n })];
  const json = JSON.parse(encodeTelemetry('p', records, 'json', true).toString());
  t.same(json, {
    name: 'p',
    channels: [
      { name: 'temp', timestamp: 1000, value: '1.0E7', type: 'DOUBLE' },
      { name: 'bad', timestamp: 1000, error: 'Configuration Error: Driver not attached' },
      { name: 'l', timestamp: 1000, value: '4611686018427387904', type: 'LONG' },
    ],
  });
  const d = decodeKuraPayload(encodeTelemetry('p', records, 'kura-protobuf', true));
  t.ok(d.ok);
  if (d.ok) {
    const m = Object.fromEntries(d.value.metrics.map((x) => [x.name, x]));
    t.match(m.assetName, { type: 'STRING', value: 'p' });
    t.match(m.temp, { type: 'DOUBLE', value: 1e7 });
    t.match(m.l, { type: 'INT64', value: 2n ** 62n });
    t.match(m.bad_error, { type: 'STRING', value: 'Configuration Error: Driver not attached' });
    t.equal(m.temp_timestamp!.value, 1000n);
  }
  const sj = JSON.parse(encodeTelemetry('p', records, 'simple-json', true).toString());
  t.equal(sj.metrics.temp, 1e7);
  t.equal(sj.metrics.assetName, 'p');
});

t.test('kura-protobuf telemetry: the bytes encodeKuraPayload writes for the documented metrics', async (t) => {
  const long = 'x'.repeat(200); // a name field and a metric of 128 bytes or more take a longer length
  const records: ChannelRecord[] = [
    rec('b', { type: 'BOOLEAN', value: true }),
    rec('i', { type: 'INTEGER', value: -5 }),
    rec('i2', { type: 'INTEGER', value: 2147483647 }),
    rec('l', { type: 'LONG', value: -(2n ** 63n) }),
    rec('f', { type: 'FLOAT', value: Math.fround(1.5) }),
    rec('d', dbl(-0.25)),
    rec('s', { type: 'STRING', value: 'héllo' + long }),
    rec('y', { type: 'BYTE_ARRAY', value: Buffer.from([0, 1, 255]) }),
    rec(long, undefined, 'Driver not attached'),
    { ...rec('no-stamp', dbl(1)), timestamp: 0 },
  ];
  const names = new MetricNames();
  for (let round = 0; round < 2; round++) {
    const wire = encodeTelemetry('pümp', records, 'kura-protobuf', false, names);
    const d = decodeKuraPayload(wire);
    t.ok(d.ok);
    if (!d.ok) return;
    const sentOn = d.value.timestamp!;
    const metrics: KuraMetric[] = [{ name: 'assetName', type: 'STRING', value: 'pümp' }];
    for (const r of records) {
      metrics.push(r.value ? valueMetric(r.name, r.value) : { name: `${r.name}_error`, type: 'STRING', value: 'Configuration Error: Driver not attached' });
      metrics.push({ name: `${r.name}_timestamp`, type: 'INT64', value: r.timestamp > 0 ? BigInt(r.timestamp) : sentOn });
    }
    t.equal(wire.toString('hex'), encodeKuraPayload({ timestamp: sentOn, metrics }).toString('hex'), `round ${round}: same bytes`);
  }
});

t.test('json telemetry: the EXEC/read entries of records.ts, key for key', async (t) => {
  const records: ChannelRecord[] = [
    rec('b', { type: 'BOOLEAN', value: false }),
    { ...rec('i', { type: 'INTEGER', value: -5 }), unit: 'rpm' },
    { ...rec('blank-unit', { type: 'INTEGER', value: 1 }), unit: '  ' },
    rec('min', { type: 'INTEGER', value: -2147483648 }),
    { ...rec('zero', { type: 'INTEGER', value: 0 }), unit: 'é"' },
    { ...rec('big-stamp', { type: 'INTEGER', value: 2147483647 }), timestamp: 9007199254740991 },
    rec('l', { type: 'LONG', value: -(2n ** 63n) }),
    rec('f', { type: 'FLOAT', value: Math.fround(0.1) }),
    rec('d', dbl(1e-9)),
    rec('nan', dbl(NaN)),
    rec('s', { type: 'STRING', value: 'quote " back \\ \u0001 é' }),
    rec('y', { type: 'BYTE_ARRAY', value: Buffer.from([0, 1, 255]) }),
    rec('na"me', undefined, 'Driver not attached'),
    rec('e', undefined, 'device said "no"'),
    { ...rec('no-stamp', dbl(1)), timestamp: 0 },
  ];
  const names = new MetricNames();
  for (let round = 0; round < 2; round++) {
    const before = Date.now();
    const text = encodeTelemetry('p\u00fc"', records, 'json', false, names).toString('utf8');
    const after = Date.now();
    const got = JSON.parse(text);
    const stamp = got.channels[records.length - 1].timestamp;
    t.ok(stamp >= before && stamp <= after, 'a missing timestamp is now');
    const want = { name: 'p\u00fc"', channels: records.map((r) => readEntry(r.timestamp > 0 ? r : { ...r, timestamp: stamp })) };
    t.equal(text, JSON.stringify(want), `round ${round}: same text`);
  }
});

t.test('json telemetry: integers and timestamps written digit by digit match String()', async (t) => {
  // A seeded generator: the same cases on every run.
  let seed = 17;
  const next = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
  const ints = [0, -0, 1, -1, 9, 10, 99, 100, -10, 2147483647, -2147483648, 1e9, -999999999];
  for (let i = 0; i < 300; i++) ints.push(Math.floor((next() - 0.5) * 2 ** (1 + Math.floor(next() * 32))) | 0);
  const stamps = [1, 9, 10, 1764370000000, 9007199254740991, 1.5, 2 ** 60];
  for (let i = 0; i < 50; i++) stamps.push(Math.floor(next() * 2 ** 53));
  const names = new MetricNames();
  for (let round = 0; round < 3; round++) {
    // The unit changes between rounds: the cached parts of a channel follow it.
    const unit = ['V', undefined, 'm\u00b3/h "x"'][round];
    const records: ChannelRecord[] = ints.map((v, i) => ({ ...rec(`c${i % 40}\u00e9`, { type: 'INTEGER', value: v }), timestamp: stamps[i % stamps.length]!, unit }));
    // A channel failing between successes keeps no unit in its error entry.
    records.push({ ...rec('c1\u00e9', undefined, 'gone'), unit });
    const text = encodeTelemetry('asset', records, 'json', false, names).toString('utf8');
    t.equal(text, JSON.stringify({ name: 'asset', channels: records.map(readEntry) }), `round ${round}`);
  }
  // A payload far larger than the scratch buffer, and a small one after it.
  const many = Array.from({ length: 2000 }, (_, i) => rec(`channel-${i}`, { type: 'INTEGER', value: -i * 1000003 }));
  t.equal(encodeTelemetry('big', many, 'json', false, names).toString(), JSON.stringify({ name: 'big', channels: many.map(readEntry) }));
  const few = many.slice(0, 2);
  t.equal(encodeTelemetry('big', few, 'json', false, names).toString(), JSON.stringify({ name: 'big', channels: few.map(readEntry) }));
});

t.test('delivery through the outbox', mosquittoSkip(), async (t) => {
  const broker = await startMosquitto();
  const assets: AssetConfig[] = [
    {
      pid: 'pump',
      driverPid: 'sim',
      description: '',
      pollInterval: 50,
      publishMaxInterval: 0,
      channels: [channel('count', 'INTEGER', 'READ', { simulation: 'counter' })],
    },
  ];
  const { runtime, dataDir } = makeRuntime(assets);
  // A persistent subscriber: the broker keeps its QoS 1 messages while it is away.
  const got: number[] = [];
  const sub = new MqttClient({ url: broker.url, clientId: 'telemetry-sub', keepAlive: 30, clean: false, reconnectMin: 50, reconnectMax: 300, log: silentLogger });
  sub.on('message', (topic: string, payload: Buffer) => {
    if (topic !== 'acct/dev/assets/pump') return;
    const el = JSON.parse(payload.toString());
    for (const c of el.channels) got.push(Number(c.value));
  });
  sub.start();
  await until(() => sub.isConnected);
  await sub.subscribe('acct/#', 1);
  const cfg = mqttConfig({ 'broker-url': broker.url, 'client-id': 'dev', 'topic.context.account-name': 'acct', 'payload.encoding': 'json' });
  let svc = makeService(runtime, dataDir, cfg);
  // What the device produced while a service was running: all of it must reach the subscriber.
  let running = false;
  const produced = new Set<number>();
  runtime.onPoll((_pid, records) => {
    if (running) for (const r of records) if (r.value) produced.add(Number(r.value.value));
  });
  t.teardown(async () => {
    await svc.stop();
    await sub.end();
    await runtime.close();
    await broker.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  await svc.start();
  running = true;
  await until(() => got.length >= 5, 8000, 'first telemetry');

  // 1. The broker goes away mid-stream and comes back.
  await broker.stop();
  await new Promise((r) => setTimeout(r, 600));
  t.ok(outboxOf(svc).stats().pending > 0, `messages wait in the outbox during the outage (${outboxOf(svc).stats().pending})`);
  await broker.start();
  await until(() => svc.isConnected, 8000, 'device reconnect');

  // 2. The daemon restarts while the broker is down: the outbox on disk carries the backlog over.
  await broker.stop();
  await new Promise((r) => setTimeout(r, 400));
  running = false;
  await svc.stop();
  t.ok(outboxOf(svc).stats().pending > 0 && outboxOf(svc).fileSize() > 0, 'a stopped service leaves its backlog in the outbox file');
  svc = makeService(runtime, dataDir, cfg);
  await svc.start();
  running = true;
  t.ok(outboxOf(svc).stats().pending > 0, `backlog reloaded from dataDir (${outboxOf(svc).stats().pending})`);
  await broker.start();
  await until(() => svc.isConnected, 8000, 'device reconnect after restart');

  // 3. SIGHUP with a changed keep-alive: reconnects, the outbox is kept.
  await svc.reconfigure({ ...cfg, 'keep-alive': 20 });
  await until(() => svc.isConnected, 8000, 'reconnect after reconfigure');
  await until(() => storedPending(outboxOf(svc)) === 0, 30_000, 'the backlog from disk delivered');
  const last = Math.max(...got);
  await until(() => got.some((v) => v > last + 3), 8000, 'telemetry continues');

  // Every value produced while a service ran arrived (duplicates allowed by QoS 1).
  running = false;
  const hi = Math.max(...got);
  const seen = new Set(got);
  const missing = [...produced].filter((v) => v <= hi && !seen.has(v));
  t.same(missing, [], `nothing lost: ${produced.size} values produced, ${got.length} messages, ${got.length - seen.size} duplicates`);
  t.ok(produced.size > 20, 'a meaningful stream');
  t.ok(got.length - seen.size <= 2 * WINDOW_BOUND, 'duplicates stay within what QoS 1 resends');
  t.equal(outboxOf(svc).stats().dropped, 0);
});
