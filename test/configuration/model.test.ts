// Kura's configuration DTOs for large assets: properties are matched with their definitions by id
// (a map, not a search per property, which made 10 assets × 1,000 Modbus channels take seconds).
import t from 'tap';
import { adsById, applyLayer, configDto, flattenAsset, ocdOf, componentsOf, unflattenAsset, ASSET_FACTORY, type Layer, type Ocd, type Raw } from '../../src/configuration/model.js';
import { DriverRegistry } from '../../src/drivers/registry.js';
import { builtinDrivers } from '../../src/drivers/builtin.js';

t.test('adsById: the first definition of an id wins, as a search would find it', async (t) => {
  const ocd = { id: 'x', name: 'x', ads: [{ id: 'a', type: 'STRING' }, { id: 'b', type: 'INTEGER' }, { id: 'a', type: 'BOOLEAN' }] } as unknown as Ocd;
  const m = adsById(ocd);
  t.equal(m.size, 2);
  t.equal(m.get('a')?.type, 'STRING');
  t.equal(adsById(undefined).size, 0);
});

t.test('configDto types every channel property of a large asset from its definition', async (t) => {
  const channels: Record<string, unknown> = {};
  for (let i = 1; i <= 2000; i++) channels[`c${i}`] = { type: 'READ', 'value.type': 'INTEGER', 'data.type': 'INT16', 'memory.address': i, scale: 1.5 };
  const raw = { drivers: { mb: { factory: 'modbus', 'modbus.tcp-udp.ip': '127.0.0.1' } }, assets: { plc: { 'driver.pid': 'mb', channels } } };
  const registry = new DriverRegistry(builtinDrivers());
  const plc = componentsOf(raw).find((c) => c.pid === 'plc')!;
  const dto = configDto(plc, ocdOf(plc, raw, registry), { definition: true, mask: true }) as any;
  t.same(dto.properties['c2000#memory.address'], { value: 2000, type: 'INTEGER' });
  t.same(dto.properties['c2000#+scale'], { value: '\u00011.5', type: 'DOUBLE' }, 'Java double text, as the definition says DOUBLE');
  t.same(dto.properties['c1#+name'], { value: 'c1', type: 'STRING' });
  t.equal(dto.definition.ad.filter((a: { id: string }) => a.id.startsWith('c2000#')).length > 5, true, 'per-channel definitions listed');
});

// The layer on top of the image as it was computed through the flat properties of each asset
// (docs/configuration-v2.md "The two layers"): the lean applyLayer must give the same configuration,
// key order included.
function applyThroughFlat(image: Raw, layer: Layer): Raw {
  const out = structuredClone(image);
  out.drivers ??= { sim: { factory: 'simulator' } };
  const map = (k: string): Raw => (out[k] ??= {}) as Raw;
  for (const pid of layer.deleted) delete map('drivers')[pid], delete map('assets')[pid];
  for (const [pid, c] of Object.entries(layer.components)) {
    const kind = map(c.factoryPid === ASSET_FACTORY ? 'assets' : 'drivers');
    const img = kind[pid] as Raw | undefined;
    if (!c.pinned && !img) continue;
    const base: Raw = c.pinned ? {} : c.factoryPid === ASSET_FACTORY ? flattenAsset(img!) : { ...img };
    delete base.factory;
    for (const [k, v] of Object.entries(c.props)) if (v === null) delete base[k]; else base[k] = v;
    kind[pid] = c.factoryPid === ASSET_FACTORY ? unflattenAsset(base) : { factory: c.factoryPid!.slice('org.eclipse.kura.driver.'.length), ...base };
  }
  return out;
}

t.test('applyLayer: the image with the layer on top, as through the flat properties', async (t) => {
  const A = ASSET_FACTORY;
  const ch = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`c${i}`, { type: 'read', 'value.type': 'INTEGER', 'memory.address': i + 1, ...(i % 3 === 0 && { scale: 2, unit: 'V' }) }]));
  const image: Raw = {
    drivers: { mb: { factory: 'modbus', 'modbus.tcp-udp.ip': '127.0.0.1' }, sim: { factory: 'simulator' } },
    assets: { first: { 'driver.pid': 'mb', channels: ch(5) }, big: { 'asset.desc': 'x', 'driver.pid': 'mb', 'poll.interval': 10, channels: ch(30) }, last: { 'driver.pid': 'sim', channels: ch(2) } },
  };
  const layers: Layer[] = [
    { formatVersion: 1, components: { big: { factoryPid: A, props: { 'poll.interval': 5000 } } }, deleted: [] },
    { formatVersion: 1, components: { big: { factoryPid: A, props: { 'c1#+scale': 3, 'c2#+unit': null, 'c3#memory.address': null, 'new#+type': 'write', 'new#+value.type': 'boolean', 'c4#+name': 'x', 'emit.all': true, 'asset.desc': null } } }, deleted: ['last'] },
    { formatVersion: 1, components: { big: { factoryPid: A, pinned: true, props: { 'driver.pid': 'sim', 'z#+type': 'READ', 'z#+value.type': 'LONG', 'z#+listen': true } }, mb: { factoryPid: 'org.eclipse.kura.driver.modbus', props: { 'modbus.timeout': 5 } } }, deleted: [] },
    { formatVersion: 1, components: { gone: { factoryPid: A, props: { 'a#+type': 'READ' } }, first: { factoryPid: A, props: { 'c0#+type': null, 'c0#+value.type': null, 'c0#memory.address': null, 'c0#+scale': null, 'c0#+unit': null } } }, deleted: ['mb'] },
    { formatVersion: 1, components: {}, deleted: ['big', 'first'] },
  ];
  for (const [i, layer] of layers.entries()) {
    const got = applyLayer(image, layer);
    const want = applyThroughFlat(image, layer);
    t.equal(JSON.stringify(got), JSON.stringify(want), `layer ${i}: same content and key order`);
  }
  t.equal(JSON.stringify(image.assets), JSON.stringify({ first: { 'driver.pid': 'mb', channels: ch(5) }, big: { 'asset.desc': 'x', 'driver.pid': 'mb', 'poll.interval': 10, channels: ch(30) }, last: { 'driver.pid': 'sim', channels: ch(2) } }), 'the image is left as it was');
});

