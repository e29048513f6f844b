// The `mqtt` section in its two forms (docs/configuration.md "Connections"): today's object is one
// connection named `default`; `{"connections": {…}}` is several, each validated as today's section
// plus `type` and `telemetry.assets`, with problems at `mqtt.connections.<name>.<key>`; names are one
// topic level; two enabled connections on one broker with one client id are refused.

import t from 'tap';
import { validateMqttConnections, validateMqttSection, outboxDirName, primaryConnection } from '../../src/mqtt/config.js';
import { validateConfig } from '../../src/configuration/config.js';
import { DriverRegistry } from '../../src/drivers/registry.js';
import { builtinDrivers } from '../../src/drivers/builtin.js';
import { keystoreUses } from '../../src/core/keystore-reference.js';

const errors = (raw: unknown) => validateMqttConnections(raw).problems.filter((p) => p.severity === 'error').map((p) => `${p.path}: ${p.message}`);

t.test('the object form is one connection, default, with every value validateMqttSection gives', async (t) => {
  const raw = { enabled: true, 'broker-url': 'mqtt://b:1883', 'client-id': 'gw1' };
  const r = validateMqttConnections(raw);
  t.same(r.problems, []);
  t.equal(r.connections.length, 1);
  const [c] = r.connections;
  t.equal(c.name, 'default');
  t.equal(c.keyPath, 'mqtt');
  const today = validateMqttSection(raw).value;
  t.same({ ...c.config, type: undefined, 'telemetry.assets': undefined }, { ...today, type: undefined, 'telemetry.assets': undefined }, 'today’s keys as today');
  t.equal(c.config.type, 'kura', 'default type');
  t.equal(c.config['telemetry.assets'], '*', 'default: every asset');
  t.same(errors(undefined), [], 'no mqtt section at all is valid');
  t.equal(validateMqttConnections(undefined).connections[0].config.enabled, false);
  // Problems of the object form keep their paths.
  t.same(errors({ 'client-id': 'a/b' }), ['mqtt.client-id: must be non-empty without / # +']);
  t.same(errors({ 'telemetry.assets': 'pump' }), ['mqtt.telemetry.assets: expected an array, got string']);
});

