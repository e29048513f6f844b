// The modbus driver end to end (docs/drivers.md "modbus"): the built daemon, a `modbus` driver instance and a pymodbus device.
// `GET /services/assets/<pid>/_read` of 50 channels on holding registers 1–100 is one request on
// the wire; values match; a `_write` lands in the device; a dead device gives FAILURE records.

import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCli, startDaemon } from '../helpers/daemon.js';
import { fiftyChannels } from '../helpers/modbus-fixtures.js';
import { havePeers, startPyModbusTcp } from '../helpers/pymodbus.js';

t.test('check-config names the Modbus key of every problem', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-modbus-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'bad.json');
  fs.writeFileSync(file, JSON.stringify({
    drivers: { plc: { factory: 'modbus', 'access.type': 'TCP', 'modbus.tcp-udp.ip': '10.0.0.5', 'modbus.timeout': '1s', 'modbus.tiemout': 5 } },
    assets: {
      pump: {
        'driver.pid': 'plc',
        channels: {
          speed: { type: 'READ', 'value.type': 'INTEGER', 'data.type': 'FLOAT32', 'memory.address': 1 },
          flow: { type: 'READ', 'value.type': 'DOUBLE', 'primary.table': 'TABLE', 'unit.id': 300 },
          ok: { type: 'READ', 'value.type': 'LONG', 'data.type': 'UINT64', 'memory.address': 7 },
          ro: { type: 'READ_WRITE', 'value.type': 'INTEGER', 'primary.table': 'INPUT_REGISTERS' },
        },
      },
    },
  }));
  const r = runCli(['check-config', '--config', file]);
  t.equal(r.status, 1, r.stdout);
  for (const key of [
    'drivers.plc.modbus.timeout: must be an integer',
    'drivers.plc.modbus.tiemout: unknown key',
    'assets.pump.channels.speed.data.type: channel speed: data.type FLOAT32 does not fit value.type INTEGER',
    'assets.pump.channels.flow.primary.table: unknown value "TABLE"',
    'assets.pump.channels.flow.unit.id: 300 is out of range (0..255)',
    'assets.pump.channels.ro.primary.table: channel ro: INPUT_REGISTERS cannot be written, so type READ_WRITE can never work',
  ]) t.match(r.stdout, key, key);
  t.notMatch(r.stdout, /channels\.ok\./, 'the good channel has no problem');
});