// MQTT connections made and deleted by the runtime layer (docs/configuration-v2.md "Creating and
// deleting connections"): the shape of `mqtt` in the effective configuration.
t.test('applyLayer: connections created and deleted at run time', async (t) => {
  const CLOUD = 'org.eclipse.kura.cloud.CloudService';
  const MQTT = 'org.eclipse.kura.core.data.transport.mqtt.MqttDataTransport';
  const image: Raw = { mqtt: { enabled: true, 'broker-url': 'mqtt://a:1883', 'client-id': 'gw' } };
  const created: Layer = {
    formatVersion: 1,
    components: {
      [`${CLOUD}-plant`]: { factoryPid: CLOUD, pinned: true, props: { enabled: true } },
      [`${MQTT}-plant`]: { factoryPid: MQTT, pinned: true, props: { 'broker-url': 'mqtt://b:1883' } },
      [MQTT]: { props: { 'keep-alive': 9 } },
    },
    deleted: [],
  };
  const eff = applyLayer(image, created);
  t.same(eff.mqtt, { connections: { default: { enabled: true, 'broker-url': 'mqtt://a:1883', 'client-id': 'gw', 'keep-alive': 9 }, plant: { enabled: true, 'broker-url': 'mqtt://b:1883' } } }, 'the object became the connection default, with its layer values');
  t.same(image.mqtt, { enabled: true, 'broker-url': 'mqtt://a:1883', 'client-id': 'gw' }, 'the image is not changed');
  const refs = componentsOf(eff).filter((c) => /CloudService|MqttDataTransport/.test(c.pid)).map(({ pid, factoryPid }) => ({ pid, factoryPid }));
  t.same(refs, [{ pid: MQTT, factoryPid: undefined }, { pid: CLOUD, factoryPid: undefined }, { pid: `${MQTT}-plant`, factoryPid: MQTT }, { pid: `${CLOUD}-plant`, factoryPid: CLOUD }], 'default keeps its PIDs; the new pair are factory instances');

  const file: Raw = { mqtt: { connections: { default: { 'client-id': 'gw' }, local: { 'client-id': 'gw-l' }, edge: { 'client-id': 'gw-e' } } } };
  const layer: Layer = {
    formatVersion: 1,
    // An update (not pinned) of a connection the file no longer has does not bring it back.
    components: { [`${CLOUD}-gone`]: { factoryPid: CLOUD, props: { enabled: true } } },
    deleted: [`${CLOUD}-local`, `${MQTT}-local`],
  };
  t.same(Object.keys((applyLayer(file, layer).mqtt as any).connections), ['default', 'edge'], 'a deleted file connection stays deleted; an update alone creates nothing');
  t.same(applyLayer(image, { formatVersion: 1, components: {}, deleted: [MQTT, CLOUD] }).mqtt, image.mqtt, 'the default is never deleted by the layer');
});

// Reserved keys across the object form's conversion (src/configuration/reserved.ts): a connection
// created or deleted is reserved itself (a rollback, _reset); the default connection's values are
// read from each side's own section.
t.test('reservedChange across the conversion of mqtt to the connections form', async (t) => {
  const { reservedChange } = await import('../../src/configuration/reserved.js');
  const CLOUD = 'org.eclipse.kura.cloud.CloudService';
  const MQTT = 'org.eclipse.kura.core.data.transport.mqtt.MqttDataTransport';
  const image: Raw = { mqtt: { enabled: true, 'broker-url': 'mqtt://a:1883', username: 'u' } };
  const none: Layer = { formatVersion: 1, components: {}, deleted: [] };
  const withPlant = (props: Record<string, unknown>): Layer => ({ formatVersion: 1, components: { [`${CLOUD}-plant`]: { factoryPid: CLOUD, pinned: true, props: {} }, [`${MQTT}-plant`]: { factoryPid: MQTT, pinned: true, props } }, deleted: [] });
  t.same(reservedChange(image, none, withPlant({})), { pid: `${MQTT}-plant`, key: '' }, 'a created connection is reserved itself');
  t.same(reservedChange(image, withPlant({}), none), { pid: `${MQTT}-plant`, key: '' }, 'so is a deleted one');
  t.equal(reservedChange(image, withPlant({}), withPlant({})), undefined, 'the same connections: no change');
  t.same(reservedChange(image, withPlant({}), withPlant({ 'broker-url': 'mqtt://b:1883' })), { pid: `${MQTT}-plant`, key: 'broker-url' }, 'its broker is reserved');
  // Converted on both sides, or on neither: the default's broker is read where each side has it.
  const dflt = (props: Record<string, unknown>): Layer => ({ ...withPlant({}), components: { ...withPlant({}).components, [MQTT]: { props } } });
  t.equal(reservedChange(image, withPlant({}), dflt({ 'keep-alive': 9 })), undefined, 'the default’s broker unchanged after the conversion');
  t.same(reservedChange(image, withPlant({}), dflt({ 'broker-url': 'mqtt://c:1883' })), { pid: MQTT, key: 'broker-url' }, 'changed, it is seen');
});
