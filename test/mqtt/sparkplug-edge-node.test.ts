// The Sparkplug B edge node (docs/mqtt.md "Sparkplug B") of the real, built daemon on a real
// Mosquitto, watched by a host application (test/helpers/sparkplug-host.ts) that decodes every
// message with Eclipse Tahu's `sparkplug-payload` (test/helpers/tahu.ts) and sends commands encoded by it:
// NBIRTH and DBIRTH contents and datatypes, seq continuity over every message and its wrap after
// 255, bdSeq in NBIRTH, in the will the broker publishes after kill -9 and after a restart, DDATA
// on change, DDEATH when a pymodbus device stops and DBIRTH when it answers again, assets added
// and removed at run time, Rebirth, DCMD writes of each type (UInt64 up to a LONG's maximum, one
// past it and UInt64's maximum refused, nothing written of a command with one refused metric),
// hostile commands, and a primary host: nothing born while it is offline, then NBIRTH, DBIRTH and
// the held DDATA in order; a STATE older than the last is ignored, but not when it is another
// primary host's (the setting changed).

import t from 'tap';
import fs from 'node:fs';
import { startDaemon, type Daemon } from '../helpers/daemon.js';
import { startMosquitto, mosquittoSkip } from '../helpers/mosquitto.js';
import { until } from '../helpers/mqtt-fixture.js';
import { havePeers, startPyModbusTcp } from '../helpers/pymodbus.js';
import { SparkplugHost, seqProblems, spMetric } from '../helpers/sparkplug-host.js';
import type { SparkplugMetric } from '../helpers/sparkplug-codec/payload.js';

t.setTimeout(120_000);

const G = 'G1';
const NODE = 'node1';

const metric = spMetric;