t.test('end to end with a pymodbus device', async (t) => {
  if (!havePeers(t, 'pymodbus')) return;
  const dev = await startPyModbusTcp(t);
  const fx = fiftyChannels();
  for (const f of fx) await dev.set(1, 'hr', f.address, f.registers);
  const channels: Record<string, unknown> = {};
  for (const f of fx) channels[f.channel.name] = { type: 'READ', 'value.type': f.channel.valueType, ...f.channel.driverProps };
  channels.setpoint = { type: 'WRITE', 'value.type': 'LONG', 'unit.id': 1, 'memory.address': 501, 'data.type': 'INT64' };
  const d = await startDaemon(t, {
    drivers: {
      plc: { factory: 'modbus', 'access.type': 'TCP', 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': dev.port, 'modbus.timeout': 300, 'modbus.transaction.retry': 0 },
    },
    assets: { pump: { 'driver.pid': 'plc', channels } },
    identities: {
      operator: { password: 'secret123', permissions: ['rest.assets'], passwordChangeNeeded: false },
      auditor: { password: 'secret123', permissions: ['rest.system'], passwordChangeNeeded: false },
    },
  });
  const auth = { authorization: `Basic ${Buffer.from('operator:secret123').toString('base64')}` };
  const json = { ...auth, 'content-type': 'application/json' };

  await t.test('GET _read of 50 channels is one Modbus request, with the device values', async (t) => {
    await dev.clearRequests();
    const res = await d.request('/services/assets/pump/_read', { headers: auth });
    t.equal(res.status, 200);
    t.same(await dev.received(), [{ unit: 1, fc: 3, address: 0, count: 100 }], 'one FC3 request for registers 1-100');
    const records: { name: string; value: unknown; channelStatus: { channelFlag: string } }[] = res.json();
    t.equal(records.length, 50);
    const byName = new Map(records.map((r) => [r.name, r]));
    for (const f of fx) {
      const r = byName.get(f.channel.name);
      t.equal(r?.channelStatus.channelFlag, 'SUCCESS', `${f.channel.name} SUCCESS`);
      if (f.expected.type === 'LONG') {
        // 64-bit exact in the JSON text itself, not rounded through a double.
        t.match(res.body, new RegExp(`"name":"${f.channel.name}"[^}]*"value":${f.expected.value}[,}]`), `${f.channel.name} = ${f.expected.value}`);
      } else {
        t.equal(r?.value, f.expected.value, `${f.channel.name} = ${f.expected.value}`);
      }
    }
  });

  await t.test('_write of a LONG beyond 2^53 lands in the device', async (t) => {
    const res = await d.request('/services/assets/pump/_write', {
      method: 'POST',
      headers: json,
      body: '{"channels":[{"name":"setpoint","type":"LONG","value":9007199254740993}]}',
    });
    t.equal(res.status, 200, res.body);
    t.match(res.json(), [{ name: 'setpoint', channelStatus: { channelFlag: 'SUCCESS' } }]);
    t.same(await dev.get(1, 'hr', 500, 4), [0x0020, 0, 0, 1]);
  });

  await t.test('GET _status: poll statistics and the unit\'s counters (role assets)', async (t) => {
    const res = await d.request('/services/assets/pump/_status', { headers: auth });
    t.equal(res.status, 200, res.body);
    t.match(res.headers['content-type'], /application\/json/);
    const st = res.json();
    t.same(Object.keys(st), ['pollInterval', 'lastPoll', 'lastSuccess', 'consecutiveFailures', 'polls', 'overruns', 'devices', 'driver', 'driverAttached', 'state']);
    t.match(st, { pollInterval: 0, lastPoll: 0, driver: 'plc', driverAttached: true, state: 'notPolled', consecutiveFailures: 0, devices: [{ unit: 1, timeouts: 0, exceptions: 0, backoffUntil: 0 }] });
    t.ok(st.devices[0].requests >= 2 && st.devices[0].responses === st.devices[0].requests, JSON.stringify(st.devices));
    const missing = await d.request('/services/assets/nope/_status', { headers: auth });
    t.equal(missing.status, 404);
    t.equal(missing.body, 'Asset not found: nope');
    t.equal((await d.request('/services/assets/pump/_status')).status, 401, 'authentication required');
    const other = { authorization: `Basic ${Buffer.from('auditor:secret123').toString('base64')}` };
    t.equal((await d.request('/services/assets/pump/_status', { headers: other })).status, 403, 'role assets required');
  });

  await t.test('a dead device: FAILURE records with HTTP 200, then recovery', async (t) => {
    await dev.stop();
    const res = await d.request('/services/assets/pump/_read', {
      method: 'POST',
      headers: json,
      body: '{"channels":["c0","c1"]}',
    });
    t.equal(res.status, 200);
    const records: { channelStatus: { channelFlag: string; exceptionMessage?: string } }[] = res.json();
    t.equal(records.length, 2);
    for (const r of records) {
      t.equal(r.channelStatus.channelFlag, 'FAILURE');
      t.match(r.channelStatus.exceptionMessage, /Modbus TCP 127\.0\.0\.1:\d+/);
    }
    await dev.start();
    let flags: string[] = [];
    for (let i = 0; i < 50; i++) {
      const again = await d.request('/services/assets/pump/_read', { method: 'POST', headers: json, body: '{"channels":["c0"]}' });
      flags = again.json().map((r: { channelStatus: { channelFlag: string } }) => r.channelStatus.channelFlag);
      if (flags[0] === 'SUCCESS') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    t.same(flags, ['SUCCESS'], 'the driver reconnects once the device is back');
  });
});
