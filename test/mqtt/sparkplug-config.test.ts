// The Sparkplug keys of the `mqtt` section (docs/configuration.md "mqtt"): the type's default, the
// group id required on a sparkplug connection, each id one topic level, the edge node id defaulting
// to the client-id.

import t from 'tap';
import { validateMqttSection } from '../../src/mqtt/config.js';
import { edgeNodeId } from '../../src/mqtt/sparkplug/config.js';

const problems = (raw: Record<string, unknown>) => validateMqttSection(raw).problems.filter((p) => p.severity === 'error').map((p) => p.path);

t.test('defaults: a kura connection, no Sparkplug ids needed', async (t) => {
  const { value, problems: p } = validateMqttSection({});
  t.equal(value.type, 'kura');
  t.same([value['sparkplug.group.id'], value['sparkplug.edge.node.id'], value['sparkplug.primary.host.id']], ['', '', '']);
  t.same(p, []);
  t.equal(edgeNodeId(value), 'gatewayd', 'the edge node id is the client-id');
  t.equal(edgeNodeId(validateMqttSection({ 'sparkplug.edge.node.id': 'Line3' }).value), 'Line3');
});

t.test('type sparkplug needs a group id; ids are single topic levels', async (t) => {
  t.same(problems({ type: 'sparkplug' }), ['mqtt.sparkplug.group.id'], 'group id required');
  t.same(problems({ type: 'sparkplug', 'sparkplug.group.id': 'Plant1' }), []);
  t.same(problems({ type: 'mqtt' }), ['mqtt.type'], 'an unknown type');
  for (const bad of ['a/b', 'a+', '#', 'tab\there', 'nul\u0000', 'c1\u0081', 'lone\udc00']) {
    t.same(problems({ type: 'sparkplug', 'sparkplug.group.id': bad }), ['mqtt.sparkplug.group.id'], `group id ${JSON.stringify(bad)}`);
    t.same(problems({ 'sparkplug.edge.node.id': bad, 'sparkplug.primary.host.id': bad }), ['mqtt.sparkplug.edge.node.id', 'mqtt.sparkplug.primary.host.id']);
  }
  // The message is the edge node's own (topic.ts idProblem), so configuration and topics cannot disagree.
  t.match(validateMqttSection({ 'sparkplug.primary.host.id': 'a+' }).problems[0]?.message, /^primary host id "a\+" contains "\+": a Sparkplug id is one topic level/);
});

t.test('the client-id as the edge node id must follow the Sparkplug id rules', async (t) => {
  const errors = (raw: Record<string, unknown>, keyPath?: string) => validateMqttSection(raw, keyPath).problems.filter((p) => p.severity === 'error');
  for (const bad of ['tab\there', 'bell\u0007', 'del\u007f', 'c1\u0085', 'lone\ud800']) {
    const p = errors({ type: 'sparkplug', 'sparkplug.group.id': 'G', 'client-id': bad });
    t.same(p.map((x) => x.path), ['mqtt.client-id'], `client-id ${JSON.stringify(bad)} reported at its key`);
    t.match(p[0]?.message, /edge node id .* contains U\+[0-9A-F]{4}: a Sparkplug id is one topic level.*the client-id is the edge node id without sparkplug\.edge\.node\.id/, 'saying why and how to mend it');
    t.same(errors({ type: 'sparkplug', 'sparkplug.group.id': 'G', 'client-id': bad, 'sparkplug.edge.node.id': 'node1' }), [], 'fine with an edge node id of its own');
    t.same(errors({ 'client-id': bad }), [], 'and on a kura connection');
  }
  t.same(errors({ type: 'sparkplug', 'sparkplug.group.id': 'G', 'client-id': 'x\u0001' }, 'mqtt.connections.plant').map((x) => x.path), ['mqtt.connections.plant.client-id'], 'at the connection key path');
  t.same(errors({ type: 'sparkplug', 'sparkplug.group.id': 'G', 'client-id': 'gw-1 Süd' }), [], 'a good client-id');
});
