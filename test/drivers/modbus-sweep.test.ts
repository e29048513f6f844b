// The RTU baud/parity sweep of a scan (docs/drivers.md "Commissioning tools") through the real
// daemon on a socat pty pair. A pty passes bytes whatever its termios says, so the device on the far
// end (termios_responder.py) reads the termios of the driver's end for every request and answers
// only at the rate it was told to: the sweep finds it only if it really set the port to that rate
// for that request, and the device's log of the settings it saw is the proof of each combination
// and of the line's own settings for its polls in between. Linux ptys clear PARENB, so parity is
// proved only as far as a pty allows: the port refuses even and odd, and the sweep says so. The
// first test shows the premise: pymodbus at one rate answers a driver at another on a pty.
import t, { type Test } from 'tap';
import { spawn, execFileSync } from 'node:child_process';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { startDaemon, type Daemon } from '../helpers/daemon.js';
import { basic } from '../helpers/session-client.js';
import { havePeers, startPtyPair, startPyModbusRtu } from '../helpers/pymodbus.js';
import { modbusFactory } from '../../src/drivers/modbus/index.js';
import { SharedLines } from '../../src/drivers/lines.js';
import { silentLogger } from '../../src/log.js';
import { channel } from '../helpers/driver-conformance.js';
import os from 'node:os';

const RESPONDER = path.join(path.dirname(fileURLToPath(import.meta.url)), '../helpers/termios_responder.py');
const IDENTITIES = { operator: { password: 'secret123', permissions: ['rest.assets'], passwordChangeNeeded: false } };

interface Seen { unit: number; fc: number; address: number; baud: number; parity: string; answered: boolean }

