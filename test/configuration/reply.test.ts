// Configurations written a piece at a time (docs/configuration-v2.md "How large a configuration can
// grow"): the pieces joined are exactly the text the whole objects make — configDto and json() for
// replies, JSON.stringify of shownProps for snapshots — for every kind of component and option.
import t from 'tap';
import { adsById, componentOf, componentRefs, componentsOf, configDto, definitionLookup, json, ocdOf, shownProps, type Component, type Raw } from '../../src/configuration/model.js';
import { AssetSource, configsJson, shownOf, snapshotJson, type ShowOptions } from '../../src/configuration/reply.js';
import { DriverRegistry } from '../../src/drivers/registry.js';
import { builtinDrivers } from '../../src/drivers/builtin.js';

const registry = new DriverRegistry(builtinDrivers());

function sample(): Raw {
  const modbus: Record<string, unknown> = {};
  for (let i = 1; i <= 40; i++) {
    modbus[`c${i}`] = { type: i % 2 ? 'READ' : 'READ_WRITE', 'value.type': i % 3 ? 'INTEGER' : 'DOUBLE', 'unit.id': 1 + (i % 4), 'primary.table': 'HOLDING_REGISTERS', 'memory.address': i, ...(i % 5 === 0 && { scale: 0.5, offset: 2, unit: 'kW<&>', deadband: 0.25 }) };
  }
  modbus["q'=x"] = { type: 'READ', 'value.type': 'STRING', 'memory.address': 99, 'array.data.length': 4, 'data.type': 'STRING' };
  return {
    'log.level': 'info',
    mqtt: { 'broker-url': 'mqtt://127.0.0.1:1883', username: 'dev', password: 'secret', 'topic.context.account-name': 'acct' },
    rest: { 'login.throttle.max.delay': 0 },
    drivers: {
      mb: { factory: 'modbus', 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': 5020 },
      sim: { factory: 'simulator' },
      io: { factory: 'gpio', pins: { led: 17 } },
    },
    assets: {
      plc: { 'driver.pid': 'mb', 'asset.desc': 'a <pump> & more', 'poll.interval': 1000, channels: modbus },
      s: { 'driver.pid': 'sim', channels: { x: { type: 'READ', 'value.type': 'INTEGER', simulation: 'constant', initial: 4 }, y: { type: 'READ_WRITE', 'value.type': 'BOOLEAN' } } },
      empty: { 'driver.pid': 'sim' },
      lamp: { 'driver.pid': 'io', channels: { on: { type: 'READ_WRITE', 'value.type': 'BOOLEAN', 'resource.name': 'led' } } },
    },
  };
}

const joined = (pieces: Iterable<string>) => [...pieces].join('');

// What the handler made before: whole DTOs, serialised at once.
const whole = (raw: Raw, cs: Component[], o: ShowOptions) =>
  json({ configs: cs.flatMap((c) => (o.defaultsOnly && !ocdOf(c, raw, registry) ? [] : [configDto(c, ocdOf(c, raw, registry), o)])) });

t.test('configurations, byPid and _default: the pieces are the whole reply', async (t) => {
  const raw = sample();
  const refs = componentRefs(raw);
  t.same(refs.map((r) => r.pid), componentsOf(raw).map((c) => c.pid), 'refs list every component, in order');
  const opts: ShowOptions[] = [
    { definition: true, mask: true },
    { definition: true, mask: false, defaultsOnly: true },
    { definition: false, mask: true },
  ];
  for (const o of opts) {
    const text = joined(configsJson(shownOf(raw, refs, (pid) => componentOf(raw, pid)), raw, registry, o));
    t.equal(text, whole(raw, componentsOf(raw), o), JSON.stringify(o));
    JSON.parse(text);
  }
  const some = refs.filter((r) => ['plc', 'org.eclipse.kura.core.data.transport.mqtt.MqttDataTransport', 'empty'].includes(r.pid));
  t.equal(joined(configsJson(shownOf(raw, some, (pid) => componentOf(raw, pid)), raw, registry, opts[0])), whole(raw, componentsOf(raw).filter((c) => some.some((r) => r.pid === c.pid)), opts[0]));
  t.notMatch(joined(configsJson(shownOf(raw, refs, (pid) => componentOf(raw, pid)), raw, registry, opts[0])), /secret/, 'the password is masked');
});

t.test('a snapshot entry in pieces is JSON.stringify of the component with its shown properties; byId from it is the whole reply', async (t) => {
  const raw = sample();
  const parts = [...shownOf(raw, componentRefs(raw), (pid) => componentOf(raw, pid))].map((c) => joined(snapshotJson(c, raw, registry)));
  const before = componentsOf(raw).map((c) => JSON.stringify({ ...c, props: shownProps(c, c.factoryPid === 'org.eclipse.kura.wire.WireAsset' ? undefined : ocdOf(c, raw, registry)) }));
  t.same(parts, before);
  // snapshots/byId: the stored components (flat, with `+name`) shown without definitions.
  const stored = JSON.parse(`[${parts.join(',')}]`) as Component[];
  const items = stored.map((c) => (c.factoryPid === 'org.eclipse.kura.wire.WireAsset' ? AssetSource.ofProps(c) : c));
  t.equal(joined(configsJson(items, raw, registry, { definition: false, mask: true })), whole(raw, stored, { definition: false, mask: true }));
  t.equal(joined(snapshotJson(AssetSource.ofProps(stored.find((c) => c.pid === 'plc')!), raw, registry)), parts[stored.findIndex((c) => c.pid === 'plc')], 'a stored snapshot entry is written again the same');
});

t.test('definitionLookup finds what the whole definition would, without building it', async (t) => {
  const raw = sample();
  for (const c of componentsOf(raw)) {
    const full = adsById(ocdOf(c, raw, registry));
    const lookup = definitionLookup({ pid: c.pid, factoryPid: c.factoryPid }, raw, registry);
    const keys = [...full.keys(), ...Object.keys(c.props), 'c1#+nope', 'nochannel#+type', 'c1#poll.interval', 'poll.interval', 'x#y#z', 'new#memory.address'];
    for (const k of keys) {
      const a = full.get(k);
      const b = lookup(k);
      if (!a || !b) t.equal(b, a, `${c.pid} ${k}: none`);
      else t.same([b.type, b.json, b.default, b.options], [a.type, a.json, a.default, a.options], `${c.pid} ${k}`);
    }
  }
});
