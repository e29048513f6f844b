// MQTT connections as configuration/v2 components (docs/configuration-v2.md, docs/mqtt.md
// "Connections"): with `mqtt.connections`, `default` keeps today's two PIDs and every other
// connection is `…CloudService-<name>` and `…MqttDataTransport-<name>`; an update of one connection
// reconnects only it; its broker keys are reserved to kura.admin and its stored password stays with
// its broker, as the default connection's. Through the real daemon and a real Mosquitto.

import t from 'tap';
import { startDaemon } from '../helpers/daemon.js';
import { basic } from '../helpers/session-client.js';
import { mosquittoSkip, startMosquitto } from '../helpers/mosquitto.js';
import { waitFor } from '../helpers/broker-watch.js';

t.setTimeout(60_000);

const C = '/services/configuration/v2';
const CLOUD = 'org.eclipse.kura.cloud.CloudService';
const MQTT = 'org.eclipse.kura.core.data.transport.mqtt.MqttDataTransport';
const S = (value: string) => ({ type: 'STRING', value });

t.test('connections as components: list, read, update one, reserved keys, the password stays with its broker', mosquittoSkip(), async (t) => {
  const broker = await startMosquitto();
  t.teardown(() => broker.close());
  const d = await startDaemon(t, {
    rest: { 'auth.basic.enabled': true, 'login.throttle.max.delay': 0 },
    identities: {
      admin: { password: 'Adm1n-Secret!', passwordChangeNeeded: false, permissions: ['kura.admin'] },
      conf: { password: 'C0nf-Secret!x', passwordChangeNeeded: false, permissions: ['rest.configuration', 'rest.cloudconnection'] },
    },
    mqtt: {
      connections: {
        default: { enabled: true, 'broker-url': broker.url, 'client-id': 'gw-a' },
        local: { enabled: true, 'broker-url': broker.url, 'client-id': 'gw-b', username: 'u', password: 'local-Secret', 'payload.encoding': 'json', 'telemetry.assets': ['pump'] },
      },
    },
  });
  const admin = basic(d, 'admin', 'Adm1n-Secret!');
  const conf = basic(d, 'conf', 'C0nf-Secret!x');
  const call = (c: typeof admin, p: string, body?: unknown, method = 'POST') => c.request(`${C}/${p}`, { method, body: body === undefined ? undefined : JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  const props = async (pid: string) => (await call(admin, 'configurableComponents/configurations/byPid', { pids: [pid] })).json().configs[0]?.properties;
  const update = (c: typeof admin, configs: unknown[]) => call(c, 'configurableComponents/configurations/_update', { configs, takeSnapshot: false }, 'PUT');
  const conns = async () => (await admin.request('/services/cloudconnection/v1/connections')).json() as any[];
  await waitFor(async () => (await conns()).every((c) => c.connected), 10_000, 'both connected');

  const pids: string[] = (await admin.request(`${C}/configurableComponents`)).json().pids;
  for (const p of [CLOUD, MQTT, `${CLOUD}-local`, `${MQTT}-local`]) t.ok(pids.includes(p), p);
  t.ok(pids.indexOf(`${MQTT}-local`) > pids.indexOf(CLOUD), 'in the file’s order');

  const local = await props(`${CLOUD}-local`);
  t.same(local['payload.encoding'], S('json'));
  t.same(local['telemetry.assets'].value, ['pump']);
  t.notOk(local['broker-url'], 'broker keys are on the transport component');
  const transport = await props(`${MQTT}-local`);
  t.same(transport['client-id'], S('gw-b'));
  t.equal(transport.password.value, 'placeholder', 'the password shows as placeholder');
  t.same((await props(MQTT))['client-id'], S('gw-a'), 'default keeps today’s PIDs');

  // An update of the local connection: only it reconnects; the file's shape is kept.
  let r = await update(conf, [{ pid: `${CLOUD}-local`, properties: { 'topic.context.account-name': S('plant') } }]);
  t.equal(r.status, 200, r.body);
  t.same((await props(`${CLOUD}-local`))['topic.context.account-name'], S('plant'));
  await waitFor(async () => (await conns()).find((c) => c.name === 'local').reconnects === 1 && (await conns()).find((c) => c.name === 'local').connected, 10_000, 'local reconnected');
  t.equal((await conns()).find((c) => c.name === 'default').reconnects, 0, 'default untouched');
  // The effective configuration: the other keys of the connection are as the image has them.
  t.same((await props(`${CLOUD}-local`))['payload.encoding'], S('json'));

  // Reserved keys: only kura.admin changes a connection's broker.
  r = await update(conf, [{ pid: `${MQTT}-local`, properties: { 'broker-url': S('mqtt://127.0.0.1:1') } }]);
  t.equal(r.status, 403);
  t.match(r.json().message, `Only kura.admin may change ${MQTT}-local property broker-url`);
  r = await update(conf, [{ pid: `${CLOUD}-local`, properties: { 'applications.disabled': { type: 'STRING', value: ['CONF-V2'] } } }]);
  t.equal(r.status, 403, 'applications.disabled is reserved on every connection');

  // The stored password is not sent to another broker unless given again.
  r = await update(admin, [{ pid: `${MQTT}-local`, properties: { 'broker-url': S('mqtt://127.0.0.1:1') } }]);
  t.equal(r.status, 400);
  t.match(r.json().message, `Invalid configuration of ${MQTT}-local, property password: broker-url changed`);
  t.same((await props(`${MQTT}-local`))['broker-url'], S(broker.url), 'nothing changed');

  // A bad value names the connection's component.
  r = await update(admin, [{ pid: `${MQTT}-local`, properties: { "keep-alive": { type: "INTEGER", value: 70000 } } }]);
  t.equal(r.status, 400);
  t.match(r.json().message, `Invalid configuration of ${MQTT}-local, property keep-alive:`);
  await d.stop();
});
