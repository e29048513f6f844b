// Modbus RTU through a socat pseudo-terminal pair: pymodbus on one end, the driver (stty + the tty
// opened as a file) on the other. Line noise and bad CRCs, and two driver instances sharing a
// port, are played by the test on the far end of the pty pair (pymodbus never misbehaves).

import t, { type Test } from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import tty from 'node:tty';
import { modbusFactory, type ModbusDriver } from '../../src/drivers/modbus/index.js';
import { decodeRequest, encodeResponse } from '../../src/drivers/modbus/pdu.js';
import { decodeRtu, encodeRtu } from '../../src/drivers/modbus/rtu-frame.js';
import { sttyArgs } from '../../src/drivers/modbus/serial.js';
import { silentLogger } from '../../src/log.js';
import { SharedLines } from '../../src/drivers/lines.js';
import { channel, runDriverConformance, show } from '../helpers/driver-conformance.js';
import { fiftyChannels } from '../helpers/modbus-fixtures.js';
import { havePeers, startPtyPair, startPyModbusRtu } from '../helpers/pymodbus.js';

const hr = (addr: number, dataType = 'INT16', valueType: 'INTEGER' | 'LONG' | 'FLOAT' | 'DOUBLE' = 'INTEGER') =>
  channel(`hr${addr}`, valueType, { 'memory.address': addr, 'data.type': dataType });

function rtuProps(port: string, extra: Record<string, unknown> = {}) {
  return { 'access.type': 'RTU', 'modbus.rtu.port.name': port, 'modbus.rtu.baudrate': 19200, 'modbus.timeout': 500, ...extra };
}

function createDriver(t: Test, props: Record<string, unknown>, id = 'rtu', lines = new SharedLines()): ModbusDriver {
  const d = modbusFactory.create(props, { id, log: silentLogger, dataDir: os.tmpdir(), lines });
  t.teardown(() => d.close());
  return d;
}

/**
 * The far end of a pty pair played by the test: answers FC3 reads with register value = address,
 * after `delayMs`, wrapped in whatever `wrap` makes of the good frame (noise, bad CRCs).
 */
function fakeDevice(t: Test, peerPty: string, opts: { delayMs?: number; wrap?: (good: Buffer) => Buffer[] } = {}) {
  const fd = fs.openSync(peerPty, fs.constants.O_RDWR | fs.constants.O_NOCTTY | fs.constants.O_NONBLOCK);
  const stream = new tty.ReadStream(fd);
  t.teardown(() => stream.destroy());
  const seen = { requests: 0, overlaps: 0 };
  let busy = false;
  let buf = Buffer.alloc(0);
  stream.on('data', (chunk: Buffer) => {
    buf = Buffer.concat([buf, chunk]);
    for (;;) {
      const r = decodeRtu(buf, 'request');
      if (r.status === 'incomplete') return;
      if (r.status !== 'frame') {
        buf = buf.subarray(1);
        continue;
      }
      buf = buf.subarray(r.length);
      seen.requests++;
      if (busy) seen.overlaps++;
      busy = true;
      const req = decodeRequest(r.frame.pdu);
      if ('error' in req || req.fc !== 3) continue;
      const data = Buffer.alloc(req.quantity * 2);
      for (let i = 0; i < req.quantity; i++) data.writeUInt16BE(req.address + i, i * 2);
      const good = encodeRtu({ unitId: r.frame.unitId, pdu: encodeResponse({ fc: 3, data }) });
      setTimeout(() => {
        busy = false;
        for (const piece of opts.wrap ? opts.wrap(good) : [good]) stream.write(piece);
      }, opts.delayMs ?? 0);
    }
  });
  return seen;
}

