// The runtime configuration service with a large asset configuration (bench/README.md "Scale": 10
// assets × 1,000 channels, and more; docs/configuration-v2.md "How large a configuration can grow"): the configuration is validated and held once, and snapshots are written a
// component at a time, with the same content as before.
import t from 'tap';
import fs from 'node:fs';
import v8 from 'node:v8';
import vm from 'node:vm';
import os from 'node:os';
import path from 'node:path';
import { ConfigurationService, loadEffective, Packed } from '../../src/configuration/service.js';
import { ConfigStore } from '../../src/configuration/store.js';
import { componentsOf, eachComponent, type Component } from '../../src/configuration/model.js';
import { DriverRegistry } from '../../src/drivers/registry.js';
import { builtinDrivers } from '../../src/drivers/builtin.js';
import { createLogger } from '../../src/log.js';

function setup(t: { teardown(fn: () => void): void }, channels = 50) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-confsvc-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const ch: Record<string, unknown> = {};
  for (let i = 1; i <= channels; i++) ch[`c${i}`] = { type: 'READ', 'value.type': 'INTEGER', 'data.type': 'INT16', 'memory.address': i };
  const config = {
    dataDir: path.join(dir, 'data'),
    identities: { op: { password: 'Op-pass-12345', permissions: ['rest.assets'], passwordChangeNeeded: false } },
    drivers: { mb: { factory: 'modbus', 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': 5020 } },
    assets: { plc: { 'driver.pid': 'mb', 'poll.interval': 1000, channels: ch }, sim: { 'driver.pid': 'mb', channels: { x: { type: 'READ', 'value.type': 'INTEGER' } } } },
  };
  const file = path.join(dir, 'gatewayd.json');
  fs.writeFileSync(file, JSON.stringify(config));
  return { dir, file, registry: new DriverRegistry(builtinDrivers()) };
}

t.test('without a runtime layer the image is the effective configuration, validated once', async (t) => {
  const { file, registry } = setup(t);
  const l = loadEffective(file, registry);
  t.same(l.problems.filter((p) => p.severity !== 'warning'), []);
  t.equal(l.effective, l.image, 'no second copy of the image');
  t.equal(l.config.assets.find((a) => a.pid === 'plc')?.channels.length, 50);
  // With a layer, the effective configuration is the image with the layer on top, validated again.
  const store = new ConfigStore(l.config.dataDir);
  store.open();
  await store.writeLayer({ formatVersion: 1, components: { plc: { factoryPid: 'org.eclipse.kura.wire.WireAsset', props: { 'poll.interval': 250 } } }, deleted: [] });
  const l2 = loadEffective(file, registry);
  t.same(l2.layerProblems, []);
  t.not(l2.effective, l2.image);
  t.equal(l2.config.assets.find((a) => a.pid === 'plc')?.pollInterval, 250);
  t.equal((l2.image.assets as any).plc['poll.interval'], 1000, 'the image is left as it was');
});

t.test('the configuration as written is not kept parsed: it is made again, equal to the file, when asked for', async (t) => {
  const { file, registry } = setup(t);
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  const written = JSON.parse(fs.readFileSync(file, 'utf8'));
  for (const withLayer of [false, true]) {
    if (withLayer) {
      const store = new ConfigStore(path.join(path.dirname(file), 'data'));
      store.open();
      await store.writeLayer({ formatVersion: 1, components: { plc: { factoryPid: 'org.eclipse.kura.wire.WireAsset', props: { 'poll.interval': 250 } } }, deleted: [] });
    }
    const l = loadEffective(file, registry);
    t.same(l.layerProblems, []);
    const image = new WeakRef(l.image);
    const effective = new WeakRef(l.effective);
    t.equal(l.image, image.deref(), 'the same object while it is in use');
    await new Promise((r) => setTimeout(r, 1));
    gc();
    t.equal(image.deref(), undefined, 'the parsed image is not kept');
    t.equal(effective.deref(), undefined, 'the parsed effective configuration is not kept');
    t.same(l.image, written, 'made again from what was kept');
    t.equal((l.effective.assets as any).plc['poll.interval'], withLayer ? 250 : 1000);
    t.equal(l.config.assets.find((a) => a.pid === 'plc')?.pollInterval, withLayer ? 250 : 1000);
  }
});

t.test('a large configuration is kept deflated, a small one as its text; both are made again equal', async (t) => {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  const channels = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`c${i}`, { type: 'READ', 'value.type': 'INTEGER', 'memory.address': i }]));
  for (const n of [10, 3000]) {
    const text = JSON.stringify({ assets: { big: { 'driver.pid': 'mb', channels: channels(n) } } });
    const packed = new Packed(JSON.parse(text), text);
    const kept = (packed as unknown as { kept: Buffer | string }).kept;
    if (n === 10) t.equal(kept, text, `${text.length} characters: kept as text`);
    else t.ok(Buffer.isBuffer(kept) && kept.length < text.length / 5, `${text.length} characters: deflated to ${kept.length} bytes`);
    await new Promise((r) => setTimeout(r, 1));
    gc();
    t.equal(JSON.stringify(packed.raw), text, 'made again equal');
  }
});

