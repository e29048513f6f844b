// The Sparkplug B topic namespace and the STATE payload (src/mqtt/sparkplug/topic.ts,
// host-state.ts): topics built and parsed as a table of (parts, topic), ids that cannot be a topic
// level refused by name, topics that are no Sparkplug B topic refused with the reason, and the
// 3.0 JSON host state against what a host sends (also 2.2's text form, which is refused).

import t, { type Test } from 'tap';
import { SparkplugError } from '../../src/mqtt/sparkplug/error.js';
import { decodeHostState, encodeHostState } from '../../src/mqtt/sparkplug/host-state.js';
import { idProblem, parseSparkplugTopic, sparkplugTopic, type SparkplugTopic } from '../../src/mqtt/sparkplug/topic.js';

const table: [SparkplugTopic, string][] = [
  [{ type: 'NBIRTH', group: 'Sparkplug B Devices', edgeNode: 'Raspberry Pi' }, 'spBv1.0/Sparkplug B Devices/NBIRTH/Raspberry Pi'],
  [{ type: 'NDEATH', group: 'plant', edgeNode: 'gw-1' }, 'spBv1.0/plant/NDEATH/gw-1'],
  [{ type: 'NDATA', group: 'plant', edgeNode: 'gw-1' }, 'spBv1.0/plant/NDATA/gw-1'],
  [{ type: 'NCMD', group: 'plant', edgeNode: 'gw-1' }, 'spBv1.0/plant/NCMD/gw-1'],
  [{ type: 'DBIRTH', group: 'plant', edgeNode: 'gw-1', device: 'boiler.1' }, 'spBv1.0/plant/DBIRTH/gw-1/boiler.1'],
  [{ type: 'DDEATH', group: 'plant', edgeNode: 'gw-1', device: 'boiler.1' }, 'spBv1.0/plant/DDEATH/gw-1/boiler.1'],
  [{ type: 'DDATA', group: 'plant', edgeNode: 'gw-1', device: 'Kessel Nr. 2 – Süd' }, 'spBv1.0/plant/DDATA/gw-1/Kessel Nr. 2 – Süd'],
  [{ type: 'DCMD', group: 'plant', edgeNode: 'gw-1', device: '😀' }, 'spBv1.0/plant/DCMD/gw-1/😀'],
  [{ type: 'STATE', hostId: 'scada-primary' }, 'spBv1.0/STATE/scada-primary'],
  [{ type: 'NBIRTH', group: 'STATE', edgeNode: 'e' }, 'spBv1.0/STATE/NBIRTH/e'],
];

for (const [parts, topic] of table) {
  t.test(topic, async (t) => {
    t.equal(sparkplugTopic(parts), topic, 'build');
    t.same(parseSparkplugTopic(topic), parts, 'parse');
  });
}

function throws(t: Test, f: () => unknown, message: RegExp, what: string): void {
  try {
    f();
    t.fail(`${what}: no error`);
  } catch (err) {
    t.ok(err instanceof SparkplugError, `${what}: a SparkplugError`);
    t.match((err as Error).message, message, what);
  }
}

