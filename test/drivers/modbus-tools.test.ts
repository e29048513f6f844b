// Commissioning tools of a Modbus driver instance through the real daemon against pymodbus
// (docs/rest-api.md "drivers", docs/drivers.md "Commissioning tools"): the probe (any table,
// address, count, data type, word order and unit, raw and decoded; a write only when confirmed),
// and the hostile requests it must refuse with a clear 400/404/409.
import t from 'tap';
import { startDaemon, type Daemon } from '../helpers/daemon.js';
import { basic } from '../helpers/session-client.js';
import { havePeers, startPyModbusRtu, startPyModbusTcp } from '../helpers/pymodbus.js';

const IDENTITIES = {
  operator: { password: 'secret123', permissions: ['rest.assets'], passwordChangeNeeded: false },
  viewer: { password: 'secret123', permissions: ['rest.system'], passwordChangeNeeded: false },
};

function tools(d: Daemon, who = 'operator') {
  const c = basic(d, who, 'secret123');
  return {
    probe: (pid: string, body: unknown) => c.request(`/services/drivers/${pid}/_probe`, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
    get: (path: string) => c.request(`/services/drivers/${path}`),
    request: c.request.bind(c),
  };
}

t.test('probe over Modbus TCP', async (t) => {
  if (!havePeers(t, 'pymodbus')) return;
  const dev = await startPyModbusTcp(t, { units: [1, 7] });
  await dev.set(1, 'hr', 9, [0x4148, 0x0000]); // 12.5 as FLOAT32 ABCD at memory.address 10
  await dev.set(7, 'ir', 0, [0x0000, 0x0001, 0xffff]);
  await dev.set(1, 'co', 4, [true, false, true]);
  await dev.set(1, 'hr', 99, [0x6869, 0x2100]); // "hi!"
  const d = await startDaemon(t, {
    identities: IDENTITIES,
    drivers: {
      plc: { factory: 'modbus', 'access.type': 'TCP', 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': dev.port, 'modbus.timeout': 300, 'modbus.transaction.retry': 0 },
      sim: { factory: 'simulator' },
      ghost: { factory: 'nosuchfactory' },
    },
  });
  const op = tools(d);

  t.test('reads: raw registers or bits beside the decoded value', async (t) => {
    let r = await op.probe('plc', { 'unit.id': 1, 'primary.table': 'HOLDING_REGISTERS', 'memory.address': 10, 'data.type': 'FLOAT32' });
    t.equal(r.status, 200, r.body);
    t.same(r.json(), { registers: [0x4148, 0], value: 12.5, valueType: 'FLOAT' });
    r = await op.probe('plc', { 'unit.id': 1, 'primary.table': 'HOLDING_REGISTERS', 'memory.address': 10, 'data.type': 'FLOAT32', 'data.order': 'LITTLE_ENDIAN_BYTE_SWAP' });
    t.same(r.json().registers, [0x4148, 0], 'the same registers');
    t.not(r.json().value, 12.5, 'decoded in the word order asked for');
    r = await op.probe('plc', { 'unit.id': 7, 'primary.table': 'INPUT_REGISTERS', 'memory.address': 1, 'data.type': 'UINT32', count: 3 });
    t.same(r.json(), { registers: [0, 1, 0xffff], value: 1, valueType: 'LONG' }, 'count reads more registers than the value takes');
    r = await op.probe('plc', { 'unit.id': 1, 'primary.table': 'COILS', 'memory.address': 5, count: 3 });
    t.same(r.json(), { bits: [true, false, true], value: true, valueType: 'BOOLEAN' });
    r = await op.probe('plc', { 'primary.table': 'HOLDING_REGISTERS', 'memory.address': 100, 'data.type': 'STRING', 'array.data.length': 2 });
    t.same(r.json(), { registers: [0x6869, 0x2100], value: 'hi!', valueType: 'STRING' });
    r = await op.probe('plc', { 'primary.table': 'HOLDING_REGISTERS', 'memory.address': 1, 'data.type': 'INT64', 'value.type': 'LONG' });
    t.equal(r.status, 200);
    t.match(r.body, /"value":0,/, 'a LONG is a JSON number');
    r = await op.probe('plc', { 'primary.table': 'HOLDING_REGISTERS', 'memory.address': 1, count: 125 });
    t.equal(r.json().registers.length, 125, 'the Modbus maximum of 125 registers');
    r = await op.probe('plc', { 'primary.table': 'COILS', 'memory.address': 1, count: 2000 });
    t.equal(r.status, 502, 'the maximum of 2000 bits is sent (the device has fewer)');
  });

  t.test('device failures are 502 {"error"}', async (t) => {
    let r = await op.probe('plc', { 'unit.id': 1, 'primary.table': 'HOLDING_REGISTERS', 'memory.address': 5000 });
    t.equal(r.status, 502);
    t.match(r.json(), { error: /Modbus exception 2 \(ILLEGAL DATA ADDRESS\) for reading HOLDING_REGISTERS 5000 on unit 1/ });
    r = await op.probe('plc', { 'unit.id': 9, 'primary.table': 'HOLDING_REGISTERS', 'memory.address': 1 });
    t.equal(r.status, 502, 'a unit that does not answer');
    t.match(r.json().error, /unit 9|no response|exception/);
  });

  t.test('a write only with "confirm": true', async (t) => {
    const before = await dev.get(1, 'hr', 199, 2);
    let r = await op.probe('plc', { 'primary.table': 'HOLDING_REGISTERS', 'memory.address': 200, 'data.type': 'INT32', value: 70000 });
    t.equal(r.status, 400);
    t.match(r.json().error, /"confirm": true/);
    t.same(await dev.get(1, 'hr', 199, 2), before, 'nothing written');
    r = await op.probe('plc', { 'primary.table': 'HOLDING_REGISTERS', 'memory.address': 200, 'data.type': 'INT32', value: 70000, confirm: 'yes' });
    t.equal(r.status, 400, 'confirm must be the literal true');
    r = await op.probe('plc', { 'primary.table': 'HOLDING_REGISTERS', 'memory.address': 200, 'data.type': 'INT32', value: 70000, confirm: true });
    t.equal(r.status, 200, r.body);
    t.same(r.json(), { written: true, registers: [1, 4464], value: 70000, valueType: 'INTEGER' });
    t.same(await dev.get(1, 'hr', 199, 2), [1, 4464], 'the device holds it');
    r = await op.probe('plc', { 'primary.table': 'COILS', 'memory.address': 3, value: 'true', confirm: true });
    t.equal(r.status, 200, r.body);
    t.same(await dev.get(1, 'co', 2, 1), [1]);
    r = await op.probe('plc', { 'primary.table': 'INPUT_REGISTERS', 'memory.address': 1, value: 1, confirm: true });
    t.equal(r.status, 400, 'input registers cannot be written');
    r = await op.probe('plc', { 'primary.table': 'HOLDING_REGISTERS', 'memory.address': 1, 'data.type': 'INT16', value: 40000, confirm: true });
    t.equal(r.status, 400, 'out of range for INT16');
    t.match(r.json().error, /out of range/);
  });

  t.test('hostile requests: clear 400, 404, 409; roles', async (t) => {
    const bad: [string, unknown, RegExp][] = [
      ['address 0', { 'memory.address': 0 }, /memory\.address: 0 is out of range \(1\.\.65536\)/],
      ['address one past the table', { 'memory.address': 65537 }, /memory\.address/],
      ['two registers from the last address', { 'memory.address': 65536, 'data.type': 'INT32' }, /past the end/],
      ['126 registers', { 'memory.address': 1, count: 126 }, /count must be an integer 1\.\.125/],
      ['2001 bits', { 'primary.table': 'COILS', count: 2001 }, /count must be an integer 1\.\.2000/],
      ['count 0', { count: 0 }, /count/],
      ['count as text', { count: '5' }, /count/],
      ['unit 256', { 'unit.id': 256 }, /unit\.id: 256 is out of range \(0\.\.255\)/],
      ['an unknown table', { 'primary.table': 'REGISTERS' }, /primary\.table/],
      ['an unknown data type', { 'data.type': 'INT128' }, /data\.type/],
      ['an unknown key', { 'memory.adress': 3 }, /unknown key "memory\.adress"/],
      ['a STRING without its length', { 'data.type': 'STRING' }, /array\.data\.length/],
      ['an unknown value type', { 'value.type': 'WORD' }, /value\.type/],
    ];
    for (const [what, body, re] of bad) {
      const r = await op.probe('plc', body);
      t.equal(r.status, 400, what);
      t.match(r.json().error, re, `${what}: ${r.json().error}`);
    }
    for (const body of ['[]', '"x"', 'null', '{"a":']) {
      const r = await op.request('/services/drivers/plc/_probe', { method: 'POST', body, headers: { 'content-type': 'application/json' } });
      t.equal(r.status, 400, `body ${body}`);
      t.type(r.json().error, 'string');
    }
    let r = await op.probe('nope', {});
    t.equal(r.status, 404);
    t.same(r.json(), { error: 'Driver not found: nope' });
    r = await op.probe('sim', {});
    t.equal(r.status, 409, 'the simulator has no probe');
    t.match(r.json().error, /simulator driver sim has no probe tool/);
    r = await op.probe('ghost', {});
    t.equal(r.status, 409);
    t.match(r.json().error, /not attached/);
    t.equal((await tools(d, 'viewer').probe('plc', {})).status, 403, 'rest.system may not probe');
    t.equal((await d.request('/services/drivers/plc/_probe', { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } })).status, 401);
    r = await op.request('/services/drivers/plc/_probe', { method: 'POST', body: 'memory.address=1', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
    t.equal(r.status, 415, 'a form post (another site) is refused');
  });
});

t.test('probes on an RTU line go through its queue: no frame of a poll is interleaved', async (t) => {
  if (!havePeers(t, 'pymodbus', 'socat', 'stty')) return;
  const dev = await startPyModbusRtu(t, { units: [1, 2], baud: 19200 });
  await dev.set(1, 'hr', 0, [11, 12, 13, 14]);
  await dev.set(2, 'hr', 0, [21, 22]);
  const d = await startDaemon(t, {
    identities: IDENTITIES,
    drivers: { line: { factory: 'modbus', 'access.type': 'RTU', 'modbus.rtu.port.name': dev.serialPort, 'modbus.rtu.baudrate': 19200, 'modbus.timeout': 500, 'modbus.transaction.retry': 0 } },
    assets: {
      meter: {
        'driver.pid': 'line',
        'poll.interval': 20,
        channels: { a: { type: 'READ', 'value.type': 'INTEGER', 'unit.id': 1, 'memory.address': 1 }, b: { type: 'READ', 'value.type': 'INTEGER', 'unit.id': 1, 'memory.address': 4 } },
      },
    },
  });
  const op = tools(d);
  const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => op.probe('line', { 'unit.id': 1 + (i % 2), 'memory.address': 1 + (i % 2), 'primary.table': 'HOLDING_REGISTERS' })));
  answers.forEach((r, i) => t.same(r.json(), { registers: [i % 2 ? 22 : 11], value: i % 2 ? 22 : 11, valueType: 'INTEGER' }, `probe ${i}`));
  const status = (await op.request('/services/assets/meter/_status')).json();
  t.ok(status.polls > 0, 'the asset polled meanwhile');
  t.equal(status.devices[0].timeouts, 0, 'no poll lost its answer to a probe');
});