t.test('the service takes over what the daemon was started with instead of reading the file again', async (t) => {
  const { file, registry } = setup(t);
  const loaded = loadEffective(file, registry);
  fs.rmSync(file); // a second read would fail
  const svc = new ConfigurationService({ file, registry, log: createLogger('error'), apply: async () => {}, loaded });
  t.equal(svc.effective, loaded.effective);
  t.same(svc.components().map((c) => c.pid).slice(-3), ['mb', 'plc', 'sim']);
});

t.test('a snapshot is written a component at a time, with the text JSON.stringify made before', async (t) => {
  const { file, registry } = setup(t, 300);
  const svc = await ConfigurationService.start({ file, registry, log: createLogger('error'), apply: async () => {} });
  const [id] = svc.store.snapshotIds();
  t.ok(id, 'the first start took a snapshot');
  const text = fs.readFileSync(path.join(svc.store.dir, `snapshot_${id}.json`), 'utf8');
  const snap = JSON.parse(text) as { id: number; components: Component[] };
  t.equal(text, JSON.stringify(snap) + '\n', 'compact JSON, one line');
  t.equal(snap.id, id);
  const plc = snap.components.find((c) => c.pid === 'plc')!;
  t.equal(plc.props['c300#+name'], 'c300', 'channel names shown');
  t.equal(plc.props['c300#memory.address'], 300);
  const mb = snap.components.find((c) => c.pid === 'mb')!;
  t.equal(mb.props['modbus.timeout'], 1000, 'driver definition defaults shown');
  t.same(svc.store.readSnapshot(id), snap.components);
  // The store writes whatever sequence it is given, lazily.
  let made = 0;
  const lazy = function* () {
    for (const c of eachComponent(svc.effective)) {
      made++;
      yield c;
    }
  };
  const id2 = await svc.store.writeSnapshot(lazy(), 10);
  t.equal(made, componentsOf(svc.effective).length);
  t.same(svc.store.readSnapshot(id2), componentsOf(svc.effective));
});

t.test('a change reads a large runtime layer from dataDir/config once, and still refuses a reserved property', async (t) => {
  // 1,500 channels rolled back: every property pinned, far more entries than a layer kept in memory.
  const { file, registry } = setup(t, 1500);
  const svc = await ConfigurationService.start({ file, registry, log: createLogger('error'), apply: async () => {} });
  const operator = { transport: 'rest' as const, permissions: ['rest.configuration'] };
  await svc.rollback(svc.store.snapshotIds()[0]!, operator);
  const layerFile = path.join(svc.store.dir, 'runtime.json');
  t.ok(fs.existsSync(layerFile), 'the layer is stored');
  t.ok(Object.keys(JSON.parse(fs.readFileSync(layerFile, 'utf8')).components.plc.props).length > 4096, 'a large layer');
  const read = ConfigStore.prototype.readLayer;
  let reads = 0;
  ConfigStore.prototype.readLayer = function (this: ConfigStore) {
    reads++;
    return read.call(this);
  };
  t.teardown(() => {
    ConfigStore.prototype.readLayer = read;
  });
  for (const [by, interval] of [[operator, 500], [{ transport: 'rest' as const, permissions: ['kura.admin'] }, 750]] as const) {
    reads = 0;
    await svc.change((l) => {
      l.components.plc!.props['poll.interval'] = interval;
    }, false, { by });
    t.equal(reads, 1, `one read of the layer per change (${by.permissions[0]})`);
    t.equal((svc.effective.assets as any).plc['poll.interval'], interval, 'the change is in force');
  }
  t.equal(JSON.parse(fs.readFileSync(layerFile, 'utf8')).components.plc.props['poll.interval'], 750, 'and stored');
  // The reserved-property check compares with the layer as it was before the change.
  const MQTT = 'org.eclipse.kura.core.data.transport.mqtt.MqttDataTransport';
  await t.rejects(svc.change((l) => {
    l.components[MQTT] = { props: { 'broker-url': 'mqtt://127.0.0.1:1' } };
  }, false, { by: operator }), { status: 403, message: `Only kura.admin may change ${MQTT} property broker-url` });
});
