// Modbus TCP against a real pymodbus device: coalescing counted on the device side, values in all
// orders, writes landing, exceptions and timeouts as per-channel errors, reconnect (conformance).

import t, { type Test } from 'tap';
import net from 'node:net';
import os from 'node:os';
import { modbusFactory, type ModbusDriver } from '../../src/drivers/modbus/index.js';
import { encodeMbap, MbapDecoder } from '../../src/drivers/modbus/mbap.js';
import { silentLogger } from '../../src/log.js';
import { SharedLines } from '../../src/drivers/lines.js';
import { channel, runDriverConformance, show } from '../helpers/driver-conformance.js';
import { fiftyChannels } from '../helpers/modbus-fixtures.js';
import { havePeers, startPyModbusTcp, type PyModbusDevice } from '../helpers/pymodbus.js';

/** A Modbus TCP peer played by the test: `answer` gets each request frame; resolves with its port. */
async function playedPeer(t: Test, answer: (sock: net.Socket, frame: { transactionId: number; unitId: number; pdu: Buffer }) => void): Promise<number> {
  const server = net.createServer((sock) => {
    const dec = new MbapDecoder();
    sock.on('data', (chunk) => {
      for (const r of dec.push(chunk)) if ('frame' in r) answer(sock, r.frame);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise((r) => server.close(r)));
  return (server.address() as net.AddressInfo).port;
}

if (havePeers(t, 'pymodbus')) {
  const dev: PyModbusDevice = await startPyModbusTcp(t, { units: [1, 2] });
  const props = (extra: Record<string, unknown> = {}) => ({
    'access.type': 'TCP', 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': dev.port, 'modbus.timeout': 500, ...extra,
  });
  const create = (tt: Test, extra: Record<string, unknown> = {}): ModbusDriver => {
    const d = modbusFactory.create(props(extra), { id: 'plc', log: silentLogger, dataDir: os.tmpdir(), lines: new SharedLines() });
    tt.teardown(() => d.close());
    return d;
  };
  const hr = (addr: number, dataType: string, valueType: 'INTEGER' | 'LONG' | 'FLOAT' | 'DOUBLE' | 'BOOLEAN' = 'INTEGER', extra = {}) =>
    channel(`hr${addr}`, valueType, { 'primary.table': 'HOLDING_REGISTERS', 'memory.address': addr, 'data.type': dataType, ...extra });

  t.test('acceptance: holding registers 1-100 as 50 channels are read in ONE request', async (t) => {
    const fx = fiftyChannels();
    for (const f of fx) await dev.set(1, 'hr', f.address, f.registers);
    const driver = create(t);
    await dev.clearRequests();
    const results = await driver.read(fx.map((f) => f.channel));
    t.same((await dev.received()), [{ unit: 1, fc: 3, address: 0, count: 100 }], 'the device saw one FC3 request for 100 registers');
    results.forEach((r, i) => t.equal(r.ok ? show(r.value) : r.error, show(fx[i].expected), `${fx[i].channel.name} ${fx[i].channel.driverProps['data.type']} ${fx[i].channel.driverProps['data.order']}`));
    t.equal(driver.stats().requests, 1);
  });

  t.test('more than 125 registers split into two requests', async (t) => {
    const driver = create(t);
    const channels = Array.from({ length: 70 }, (_, i) => hr(1 + 2 * i, 'INT32'));
    await dev.clearRequests();
    const results = await driver.read(channels);
    t.ok(results.every((r) => r.ok));
    t.same((await dev.received()).map((r) => [r.fc, r.address, r.count]), [[3, 0, 124], [3, 124, 16]]);
  });

  t.test('read.max.gap merges nearby ranges; units and tables stay apart', async (t) => {
    await dev.set(1, 'ir', 0, [11, 12]);
    await dev.set(2, 'hr', 0, [21]);
    const channels = [
      hr(1, 'INT16'), hr(6, 'INT16'),
      channel('ir1', 'INTEGER', { 'primary.table': 'INPUT_REGISTERS', 'memory.address': 2 }),
      channel('u2', 'INTEGER', { 'unit.id': 2, 'memory.address': 1 }),
    ];
    const merged = create(t, { 'read.max.gap': 4 });
    await dev.clearRequests();
    const r = await merged.read(channels);
    t.same(r.slice(2).map((x) => (x.ok ? x.value.value : x.error)), [12, 21]);
    t.same((await dev.received()).map((q) => [q.unit, q.fc, q.address, q.count]).sort(), [[1, 3, 0, 6], [1, 4, 1, 1], [2, 3, 0, 1]].sort());
    const apart = create(t, { 'read.max.gap': 3 });
    await dev.clearRequests();
    await apart.read(channels.slice(0, 2));
    t.equal((await dev.received()).length, 2, 'a gap of 4 registers is not merged with read.max.gap 3');
  });

  t.test('concurrent reads of the same channels share one bus transaction', async (t) => {
    const driver = create(t);
    const channels = [hr(1, 'INT16'), hr(2, 'INT16')];
    await dev.clearRequests();
    const [a, b, c] = await Promise.all([driver.read(channels), driver.read(channels), driver.read([...channels].reverse())]);
    t.equal((await dev.received()).length, 1, 'one request on the wire');
    t.same(b, a);
    t.same(c, [...a].reverse());
  });

  t.test('writes land in the device (contiguous ones in one FC16, FC5) and are never behind a later read', async (t) => {
    const driver = create(t);
    await dev.clearRequests();
    const writes = [
      { channel: hr(200, 'INT16'), value: { type: 'INTEGER' as const, value: -5 } },
      { channel: hr(201, 'UINT32', 'LONG', { 'data.order': 'LITTLE_ENDIAN_BYTE_SWAP' }), value: { type: 'LONG' as const, value: 4_000_000_000n } },
      { channel: hr(203, 'FLOAT32', 'FLOAT', { 'data.order': 'BIG_ENDIAN_BYTE_SWAP' }), value: { type: 'FLOAT' as const, value: 2.5 } },
      { channel: hr(205, 'INT64', 'LONG'), value: { type: 'LONG' as const, value: -(2n ** 60n) - 1n } },
      { channel: channel('coil', 'BOOLEAN', { 'primary.table': 'COILS', 'memory.address': 8 }), value: { type: 'BOOLEAN' as const, value: true } },
    ];
    // A read queued right after the writes must see them.
    const [w, r] = await Promise.all([driver.write(writes), driver.read(writes.map((x) => x.channel))]);
    t.ok(w.every((x) => x.ok), w.map((x) => (x.ok ? 'ok' : x.error)).join(', '));
    t.same(r.map((x) => (x.ok ? show(x.value) : x.error)), writes.map((x) => show(x.value)));
    t.same((await dev.received()).slice(0, 2).map((q) => [q.fc, q.address, q.count]), [[16, 199, 9], [5, 7, 1]], 'registers 200-208 in one FC16, FC5 for a coil');
    t.same(await dev.get(1, 'hr', 199, 10), [0xfffb, 0x2800, 0xee6b, 0x2040, 0x0000, 0xefff, 0xffff, 0xffff, 0xffff, 0]);
    t.same(await dev.get(1, 'co', 7, 1), [1]);
  });

  t.test('a write queued behind a burst of reads goes in its turn, not after later reads', async (t) => {
    const driver = create(t);
    await dev.mode({ delayMs: 15 });
    t.teardown(() => dev.mode({}));
    const done: string[] = [];
    const track = (label: string, p: unknown) => Promise.resolve(p).then(() => done.push(label));
    const jobs: Promise<unknown>[] = [];
    for (let i = 0; i < 5; i++) jobs.push(track(`r${i}`, driver.read([hr(600 + i, 'INT16')])));
    jobs.push(track('w', driver.write([{ channel: hr(650, 'INT16'), value: { type: 'INTEGER', value: 9 } }])));
    for (let i = 5; i < 10; i++) jobs.push(track(`r${i}`, driver.read([hr(600 + i, 'INT16')])));
    await Promise.all(jobs);
    t.same(done, ['r0', 'r1', 'r2', 'r3', 'r4', 'w', 'r5', 'r6', 'r7', 'r8', 'r9']);
    t.same(await dev.get(1, 'hr', 649, 1), [9]);
  });

  t.test('exceptions and impossible writes are per-channel errors', async (t) => {
    const driver = create(t);
    const r = await driver.read([
      hr(1, 'INT16'),
      hr(5000, 'INT16'),
      channel('nounit', 'INTEGER', { 'unit.id': 9, 'memory.address': 1 }),
    ]);
    t.ok(r[0].ok);
    t.match(r[1], { ok: false, error: 'Modbus exception 2 (ILLEGAL DATA ADDRESS) for reading HOLDING_REGISTERS 5000 on unit 1' });
    // pymodbus ignores requests for units it does not have, as a serial device would.
    t.match(r[2], { ok: false, error: /: no response from unit 9 within 500 ms \(2 attempts\)$/ });
    const w = await driver.write([
      { channel: channel('di', 'BOOLEAN', { 'primary.table': 'DISCRETE_INPUTS', 'memory.address': 1 }), value: { type: 'BOOLEAN', value: true } },
      { channel: hr(10, 'INT16'), value: { type: 'INTEGER', value: 70000 } },
      { channel: hr(5000, 'INT16'), value: { type: 'INTEGER', value: 1 } },
      { channel: channel('broken', 'INTEGER', { 'data.type': 'FLOAT64' }), value: { type: 'INTEGER', value: 1 } },
    ]);
    t.match(w, [
      { ok: false, error: /DISCRETE_INPUTS cannot be written/ },
      { ok: false, error: /out of range for INT16/ },
      { ok: false, error: /Modbus exception 2 \(ILLEGAL DATA ADDRESS\) for writing HOLDING_REGISTERS 5000/ },
      { ok: false, error: /Invalid Modbus channel configuration: data.type: .*FLOAT64 does not fit value.type INTEGER/ },
    ]);
  });

  t.test('a merged request failing with exception 2 is retried per channel', async (t) => {
    const driver = create(t);
    await dev.set(1, 'hr', 999, [77]);
    await dev.clearRequests();
    // Register 1000 exists (the device holds 1000), 1001 does not; contiguous, so merged first.
    const r = await driver.read([hr(1000, 'INT16'), hr(1001, 'INT16')]);
    t.match(r, [{ ok: true, value: { value: 77 } }, { ok: false, error: /exception 2/ }]);
    t.same((await dev.received()).map((q) => [q.address, q.count]), [[999, 2], [999, 1], [1000, 1]]);
  });

  t.test('timeouts: retries after the first attempt, then a per-channel error', async (t) => {
    const driver = create(t, { 'modbus.timeout': 150, 'modbus.transaction.retry': 2, 'unit.backoff.max': 0 });
    await driver.read([hr(1, 'INT16')]); // connected
    await dev.mode({ silent: true });
    t.teardown(() => dev.mode({}));
    await dev.clearRequests();
    const r = await driver.read([hr(1, 'INT16'), hr(2, 'INT16')]);
    t.match(r, [
      { ok: false, error: /Modbus TCP 127\.0\.0\.1:\d+: no response from unit 1 within 150 ms \(3 attempts\)/ },
      { ok: false, error: /within 150 ms/ },
    ]);
    t.equal((await dev.received()).length, 3, 'first attempt plus modbus.transaction.retry = 2');
    t.match(driver.stats(), { timeouts: 3, retries: 2 });
    await dev.mode({});
    t.match(await driver.read([hr(1, 'INT16')]), [{ ok: true }], 'the connection is still usable');
  });

  t.test('device unreachable: per-channel errors naming the device', async (t) => {
    const closed = net.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
    const port = (closed.address() as net.AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const d = modbusFactory.create({ 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': port, 'modbus.timeout': 300, 'modbus.transaction.retry': 0 }, { id: 'x', log: silentLogger, dataDir: os.tmpdir(), lines: new SharedLines() });
    t.teardown(() => d.close());
    const r = await d.read([hr(1, 'INT16'), hr(2, 'INT16')]);
    t.match(r, [{ ok: false, error: `Modbus TCP 127.0.0.1:${port}: connect failed: ECONNREFUSED` }, { ok: false }]);
    const again = await d.read([hr(1, 'INT16')]);
    t.same(again, [{ ok: false, error: `Modbus TCP 127.0.0.1:${port}: connect failed: ECONNREFUSED` }], 'backoff: no reconnect storm, and the same text (report by exception)');
  });

  t.test('unit ids 0 and 255, per channel, on one connection', async (t) => {
    const gw = await startPyModbusTcp(t, { units: [0, 255] });
    await gw.set(0, 'hr', 0, [100]);
    await gw.set(255, 'hr', 0, [255]);
    const d = modbusFactory.create({ 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': gw.port }, { id: 'gw', log: silentLogger, dataDir: os.tmpdir(), lines: new SharedLines() });
    t.teardown(() => d.close());
    const u = (unit: number) => channel(`u${unit}`, 'INTEGER', { 'unit.id': unit, 'memory.address': 1 });
    const r = await d.read([u(0), u(255)]);
    t.same(r.map((x) => (x.ok ? x.value.value : x.error)), [100, 255]);
    const w = await d.write([{ channel: u(0), value: { type: 'INTEGER', value: 7 } }]);
    t.ok(w[0].ok);
    t.same(await gw.get(0, 'hr', 0, 1), [7]);
    t.same((await gw.received()).filter((q) => q.fc !== undefined).map((q) => q.unit).slice(0, 3), [0, 255, 0], 'the device saw units 0 and 255');
    t.same(d.stats().connects, 1);
  });

  t.test('conformance (Modbus TCP)', async (t) => {
    await runDriverConformance(t, {
      factory: modbusFactory,
      instanceProps: props({ 'modbus.timeout': 300, 'modbus.transaction.retry': 0 }),
      readable: [
        { channel: hr(300, 'INT16'), expected: { type: 'INTEGER', value: 1234 } },
        { channel: hr(301, 'FLOAT32', 'DOUBLE'), expected: { type: 'DOUBLE', value: 0.5 } },
        { channel: channel('coil1', 'BOOLEAN', { 'primary.table': 'COILS', 'memory.address': 300 }), expected: { type: 'BOOLEAN', value: true } },
      ],
      writable: [
        { channel: hr(310, 'INT32'), value: { type: 'INTEGER', value: -123456 }, alt: { type: 'INTEGER', value: 7 } },
        { channel: channel('coil2', 'BOOLEAN', { 'primary.table': 'COILS', 'memory.address': 301 }), value: { type: 'BOOLEAN', value: true }, alt: { type: 'BOOLEAN', value: false } },
      ],
      bad: hr(4000, 'INT16'),
      prepare: async () => {
        await dev.set(1, 'hr', 299, [1234, 0x3f00, 0]);
        await dev.set(1, 'co', 299, [true]);
      },
      stopDevice: () => dev.stop(),
      startDevice: () => dev.start(),
    });
  });

  t.test('a peer answering garbage gives per-channel errors, never a crash', async (t) => {
    let seed = 12345;
    const rand = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
    let n = 0;
    const server = net.createServer((sock) => {
      sock.on('data', (chunk) => {
        n++;
        // Half the time a well-formed MBAP header with the request's id around a random PDU.
        const junk = Buffer.from(Array.from({ length: Math.floor(rand() * 40) + 1 }, () => Math.floor(rand() * 256)));
        if (rand() < 0.5 && chunk.length >= 7) sock.write(encodeMbap({ transactionId: chunk.readUInt16BE(0), protocolId: 0, unitId: chunk[6], pdu: junk }));
        else sock.write(junk);
      });
      sock.on('error', () => {});
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    t.teardown(() => new Promise((r) => server.close(r)));
    const d = modbusFactory.create({ 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': (server.address() as net.AddressInfo).port, 'modbus.timeout': 50, 'modbus.transaction.retry': 0 }, { id: 'x', log: silentLogger, dataDir: os.tmpdir(), lines: new SharedLines() });
    t.teardown(() => d.close());
    let failures = 0;
    for (let i = 0; i < 40; i++) {
      const r = await d.read([hr(1, 'INT16'), hr(2, 'FLOAT32', 'FLOAT'), channel('c', 'BOOLEAN', { 'primary.table': 'COILS', 'memory.address': 1 })]);
      t.equal(r.length, 3);
      failures += r.filter((x) => !x.ok).length;
      await new Promise((res) => setTimeout(res, 5));
    }
    t.ok(n > 0 && failures > 0, `${n} garbage answers, ${failures} per-channel errors`);
    t.ok(d.stats().discardedFrames > 0, 'garbage counted');
  });

  t.test('the response timeout runs from each request, whatever the requests before it did', async (t) => {
    // One timer serves every exchange of a connection (tcp.ts): each request must still get the
    // whole timeout, counted from when it was sent. The peer answers every request but the ones
    // whose register address is 7.
    const port = await playedPeer(t, (sock, { transactionId, unitId, pdu }) => {
      if (pdu.readUInt16BE(1) !== 6) sock.write(encodeMbap({ transactionId, protocolId: 0, unitId, pdu: Buffer.from([3, 2, 0, 42]) }));
    });
    const d = modbusFactory.create({ 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': port, 'modbus.timeout': 400, 'modbus.transaction.retry': 0, 'unit.backoff.max': 0 }, { id: 'x', log: silentLogger, dataDir: os.tmpdir(), lines: new SharedLines() });
    t.teardown(() => d.close());
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    for (const gap of [250, 0, 600]) {
      t.match(await d.read([hr(1, 'INT16')]), [{ ok: true, value: { value: 42 } }], `answered (gap ${gap} ms)`);
      await sleep(gap);
      const sent = performance.now();
      const r = await d.read([hr(7, 'INT16')]);
      const took = performance.now() - sent;
      t.match(r, [{ ok: false, error: /no response from unit 1 within 400 ms$/ }], `gap ${gap} ms: timed out`);
      t.ok(took >= 390, `gap ${gap} ms: the whole timeout after the request (${took.toFixed(0)} ms)`);
    }
    t.match(await d.read([hr(1, 'INT16')]), [{ ok: true, value: { value: 42 } }], 'an answered request after a timeout');
    await sleep(500);
    t.match(await d.read([hr(1, 'INT16')]), [{ ok: true }], 'and after the timer fired with nothing pending');
    t.match(d.stats(), { timeouts: 3, responses: 5 });
  });

  t.test('a response with the wrong transaction id is discarded and counted', async (t) => {
    // pymodbus always answers correctly, so this one peer is played by the test.
    const port = await playedPeer(t, (sock, { transactionId, unitId }) => {
      const pdu = Buffer.from([3, 2, 0x12, 0x34]);
      sock.write(encodeMbap({ transactionId: (transactionId + 100) & 0xffff, protocolId: 0, unitId, pdu: Buffer.from([3, 2, 0x66, 0x66]) }));
      setTimeout(() => sock.write(encodeMbap({ transactionId, protocolId: 0, unitId, pdu })), 20);
    });
    const d = modbusFactory.create({ 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': port }, { id: 'x', log: silentLogger, dataDir: os.tmpdir(), lines: new SharedLines() });
    t.teardown(() => d.close());
    t.match(await d.read([hr(1, 'INT16')]), [{ ok: true, value: { value: 0x1234 } }]);
    t.match(await d.read([hr(1, 'INT16')]), [{ ok: true, value: { value: 0x1234 } }]);
    t.match(d.stats(), { requests: 2, responses: 2, discardedFrames: 2 });
  });
}
