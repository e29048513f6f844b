// A stored secret is kept only while its endpoint is unchanged (docs/configuration-v2.md "Secrets"):
// against the real daemon, connected to a real Mosquitto that requires a password, a change of
// broker-url (or username) that sends `placeholder` for the password, or leaves it out, is refused
// with 400 naming the password over REST and CONF-V2, and the other host never sees the stored
// password; with a new password the change goes through and only that one is sent.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startDaemon } from '../helpers/daemon.js';
import { basic } from '../helpers/session-client.js';
import { mosquittoSkip, startMosquitto, subscribeLines } from '../helpers/mosquitto.js';
import { startFakeBroker } from '../helpers/fake-broker.js';
import { until } from '../helpers/mqtt-fixture.js';

const C = '/services/configuration/v2';
const MQTT = 'org.eclipse.kura.core.data.transport.mqtt.MqttDataTransport';
const SECRET = 'Device-Secret-1';
const S = (value: string) => ({ type: 'STRING', value });

t.test('the MQTT password does not follow a changed broker-url or username', mosquittoSkip(), async (t) => {
  const pwDir = fs.mkdtempSync('/tmp/gatewayd-mqtt-pw-');
  t.teardown(() => fs.rmSync(pwDir, { recursive: true, force: true }));
  const pwFile = path.join(pwDir, 'passwd');
  for (const [user, pw, create] of [['device', SECRET, true], ['kapua', 'Kapua-Secret-1', false]] as const) {
    const r = spawnSync('/usr/bin/mosquitto_passwd', [...(create ? ['-c'] : []), '-b', pwFile, user, pw], { encoding: 'utf8' });
    t.equal(r.status, 0, `mosquitto_passwd ${user}: ${r.stderr}`);
  }
  const broker = await startMosquitto({ conf: ['allow_anonymous false', `password_file ${pwFile}`] });
  t.teardown(() => broker.close());
  // The "new host": records every CONNECT it gets.
  const other = await startFakeBroker((conn, p) => {
    if (p.cmd === 'connect') conn.send({ cmd: 'connack', returnCode: 0, sessionPresent: false });
  });
  t.teardown(() => other.close());
  const passwordsAtOther = () => other.connections.flatMap((c) => c.packets.filter((p) => p.cmd === 'connect').map((p) => String((p as { password?: Buffer }).password ?? '')));

  const d = await startDaemon(t, {
    identities: { admin: { password: 'admin', permissions: ['kura.admin'] } },
    rest: { 'login.throttle.max.delay': 0 },
    mqtt: { enabled: true, 'broker-url': broker.url, 'client-id': 'dev1', 'topic.context.account-name': 'acct', username: 'device', password: SECRET, 'payload.encoding': 'json' },
  });
  await d.waitForLog(/msg="mqtt connected"/);
  const connects = () => d.logs.filter((l) => /msg="mqtt connected"/.test(l)).length;
  const admin = basic(d, 'admin', 'admin');
  const update = (properties: Record<string, unknown>) =>
    admin.request(`${C}/configurableComponents/configurations/_update`, { method: 'PUT', body: { configs: [{ pid: MQTT, properties }], takeSnapshot: false } });
  const refusal = (changed: string) => ({
    message: `Invalid configuration of ${MQTT}, property password: ${changed} changed, and the stored password is kept only for the endpoint it was given for; send the password for the new ${changed} with the change (an empty one for none)`,
  });
  const layerFile = path.join(d.dataDir, 'config', 'runtime.json');
  const layer = () => (fs.existsSync(layerFile) ? fs.readFileSync(layerFile, 'utf8') : '');

  t.test('REST: refused with placeholder or without a password; nothing reaches the other host', async (t) => {
    const before = layer();
    const n = connects();
    for (const [what, properties, changed] of [
      ['broker-url with placeholder', { 'broker-url': S(other.url), password: { type: 'PASSWORD', value: 'placeholder' } }, 'broker-url'],
      ['broker-url without a password', { 'broker-url': S(other.url) }, 'broker-url'],
      ['username with placeholder', { username: S('someone-else'), password: { type: 'PASSWORD', value: 'placeholder' } }, 'username'],
      ['broker-url and username', { 'broker-url': S(other.url), username: S('x') }, 'broker-url'],
    ] as const) {
      const r = await update(properties);
      t.same([r.status, r.json()], [400, refusal(changed)], what);
    }
    t.equal(layer(), before, 'nothing stored');
    await new Promise((r) => setTimeout(r, 500));
    t.same(passwordsAtOther(), [], 'the other host got no connection');
    t.equal(connects(), n, 'no reconnection');
  });

  t.test('REST: the endpoint unchanged, placeholder keeps the password (the broker still accepts it)', async (t) => {
    const n = connects();
    const r = await update({ 'keep-alive': { type: 'INTEGER', value: 20 }, password: { type: 'PASSWORD', value: 'placeholder' } });
    t.equal(r.status, 200);
    await until(() => connects() > n, 20_000, 'reconnect with the kept password');
    t.pass('connected again to the broker that requires the password');
  });

  t.test('REST: with a new password the change goes through; only that one is sent', async (t) => {
    const r = await update({ 'broker-url': S(other.url), password: { type: 'PASSWORD', value: 'For-The-Other-Host' } });
    t.equal(r.status, 200);
    await until(() => passwordsAtOther().length > 0, 20_000, 'CONNECT at the other host');
    t.same([...new Set(passwordsAtOther())], ['For-The-Other-Host'], 'the new password, never the stored one');
    // Back to the first broker: its password must be given again, too.
    const back = await update({ 'broker-url': S(broker.url) });
    t.same([back.status, back.json()], [400, refusal('broker-url')], 'the other host\'s password does not follow back either');
    const n = connects();
    t.equal((await update({ 'broker-url': S(broker.url), password: { type: 'PASSWORD', value: SECRET } })).status, 200);
    await until(() => connects() > n, 20_000, 'connected to the first broker again');
    t.notOk(d.logs.some((l) => l.includes(SECRET) || l.includes('For-The-Other-Host')), 'no password in the log');
  });

  t.test('CONF-V2: the same refusal over the broker', async (t) => {
    const before = passwordsAtOther().length;
    const sub = subscribeLines(broker.port, '$EDC/acct/kapua/CONF-V2/REPLY/#', ['-u', 'kapua', '-P', 'Kapua-Secret-1']);
    t.teardown(() => sub.stop());
    await sub.ready;
    const body = JSON.stringify({ configs: [{ pid: MQTT, properties: { 'broker-url': S(other.url), password: { type: 'PASSWORD', value: 'placeholder' } } }], takeSnapshot: false });
    const pub = spawnSync('/usr/bin/mosquitto_pub', ['-h', '127.0.0.1', '-p', String(broker.port), '-u', 'kapua', '-P', 'Kapua-Secret-1', '-q', '1', '-t', '$EDC/acct/dev1/CONF-V2/PUT/configurableComponents/configurations/_update/kapua/r1', '-m', body], { encoding: 'utf8' });
    t.equal(pub.status, 0, pub.stderr);
    await until(() => sub.lines.length > 0, 20_000, 'CONF-V2 reply');
    const reply = JSON.parse(sub.lines[0].slice(sub.lines[0].indexOf(' ') + 1));
    t.same(reply, { 'response.code': 400, ...refusal('broker-url') });
    await new Promise((r) => setTimeout(r, 500));
    t.equal(passwordsAtOther().length, before, 'no connection to the other host');
  });
});