/** The device: answers [unit, baud, parity] triples only; `seen` is every request with the settings it was read at. */
async function responder(t: Test, peerSide: string, driverSide: string, answer: [number, number, string][]) {
  const proc = spawn('/usr/bin/python3', [RESPONDER, '--pty', peerSide, '--watch', driverSide, '--answer', JSON.stringify(answer)], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.teardown(() => proc.kill());
  const seen: Seen[] = [];
  await new Promise<void>((resolve, reject) => {
    proc.once('exit', (code) => reject(new Error(`responder exited with ${code}`)));
    readline.createInterface({ input: proc.stdout! }).on('line', (line) => {
      const m = JSON.parse(line);
      if (m.ready) resolve();
      else seen.push(m);
    });
  });
  return seen;
}

function client(d: Daemon) {
  const c = basic(d, 'operator', 'secret123');
  const post = (pid: string, body: unknown) => c.request(`/services/drivers/${pid}/_scan`, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  const get = (p: string) => c.request(`/services/drivers/${p}`);
  const until = async (pid: string, id: string) => {
    for (let i = 0; i < 300; i++) {
      const s = (await get(`${pid}/_scan/${id}`)).json();
      if (s.state !== 'RUNNING') return s;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error('scan did not end');
  };
  return { post, get, until, request: c.request.bind(c) };
}

const speed = (port: string) => /speed (\d+) baud/.exec(execFileSync('stty', ['-F', port], { encoding: 'utf8' }))?.[1];

if (havePeers(t, 'pymodbus', 'socat', 'stty')) {
  t.test('why the device reads termios: pymodbus at 4800 baud on a pty answers a driver at 19200', async (t) => {
    const dev = await startPyModbusRtu(t, { units: [3], baud: 4800 });
    await dev.set(3, 'hr', 0, [4321]);
    const d = modbusFactory.create({ 'access.type': 'RTU', 'modbus.rtu.port.name': dev.serialPort, 'modbus.rtu.baudrate': 19200, 'modbus.timeout': 500 }, { id: 'rtu', log: silentLogger, dataDir: os.tmpdir(), lines: new SharedLines() });
    t.teardown(() => d.close());
    const [r] = await d.read([channel('a', 'INTEGER', { 'unit.id': 3, 'memory.address': 1 })]);
    t.match(r, { ok: true, value: { value: 4321 } }, 'the rates differ and the bytes still pass: a pty does not enforce a rate');
  });

  t.test('a sweep finds a silent unit at the one rate it answers at; polls go on between, at the line\'s settings', async (t) => {
    const { driverSide, peerSide } = await startPtyPair(t);
    // Unit 1 is the line's polled device, at the line's 19200; unit 5 speaks only 4800.
    const seen = await responder(t, peerSide, driverSide, [[1, 19200, 'none'], [5, 4800, 'none']]);
    const d = await startDaemon(t, {
      identities: IDENTITIES,
      drivers: {
        // 400 ms: the device is a Python process that reads termios for every request; on a loaded
        // machine (browser tests beside it) its answer to a poll once took longer than 150 ms.
        line: { factory: 'modbus', 'access.type': 'RTU', 'modbus.rtu.port.name': driverSide, 'modbus.rtu.baudrate': 19200, 'modbus.timeout': 400, 'modbus.transaction.retry': 0 },
        tcp: { factory: 'modbus', 'access.type': 'TCP', 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': 1 },
        conv: { factory: 'modbus', 'access.type': 'RTU_OVER_TCP', 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': 1 },
      },
      assets: { meter: { 'driver.pid': 'line', 'poll.interval': 20, channels: { a: { type: 'READ', 'value.type': 'INTEGER', 'unit.id': 1, 'memory.address': 3 } } } },
    });
    const op = client(d);

    const plain = await op.until('line', (await op.post('line', { units: [4, 6] })).json().id);
    t.same(plain.found, [], 'at the line\'s own settings unit 5 is silent');

    const sweepStart = seen.length;
    let r = await op.post('line', { units: [4, 6], baudRates: [9600, 4800, 19200] });
    t.equal(r.status, 202, r.body);
    const done = await op.until('line', r.json().id);
    t.equal(done.state, 'DONE');
    t.equal(done.progress, 1);
    t.same(done.found, [{ unit: 5, baudRate: 4800, parity: 'none' }], 'found where the device answers, with its settings');
    const during = seen.slice(sweepStart);
    const swept = during.filter((s) => s.unit !== 1);
    t.same(swept.map((s) => [s.unit, s.baud]), [[4, 9600], [5, 9600], [6, 9600], [4, 4800], [5, 4800], [6, 4800], [4, 19200], [5, 19200], [6, 19200]],
      'every unit at every rate, each request read at its own rate on the port');
    const polls = during.filter((s) => s.unit === 1);
    // One between every two sweep requests (checked below): at least one fewer than the sweep's.
    t.ok(polls.length >= swept.length - 1, `the asset polled meanwhile (${polls.length} polls)`);
    t.same([...new Set(polls.map((s) => `${s.baud}/${s.parity}`))], ['19200/none'], 'every poll at the line\'s own settings: the port was set back each time');
    const at = during.map((s, i) => (s.unit !== 1 ? i : -1)).filter((i) => i >= 0);
    for (let k = 1; k < at.length; k++) {
      if (!during.slice(at[k - 1]! + 1, at[k]!).some((s) => s.unit === 1)) t.fail(`sweep requests ${k - 1} and ${k} with no poll between`);
    }
    t.pass('a poll between every two sweep requests');
    t.equal(speed(driverSide), '19200', 'the port is left at the line\'s rate');
    const log = (await op.get('line/_log')).json() as { unit: number; baudRate?: number; parity?: string; result: string }[];
    t.ok(log.some((e) => e.unit === 5 && e.baudRate === 4800 && e.parity === 'none' && e.result === 'ok'), 'the request log shows the settings of a sweep\'s exchange');
    t.ok(log.filter((e) => e.unit === 1).every((e) => e.baudRate === undefined), 'and none on the line\'s own');
    const status = (await op.request('/services/assets/meter/_status')).json();
    t.equal(status.devices[0].timeouts, 0, 'no poll lost its answer to the sweep');

    // Parity: a pty clears PARENB, so the port refuses even and odd; the sweep says so and goes on.
    const before = seen.length;
    r = await op.post('line', { units: [5, 6], baudRates: [4800], parities: ['even', 'none', 'odd'], identify: false });
    const mixed = await op.until('line', r.json().id);
    t.equal(mixed.state, 'DONE');
    t.equal(mixed.progress, 1, 'progress counts the refused combinations\' units too');
    t.same(mixed.found, [{ unit: 5, baudRate: 4800, parity: 'none' }]);
    t.match(mixed.errors, [
      { baudRate: 4800, parity: 'even', error: /cannot set 4800 baud, parity even: .*unable to perform all requested operations/ },
      { baudRate: 4800, parity: 'odd', error: /cannot set 4800 baud, parity odd/ },
    ]);
    t.equal(mixed.errors.length, 2);
    t.same(seen.slice(before).filter((s) => s.unit !== 1).map((s) => [s.unit, s.baud, s.parity]), [[5, 4800, 'none'], [6, 4800, 'none']], 'nothing sent at a combination the port refused');
    t.equal(speed(driverSide), '19200');
    const after = seen.length;
    await new Promise((r) => setTimeout(r, 300));
    t.ok(seen.slice(after).some((s) => s.unit === 1 && s.baud === 19200), 'the line still polls');

    // With identification: read at the settings the unit was found at, the line's polls between.
    const identStart = seen.length;
    r = await op.post('line', { units: [4, 6], baudRates: [9600, 4800], identify: true });
    const ident = await op.until('line', r.json().id);
    t.equal(ident.state, 'DONE');
    t.same(ident.found, [{ unit: 5, baudRate: 4800, parity: 'none', identification: { VendorName: 'Unit 5', ProductCode: 'P-4800', MajorMinorRevision: '1.0' } }],
      'the unit found, with the identification it gave at 4800 baud');
    const identDuring = seen.slice(identStart);
    t.same(identDuring.filter((s) => s.fc === 0x2b).map((s) => [s.unit, s.baud, s.parity, s.answered]), [[5, 4800, 'none', true]], 'one identification request, at the found unit\'s rate');
    const identAt = identDuring.map((s, i) => (s.unit !== 1 ? i : -1)).filter((i) => i >= 0);
    for (let k = 1; k < identAt.length; k++) {
      if (!identDuring.slice(identAt[k - 1]! + 1, identAt[k]!).some((s) => s.unit === 1)) t.fail(`scan requests ${k - 1} and ${k} (identification included) with no poll between`);
    }
    t.same([...new Set(identDuring.filter((s) => s.unit === 1).map((s) => `${s.baud}/${s.parity}`))], ['19200/none'], 'the polls meanwhile at the line\'s own settings');
    t.equal(speed(driverSide), '19200', 'the port is back at the line\'s rate');

    // Cancel mid-sweep: 8 rates × 20 units.
    r = await op.post('line', { units: [10, 29], baudRates: [1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200] });
    const id = r.json().id;
    await new Promise((r) => setTimeout(r, 700));
    r = await op.request(`/services/drivers/line/_scan/${id}`, { method: 'DELETE' });
    t.equal(r.json().state, 'CANCELLED');
    const progress = r.json().progress;
    t.ok(progress > 0 && progress < 1, `stopped part way (${progress}, in steps of 1/160)`);
    t.ok(Math.abs(progress * 160 - Math.round(progress * 160)) < 1e-9, 'progress counts combinations × units');
    // The request in flight at the DELETE (sent, not yet answered or timed out: not in progress)
    // ends on its own; the device's report of it may come a little later. Then nothing more.
    await new Promise((r) => setTimeout(r, 400));
    const sweptBy = seen.filter((s) => s.unit >= 10).length;
    const finished = Math.round(progress * 160);
    t.ok(sweptBy >= finished && sweptBy <= finished + 1, `${sweptBy} swept: the ${finished} done and at most the one in flight at the cancel`);
    await new Promise((r) => setTimeout(r, 500));
    t.equal(seen.filter((s) => s.unit >= 10).length, sweptBy, 'nothing more is swept');
    t.equal((await op.get(`line/_scan/${id}`)).json().progress, progress);
    t.equal(speed(driverSide), '19200', 'the port is back at the line\'s rate');

    const bad: [string, unknown, number, RegExp][] = [
      ['a rate below the list', { units: [1, 2], baudRates: [600] }, 400, /baudRates must be a non-empty list of 1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200/],
      ['a rate above it', { units: [1, 2], baudRates: [230400] }, 400, /baudRates/],
      ['a rate as text', { units: [1, 2], baudRates: ['9600'] }, 400, /baudRates/],
      ['no rates', { units: [1, 2], baudRates: [] }, 400, /non-empty/],
      ['a rate twice', { units: [1, 2], baudRates: [9600, 9600] }, 400, /twice/],
      ['not a list', { units: [1, 2], parities: 'even' }, 400, /parities must be a non-empty list of none, even, odd/],
      ['mark parity', { units: [1, 2], parities: ['mark'] }, 400, /parities/],
      ['too many requests', { units: [1, 247], baudRates: [9600, 19200, 38400, 57600, 115200], parities: ['none'] }, 400, /5 combinations × 247 units is 1235 requests; at most 1000/],
      ['too many, by parities alone', { units: [1, 247], parities: ['none', 'even', 'odd', 'none'] }, 400, /twice/],
    ];
    for (const [what, body, status, re] of bad) {
      const res = await op.post('line', body);
      t.equal(res.status, status, what);
      t.match(res.json().error, re, `${what}: ${res.json().error}`);
    }
    r = await op.post('line', { units: [1, 200], baudRates: [9600, 19200, 4800, 2400, 1200] });
    t.equal(r.status, 202, '5 × 200 = 1000 requests is allowed');
    await op.request(`/services/drivers/line/_scan/${r.json().id}`, { method: 'DELETE' });
    r = await op.post('tcp', { units: [1, 2], baudRates: [9600] });
    t.equal(r.status, 400);
    t.match(r.json().error, /a Modbus TCP device has none/);
    r = await op.post('conv', { units: [1, 2], parities: ['even'] });
    t.equal(r.status, 400);
    t.match(r.json().error, /the converter owns the serial settings/);
  });
}
