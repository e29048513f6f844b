// A Modbus device and an asset added to a running gatewayd the Kura way (configuration/v2 factory
// components, docs/configuration-v2.md), read and written through /services/assets against a real
// pymodbus device; a change of the device's poll settings applies live; a restart keeps both.
import t from 'tap';
import { startDaemon } from '../helpers/daemon.js';
import { basic } from '../helpers/session-client.js';
import { havePeers, startPyModbusTcp } from '../helpers/pymodbus.js';

const C = '/services/configuration/v2';

t.test('a Kura-style Modbus driver and asset created over REST', async (t) => {
  if (!havePeers(t, 'pymodbus')) return;
  const dev = await startPyModbusTcp(t);
  await dev.set(1, 'hr', 9, [1234, 0x4049, 0x0fdb]);
  const d = await startDaemon(t, { identities: { admin: { password: 'admin', permissions: ['kura.admin'] } }, rest: { 'login.throttle.max.delay': 0 } });
  const admin = basic(d, 'admin', 'admin');
  const post = (p: string, body: unknown) => admin.request(`${C}/${p}`, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  const S = (value: string) => ({ type: 'STRING', value });
  const I = (value: number) => ({ type: 'INTEGER', value });

  // The driver instance: factory PID org.eclipse.kura.driver.modbus, with the definitions it shows.
  const ocd = (await post('factoryComponents/ocd/byFactoryPid', { pids: ['org.eclipse.kura.driver.modbus'] })).json().configs[0];
  t.ok(ocd.definition.ad.some((a: any) => a.id === 'modbus.tcp-udp.ip'));
  let r = await post('factoryComponents', {
    configs: [{ factoryPid: 'org.eclipse.kura.driver.modbus', pid: 'plc', properties: { 'access.type': S('TCP'), 'modbus.tcp-udp.ip': S('127.0.0.1'), 'modbus.tcp-udp.port': I(dev.port), 'modbus.timeout': I(500) } }],
  });
  t.same([r.status, r.body], [200, '']);
  // The asset: Kura's WireAsset keys, driver keys as <channel>#<key>.
  r = await post('factoryComponents', {
    configs: [
      {
        factoryPid: 'org.eclipse.kura.wire.WireAsset',
        pid: 'pump',
        properties: {
          'driver.pid': S('plc'),
          'speed#+name': S('speed'),
          'speed#+type': S('READ_WRITE'),
          'speed#+value.type': S('INTEGER'),
          'speed#+enabled': { type: 'BOOLEAN', value: true },
          'speed#unit.id': I(1),
          'speed#primary.table': S('HOLDING_REGISTERS'),
          'speed#memory.address': I(10),
          'pi#+type': S('READ'),
          'pi#+value.type': S('FLOAT'),
          'pi#+scale': { type: 'DOUBLE', value: 2 },
          'pi#primary.table': S('HOLDING_REGISTERS'),
          'pi#memory.address': I(11),
          'pi#data.type': S('FLOAT32'),
        },
      },
    ],
  });
  t.same([r.status, r.body], [200, '']);
  const read = await admin.request('/services/assets/pump/_read', { method: 'POST', body: { channels: ['speed', 'pi'] } });
  t.equal(read.status, 200);
  const recs = read.json();
  t.same(recs.map((x: any) => [x.name, x.channelStatus.channelFlag, x.value]), [
    ['speed', 'SUCCESS', 1234],
    ['pi', 'SUCCESS', recs[1].value],
  ]);
  t.ok(Math.abs(recs[1].value - 2 * 3.14159265) < 1e-4, `scaled FLOAT32 read: ${recs[1].value}`);
  const w = await admin.request('/services/assets/pump/_write', { method: 'POST', body: { channels: [{ name: 'speed', type: 'INTEGER', value: 77 }] } });
  t.match(w.body, /"channelFlag":"SUCCESS"/);
  t.same(await dev.get(1, 'hr', 9, 1), [77], 'written to the device');

  // The definitions of the asset now include the Modbus channel keys per channel.
  const conf = (await post('configurableComponents/configurations/byPid', { pids: ['pump'] })).json().configs[0];
  t.ok(conf.definition.ad.some((a: any) => a.id === 'speed#memory.address' && a.type === 'INTEGER'));
  t.same(conf.properties['pi#+scale'], { value: 2.0, type: 'DOUBLE' });

  // An invalid channel is refused, naming the pid and the property; nothing changes.
  r = await admin.request(`${C}/configurableComponents/configurations/_update`, {
    method: 'PUT',
    body: JSON.stringify({ configs: [{ pid: 'pump', properties: { 'speed#memory.address': I(0) } }] }),
    headers: { 'content-type': 'application/json' },
  });
  t.equal(r.status, 400);
  t.match(r.json().message, /^Invalid configuration of pump, property speed#memory\.address: /);

  // A restart keeps the driver and the asset.
  const dir = d.dir;
  const file = (await import('node:fs')).readFileSync(d.configFile, 'utf8');
  t.equal(await d.stop(), 0);
  const d2 = await startDaemon(t, () => JSON.parse(file), { dir });
  d2.ports.http[0] = JSON.parse(file).http['http.ports'][0];
  const again = await basic(d2, 'admin', 'admin').request('/services/assets/pump/_read', { method: 'POST', body: { channels: ['speed'] } });
  t.match(again.body, /"value":77/);
  t.equal(await d2.stop(), 0);
});
