// Every configuration request at the documented channel bound (docs/configuration-v2.md "How large
// a configuration can grow": 12,000 Modbus channels of five properties under the launcher's 48 MB
// heap bound), through the real daemon started with the launcher's node flags and environment, a
// real pymodbus device it polls and a real Mosquitto for CONF-V2: changes over REST and MQTT,
// reads of every configuration with its definitions (written as the client reads), snapshots
// written, read and rolled back to, and the console's form (its read and its update). A change
// past the bound is refused with 413 over REST and an error reply over MQTT; the daemon never aborts.
import t from 'tap';
import { startDaemon, BUNDLE, type Daemon } from '../helpers/daemon.js';
import { deviceSettings } from '../helpers/launch.mjs';
import { basic } from '../helpers/session-client.js';
import { havePeers, startPyModbusTcp } from '../helpers/pymodbus.js';
import { mosquittoSkip, startMosquitto } from '../helpers/mosquitto.js';
import { Requester } from '../helpers/mqtt-fixture.js';

const C = '/services/configuration/v2';
const CHANNELS = 12_000;
const ASSET = 'org.eclipse.kura.wire.WireAsset';

const channel = (i: number) => ({ type: 'READ', 'value.type': 'INTEGER', 'unit.id': 1, 'primary.table': 'HOLDING_REGISTERS', 'memory.address': i + 1 });

// A large configuration on a shared machine: minutes rather than tap's default 30 s.
t.setTimeout(600_000);

