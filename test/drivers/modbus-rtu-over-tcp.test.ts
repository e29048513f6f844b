// Modbus RTU over TCP (access.type RTU_OVER_TCP): a converter (a TCP server relaying to a pty) in
// front of a pymodbus RTU device on a socat pty pair, as a cheap serial-to-Ethernet box passes
// RTU frames (CRC included) over TCP. Several unit ids share the one connection.

import t, { type Test } from 'tap';
import os from 'node:os';
import { modbusFactory, type ModbusDriver } from '../../src/drivers/modbus/index.js';
import { SharedLines } from '../../src/drivers/lines.js';
import { silentLogger } from '../../src/log.js';
import { channel, runDriverConformance, show } from '../helpers/driver-conformance.js';
import { havePeers, startPyModbusRtu, startRtuConverter } from '../helpers/pymodbus.js';

const hr = (unit: number, addr: number, dataType = 'INT16', valueType: 'INTEGER' | 'LONG' | 'FLOAT' = 'INTEGER') =>
  channel(`u${unit}hr${addr}`, valueType, { 'unit.id': unit, 'memory.address': addr, 'data.type': dataType });

if (havePeers(t, 'pymodbus', 'socat', 'stty')) {
  const dev = await startPyModbusRtu(t, { units: [1, 2, 3], baud: 19200 });
  const port = await startRtuConverter(t, dev.serialPort);
  const props = (extra: Record<string, unknown> = {}) => ({ 'access.type': 'RTU_OVER_TCP', 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': port, 'modbus.timeout': 1000, ...extra });
  const create = (tt: Test, extra: Record<string, unknown> = {}, lines = new SharedLines(), id = 'conv'): ModbusDriver => {
    const d = modbusFactory.create(props(extra), { id, log: silentLogger, dataDir: os.tmpdir(), lines });
    tt.teardown(() => d.close());
    return d;
  };

  t.test('three units over one TCP connection, RTU frames with CRC', async (t) => {
    for (const u of [1, 2, 3]) await dev.set(u, 'hr', 0, [100 * u, 0x1234, 0x5678]);
    const d = create(t);
    await dev.clearRequests();
    const r = await d.read([hr(1, 1), hr(2, 1), hr(3, 2, 'UINT32', 'LONG'), hr(1, 2, 'INT32')]);
    t.same(r.map((x) => (x.ok ? show(x.value) : x.error)), ['INTEGER:100', 'INTEGER:200', 'LONG:305419896n', 'INTEGER:305419896']);
    t.same((await dev.received()).map((q) => [q.unit, q.fc]).sort(), [[1, 3], [2, 3], [3, 3]], 'one request per unit (unit 1 coalesced)');
    t.match(d.stats(), { connects: 1, crcErrors: 0, requests: 3, responses: 3 });
    t.match(d.devices(), [{ unit: 1, requests: 1, responses: 1 }, { unit: 2, requests: 1 }, { unit: 3, requests: 1 }]);
    const w = await d.write([{ channel: hr(2, 10, 'INT32'), value: { type: 'INTEGER', value: -70000 } }]);
    t.ok(w[0].ok, w[0].ok ? 'written' : w[0].error);
    t.same(await dev.get(2, 'hr', 9, 2), [0xfffe, 0xee90]);
  });

  t.test('two driver instances naming one converter share its connection', async (t) => {
    const lines = new SharedLines();
    const a = create(t, {}, lines, 'a');
    const b = create(t, {}, lines, 'b');
    const [ra, rb] = await Promise.all([a.read([hr(1, 1)]), b.read([hr(3, 1)])]);
    t.same([ra, rb].map((r) => (r[0].ok ? r[0].value.value : r[0].error)), [100, 300]);
    t.same(lines.keys(), [`modbus-rtu-tcp:127.0.0.1:${port}`]);
    t.equal(a.stats().connects, 1, 'one connection for both');
  });

  t.test('conformance (Modbus RTU over TCP)', async (t) => {
    // As in the daemon, the instances share the pool's lines; one instance kept open holds the
    // converter's connection, and it reads both units until they answer before the suite starts.
    const lines = new SharedLines();
    const keeper = create(t, { 'modbus.transaction.retry': 0, 'unit.backoff.max': 0 }, lines, 'keeper');
    for (let i = 0; ; i++) {
      const r = await keeper.read([hr(1, 1), hr(2, 1)]);
      if (r.every((x) => x.ok)) break;
      if (i === 20) return t.fail(`the converter does not answer both units: ${r.map((x) => (x.ok ? 'ok' : x.error)).join('; ')}`);
      await new Promise((res) => setTimeout(res, 250));
    }
    await runDriverConformance(t, {
      factory: { ...modbusFactory, create: (p, ctx) => modbusFactory.create(p, { ...ctx, lines }) },
      // 1 s: socat, a pty and pymodbus's RTU framing sit between driver and device; 300 ms was seen to be too short for a first answer.
      instanceProps: props({ 'modbus.timeout': 1000, 'modbus.transaction.retry': 0, 'unit.backoff.max': 0 }),
      readable: [
        { channel: hr(1, 300), expected: { type: 'INTEGER', value: -300 } },
        { channel: hr(2, 301, 'UINT32', 'LONG'), expected: { type: 'LONG', value: 0x12345678n } },
      ],
      writable: [{ channel: hr(1, 310, 'FLOAT32', 'FLOAT'), value: { type: 'FLOAT', value: Math.fround(3.3) }, alt: { type: 'FLOAT', value: -1 } }],
      bad: hr(1, 4000),
      prepare: async () => {
        await dev.set(1, 'hr', 299, [0x10000 - 300]);
        await dev.set(2, 'hr', 300, [0x1234, 0x5678]);
      },
      stopDevice: () => dev.stop(),
      startDevice: () => dev.start(),
    });
  });
}