t.test('the connections form: each entry is a connection, problems name it', async (t) => {
  const raw = {
    connections: {
      cloud: { enabled: true, 'broker-url': 'mqtts://cloud.example:8883', 'client-id': 'gw1' },
      local: { enabled: true, 'broker-url': 'mqtt://127.0.0.1', 'client-id': 'gw1', 'payload.encoding': 'json', 'telemetry.assets': ['pump', 'tank'], 'applications.disabled': ['ASSET-V1'] },
    },
  };
  const r = validateMqttConnections(raw);
  t.same(r.problems.filter((p) => p.severity === 'error'), []);
  t.same(r.connections.map((c) => [c.name, c.keyPath]), [['cloud', 'mqtt.connections.cloud'], ['local', 'mqtt.connections.local']], 'in the file’s order');
  t.same(r.connections[1].config['telemetry.assets'], ['pump', 'tank']);
  t.equal(r.connections[1].config['payload.encoding'], 'json');
  t.equal(primaryConnection(r.connections)['client-id'], 'gw1', 'no default: the first is the primary');
  t.equal(primaryConnection([]).enabled, false, 'no connection: a disabled one');

  const table: [string, unknown, string[]][] = [
    ['a bad key in one entry', { connections: { cloud: { 'keep-alive': 'x' } } }, ['mqtt.connections.cloud.keep-alive: expected a number, got string']],
    ['an unknown key', { connections: { cloud: { brokr: 'x' } } }, ['mqtt.connections.cloud.brokr: unknown key']],
    ['a bad type', { connections: { cloud: { type: 'mqtt5' } } }, ['mqtt.connections.cloud.type: expected one of kura, sparkplug, got "mqtt5"']],
    ['telemetry.assets neither "*" nor a list', { connections: { cloud: { 'telemetry.assets': 3 } } }, ['mqtt.connections.cloud.telemetry.assets: expected an array, got number']],
    ['telemetry.assets twice the same', { connections: { cloud: { 'telemetry.assets': ['a', 'a'] } } }, ['mqtt.connections.cloud.telemetry.assets: contains duplicates']],
    ['a name with a topic separator', { connections: { 'a/b': {} } }, ['mqtt.connections.a/b: not a connection name: 1 to 64 letters, digits, "_" or "-"']],
    ['a name with a wildcard', { connections: { 'a+': {} } }, ['mqtt.connections.a+: not a connection name: 1 to 64 letters, digits, "_" or "-"']],
    ['an empty name', { connections: { '': {} } }, ['mqtt.connections.: not a connection name: 1 to 64 letters, digits, "_" or "-"']],
    ['a name with a dot (it would be two key-path levels)', { connections: { 'a.b': {} } }, ['mqtt.connections.a.b: not a connection name: 1 to 64 letters, digits, "_" or "-"']],
    ['a name too long', { connections: { ['n'.repeat(65)]: {} } }, [`mqtt.connections.${'n'.repeat(65)}: not a connection name: 1 to 64 letters, digits, "_" or "-"`]],
    ['an entry that is no object', { connections: { cloud: 'mqtt://x' } }, ['mqtt.connections.cloud: expected an object, got string']],
    ['connections that is no object', { connections: [] }, ['mqtt.connections: expected an object of connections by name, got array']],
    ['a key beside connections', { enabled: true, connections: {} }, ['mqtt.enabled: with "connections", every key of mqtt belongs to a connection: move it into one']],
    [
      'one broker and client id twice (scheme aliases and the default port are one broker)',
      { connections: { a: { enabled: true, 'broker-url': 'tcp://Broker:1883', 'client-id': 'gw' }, b: { enabled: true, 'broker-url': 'mqtt://broker/', 'client-id': 'gw' } } },
      ['mqtt.connections.b.client-id: connection "a" uses the same broker and client id: the broker would disconnect one for the other'],
    ],
    [
      'one Sparkplug edge node id of one group twice on one broker',
      { connections: { a: { enabled: true, type: 'sparkplug', 'sparkplug.group.id': 'G', 'client-id': 'gw1', 'sparkplug.edge.node.id': 'n' }, b: { enabled: true, type: 'sparkplug', 'sparkplug.group.id': 'G', 'client-id': 'gw2', 'sparkplug.edge.node.id': 'n' } } },
      ['mqtt.connections.b.sparkplug.edge.node.id: connection "a" is the same edge node of the same group on the same broker: set another sparkplug.edge.node.id'],
    ],
    [
      'an edge node id that is another edge node\'s client id (the default id)',
      { connections: { a: { enabled: true, type: 'sparkplug', 'sparkplug.group.id': 'G', 'client-id': 'n' }, b: { enabled: true, type: 'sparkplug', 'sparkplug.group.id': 'G', 'client-id': 'gw2', 'sparkplug.edge.node.id': 'n' } } },
      ['mqtt.connections.b.sparkplug.edge.node.id: connection "a" is the same edge node of the same group on the same broker: set another sparkplug.edge.node.id'],
    ],
  ];
  for (const [what, raw, want] of table) t.same(errors(raw), want, what);

  // Not a duplicate: another client id, another broker or port, or one of them disabled.
  const ok: [string, unknown][] = [
    ['another client id', { connections: { a: { enabled: true, 'client-id': 'gw' }, b: { enabled: true, 'client-id': 'gw2' } } }],
    ['another port', { connections: { a: { enabled: true, 'broker-url': 'mqtt://b:1883' }, b: { enabled: true, 'broker-url': 'mqtt://b:1884' } } }],
    ['mqtt and mqtts', { connections: { a: { enabled: true, 'broker-url': 'mqtt://b' }, b: { enabled: true, 'broker-url': 'mqtts://b' } } }],
    ['one disabled', { connections: { a: { enabled: true }, b: { enabled: false } } }],
    ['one edge node id in two groups', { connections: { a: { enabled: true, type: 'sparkplug', 'sparkplug.group.id': 'G1', 'client-id': 'gw1', 'sparkplug.edge.node.id': 'n' }, b: { enabled: true, type: 'sparkplug', 'sparkplug.group.id': 'G2', 'client-id': 'gw2', 'sparkplug.edge.node.id': 'n' } } }],
    ['a Kura connection whose client id is an edge node id', { connections: { a: { enabled: true, type: 'sparkplug', 'sparkplug.group.id': 'G', 'client-id': 'gw1', 'sparkplug.edge.node.id': 'n' }, b: { enabled: true, 'client-id': 'n' } } }],
    ['no connection at all', { connections: {} }],
    ['names of every allowed character', { connections: { 'A-z_09': {} } }],
  ];
  for (const [what, raw] of ok) t.same(errors(raw), [], what);
});

