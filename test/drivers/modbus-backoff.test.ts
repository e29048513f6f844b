// One dead unit must not stall the line: five units behind one Modbus TCP connection (pymodbus),
// polled by the asset runtime as five assets. With one unit silent, the other four keep their poll
// rate (within 20 %) thanks to the per-unit back-off; without it (unit.backoff.max 0) every poll
// of the dead unit holds the line for a timeout and the others slow down. Rates are ratios of
// counts measured in the same run against the same device, never wall-clock asserts.

import t from 'tap';
import { AssetRuntime } from '../../src/assets/service.js';
import { DriverPool } from '../../src/assets/driver-pool.js';
import { DriverRegistry } from '../../src/drivers/registry.js';
import { modbusFactory } from '../../src/drivers/modbus/index.js';
import type { ChannelRecord } from '../../src/channels/types.js';
import type { AssetConfig } from '../../src/assets/types.js';
import { silentLogger } from '../../src/log.js';
import { channel } from '../helpers/driver-conformance.js';
import { havePeers, startPyModbusTcp, type PyModbusDevice } from '../helpers/pymodbus.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const UNITS = [1, 2, 3, 4, 5];
const PERIOD = 100;
const TIMEOUT = 300;

/** Successful polls of units 1-4 per second, with all units alive, then with unit 5 silent. */
async function measure(t: { teardown(fn: () => unknown): void }, dev: PyModbusDevice, backoffMax: number) {
  const rt = new AssetRuntime(new DriverPool(new DriverRegistry([modbusFactory]), silentLogger, '/nonexistent'), silentLogger);
  t.teardown(() => rt.close());
  const ok = new Map<string, number>();
  const errors = new Set<string>();
  rt.onPoll((pid: string, records: ChannelRecord[]) => {
    if (records[0].status === 'SUCCESS') ok.set(pid, (ok.get(pid) ?? 0) + 1);
    else if (pid === 'u5') errors.add(records[0].error ?? '');
  });
  const assets: AssetConfig[] = UNITS.map((u) => ({
    pid: `u${u}`, driverPid: 'plc', description: '', pollInterval: PERIOD, publishMaxInterval: 0,
    channels: [channel('v', 'INTEGER', { 'unit.id': u, 'memory.address': 1 }, 'READ')],
  }));
  rt.configure(assets, {
    plc: {
      id: 'plc', factory: 'modbus',
      props: { 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': dev.port, 'modbus.timeout': TIMEOUT, 'modbus.transaction.retry': 0, 'unit.backoff.max': backoffMax },
    },
  });
  const healthy = () => [1, 2, 3, 4].reduce((n, u) => n + (ok.get(`u${u}`) ?? 0), 0);
  const rate = async (ms: number) => {
    const n0 = healthy();
    const t0 = performance.now();
    await sleep(ms);
    return (healthy() - n0) / (performance.now() - t0);
  };
  await sleep(500); // connected, polling
  const normal = await rate(3000);
  await dev.mode({ silentUnits: [5] });
  await sleep(1000); // the first timeouts
  const oneDead = await rate(6000);
  const status = rt.pollStatus('u5');
  await dev.mode({});
  return { ratio: oneDead / normal, normal: normal * 1000, errors: [...errors], status, rt };
}

if (havePeers(t, 'pymodbus')) {
  const dev = await startPyModbusTcp(t, { units: UNITS });

  t.test('with back-off: the four live units keep their poll rate within 20 %', async (t) => {
    const m = await measure(t, dev, 30_000);
    t.ok(m.ratio >= 0.8, `poll rate of units 1-4 with unit 5 dead: ${(m.ratio * 100).toFixed(0)} % of normal (${m.normal.toFixed(1)} polls/s for 4 assets)`);
    t.equal(m.errors.length, 1, `one stable error text for the dead unit: ${m.errors.join(' | ')}`);
    t.match(m.errors[0], new RegExp(`Modbus TCP 127\\.0\\.0\\.1:${dev.port}: no response from unit 5 within ${TIMEOUT} ms`));
    const u5 = m.status.devices.find((d) => d.unit === 5);
    t.ok(u5 && u5.timeouts >= 1 && u5.timeouts <= 4, `few requests reach the dead unit: ${JSON.stringify(u5)}`);
    t.ok(u5 && u5.backoffUntil > Date.now() - 1000, 'its back-off shows in the status');
    t.ok(m.status.consecutiveFailures > 5, `${m.status.consecutiveFailures} failed polls in a row`);
  });

  t.test('control: without back-off (unit.backoff.max 0) the dead unit slows the others down', async (t) => {
    const m = await measure(t, dev, 0);
    t.ok(m.ratio < 0.8, `poll rate of units 1-4 with unit 5 dead: ${(m.ratio * 100).toFixed(0)} % of normal`);
    const u5 = m.status.devices.find((d) => d.unit === 5);
    t.ok(u5 && u5.backoffUntil === 0, 'never backed off');
  });

  t.test('a unit that answers again leaves its back-off', async (t) => {
    const rt = new AssetRuntime(new DriverPool(new DriverRegistry([modbusFactory]), silentLogger, '/nonexistent'), silentLogger);
    t.teardown(() => rt.close());
    rt.configure([], {
      plc: { id: 'plc', factory: 'modbus', props: { 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': dev.port, 'modbus.timeout': 200, 'modbus.transaction.retry': 0, 'unit.backoff.max': 1500 } },
    });
    const ch = channel('v', 'INTEGER', { 'unit.id': 3, 'memory.address': 1 }, 'READ');
    const a: AssetConfig = { pid: 'a', driverPid: 'plc', description: '', pollInterval: 0, publishMaxInterval: 0, channels: [ch] };
    rt.configure([a], { plc: { id: 'plc', factory: 'modbus', props: { 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': dev.port, 'modbus.timeout': 200, 'modbus.transaction.retry': 0, 'unit.backoff.max': 1500 } } });
    await dev.mode({ silentUnits: [3] });
    const first = (await rt.read('a'))[0];
    await dev.mode({});
    const fast = (await rt.read('a'))[0];
    t.equal(fast.error, first.error, 'fails at once with the same text while backed off');
    const deadline = Date.now() + 10_000;
    let r = fast;
    while (r.status !== 'SUCCESS' && Date.now() < deadline) {
      await sleep(100);
      r = (await rt.read('a'))[0];
    }
    t.equal(r.status, 'SUCCESS', 'read again once the back-off ends');
    t.equal(rt.pollStatus('a').devices[0].backoffUntil, 0);
  });
}