t.test('a Sparkplug edge node: births, data, deaths, commands, bdSeq across restarts', mosquittoSkip(), async (t) => {
  if (!havePeers(t, 'pymodbus')) return;
  const broker = await startMosquitto();
  t.teardown(() => broker.close());
  const dev = await startPyModbusTcp(t);
  await dev.set(1, 'hr', 0, [7]);
  const host = new SparkplugHost(broker.url, 'host', G);
  await host.start();
  t.teardown(() => host.client.end());

  const mem = (type: string, initial: unknown, mode = 'READ_WRITE') => ({ type: mode, 'value.type': type, simulation: 'memory', initial });
  const config = {
    drivers: {
      sim: { factory: 'simulator' },
      plc: { factory: 'modbus', 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': dev.port, 'modbus.timeout': 200, 'unit.backoff.max': 0 },
    },
    assets: {
      types: {
        'driver.pid': 'sim',
        'poll.interval': 100,
        channels: {
          b: mem('BOOLEAN', false),
          i: mem('INTEGER', -5),
          l: mem('LONG', '-9000000000000000000'),
          f: mem('FLOAT', 1.5),
          d: mem('DOUBLE', 0.1),
          s: mem('STRING', 'héllo'),
          y: mem('BYTE_ARRAY', 'AAEC'),
          ro: { type: 'READ', 'value.type': 'INTEGER', simulation: 'constant', initial: 3 },
        },
      },
      plc: { 'driver.pid': 'plc', 'poll.interval': 200, channels: { hr: { type: 'READ', 'value.type': 'INTEGER', 'unit.id': 1, 'primary.table': 'HOLDING_REGISTERS', 'memory.address': 1 } } },
    },
    mqtt: { enabled: true, type: 'sparkplug', 'broker-url': broker.url, 'client-id': 'gw1', 'sparkplug.group.id': G, 'sparkplug.edge.node.id': NODE, 'keep-alive': 5 },
  };
  const d: Daemon = await startDaemon(t, config);

  // NBIRTH: seq 0, bdSeq 0 on a fresh dataDir, Node Control/Rebirth false.
  const nbirth = await host.next((m) => m.type === 'NBIRTH', 0, 'NBIRTH');
  t.equal(nbirth.topic, `spBv1.0/${G}/NBIRTH/${NODE}`);
  t.equal(nbirth.p.seq, 0n, 'NBIRTH seq 0');
  const bd = nbirth.p.metrics.find((m) => m.name === 'bdSeq');
  t.same([bd?.datatype, bd?.value], ['Int64', 0n], 'bdSeq Int64 0');
  const rebirth = nbirth.p.metrics.find((m) => m.name === 'Node Control/Rebirth');
  t.same([rebirth?.datatype, rebirth?.value], ['Boolean', false], 'Node Control/Rebirth Boolean false');

  // DBIRTH: every channel with its datatype, current value and an alias unique on the edge node.
  const types = await host.next((m) => m.type === 'DBIRTH' && m.device === 'types', 0, 'DBIRTH types');
  const byName = Object.fromEntries(types.p.metrics.map((m) => [m.name, [m.datatype, m.value]]));
  t.same(byName, {
    b: ['Boolean', false],
    i: ['Int32', -5],
    l: ['Int64', -9000000000000000000n],
    f: ['Float', 1.5],
    d: ['Double', 0.1],
    s: ['String', 'héllo'],
    y: ['Bytes', Buffer.from([0, 1, 2])],
    ro: ['Int32', 3],
  }, 'DBIRTH metrics, datatypes and values');
  const plcBirth = await host.next((m) => m.type === 'DBIRTH' && m.device === 'plc', 0, 'DBIRTH plc');
  t.equal(host.valueOf(plcBirth, 'hr'), 7, 'the pymodbus register in DBIRTH');
  const aliases = [...nbirth.p.metrics, ...types.p.metrics, ...plcBirth.p.metrics].map((m) => m.alias).filter((a) => a !== undefined);
  t.equal(new Set(aliases).size, aliases.length, 'aliases unique on the edge node');
  t.equal(aliases.length, 1 + 8 + 1, 'every metric but bdSeq has one');

  // DDATA on change, by alias only.
  let from = host.seen.length;
  await dev.set(1, 'hr', 0, [42]);
  const changed = await host.next((m) => m.type === 'DDATA' && m.device === 'plc' && host.valueOf(m, 'hr') === 42, from, 'DDATA 42');
  t.equal(changed.p.metrics[0]!.name, undefined, 'DDATA metrics carry the alias, not the name');
  t.notOk(changed.p.metrics[0]!.isHistorical, 'live data is not historical');

  // DCMD: each type, by alias (one by name); the written values come back in DDATA.
  const writes: [string, string, unknown][] = [
    ['b', 'Boolean', true],
    ['i', 'Int16', -300],
    ['l', 'UInt64', 9223372036854775807n],
    ['f', 'Float', -2.25],
    ['d', 'Double', 1e-300],
    ['s', 'String', 'ünïcode ✓'],
    ['y', 'Bytes', Buffer.from([255, 0, 128])],
  ];
  for (const [name, datatype, value] of writes) {
    from = host.seen.length;
    const m = name === 's' ? metric({ name, datatype, value }) : metric({ alias: host.alias(NODE, 'types', name), datatype, value });
    await host.dcmd(NODE, 'types', [m]);
    const want = datatype === 'Int16' ? value : value;
    await host.next((x) => x.type === 'DDATA' && x.device === 'types' && JSON.stringify(String(host.valueOf(x, name))) === JSON.stringify(String(want)), from, `DDATA ${name}`);
    t.pass(`DCMD ${datatype} ${String(value)} written to ${name}`);
  }

  // Refused: one past a LONG's maximum, UInt64's maximum, a READ channel, an unknown alias; a
  // command with one refused metric writes nothing; the host gets the current value back.
  for (const [label, metrics] of [
    ['UInt64 2^63', [metric({ alias: host.alias(NODE, 'types', 'l'), datatype: 'UInt64', value: 9223372036854775808n })]],
    ['UInt64 max', [metric({ alias: host.alias(NODE, 'types', 'l'), datatype: 'UInt64', value: 18446744073709551615n })]],
    ['a READ channel beside a writable one', [metric({ name: 'i', datatype: 'Int32', value: 77 }), metric({ name: 'ro', datatype: 'Int32', value: 4 })]],
    ['an unknown alias', [metric({ alias: 9999n, datatype: 'Int32', value: 4 })]],
    ['one of two', [metric({ name: 'i', datatype: 'Int32', value: 77 }), metric({ name: 'l', datatype: 'Double', value: Number.NaN })]],
  ] as [string, SparkplugMetric[]][]) {
    from = host.seen.length;
    const logged = d.logs.length;
    await host.dcmd(NODE, 'types', metrics);
    await until(() => d.logs.slice(logged).some((l) => l.includes('sparkplug DCMD refused')), 8000, `refusal of ${label} logged`);
    t.pass(`${label} refused and logged`);
  }
  // The refusals answered with the current values (l still 2^63-1, i still -300: nothing half-written).
  const current = await host.next((x) => x.type === 'DDATA' && x.device === 'types' && host.valueOf(x, 'i') !== undefined, from, 'DDATA current values');
  t.equal(host.valueOf(current, 'i'), -300, 'i not written by the command whose other metric was refused');
  t.equal(host.valueOf(current, 'l'), 9223372036854775807n, 'l unchanged');
  await new Promise((r) => setTimeout(r, 300));
  t.notOk(host.seen.slice(from).some((x) => x.type === 'DDATA' && host.valueOf(x, 'i') === 77), 'the value 77 never shows');

  // Hostile commands: malformed protobuf, an unknown node control, a DCMD for no asset: logged, nothing else.
  const logged = d.logs.length;
  from = host.seen.length;
  await host.client.publish(`spBv1.0/${G}/NCMD/${NODE}`, Buffer.from('ffffffffffffffffffffff', 'hex'), { qos: 0 });
  await host.ncmd(NODE, [metric({ name: 'Node Control/Reboot', datatype: 'Boolean', value: true })]);
  await host.client.publish(`spBv1.0/${G}/DCMD/${NODE}/types`, Buffer.from('1205', 'hex'), { qos: 0 });
  await host.dcmd(NODE, 'nosuch', [metric({ name: 'x', datatype: 'Int32', value: 1 })]);
  await until(() => d.logs.slice(logged).filter((l) => l.includes('sparkplug message refused')).length >= 4, 8000, 'four refusals logged');
  t.notOk(host.seen.slice(from).some((m) => m.type === 'NBIRTH' || m.type === 'DDATA'), 'nothing published for them');

  // The pymodbus device stops: DDEATH; it answers again: DBIRTH with its value.
  from = host.seen.length;
  await dev.stop();
  await host.next((m) => m.type === 'DDEATH' && m.device === 'plc', from, 'DDEATH plc', 15000);
  t.pass('DDEATH when the device stops answering');
  from = host.seen.length;
  await dev.start();
  await dev.set(1, 'hr', 0, [43]);
  const again = await host.next((m) => m.type === 'DBIRTH' && m.device === 'plc', from, 'DBIRTH plc again', 15000);
  t.equal(host.valueOf(again, 'hr'), 43, 'DBIRTH on recovery with the current value');

  // Rebirth: NBIRTH (seq 0, the same bdSeq) and every DBIRTH again.
  from = host.seen.length;
  await host.ncmd(NODE, [metric({ name: 'Node Control/Rebirth', datatype: 'Boolean', value: true })]);
  const reborn = await host.next((m) => m.type === 'NBIRTH', from, 'NBIRTH after Rebirth');
  t.equal(reborn.p.seq, 0n);
  t.equal(reborn.p.metrics.find((m) => m.name === 'bdSeq')?.value, 0n, 'same bdSeq');
  await host.next((m) => m.type === 'DBIRTH' && m.device === 'types', from, 'DBIRTH types again');
  await host.next((m) => m.type === 'DBIRTH' && m.device === 'plc', from, 'DBIRTH plc again');
  // By alias too.
  from = host.seen.length;
  await host.ncmd(NODE, [metric({ alias: host.alias(NODE, '', 'Node Control/Rebirth'), datatype: 'Boolean', value: true })]);
  await host.next((m) => m.type === 'NBIRTH', from, 'NBIRTH after Rebirth by alias');

  // Assets added and removed at run time (SIGHUP): DBIRTH of the new one at its first poll, DDEATH of the removed one.
  from = host.seen.length;
  const cfg2 = JSON.parse(fs.readFileSync(d.configFile, 'utf8'));
  delete cfg2.assets.plc;
  cfg2.assets.extra = { 'driver.pid': 'sim', 'poll.interval': 100, channels: { x: mem('INTEGER', 9) } };
  fs.writeFileSync(d.configFile, JSON.stringify(cfg2));
  d.signal('SIGHUP');
  await host.next((m) => m.type === 'DDEATH' && m.device === 'plc', from, 'DDEATH of the removed asset');
  const extra = await host.next((m) => m.type === 'DBIRTH' && m.device === 'extra', from, 'DBIRTH of the added asset');
  t.equal(host.valueOf(extra, 'x'), 9, 'an asset added at run time is born with its value');
  t.notOk(host.seen.slice(from).some((m) => m.type === 'NBIRTH'), 'without a new NBIRTH');

  // kill -9: the broker publishes the will, NDEATH with bdSeq 0 and no seq.
  from = host.seen.length;
  d.proc.kill('SIGKILL');
  await d.exited;
  const death = await host.next((m) => m.type === 'NDEATH', from, 'NDEATH will', 15000);
  t.equal(death.p.metrics.find((m) => m.name === 'bdSeq')?.value, 0n, 'NDEATH bdSeq matches the NBIRTH');

  // A restart on the same dataDir: bdSeq 1.
  from = host.seen.length;
  const d2 = await startDaemon(t, config, { dir: d.dir });
  const nb2 = await host.next((m) => m.type === 'NBIRTH', from, 'NBIRTH after restart');
  t.equal(nb2.p.metrics.find((m) => m.name === 'bdSeq')?.value, 1n, 'bdSeq one more after a restart');
  await host.next((m) => m.type === 'DBIRTH' && m.device === 'types', from, 'DBIRTH after restart');
  // A clean stop publishes NDEATH with the same bdSeq before DISCONNECT.
  from = host.seen.length;
  await d2.stop();
  const death2 = await host.next((m) => m.type === 'NDEATH', from, 'NDEATH at stop');
  t.equal(death2.p.metrics.find((m) => m.name === 'bdSeq')?.value, 1n);

  t.same(seqProblems(host.seen, NODE), [], 'seq continuous over every message');
});

t.test('a primary host: nothing born while it is offline, then NBIRTH first and the held data in order', mosquittoSkip(), async (t) => {
  const broker = await startMosquitto();
  t.teardown(() => broker.close());
  const host = new SparkplugHost(broker.url, 'scada', G);
  await host.start();
  t.teardown(() => host.client.end());
  const state = (online: boolean, timestamp: number) => host.client.publish('spBv1.0/STATE/scada', Buffer.from(JSON.stringify({ online, timestamp })), { qos: 1, retain: true });
  await state(false, 1000);

  const d = await startDaemon(t, {
    assets: {
      counter: { 'driver.pid': 'sim', 'poll.interval': 10, channels: { n: { type: 'READ', 'value.type': 'INTEGER', simulation: 'counter' } } },
      // A valid asset name that cannot be a Sparkplug device id (a C1 control character): left out, with a warning.
      'line\u0081': { 'driver.pid': 'sim', 'poll.interval': 50, channels: { n: { type: 'READ', 'value.type': 'INTEGER', simulation: 'counter' } } },
    },
    mqtt: { enabled: true, type: 'sparkplug', 'broker-url': broker.url, 'client-id': NODE, 'sparkplug.group.id': G, 'sparkplug.primary.host.id': 'scada', 'keep-alive': 5 },
  });
  await d.waitForLog(/msg="mqtt connected"/);
  await d.waitForLog(/msg="sparkplug primary host".*online=false/);
  await new Promise((r) => setTimeout(r, 700));
  t.same(host.seen.map((m) => m.type), [], 'nothing published while the host is offline');

  // A STATE that is not Sparkplug 3.0's JSON (2.2's plain text, garbage) is ignored, and logged.
  const logged = d.logs.length;
  await host.client.publish('spBv1.0/STATE/scada', Buffer.from('ONLINE'), { qos: 1 });
  await host.client.publish('spBv1.0/STATE/scada', Buffer.from('{"online":"yes"}'), { qos: 1 });
  await until(() => d.logs.slice(logged).filter((l) => l.includes('sparkplug message refused')).length >= 2, 8000, 'bad STATEs logged');
  t.same(host.seen.map((m) => m.type), [], 'and nothing born for them');

  // Online: NBIRTH first, DBIRTH, then the held DDATA, historical, in order.
  await state(true, 2000);
  const nb = await host.next((m) => m.type === 'NBIRTH', 0, 'NBIRTH');
  t.equal(host.seen.indexOf(nb), 0, 'NBIRTH is the first message');
  t.equal(host.seen[1]?.type, 'DBIRTH', 'then the DBIRTH');
  t.equal(host.seen.filter((m) => m.type === 'DBIRTH').length, 1, 'one DBIRTH: the asset whose PID is no device id has none');
  await d.waitForLog(/msg="sparkplug asset not published".*contains U\+0081: a Sparkplug id is one topic level/);
  t.equal(d.logs.filter((l) => l.includes('sparkplug asset not published')).length, 1, 'warned about once');
  // Past 255 messages: seq wraps to 0.
  await until(() => host.seen.filter((m) => m.type === 'DDATA').length >= 300, 15000, '300 DDATA');
  t.ok(host.seen.some((m, i) => m.type === 'DDATA' && m.p.seq === 0n && host.seen[i - 1]?.p.seq === 255n), 'seq 255 is followed by 0');
  const data = host.seen.filter((m) => m.type === 'DDATA');
  const held = data.filter((m) => m.p.metrics[0]!.isHistorical);
  t.ok(held.length >= 5, `${held.length} held messages published as historical`);
  const values = data.map((m) => host.valueOf(m, 'n') as number);
  t.same(values, [...values].sort((a, b) => a - b), 'in order');
  const firstLive = data.findIndex((m) => !m.p.metrics[0]!.isHistorical);
  t.ok(firstLive === -1 || data.slice(firstLive).every((m) => !m.p.metrics[0]!.isHistorical), 'historical ones first, then live');

  // An older STATE is ignored; a newer offline one ends the session (NDEATH) and the node waits.
  let from = host.seen.length;
  await state(false, 1500);
  await new Promise((r) => setTimeout(r, 500));
  t.notOk(host.seen.slice(from).some((m) => m.type === 'NDEATH'), 'an older STATE is ignored');
  from = host.seen.length;
  await state(false, 3000);
  const death = await host.next((m) => m.type === 'NDEATH', from, 'NDEATH when the host goes offline');
  t.equal(death.p.metrics.find((m) => m.name === 'bdSeq')?.value, 0n, 'with the session bdSeq');
  await new Promise((r) => setTimeout(r, 500));
  t.notOk(host.seen.slice(from).some((m) => m.type === 'NBIRTH'), 'no NBIRTH while the host is offline');
  await state(true, 4000);
  const nb2 = await host.next((m) => m.type === 'NBIRTH', from, 'NBIRTH when the host is back');
  t.equal(nb2.p.metrics.find((m) => m.name === 'bdSeq')?.value, 1n, 'a new session: bdSeq 1');
  t.same(seqProblems(host.seen, NODE), [], 'seq continuous');

  // Another primary host (SIGHUP): its STATE is not compared with the previous host's timestamps;
  // an online one older than the last of 'scada' still lets the node be born.
  await host.client.publish('spBv1.0/STATE/scada2', Buffer.from(JSON.stringify({ online: true, timestamp: 500 })), { qos: 1, retain: true });
  from = host.seen.length;
  const cfg = JSON.parse(fs.readFileSync(d.configFile, 'utf8'));
  cfg.mqtt['sparkplug.primary.host.id'] = 'scada2';
  fs.writeFileSync(d.configFile, JSON.stringify(cfg));
  d.signal('SIGHUP');
  await host.next((m) => m.type === 'NDEATH', from, 'NDEATH as the connection changes');
  const nb3 = await host.next((m) => m.type === 'NBIRTH', from, 'NBIRTH for the new primary host, whose clock is behind the old one');
  t.equal(nb3.p.metrics.find((m) => m.name === 'bdSeq')?.value, 2n, 'in a new session');
});