t.test('outbox folders: default keeps dataDir/mqtt, the others their own', async (t) => {
  t.equal(outboxDirName('default'), 'mqtt');
  t.equal(outboxDirName('local'), 'mqtt-local');
});

t.test('the whole configuration: mqtt is the primary, connections all; relative TLS paths resolved; keystore uses per connection', async (t) => {
  const reg = new DriverRegistry(builtinDrivers());
  const raw = {
    mqtt: {
      connections: {
        local: { enabled: true, 'client-id': 'a', 'tls.ca': 'ca.pem' },
        default: { enabled: true, 'client-id': 'b', 'broker-url': 'mqtts://x', 'tls.cert': 'keystore:ks/dev', 'tls.key': 'keystore:ks/dev' },
      },
    },
  };
  const r = validateConfig(raw, reg, '/etc/gw');
  t.same(r.problems.filter((p) => p.severity === 'error'), []);
  t.equal(r.config.mqtt['client-id'], 'b', 'the connection named default is the primary');
  t.same(r.config.connections.map((c) => c.name), ['local', 'default']);
  t.equal(r.config.connections[0].config['tls.ca'], '/etc/gw/ca.pem');
  t.same(keystoreUses(r.config).map((u) => u.key), ['mqtt.connections.default.tls.cert', 'mqtt.connections.default.tls.key']);
  const bad = validateConfig({ mqtt: { connections: { x: { 'client-id': '' } } } }, reg, '/');
  t.same(bad.problems.filter((p) => p.severity === 'error').map((p) => p.path), ['mqtt.connections.x.client-id']);
});

t.test('a type without a factory in the table is listed with the reason and never connects', async (t) => {
  const { MqttConnections, kuraConnection } = await import('../../src/mqtt/connections.js');
  const { MqttApplications } = await import('../../src/mqtt/applications.js');
  const { MqttClient } = await import('../../src/mqtt/client.js');
  const { silentLogger } = await import('../../src/log.js');
  const fs = await import('node:fs');
  const os = await import('node:os');
  const path = await import('node:path');
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-conn-types-'));
  t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  let clients = 0;
  const conns = new MqttConnections({
    factories: { kura: kuraConnection },
    parts: { dataDir, applications: new MqttApplications(), assets: { get: () => undefined, onPoll: () => () => {}, write: async () => [] }, client: (o) => (clients++, new MqttClient(o)), log: silentLogger },
    log: silentLogger,
  });
  const { connections } = validateMqttConnections({ connections: { edge: { enabled: true, type: 'sparkplug', 'broker-url': 'mqtt://127.0.0.1:1' } } });
  await conns.start(connections);
  const [c] = conns.list();
  t.equal(c.type, 'sparkplug');
  t.match(c.stats(), { connected: false, lastError: { message: 'connection type "sparkplug" is not available in this build' } });
  t.equal(clients, 0, 'no client was made');
  t.notOk(fs.existsSync(path.join(dataDir, 'mqtt-edge')), 'no outbox opened');
  await conns.stop();
});