t.test(`configuration requests with ${CHANNELS} Modbus channels under the launcher's heap bound`, mosquittoSkip(), async (t) => {
  if (!havePeers(t, 'pymodbus')) return;
  const dev = await startPyModbusTcp(t, { size: CHANNELS + 1 });
  const broker = await startMosquitto();
  t.teardown(() => broker.close());
  const channels: Record<string, unknown> = {};
  for (let i = 0; i < CHANNELS; i++) channels[`ch${i}`] = channel(i);
  const device = deviceSettings();
  const d: Daemon = await startDaemon(
    t,
    {
      identities: { admin: { password: 'Admin-pass-12', permissions: ['kura.admin'], passwordChangeNeeded: false } },
      rest: { 'login.throttle.max.delay': 0 },
      mqtt: { enabled: true, 'broker-url': broker.url, 'client-id': 'dev1', 'topic.context.account-name': 'acct' },
      drivers: { plc: { factory: 'modbus', 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': dev.port } },
      assets: { big: { 'driver.pid': 'plc', 'poll.interval': 5000, channels } },
    },
    { command: [process.execPath, ...device.flags, BUNDLE], env: device.env },
  );
  await d.waitForLog(/msg="mqtt connected"/);
  const admin = basic(d, 'admin', 'Admin-pass-12');
  const v2 = (p: string, body?: unknown, method = body === undefined ? 'GET' : 'POST') =>
    admin.request(`${C}/${p}`, { method, body: body === undefined ? undefined : JSON.stringify(body), headers: { 'content-type': 'application/json' }, timeoutMs: 120_000 });
  const req = new Requester(broker.url, 'kapua');
  await req.start();
  t.teardown(() => req.client.end());
  const conf = async (mr: string, body?: unknown) => (await req.kura('dev1', mr, body === undefined ? undefined : JSON.stringify(body), { app: 'CONF-V2', wait: 60_000 }))!;
  const alive = () => t.equal(d.proc.exitCode, null, 'the daemon is running');
  const pollInterval = async () => (await admin.request('/services/assets/big/_status')).json().pollInterval;
  const poll = (value: number) => ({ configs: [{ pid: 'big', properties: { 'poll.interval': { type: 'INTEGER', value } } }] });

  // The request that aborted the daemon ("JavaScript heap out of memory") from 12,000 channels on.
  let r = await v2('configurableComponents/configurations/_update', poll(6000), 'PUT');
  t.same([r.status, r.body], [200, ''], 'one property changed over REST');
  t.equal(await pollInterval(), 6000, 'and applied');
  const m = await conf('PUT/configurableComponents/configurations/_update', poll(7000));
  t.equal(m?.code, 200, 'the same over MQTT (CONF-V2)');
  t.equal(await pollInterval(), 7000);

  // The console's form: the component with its definitions, then an update of what changed.
  r = await v2('configurableComponents/configurations/byPid', { pids: ['big'] });
  t.equal(r.status, 200, `the asset with its definitions (${(r.body.length / 1048576).toFixed(1)} MB, written as read)`);
  const form = r.json().configs[0];
  t.equal(form.definition.ad.filter((a: { id: string }) => a.id.endsWith('#memory.address')).length, CHANNELS, 'a definition per channel property');
  t.same(form.properties[`ch${CHANNELS - 1}#memory.address`], { value: CHANNELS, type: 'INTEGER' });
  t.same(form.properties['poll.interval'], { value: 7000, type: 'INTEGER' });
  r = await v2('configurableComponents/configurations/_update', { configs: [{ pid: 'big', properties: { 'ch7#+unit': { type: 'STRING', value: 'kPa' } } }], takeSnapshot: true }, 'PUT');
  t.equal(r.status, 200, 'the form saved');
  r = await v2('configurableComponents/configurations');
  t.equal(r.status, 200, 'every configuration with its definitions');
  t.ok(r.body.endsWith('}]}') && r.body.includes('"pid":"org.eclipse.kura.web.Console"') && r.body.includes('"ch11999#+name"'), 'complete');
  r = await v2('configurableComponents/configurations/byPid/_default', { pids: ['big'] });
  t.equal(r.status, 200, 'definition defaults');
  t.same(r.json().configs[0].properties['ch11999#+scale'], { value: 1.0, type: 'DOUBLE' });

  // Snapshots: written, listed, read, rolled back to; a change after the rollback.
  r = await v2('snapshots/_write', {});
  t.equal(r.status, 200, 'a snapshot written');
  const id = r.json().id;
  r = await v2('snapshots/byId', { id });
  t.equal(r.status, 200, 'and read');
  const snap = r.json().configs.find((c: { pid: string }) => c.pid === 'big');
  t.same(snap.properties['ch7#+unit'], { value: 'kPa', type: 'STRING' });
  t.equal(Object.keys(snap.properties).filter((k) => k.endsWith('#+name')).length, CHANNELS);
  t.equal((await conf('POST/snapshots/byId', { id })).code === 200, false, 'over MQTT the reply is larger than its bound: an error reply');
  r = await v2('configurableComponents/configurations/_update', poll(8000), 'PUT');
  t.equal(r.status, 200);
  r = await v2('snapshots/byId/_rollback', { id });
  t.equal(r.status, 200, 'rolled back');
  t.equal(await pollInterval(), 7000, 'to the snapshot');
  r = await v2('configurableComponents/configurations/_update', poll(9000), 'PUT');
  t.equal(r.status, 200, 'a change with every property pinned by the rollback');
  t.equal(await pollInterval(), 9000);
  alive();

  // Past the bound: 2,000 more channels refused over REST and over MQTT, nothing stored or applied.
  const more: Record<string, unknown> = { 'driver.pid': { type: 'STRING', value: 'plc' } };
  for (let i = 0; i < 2000; i++) {
    for (const [k, v] of Object.entries(channel(i))) more[`x${i}#${['type', 'value.type'].includes(k) ? '+' : ''}${k}`] = { type: typeof v === 'number' ? 'INTEGER' : 'STRING', value: v };
  }
  r = await v2('factoryComponents', { configs: [{ factoryPid: ASSET, pid: 'more', properties: more }] });
  t.equal(r.status, 413, 'more channels refused');
  t.match(r.json().message, /^Configuration too large for this daemon's heap bound: its 14000 channels/);
  const mm = await conf('POST/factoryComponents', { configs: [{ factoryPid: ASSET, pid: 'more', properties: more }] });
  t.not(mm?.code, 200, 'refused over MQTT too');
  t.match(JSON.parse(mm!.body!).message, /^Configuration too large/);
  t.same((await admin.request('/services/assets')).json(), ['big'], 'nothing created');
  t.equal((await v2('configurableComponents/configurations/_update', poll(5000), 'PUT')).status, 200, 'and the device is still configurable');
  alive();
  t.notOk(d.logs.some((l) => /heap out of memory|Reached heap limit/.test(l)), 'no heap exhaustion logged');
});
