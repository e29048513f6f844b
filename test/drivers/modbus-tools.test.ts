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

t.test('request log, connection failures and inter.request.delay', async (t) => {
  if (!havePeers(t, 'pymodbus')) return;
  const dev = await startPyModbusTcp(t, { units: [1, 2] });
  const d = await startDaemon(t, {
    identities: IDENTITIES,
    drivers: {
      plc: { factory: 'modbus', 'access.type': 'TCP', 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': dev.port, 'modbus.timeout': 300, 'modbus.transaction.retry': 0 },
      slow: { factory: 'modbus', 'access.type': 'TCP', 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': dev.port, 'inter.request.delay': 60, 'modbus.timeout': 300 },
      // Nothing listens on port 1: every attempt is refused.
      dead: { factory: 'modbus', 'access.type': 'TCP', 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': 1, 'modbus.timeout': 300, 'modbus.transaction.retry': 0, 'unit.backoff.max': 0 },
    },
    assets: {
      gone: { 'driver.pid': 'dead', 'poll.interval': 50, channels: { a: { type: 'READ', 'value.type': 'INTEGER', 'unit.id': 4, 'memory.address': 1 } } },
      paced: {
        'driver.pid': 'slow',
        'poll.interval': 20,
        channels: { a: { type: 'READ', 'value.type': 'INTEGER', 'unit.id': 1, 'memory.address': 1 }, b: { type: 'READ', 'value.type': 'INTEGER', 'unit.id': 2, 'memory.address': 1 } },
      },
    },
  });
  const op = tools(d);

  t.test('the log: newest last, fields of each exchange, frames on demand, bounded', async (t) => {
    await op.probe('plc', { 'unit.id': 2, 'memory.address': 7, count: 3 });
    await op.probe('plc', { 'unit.id': 1, 'memory.address': 9000 });
    let r = await op.get('plc/_log');
    t.equal(r.status, 200);
    const log = r.json();
    t.equal(log.length, 2);
    t.match(log[0], { unit: 2, function: 3, address: 7, count: 3, result: 'ok', latencyMs: Number, time: Number });
    t.match(log[1], { unit: 1, function: 3, address: 9000, count: 1, result: 'exception', exception: 2 });
    t.notOk('request' in log[0], 'no frames unless asked');
    r = await op.get('plc/_log?frames=true');
    t.equal(r.json()[0].request, '030006' + '0003', 'the request PDU in hex');
    t.match(r.json()[0].response, /^0306/, 'the response PDU: function 3, 6 bytes');
    t.equal((await op.get('plc/_log?frames=maybe')).status, 400);
    for (let i = 0; i < 205; i++) await op.probe('plc', { 'memory.address': 1 + i });
    const all = (await op.get('plc/_log')).json();
    t.equal(all.length, 200, 'a ring of 200 exchanges');
    t.equal(all[199].address, 205, 'the newest last');
    t.equal(all[0].address, 6, 'the oldest dropped');
    t.equal((await tools(d, 'viewer').get('plc/_log')).status, 403);
    t.equal((await op.get('nope/_log')).status, 404);
  });

  t.test('connection failures are counted per unit and logged', async (t) => {
    const deadline = Date.now() + 10_000;
    let dev4: { requests: number; responses: number; timeouts: number; connectionFailures: number } | undefined;
    while (Date.now() < deadline) {
      dev4 = (await op.request('/services/assets/gone/_status')).json().devices[0];
      if (dev4 && dev4.connectionFailures >= 3) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    t.ok(dev4 && dev4.connectionFailures >= 3, `refused connections counted: ${JSON.stringify(dev4)}`);
    t.equal(dev4!.requests, dev4!.responses + dev4!.timeouts + dev4!.connectionFailures, 'every attempt falls in one category');
    const log = (await op.get('dead/_log')).json();
    t.match(log.at(-1), { unit: 4, result: 'error', error: /ECONNREFUSED|refused/ });
  });

  t.test('inter.request.delay keeps silence between exchanges on the line', async (t) => {
    await new Promise((r) => setTimeout(r, 1500));
    const log = (await op.get('slow/_log')).json() as { time: number; latencyMs: number }[];
    t.ok(log.length >= 4, `${log.length} exchanges`);
    for (let i = 1; i < log.length; i++) {
      const gap = log[i]!.time - (log[i - 1]!.time + log[i - 1]!.latencyMs);
      // 2 ms for the two clocks' rounding; load only makes the gap longer.
      if (gap < 58) t.fail(`exchange ${i} started ${gap} ms after the previous one ended`);
    }
    t.pass('every gap at least the delay');
    const plain = (await op.get('plc/_log')).json() as { time: number }[];
    t.ok(plain.length > 0, 'the other line keeps no delay (it has its own log)');
  });
});

t.test('inter.request.delay: its maximum, and one past it', async (t) => {
  const { runCli } = await import('../helpers/daemon.js');
  const fs = await import('node:fs');
  const os = await import('node:os');
  const path = await import('node:path');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-delay-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  for (const [value, ok] of [[10000, true], [10001, false], [-1, false], ['50', false]] as const) {
    const file = path.join(dir, 'c.json');
    fs.writeFileSync(file, JSON.stringify({ drivers: { plc: { factory: 'modbus', 'modbus.tcp-udp.ip': '127.0.0.1', 'inter.request.delay': value } } }));
    const r = runCli(['check-config', '--config', file]);
    t.equal(r.status, ok ? 0 : 1, `${JSON.stringify(value)}: ${r.stdout.trim().split('\n').find((l) => l.includes('inter.request.delay')) ?? 'accepted'}`);
  }
});

t.test('Read Device Identification (FC 43 / MEI 14)', async (t) => {
  if (!havePeers(t, 'pymodbus')) return;
  const identity = {
    VendorName: 'Acme Pumps', ProductCode: 'P-7', MajorMinorRevision: '2.4',
    // Long regular objects: together they do not fit one response, so the device says "more follows".
    VendorUrl: `https://acme.example/${'u'.repeat(90)}`, ProductName: `Pump ${'p'.repeat(90)}`, ModelName: `M ${'m'.repeat(90)}`, UserApplicationName: 'station 3',
  };
  const dev = await startPyModbusTcp(t, { units: [1], identity });
  // A device without function 43 answers exception 1 (ILLEGAL FUNCTION); pymodbus implements it,
  // so this one is played by the test: every request gets that exception.
  const net = await import('node:net');
  const refusing = net.createServer((sock) => sock.on('data', (b) => {
    if (b.length >= 8) sock.write(Buffer.concat([b.subarray(0, 4), Buffer.from([0, 3, b[6]!, b[7]! | 0x80, 1])]));
  }));
  await new Promise<void>((r) => refusing.listen(0, '127.0.0.1', r));
  t.teardown(() => refusing.close());
  const d = await startDaemon(t, {
    identities: IDENTITIES,
    drivers: {
      plc: { factory: 'modbus', 'access.type': 'TCP', 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': dev.port, 'modbus.timeout': 500, 'modbus.transaction.retry': 0 },
      old: { factory: 'modbus', 'access.type': 'TCP', 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': (refusing.address() as { port: number }).port, 'modbus.timeout': 500 },
      sim: { factory: 'simulator' },
    },
  });
  const op = tools(d);
  let r = await op.get('plc/units/1/identification');
  t.equal(r.status, 200, r.body);
  t.same(r.json(), identity, 'the basic objects, then the regular ones');
  const log = (await op.get('plc/_log')).json().filter((e: { function: number }) => e.function === 43);
  t.ok(log.length >= 3, `one basic and several regular requests (${log.length}): the streams read to their end`);
  r = await op.get('old/units/1/identification');
  t.equal(r.status, 502);
  t.match(r.json().error, /Modbus exception 1 \(ILLEGAL FUNCTION\) for reading the device identification on unit 1/);
  for (const unit of ['256', '-1', 'x', '1.5', '0001']) {
    r = await op.get(`plc/units/${unit}/identification`);
    t.equal(r.status, 400, `unit ${unit}`);
    t.match(r.json().error, /unit must be an integer 0\.\.255/);
  }
  t.equal((await op.get('plc/units/255/identification')).status, 502, 'unit 255 is asked (no answer)');
  t.equal((await op.get('nope/units/1/identification')).status, 404);
  t.equal((await op.get('sim/units/1/identification')).status, 409);
  t.equal((await tools(d, 'viewer').get('plc/units/1/identification')).status, 403);
});

t.test('scan: the units that answer, progress, cancel, one per line, between the polls', async (t) => {
  if (!havePeers(t, 'pymodbus')) return;
  const dev = await startPyModbusTcp(t, { units: [1, 3, 5], identity: { VendorName: 'Acme', ProductCode: 'P-7', MajorMinorRevision: '1.0' } });
  const d = await startDaemon(t, {
    identities: IDENTITIES,
    drivers: {
      plc: { factory: 'modbus', 'access.type': 'TCP', 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': dev.port, 'modbus.timeout': 200, 'modbus.transaction.retry': 0 },
      sim: { factory: 'simulator' },
    },
    assets: { pump: { 'driver.pid': 'plc', 'poll.interval': 20, channels: { a: { type: 'READ', 'value.type': 'INTEGER', 'unit.id': 1, 'memory.address': 2 } } } },
  });
  const op = tools(d);
  const post = (pid: string, body: unknown) => op.request(`/services/drivers/${pid}/_scan`, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  const until = async (pid: string, id: string) => {
    for (let i = 0; i < 300; i++) {
      const s = (await op.get(`${pid}/_scan/${id}`)).json();
      if (s.state !== 'RUNNING') return s;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error('scan did not end');
  };

  let r = await post('plc', { units: [1, 6], identify: true });
  t.equal(r.status, 202, r.body);
  const { id } = r.json();
  t.match(r.headers.location, `/services/drivers/plc/_scan/${id}`);
  t.equal((await post('plc', { units: [1, 2] })).status, 409, 'one scan per line at a time');
  const running = (await op.get(`plc/_scan/${id}`)).json();
  t.ok(running.progress >= 0 && running.progress <= 1, 'progress between 0 and 1');
  const done = await until('plc', id);
  t.equal(done.state, 'DONE');
  t.equal(done.progress, 1);
  t.same(done.found.map((f: { unit: number }) => f.unit), [1, 3, 5], 'the units that answer');
  t.same(done.found[1].identification, { VendorName: 'Acme', ProductCode: 'P-7', MajorMinorRevision: '1.0' });
  // Never more than one scan request before the line's polls get their turn again.
  const log = (await op.get('plc/_log')).json() as { unit: number; function: number; address: number }[];
  const scanAt = log.map((e, i) => (e.function === 3 && e.address === 1 ? i : -1)).filter((i) => i >= 0);
  t.ok(scanAt.length >= 4, 'the scan requests are in the log');
  for (let k = 1; k < scanAt.length; k++) {
    const between = log.slice(scanAt[k - 1]! + 1, scanAt[k]!);
    if (!between.some((e) => e.unit === 1 && e.address === 2)) t.fail(`scan requests ${k - 1} and ${k} with no poll between`);
  }
  t.pass('a poll between every two scan requests');

  r = await post('plc', { units: [0, 255] });
  const big = r.json().id;
  await new Promise((r) => setTimeout(r, 300));
  r = await op.request(`/services/drivers/plc/_scan/${big}`, { method: 'DELETE' });
  t.equal(r.status, 200);
  t.equal(r.json().state, 'CANCELLED');
  const progress = r.json().progress;
  t.ok(progress < 1, `stopped part way (${progress})`);
  await new Promise((r) => setTimeout(r, 500));
  t.equal((await op.get(`plc/_scan/${big}`)).json().progress, progress, 'and sends nothing more');
  t.equal((await post('plc', { units: [1, 1] })).status, 202, 'the line is free for another scan');

  const bad: [unknown, RegExp][] = [
    [{ units: [0, 256] }, /units must be \[from, to\], integers 0\.\.255/],
    [{ units: [-1, 3] }, /units/],
    [{ units: [5, 1] }, /from <= to/],
    [{ units: [1] }, /units/],
    [{}, /units/],
    [{ units: [1, 2], identify: 'yes' }, /identify/],
    [{ units: [1, 2], baudRates: [9600] }, /baudRates and parities sweep a serial line: a Modbus TCP device has none/],
    [{ units: [1, 2], speed: 1 }, /unknown key "speed"/],
  ];
  for (const [body, re] of bad) {
    const r = await post('plc', body);
    t.equal(r.status, 400, JSON.stringify(body));
    t.match(r.json().error, re);
  }
  t.equal((await op.get('plc/_scan/nope')).status, 404);
  t.equal((await op.request('/services/drivers/plc/_scan/nope', { method: 'DELETE' })).status, 404);
  t.equal((await post('sim', { units: [1, 2] })).status, 409);
  t.equal((await post('nope', { units: [1, 2] })).status, 404);
  t.equal((await tools(d, 'viewer').get(`plc/_scan/${id}`)).status, 403);
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
