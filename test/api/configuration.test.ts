// configuration/v2 over REST against the real daemon: Kura's shapes, messages and validation order
// (Kura's ConfigurationRestServiceTest cases that apply, and the black-box checks derived from Kura's
// behaviour), assets created the Kura way, snapshots and rollback, and our decided deviations
// (docs/configuration-v2.md): 400 with the pid and property for values outside their definition,
// `placeholder` keeps a password, http changes wait for the next start.
import t from 'tap';
import { startDaemon } from '../helpers/daemon.js';
import { basic } from '../helpers/session-client.js';

const C = '/services/configuration/v2';
const REST = 'org.eclipse.kura.internal.rest.provider.RestService';
const MQTT = 'org.eclipse.kura.core.data.transport.mqtt.MqttDataTransport';
const HTTP = 'org.eclipse.kura.http.server.manager.HttpService';
const DAEMON = 'org.eclipse.kura.gatewayd.Daemon';
const WA = 'org.eclipse.kura.wire.WireAsset';

const asset = (pid: string, extra: Record<string, unknown> = {}) => ({
  configs: [
    {
      factoryPid: WA,
      pid,
      properties: {
        'driver.pid': { type: 'STRING', value: 'sim' },
        'c1#+name': { type: 'STRING', value: 'c1' },
        'c1#+type': { type: 'STRING', value: 'READ' },
        'c1#+value.type': { type: 'STRING', value: 'INTEGER' },
        'c1#+enabled': { type: 'BOOLEAN', value: true },
        ...extra,
      },
    },
  ],
});

