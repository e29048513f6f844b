// CONF-V1 on a large device (docs/mqtt.md "CONF-V1", "Large configurations"): 100 assets of 50
// Modbus channels, the daemon started with the launcher's node flags and environment (its heap
// bound). GET/configurations answers every configuration with its definitions (about 24 MB of XML,
// compressed while it is made) and Kapua's JAXB binding reads all of it; a Kapua-shaped PUT of one
// property applies; without compression the same reply is over the reply bound and refused with a
// 500 naming it, while one component still answers.
import t from 'tap';
import { startDaemon, BUNDLE } from '../helpers/daemon.js';
import { deviceSettings } from '../helpers/launch.mjs';
import { basic } from '../helpers/session-client.js';
import { mosquittoSkip, startMosquitto } from '../helpers/mosquitto.js';
import { KapuaRequester } from '../helpers/kapua-requester.js';
import { KapuaConfPeer, kapuaPeerSkip } from '../helpers/kapua-conf.js';

const ASSETS = 100;
const CHANNELS = 50;
const CLOUD = 'org.eclipse.kura.cloud.CloudService';

t.setTimeout(600_000);

t.test(`CONF-V1 with ${ASSETS} assets of ${CHANNELS} Modbus channels under the launcher's heap bound`, { ...mosquittoSkip(), ...kapuaPeerSkip() }, async (t) => {
  const broker = await startMosquitto();
  t.teardown(() => broker.close());
  const peer = new KapuaConfPeer();
  t.teardown(() => peer.close());
  const assets: Record<string, unknown> = {};
  for (let a = 0; a < ASSETS; a++) {
    const channels: Record<string, unknown> = {};
    for (let i = 0; i < CHANNELS; i++) channels[`ch${i}`] = { type: 'READ', 'value.type': 'INTEGER', 'unit.id': 1, 'primary.table': 'HOLDING_REGISTERS', 'memory.address': i + 1 };
    assets[`plc${a}`] = { 'driver.pid': 'modbus1', 'poll.interval': 0, channels };
  }
  const device = deviceSettings();
  const d = await startDaemon(
    t,
    {
      identities: { admin: { password: 'Adm1n-Secret!', passwordChangeNeeded: false, permissions: ['kura.admin'] } },
      rest: { 'login.throttle.max.delay': 0 },
      drivers: { modbus1: { factory: 'modbus', 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': 1502 } },
      assets,
      mqtt: { enabled: true, 'broker-url': broker.url, 'client-id': 'gw-big', 'topic.context.account-name': 'acct' },
    },
    { command: [process.execPath, ...device.flags, BUNDLE], env: device.env },
  );
  await d.waitForLog(/msg="mqtt connected"/);
  const admin = basic(d, 'admin', 'Adm1n-Secret!');
  const kapua = new KapuaRequester(broker.url);
  await kapua.start();
  t.teardown(() => kapua.end());
  const conf = async (mr: string, body?: string) => (await kapua.ask('gw-big', 'CONF-V1', mr, body, { wait: 120_000 }))!;

  const all = await conf('GET/configurations');
  t.equal(all.code, 200, `GET/configurations: ${all.raw.length} bytes sent, ${all.body!.length} bytes of XML`);
  t.ok(all.raw.length <= 4 * 1024 * 1024, 'within the compressed reply bound');
  const configs = await peer.configurations(all.body!);
  const plcs = configs.filter((c) => c.pid.startsWith('plc'));
  t.equal(plcs.length, ASSETS, 'every asset, read by JAXB as Kapua binds it');
  const last = plcs.at(-1)!;
  t.same(last.properties[`ch${CHANNELS - 1}#memory.address`], { class: 'Integer', value: String(CHANNELS) });
  t.equal(last.definition!.ad.filter((a) => a.id.endsWith('#memory.address')).length, CHANNELS, 'a definition per channel property');
  t.equal(d.proc.exitCode, null, 'the daemon is running');

  const body = await peer.putBody('plc42', [{ name: 'ch7#+unit', type: 'stringType', values: ['kPa'] }]);
  const put = await conf('PUT/configurations/plc42', body);
  t.same([put.code, put.message], [200, undefined], 'a Kapua-shaped PUT of one property');
  const shown = (await admin.request('/services/configuration/v2/configurableComponents/configurations/byPid', { method: 'POST', body: JSON.stringify({ pids: ['plc42'] }), headers: { 'content-type': 'application/json' } })).json();
  t.same(shown.configs[0].properties['ch7#+unit'], { type: 'STRING', value: 'kPa' }, 'applied');
  t.equal(d.proc.exitCode, null, 'the daemon is running');

  // Without compression the XML itself would be the reply: over the bound, refused by name.
  const r = await admin.request('/services/configuration/v2/configurableComponents/configurations/_update', {
    method: 'PUT',
    body: JSON.stringify({ configs: [{ pid: CLOUD, properties: { 'encode.gzip': { type: 'BOOLEAN', value: false } } }], takeSnapshot: false }),
    headers: { 'content-type': 'application/json' },
  });
  t.equal(r.status, 200);
  const plain = await conf('GET/configurations');
  t.equal(plain.raw[0] === 0x1f, false, 'not compressed');
  t.same([plain.code, plain.message], [500, 'Reply too large: more than 1048576 bytes, the limit; ask for fewer components']);
  const one = await conf('GET/configurations/plc3');
  t.equal(one.code, 200, 'one asset still answers');
  t.same((await peer.configurations(one.body!)).map((c) => c.pid), ['plc3']);
});