if (havePeers(t, 'pymodbus', 'socat', 'stty')) {
  t.test('with pymodbus over RTU', async (t) => {
    const dev = await startPyModbusRtu(t, { units: [1], baud: 19200 });
    const props = rtuProps(dev.serialPort);

    await t.test('stty configures the line as the instance properties say', async (t) => {
      t.same(sttyArgs({ portName: '/dev/ttyS1', baudrate: 9600, databits: 8, stopbits: 1, parity: 'none' }).slice(0, 7),
        ['-F', '/dev/ttyS1', '9600', 'cs8', '-cstopb', '-parenb', 'raw']);
      t.same(sttyArgs({ portName: '/dev/ttyS1', baudrate: 19200, databits: 7, stopbits: 2, parity: 'odd' }).slice(2, 7),
        ['19200', 'cs7', 'cstopb', 'parenb', 'parodd']);
      const d = createDriver(t, props);
      await d.read([hr(1)]);
      const { execFileSync } = await import('node:child_process');
      const settings = execFileSync('stty', ['-F', dev.serialPort, '-a'], { encoding: 'utf8' });
      t.match(settings, /speed 19200 baud/);
      t.match(settings, /-parenb/);
      t.match(settings, /-echo\b/);
    });

    await t.test('acceptance over RTU: 50 channels, one request, values in all orders, a write lands', async (t) => {
      const fx = fiftyChannels();
      for (const f of fx) await dev.set(1, 'hr', f.address, f.registers);
      const d = createDriver(t, props);
      await dev.clearRequests();
      const results = await d.read(fx.map((f) => f.channel));
      t.same(await dev.received(), [{ unit: 1, fc: 3, address: 0, count: 100 }], 'one FC3 request for 100 registers');
      t.same(results.map((r) => (r.ok ? show(r.value) : r.error)), fx.map((f) => show(f.expected)));
      const w = await d.write([
        { channel: hr(150, 'INT64', 'LONG'), value: { type: 'LONG', value: 2n ** 62n + 3n } },
        { channel: hr(160), value: { type: 'INTEGER', value: 4242 } },
      ]);
      t.ok(w.every((x) => x.ok), w.map((x) => (x.ok ? 'ok' : x.error)).join(', '));
      t.same(await dev.get(1, 'hr', 149, 4), [0x4000, 0, 0, 3]);
      t.same(await dev.get(1, 'hr', 159, 1), [4242]);
      t.match(d.stats(), { crcErrors: 0, requests: 3, responses: 3 });
    });

    await t.test('conformance (Modbus RTU)', async (t) => {
      await runDriverConformance(t, {
        factory: modbusFactory,
        instanceProps: rtuProps(dev.serialPort, { 'modbus.timeout': 300, 'modbus.transaction.retry': 0 }),
        readable: [
          { channel: hr(300), expected: { type: 'INTEGER', value: -300 } },
          { channel: hr(301, 'UINT32', 'LONG'), expected: { type: 'LONG', value: 0x12345678n } },
        ],
        writable: [{ channel: hr(310, 'FLOAT32', 'FLOAT'), value: { type: 'FLOAT', value: Math.fround(3.3) }, alt: { type: 'FLOAT', value: -1 } }],
        bad: hr(4000),
        prepare: () => dev.set(1, 'hr', 299, [0x10000 - 300, 0x1234, 0x5678]),
        stopDevice: () => dev.stop(),
        startDevice: () => dev.start(),
      });
    });
  });

  t.test('noise and bad CRCs around a response are discarded and counted', async (t) => {
    const { driverSide, peerSide } = await startPtyPair(t);
    const seen = fakeDevice(t, peerSide, {
      wrap: (good) => {
        const bad = Buffer.from(good);
        bad[3] ^= 0xff; // same shape, wrong CRC
        return [Buffer.from([0x00, 0xff, 0x13]), bad, good];
      },
    });
    const d = createDriver(t, rtuProps(driverSide));
    const r = await d.read([hr(11), hr(12)]);
    t.same(r.map((x) => (x.ok ? x.value.value : x.error)), [10, 11]);
    t.equal(seen.requests, 1);
    t.match(d.stats(), { crcErrors: 1, discardedFrames: 1, responses: 1 });
  });

  t.test('only a bad CRC: a timeout, counted as a CRC error', async (t) => {
    const { driverSide, peerSide } = await startPtyPair(t);
    fakeDevice(t, peerSide, { wrap: (good) => [Buffer.concat([good.subarray(0, -1), Buffer.from([good[good.length - 1] ^ 1])])] });
    const d = createDriver(t, rtuProps(driverSide, { 'modbus.timeout': 200, 'modbus.transaction.retry': 1 }));
    const r = await d.read([hr(1)]);
    t.match(r, [{ ok: false, error: /Modbus RTU .*: no response from unit 1 within 200 ms \(2 attempts\)/ }]);
    t.match(d.stats(), { crcErrors: 2, timeouts: 2, retries: 1 });
  });

  t.test('two driver instances on one port: one transaction at a time', async (t) => {
    const { driverSide, peerSide } = await startPtyPair(t);
    const seen = fakeDevice(t, peerSide, { delayMs: 30 });
    const lines = new SharedLines();
    const a = createDriver(t, rtuProps(driverSide), 'a', lines);
    const b = createDriver(t, rtuProps(driverSide), 'b', lines);
    const reads = [];
    for (let i = 0; i < 3; i++) reads.push(a.read([hr(100 + i)]), b.read([hr(200 + i)]));
    const results = await Promise.all(reads);
    t.same(results.map((r) => (r[0].ok ? r[0].value.value : r[0].error)), [99, 199, 100, 200, 101, 201]);
    t.equal(seen.requests, 6);
    t.equal(seen.overlaps, 0, 'no request was sent while another was unanswered');
    await a.close();
    t.match(await b.read([hr(5)]), [{ ok: true, value: { value: 4 } }], 'closing one instance leaves the line to the other');
    t.same(lines.keys(), [`modbus-rtu:${driverSide}`], 'one line held by the pool');
    await b.close();
    t.same(lines.keys(), [], 'the last instance closes the line');
  });

  t.test('a missing serial port is a per-channel error naming it', async (t) => {
    const d = createDriver(t, rtuProps('/nonexistent/ttyX'));
    const r = await d.read([hr(1), hr(2)]);
    t.match(r, [{ ok: false, error: /^Modbus RTU \/nonexistent\/ttyX: .*cannot open: .*No such file or directory/ }, { ok: false }]);
  });
}