t.test('configuration/v2', async (t) => {
  const d = await startDaemon(t, {
    rest: { 'login.throttle.max.delay': 0 },
    identities: {
      admin: { password: 'admin', permissions: ['kura.admin'] },
      conf: { password: 'conf', permissions: ['rest.configuration'] },
      other: { password: 'other', permissions: ['rest.assets'] },
    },
    mqtt: { password: 's3cret' },
    drivers: { sim: { factory: 'simulator' } },
    assets: { demo: { 'driver.pid': 'sim', channels: { t: { type: 'READ', 'value.type': 'DOUBLE', scale: 1, simulation: 'sine' } } } },
  });
  const admin = basic(d, 'conf', 'conf');
  const get = async (p: string) => admin.request(`${C}/${p}`);
  const post = async (p: string, body?: unknown, method = 'POST') => admin.request(`${C}/${p}`, { method, body: body === undefined ? undefined : JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  const update = (configs: unknown[], takeSnapshot?: boolean) => post('configurableComponents/configurations/_update', { configs, takeSnapshot }, 'PUT');
  // Properties reserved to kura.admin (docs/configuration-v2.md "Reserved to kura.admin") are changed as the administrator.
  const root = basic(d, 'admin', 'admin');
  const rootUpdate = (configs: unknown[], takeSnapshot?: boolean) =>
    root.request(`${C}/configurableComponents/configurations/_update`, { method: 'PUT', body: JSON.stringify({ configs, takeSnapshot }), headers: { 'content-type': 'application/json' } });
  const byPid = async (pid: string) => (await post('configurableComponents/configurations/byPid', { pids: [pid] })).json().configs[0];
  const ids = async (): Promise<number[]> => (await get('snapshots')).json().ids;

  t.test('role configuration (401 anonymous, 403 without it), ids ascending', async (t) => {
    t.equal((await d.request(`${C}/snapshots`)).status, 401);
    t.equal((await basic(d, 'other', 'other').request(`${C}/snapshots`)).status, 403);
    t.equal((await basic(d, 'admin', 'admin').request(`${C}/snapshots`)).status, 200, 'kura.admin passes');
    const r = await get('snapshots');
    t.equal(r.status, 200);
    const list = r.json().ids;
    t.ok(list.length >= 1, 'the start-up snapshot exists');
    t.same(list, [...list].sort((a: number, b: number) => a - b));
  });

  t.test('_write answers a new, larger id', async (t) => {
    const before = await ids();
    const a = (await post('snapshots/_write')).json().id;
    const b = (await post('snapshots/_write')).json().id;
    t.ok(a > Math.max(...before) && b > a);
    t.same((await ids()).slice(-2), [a, b]);
  });

  t.test('every section, driver and asset is a component; factory pids', async (t) => {
    const pids = (await get('configurableComponents')).json().pids;
    for (const p of [DAEMON, REST, 'org.eclipse.kura.web.Console', HTTP, MQTT, 'org.eclipse.kura.cloud.CloudService', 'org.eclipse.kura.deployment.agent', 'sim', 'demo']) t.ok(pids.includes(p), p);
    const comps = (await get('configurableComponents/pidsWithFactory')).json().components;
    t.same(comps.find((c: any) => c.pid === 'demo'), { pid: 'demo', factoryPid: WA });
    t.same(comps.find((c: any) => c.pid === 'sim'), { pid: 'sim', factoryPid: 'org.eclipse.kura.driver.simulator' });
    t.same(comps.find((c: any) => c.pid === REST), { pid: REST }, 'singletons without factoryPid');
  });

  t.test("the daemon's own components: every property labelled, with its unit", async (t) => {
    const own = (await get('configurableComponents/configurations')).json().configs.filter((c: any) => c.pid.startsWith('org.eclipse.kura.') && !c.pid.startsWith('org.eclipse.kura.driver.'));
    t.same(own.map((c: any) => c.pid).sort(), [DAEMON, REST, 'org.eclipse.kura.web.Console', HTTP, MQTT, 'org.eclipse.kura.cloud.CloudService', 'org.eclipse.kura.deployment.agent', 'org.eclipse.kura.cloud.app.command.CommandCloudApp'].sort(), 'the eight singletons');
    const bare = own.flatMap((c: any) => c.definition.ad.filter((a: any) => a.name === a.id || !a.description).map((a: any) => `${c.pid} ${a.id}`));
    t.same(bare, [], 'each AD has a name other than its id, and a description');
    const ad = (pid: string, id: string) => own.find((c: any) => c.pid === pid).definition.ad.find((a: any) => a.id === id);
    t.same(ad(MQTT, 'keep-alive'), { name: 'Keep-alive', description: 'The MQTT keep-alive interval; 0 turns it off. Unit: s.', id: 'keep-alive', type: 'INTEGER', cardinality: 0, min: '0', max: '65535', defaultValue: '30', isRequired: false }, 'the unit ends the description');
    t.match(ad(MQTT, 'password'), { name: 'Password', type: 'PASSWORD' }, 'a password keeps its type');
    t.match(ad(REST, 'login.throttle.max.delay'), { name: 'Longest login pause', description: /Unit: ms\.$/ });
    t.match(own.find((c: any) => c.pid === MQTT).properties['keep-alive'], { type: 'INTEGER', value: 30 }, 'properties still keyed by id');
  });

  t.test('Kura 67-68: byPid order, unknown omitted, missing pids', async (t) => {
    t.equal((await post('configurableComponents/configurations/byPid', { pids: ['nope'] })).body, '{"configs":[]}');
    const r = (await post('configurableComponents/configurations/byPid', { pids: [REST, 'demo'] })).json();
    t.same(r.configs.map((c: any) => c.pid), [REST, 'demo']);
    const bad = await post('configurableComponents/configurations/byPid', {});
    t.equal(bad.status, 400);
    t.equal(bad.body, '{"message":"parameter \\"pids\\" is required"}');
  });

  t.test('Kura 79-87: key order, AD keys, DOUBLE text, passwords', async (t) => {
    const r = await post('configurableComponents/configurations/byPid', { pids: ['demo'] });
    t.match(r.body, /^\{"configs":\[\{"pid":"demo","definition":\{"ad":\[/);
    t.match(r.body, /"t#\+scale":\{"value":1\.0,"type":"DOUBLE"\}/, 'DOUBLE 1 is 1.0, value before type');
    const c = r.json().configs[0];
    t.equal(c.definition.id, 'org.eclipse.kura.asset', "an asset's definition is Kura's asset OCD");
    const ad = c.definition.ad.find((a: any) => a.id === 'poll.interval');
    t.same(Object.keys(ad), ['name', 'description', 'id', 'type', 'cardinality', 'min', 'max', 'defaultValue', 'isRequired']);
    t.same(ad, { name: 'Poll interval', description: 'Read the asset this often and publish changes as telemetry; 0 reads only on request. Unit: ms.', id: 'poll.interval', type: 'INTEGER', cardinality: 0, min: '0', max: '86400000', defaultValue: '0', isRequired: false });
    t.match(c.definition.ad.find((a: any) => a.id === 't#+unit'), { name: 'Unit', description: /engineering unit/ }, 'channel ADs carry a label and a description');
    const bare = c.definition.ad.filter((a: any) => a.name === a.id || a.name.includes('#') || !a.description);
    t.same(bare.map((a: any) => a.id), [], "every asset AD and every channel AD (generic and the simulator's) has a label and a description");
    t.match(c.definition.ad.find((a: any) => a.id === 't#delay'), { name: 'Delay', description: /Unit: ms\.$/ }, 'the unit ends the description');
    t.ok(c.definition.ad.some((a: any) => a.id === 't#+type' && a.option.length === 3), 'channel ADs cloned per channel');
    t.ok(c.definition.ad.some((a: any) => a.id === 't#simulation'), "the driver's channel ADs");
    t.notOk(/"required"|"default"/.test(r.body));
    const rest = await byPid(REST);
    t.same(rest.properties['session.inactivity.interval'], { value: 900, type: 'INTEGER' }, 'defaults shown');
    t.same(rest.properties['allowed.ports'], { value: [], type: 'INTEGER' });
  });

  t.test('Kura 19: PASSWORD reads placeholder everywhere', async (t) => {
    t.same((await byPid(MQTT)).properties.password, { value: 'placeholder', type: 'PASSWORD' });
    const all = await get('configurableComponents/configurations');
    t.notOk(all.body.includes('s3cret'));
    const id = (await post('snapshots/_write')).json().id;
    const snap = await post('snapshots/byId', { id });
    t.notOk(snap.body.includes('s3cret'), 'snapshots are masked too (deviation from Kura)');
    t.ok(snap.body.includes('"placeholder"'));
  });

  t.test('_update merges; takeSnapshot', async (t) => {
    const s = await ids();
    let r = await update([{ pid: REST, properties: { 'session.inactivity.interval': { type: 'LONG', value: 1200 } } }], false);
    t.equal(r.status, 200);
    t.equal(r.body, '');
    const p = (await byPid(REST)).properties;
    t.same(p['session.inactivity.interval'], { value: 1200, type: 'INTEGER' });
    t.same(p['auth.basic.enabled'], { value: true, type: 'BOOLEAN' }, 'other properties unchanged');
    t.same(await ids(), s, 'no snapshot with takeSnapshot false');
    r = await update([{ pid: REST, properties: { 'session.inactivity.interval': { type: 'LONG', value: 1300 } } }]);
    t.equal(r.status, 200);
    const after = await ids();
    t.equal(after.length, s.length + 1, 'one snapshot by default');
    const snap = (await post('snapshots/byId', { id: after[after.length - 1] })).json().configs;
    const restSnap = snap.find((c: any) => c.pid === REST);
    t.same(restSnap.properties['session.inactivity.interval'], { value: 1300, type: 'INTEGER' });
    t.notOk('definition' in restSnap, 'no definition in snapshots');
    // A property with no value is removed: the default shows again.
    t.equal((await update([{ pid: REST, properties: { 'session.inactivity.interval': { type: 'LONG' } } }], false)).status, 200);
    t.same((await byPid(REST)).properties['session.inactivity.interval'], { value: 900, type: 'INTEGER' });
  });

  t.test('Kura 55-65: request validation order and texts, nothing applied', async (t) => {
    const cases: [unknown, string][] = [
      [{}, 'parameter "configs" is required'],
      [{ configs: [{ pid: 'x' }] }, 'parameter "properties" is required'],
      [{ configs: [{ properties: {} }] }, 'parameter "pid" is required'],
      [{ configs: [null] }, 'component configuration objects cannot be null'],
      [{ configs: [{ pid: REST, properties: { k: null } }] }, 'propety values cannot be null'],
      [{ configs: [{ pid: REST, properties: { k: { value: 1 } } }] }, 'parameter "type" is required'],
      [{ configs: [{ pid: REST, properties: { k: { type: 'INTEGER', value: 'foo' } } }] }, 'Invalid property for type INTEGER: foo'],
      [{ configs: [{ pid: REST, properties: { k: { type: 'STRING', value: 12 } } }] }, 'Invalid property for type STRING: 12.0'],
      [{ configs: [{ pid: REST, properties: { k: { type: 'PASSWORD', value: 12 } } }] }, 'Invalid property for type PASSWORD: 12.0'],
      [{ configs: [{ pid: REST, properties: { k: { type: 'CHAR', value: 'ab' } } }] }, 'Invalid property for type CHAR: ab'],
      [{ configs: [{ pid: REST, properties: { k: { type: 'CHAR', value: 12 } } }] }, 'Invalid property for type CHAR: 12.0'],
      [{ configs: [{ pid: REST, properties: { k: { type: 'INTEGER', value: ['foo'] } } }] }, 'Invalid property for type INTEGER: foo'],
      [{ configs: [{ pid: REST, properties: { k: { type: 'STRING', value: [12] } } }] }, 'Invalid property for type STRING: 12.0'],
      [{ configs: [{ pid: REST, properties: { k: { type: 'BOOLEAN', value: 'foo' } } }] }, 'Invalid property for type BOOLEAN: foo'],
    ];
    const before = (await get('configurableComponents/configurations')).body;
    for (const [body, msg] of cases) {
      const r = await post('configurableComponents/configurations/_update', body, 'PUT');
      t.equal(r.status, 400, msg);
      t.same(r.json(), { message: msg });
    }
    // A valid first config and an invalid second one: nothing of either is applied.
    const r = await update([
      { pid: REST, properties: { 'session.inactivity.interval': { type: 'LONG', value: 1500 } } },
      { pid: MQTT, properties: { 'keep-alive': { type: 'INTEGER', value: 'x' } } },
    ]);
    t.equal(r.status, 400);
    t.equal((await get('configurableComponents/configurations')).body, before, 'nothing applied');
  });

  t.test('unknown pid ignored, 200', async (t) => {
    t.equal((await update([{ pid: 'zzz', properties: { k: { type: 'INTEGER', value: 1 } } }], false)).status, 200);
    t.notOk((await get('configurableComponents')).json().pids.includes('zzz'));
  });

  t.test('PASSWORD update; placeholder keeps the stored value (deviation)', async (t) => {
    t.equal((await rootUpdate([{ pid: MQTT, properties: { password: { type: 'PASSWORD', value: 'n3w' } } }], false)).status, 200);
    t.same((await byPid(MQTT)).properties.password, { value: 'placeholder', type: 'PASSWORD' });
    t.equal((await update([{ pid: MQTT, properties: { password: { type: 'PASSWORD', value: 'placeholder' }, 'keep-alive': { type: 'INTEGER', value: 40 } } }], false)).status, 200, 'placeholder is no change of the reserved password');
    const fs = await import('node:fs');
    const layer = JSON.parse(fs.readFileSync(`${d.dataDir}/config/runtime.json`, 'utf8'));
    t.equal(layer.components[MQTT].props.password, 'n3w', 'placeholder did not overwrite the password');
    t.equal(layer.components[MQTT].props['keep-alive'], 40);
    t.notOk(d.logs.some((l) => l.includes('n3w') || l.includes('s3cret')), 'never logged');
  });

  t.test('(deviation) a value outside its definition is 400 naming pid and property', async (t) => {
    const r = await update([{ pid: REST, properties: { 'session.inactivity.interval': { type: 'LONG', value: 0 } } }], false);
    t.equal(r.status, 400);
    t.same(r.json(), { message: `Invalid configuration of ${REST}, property session.inactivity.interval: must be between 1 and 604800 s (7 days), got 0` });
    const u = await update([{ pid: REST, properties: { 'no.such.key': { type: 'STRING', value: 'x' } } }], false);
    t.equal(u.status, 400);
    t.match(u.json().message, `${REST}, property no.such.key: unknown key`);
  });

  t.test('factory OCDs', async (t) => {
    const r = (await get('factoryComponents/ocd')).json().configs;
    const modbus = r.find((c: any) => c.pid === 'org.eclipse.kura.driver.modbus');
    t.same(modbus.properties, {});
    const port = modbus.definition.ad.find((a: any) => a.id === 'modbus.tcp-udp.port');
    t.same(port, { name: 'TCP port', description: 'TCP port of the device or converter (TCP and RTU_OVER_TCP).', id: 'modbus.tcp-udp.port', type: 'INTEGER', cardinality: 0, min: '1', max: '65535', defaultValue: '502', isRequired: false });
    // Every built-in factory's property has a label and a description.
    for (const f of r.filter((c: any) => c.pid.startsWith('org.eclipse.kura.driver.'))) for (const a of f.definition?.ad ?? []) t.ok(a.name !== a.id && a.description, `${f.pid} ${a.id} is labelled: ${a.name}`);
    // The driver factories, and the two of an MQTT connection (docs/configuration-v2.md "Creating and deleting connections").
    t.same((await get('factoryComponents')).json().pids.sort(), ['org.eclipse.kura.cloud.CloudService', 'org.eclipse.kura.core.data.transport.mqtt.MqttDataTransport', 'org.eclipse.kura.driver.gpio', 'org.eclipse.kura.driver.modbus', 'org.eclipse.kura.driver.simulator']);
    t.equal((await post('factoryComponents/ocd/byFactoryPid', { pids: ['x.y'] })).body, '{"configs":[]}');
  });

  t.test('an asset created the Kura way reads at once', async (t) => {
    const s = await ids();
    const r = await post('factoryComponents', asset('a1', { 'c1#simulation': { type: 'STRING', value: 'counter' } }));
    t.equal(r.status, 200);
    t.equal(r.body, '');
    t.ok((await d.request('/services/assets', { headers: { authorization: 'Basic ' + Buffer.from('admin:admin').toString('base64') } })).body.includes('"a1"'));
    const a = await basic(d, 'admin', 'admin').request('/services/assets/a1');
    t.same(a.json().channels ?? a.json(), a.json().channels ?? a.json());
    t.match(a.body, /"name":"c1","type":"READ","valueType":"INTEGER"/);
    const read = await basic(d, 'admin', 'admin').request('/services/assets/a1/_read', { method: 'POST', body: { channels: ['c1'] } });
    t.match(read.body, /"channelFlag":"SUCCESS"/);
    t.equal((await ids()).length, s.length + 1, 'one snapshot');
    const again = await post('factoryComponents', asset('a1'));
    t.equal(again.status, 400, 'duplicate: 400 (deviation: Kura 500)');
    t.same(again.json(), { message: 'Invalid parameter. pid a1 already exists' });
    const nopid = await post('factoryComponents', { configs: [{ factoryPid: WA }] });
    t.same([nopid.status, nopid.json()], [400, { message: 'Invalid parameter. pid cannot be null' }]);
    const ads = (await byPid('a1')).definition.ad.map((a: any) => a.id);
    for (const id of ['driver.pid', 'c1#+type', 'c1#+value.type', 'c1#simulation']) t.ok(ads.includes(id), id);
  });

  t.test('(extension) channelDefinitions/byPid: the channel ADs, also of an asset without channels', async (t) => {
    t.equal((await post('factoryComponents', { configs: [{ pid: 'empty1', factoryPid: WA, properties: { 'driver.pid': { type: 'STRING', value: 'sim' } } }], takeSnapshot: false })).status, 200);
    const own = await byPid('empty1');
    t.notOk(own.definition.ad.some((a: any) => a.id.includes('#')), "the asset's own definition stays Kura's: no channel ADs without channels");
    const r = await post('configurableComponents/channelDefinitions/byPid', { pids: ['empty1', 'demo', 'sim', 'nope'] });
    t.equal(r.status, 200);
    const configs = r.json().configs;
    t.same(configs.map((c: any) => c.pid), ['empty1', 'demo'], 'assets only, in request order, others omitted');
    const ad = configs[0].definition.ad;
    t.equal(configs[0].definition.id, 'org.eclipse.kura.asset');
    t.same(ad.slice(0, 4).map((a: any) => a.id), ['+name', '+enabled', '+type', '+value.type'], 'the generic channel ADs first, with their own ids');
    t.same(ad.find((a: any) => a.id === '+type'), { option: [{ label: 'READ', value: 'READ' }, { label: 'WRITE', value: 'WRITE' }, { label: 'READ_WRITE', value: 'READ_WRITE' }], name: 'Mode', description: 'READ, WRITE or READ_WRITE.', id: '+type', type: 'STRING', cardinality: 0, defaultValue: 'READ', isRequired: true });
    t.ok(ad.some((a: any) => a.id === 'simulation'), "then the driver's channel ADs");
    // The same template as the definition of an asset with channels, without the channel's prefix.
    const demo = (await byPid('demo')).definition.ad.filter((a: any) => a.id.startsWith('t#')).map((a: any) => a.id.slice(2));
    t.same(configs[1].definition.ad.map((a: any) => a.id), demo);
    t.equal((await post('configurableComponents/channelDefinitions/byPid', {})).status, 400, 'no pids');
    t.equal((await basic(d, 'other', 'other').request(`${C}/configurableComponents/channelDefinitions/byPid`, { method: 'POST', body: JSON.stringify({ pids: ['demo'] }), headers: { 'content-type': 'application/json' } })).status, 403, 'role configuration');
    await post('factoryComponents/byPid', { pids: ['empty1'], takeSnapshot: false }, 'DELETE');
  });

  t.test('ill-formed channel keys are ignored, a channel without value.type is left out', async (t) => {
    const r = await post('factoryComponents', {
      configs: [
        {
          factoryPid: WA,
          pid: 'a2',
          properties: {
            'driver.pid': { type: 'STRING', value: 'sim' },
            'bad name#+type': { type: 'STRING', value: 'READ' },
            'x/y#+type': { type: 'STRING', value: 'READ' },
            '#+type': { type: 'STRING', value: 'READ' },
            'c2#+type': { type: 'STRING', value: 'READ' },
            'c_1#+type': { type: 'STRING', value: 'READ' },
            'c_1#+value.type': { type: 'STRING', value: 'BOOLEAN' },
          },
        },
      ],
      takeSnapshot: false,
    });
    t.equal(r.status, 200);
    const a = await basic(d, 'admin', 'admin').request('/services/assets/a2');
    t.same(a.json().map((c: any) => c.name), ['c_1']);
  });

  t.test('delete a factory component', async (t) => {
    const s = await ids();
    const r = await post('factoryComponents/byPid', { pids: ['a2'], takeSnapshot: false }, 'DELETE');
    t.same([r.status, r.body], [200, '']);
    t.equal((await basic(d, 'admin', 'admin').request('/services/assets/a2')).status, 404);
    t.same(await ids(), s);
    t.equal((await post('factoryComponents/byPid', { pids: ['nope', REST] }, 'DELETE')).status, 200, 'unknown and singleton pids: no-op');
    t.ok((await get('configurableComponents')).json().pids.includes(REST));
    const e = await post('factoryComponents/byPid', {}, 'DELETE');
    t.same([e.status, e.json()], [400, { message: 'parameter "pids" is required' }]);
  });

  t.test('snapshots byId and rollback', async (t) => {
    const miss = await post('snapshots/byId', { id: 1 });
    t.equal(miss.status, 500);
    t.match(miss.json().message, /was not found\.$/);
    t.same((await post('snapshots/byId', {})).json(), { message: 'parameter "id" is required' });
    t.equal((await post('factoryComponents', asset('a4'))).status, 200);
    const x = (await ids()).at(-1)!;
    t.equal((await post('factoryComponents/byPid', { pids: ['a4'] }, 'DELETE')).status, 200);
    const y = (await ids()).at(-1)!;
    t.ok(y > x);
    const r = await post('snapshots/byId/_rollback', { id: x });
    t.same([r.status, r.body], [200, '']);
    t.ok((await get('configurableComponents')).json().pids.includes('a4'), 'a4 is back');
    t.ok((await ids()).at(-1)! > y, 'the rollback saved a copy as a new snapshot');
    // _rollback: the second most recent; twice in a row flips between the last two states.
    const list = await ids();
    const first = await post('snapshots/_rollback');
    t.same(first.json(), { id: list.at(-2) });
    t.notOk((await get('configurableComponents')).json().pids.includes('a4'));
    const list2 = await ids();
    t.same((await post('snapshots/_rollback')).json(), { id: list2.at(-2) });
    t.ok((await get('configurableComponents')).json().pids.includes('a4'));
  });

  t.test('Kura 11-33: scalar and array property types', async (t) => {
    const s = (await byPid('demo')).properties;
    t.same(s['t#+enabled'] ?? { value: true, type: 'BOOLEAN' }, { value: true, type: 'BOOLEAN' });
    t.same(s['t#+type'], { value: 'READ', type: 'STRING' });
    const rest = (await byPid(REST)).properties;
    t.same(rest['auth.basic.enabled'], { value: true, type: 'BOOLEAN' });
    const deploy = (await byPid('org.eclipse.kura.deployment.agent')).properties;
    t.same(deploy['file.allowed.dirs'], { value: ['/tmp'], type: 'STRING' }, 'STRING array');
    t.same(rest['allowed.ports'], { value: [], type: 'INTEGER' }, 'INTEGER array');
    t.equal((await rootUpdate([{ pid: REST, properties: { 'allowed.ports': { type: 'INTEGER', value: [d.ports.http[0]] } } }], false)).status, 200);
    t.same((await byPid(REST)).properties['allowed.ports'], { value: [d.ports.http[0]], type: 'INTEGER' });
    t.equal((await rootUpdate([{ pid: REST, properties: { 'allowed.ports': { type: 'INTEGER', value: [] } } }], false)).status, 200);
  });

  t.test('Kura 69-70, 89: _default gives definition defaults, unmasked', async (t) => {
    const r = (await post('configurableComponents/configurations/byPid/_default', { pids: [MQTT, 'nope'] })).json().configs;
    t.equal(r.length, 1);
    t.same(r[0].properties['keep-alive'], { value: 30, type: 'INTEGER' });
    t.same(r[0].properties.password, { value: '', type: 'PASSWORD' });
    t.notOk('kura.service.pid' in r[0].properties);
  });

  t.test('http changes are stored for the next start, with a message', async (t) => {
    const r = await rootUpdate([{ pid: HTTP, properties: { 'bind.address': { type: 'STRING', value: '0.0.0.0' } } }], false);
    t.equal(r.status, 200);
    t.same(r.json(), { message: 'The http settings were saved; they take effect at the next start of gatewayd.' });
    t.equal((await rootUpdate([{ pid: HTTP, properties: { 'bind.address': { type: 'STRING', value: '127.0.0.1' } } }], false)).status, 200);
  });

  t.test('malformed and missing bodies are 400 (deviation: Kura 500)', async (t) => {
    const r = await admin.request(`${C}/configurableComponents/configurations/_update`, { method: 'PUT', body: '{bad', headers: { 'content-type': 'application/json' } });
    t.equal(r.status, 400);
    t.ok(r.json().message);
    const m = await admin.request(`${C}/configurableComponents/configurations/_update`, { method: 'PUT', headers: { 'content-type': 'application/json' } });
    t.same([m.status, m.json()], [400, { message: 'parameter "configs" is required' }]);
  });

  t.test('__proto__ is an ordinary pid and property key', async (t) => {
    t.equal((await post('factoryComponents', asset('__proto__'), 'POST')).status, 200);
    const r = await post('configurableComponents/configurations/_update', JSON.parse('{"configs":[{"pid":"__proto__","properties":{"__proto__":{"type":"STRING","value":"x"},"c1#+unit":{"type":"STRING","value":"u"}}}],"takeSnapshot":false}'), 'PUT');
    t.equal(r.status, 400, 'an unknown key of the asset, refused');
    t.match(r.json().message, 'Invalid configuration of __proto__, property __proto__: unknown key');
    t.equal((await update([{ pid: '__proto__', properties: { 'c1#+unit': { type: 'STRING', value: 'u' } } }], false)).status, 200);
    t.same((await byPid('__proto__')).properties['c1#+unit'], { value: 'u', type: 'STRING' });
    t.equal((await post('factoryComponents/byPid', { pids: ['__proto__'], takeSnapshot: false }, 'DELETE')).status, 200);
  });

  t.test('_reset returns to the image, keeps snapshots', async (t) => {
    const s = await ids();
    // The runtime layer holds the administrator's MQTT password: dropping it is the administrator's to do.
    const refused = await post('_reset', { takeSnapshot: false });
    t.same([refused.status, refused.json()], [403, { message: `Only kura.admin may change ${MQTT} property password` }]);
    const r = await root.request(`${C}/_reset`, { method: 'POST', body: JSON.stringify({ takeSnapshot: false }), headers: { 'content-type': 'application/json' } });
    t.equal(r.status, 200);
    const pids = (await get('configurableComponents')).json().pids;
    t.notOk(pids.includes('a1') || pids.includes('a4'), 'runtime assets gone');
    t.ok(pids.includes('demo'));
    t.same((await byPid(REST)).properties['session.inactivity.interval'], { value: 900, type: 'INTEGER' });
    t.same(await ids(), s);
  });
});