t.test('ids that cannot be one topic level are refused, naming the id and the character', async (t) => {
  const node = (group: string, edgeNode = 'e') => () => sparkplugTopic({ type: 'NDATA', group, edgeNode });
  throws(t, node('a/b'), /^group id "a\/b" contains "\/": a Sparkplug id is one topic level, without \+ \/ # or control characters$/, 'a separator');
  throws(t, node('a+'), /group id "a\+" contains "\+"/, 'a single-level wildcard');
  throws(t, node('#'), /group id "#" contains "#"/, 'a multi-level wildcard');
  throws(t, node('g', 'e\u0000'), /edge node id "e\\u0000" contains U\+0000/, 'NUL');
  throws(t, node('g', 'e\n'), /edge node id "e\\n" contains U\+000A/, 'a line feed');
  throws(t, node('g', 'e\u0085'), /contains U\+0085/, 'a C1 control');
  throws(t, node('g', 'e\ud800'), /contains U\+D800/, 'a lone surrogate (no UTF-8 form)');
  throws(t, node(''), /^group id must be a non-empty string$/, 'an empty group id');
  throws(t, () => sparkplugTopic({ type: 'DDATA', group: 'g', edgeNode: 'e', device: '' }), /^device id must be a non-empty string$/, 'an empty device id');
  throws(t, () => sparkplugTopic({ type: 'STATE', hostId: 'h/1' }), /^host id "h\/1" contains "\/"/, 'a host id with a separator');
  throws(t, () => sparkplugTopic({ type: 'NOPE' as never, group: 'g', edgeNode: 'e' }), /unknown message type "NOPE"/, 'a message type that is none');
  throws(t, node('x'.repeat(65536)), /topic of 655\d\d bytes is longer than MQTT's 65535/, 'a topic over 65535 bytes');
  t.equal(sparkplugTopic({ type: 'NDATA', group: 'x'.repeat(65535 - 'spBv1.0//NDATA/e'.length), edgeNode: 'e' }).length, 65535, 'a topic of exactly 65535 bytes');
  t.equal(idProblem('Sparkplug B Devices', 'group id'), undefined, 'spaces are allowed');
  t.equal(idProblem('a.b-c_d:e', 'group id'), undefined, 'punctuation other than + / # is allowed');
  t.equal(idProblem('😀', 'group id'), undefined, 'an astral character (a surrogate pair) is allowed');
  t.match(idProblem('x'.repeat(100) + '/', 'edge node id'), /^edge node id "x{64}…" contains "\/"/, 'a long id is cut in the message');
});

t.test('topics that are no Sparkplug B topic are refused with the reason', async (t) => {
  const bad: [string, RegExp][] = [
    ['spAv1.0/g/NDATA/e', /^topic does not start with spBv1.0\/$/],
    ['spBv1.0', /topic of 1 levels: expected spBv1.0\/<group id>\/<message type>\/<edge node id>\[\/<device id>\]/],
    ['spBv1.0/g/NDATA', /topic of 3 levels/],
    ['spBv1.0/g/NBIRTH/e/d', /^NBIRTH topic has 4 levels, not 5$/],
    ['spBv1.0/g/DDATA/e', /^DDATA topic has 5 levels, not 4$/],
    ['spBv1.0/g/DDATA/e/d/x', /^DDATA topic has 5 levels, not 6$/],
    ['spBv1.0/g/ndata/e', /^unknown message type "ndata"$/],
    ['spBv1.0//NDATA/e', /^group id must be a non-empty string$/],
    ['spBv1.0/g/DCMD/e/', /^device id must be a non-empty string$/],
    ['spBv1.0/g/NCMD/+', /edge node id "\+" contains "\+"/],
    ['spBv1.0/STATE/', /^host id must be a non-empty string$/],
    ['spBv1.0/STATE/h/x', /^unknown message type "h"$/],
    ['STATE/host', /^topic does not start with spBv1.0\//],
  ];
  for (const [topic, message] of bad) throws(t, () => parseSparkplugTopic(topic), message, topic);
});

t.test('STATE payloads: the 3.0 JSON form, and what is refused', async (t) => {
  t.same(encodeHostState({ online: true, timestamp: 1700000000000 }).toString(), '{"online":true,"timestamp":1700000000000}', 'encoded as the specification shows it');
  t.same(decodeHostState(Buffer.from('{"online":true,"timestamp":1700000000000}')), { online: true, timestamp: 1700000000000 }, 'birth');
  t.same(decodeHostState(Buffer.from(' {\n "timestamp": 0, "online": false, "extra": [1] }\n')), { online: false, timestamp: 0 }, 'death, keys in any order, whitespace, an extra key');
  const max = Buffer.from(`{"online":true,"timestamp":1,"pad":"${'x'.repeat(4096 - 38)}"}`);
  t.equal(max.length, 4096);
  t.same(decodeHostState(max), { online: true, timestamp: 1 }, 'a payload of exactly 4096 bytes');
  const bad: [Buffer, RegExp, string][] = [
    [Buffer.from('ONLINE'), /^STATE payload ONLINE is Sparkplug 2.2's form, not 3.0's JSON/, "2.2's ONLINE"],
    [Buffer.from('OFFLINE\n'), /OFFLINE is Sparkplug 2.2's form/, "2.2's OFFLINE"],
    [Buffer.from('{"online":true'), /^STATE payload is not JSON$/, 'cut short'],
    [Buffer.from('[true, 1]'), /^STATE payload is not a JSON object$/, 'an array'],
    [Buffer.from('null'), /not a JSON object/, 'null'],
    [Buffer.from('{"online":"true","timestamp":1}'), /^STATE payload has no boolean "online"$/, 'online as text'],
    [Buffer.from('{"timestamp":1}'), /no boolean "online"/, 'no online'],
    [Buffer.from('{"online":true}'), /^STATE payload has no "timestamp" in milliseconds since the epoch$/, 'no timestamp'],
    [Buffer.from('{"online":true,"timestamp":-1}'), /no "timestamp"/, 'a negative timestamp'],
    [Buffer.from('{"online":true,"timestamp":1.5}'), /no "timestamp"/, 'a fractional timestamp'],
    [Buffer.from('{"online":true,"timestamp":"1700000000000"}'), /no "timestamp"/, 'a timestamp as text'],
    [Buffer.from('{"online":true,"timestamp":1e300}'), /no "timestamp"/, 'a timestamp beyond 2^53'],
    [Buffer.from([0x7b, 0xff, 0x7d]), /^STATE payload is not UTF-8 JSON$/, 'not UTF-8'],
    [Buffer.concat([max, Buffer.from(' ')]), /^STATE payload of 4097 bytes is over the bound of 4096$/, 'one byte over the bound'],
  ];
  for (const [payload, message, what] of bad) throws(t, () => decodeHostState(payload), message, what);
  throws(t, () => encodeHostState({ online: 1 as never, timestamp: 1 }), /a host state is \{online: boolean, timestamp/, 'encoding a host state that is none');
});
