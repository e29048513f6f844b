// A driver factory added by a deployment package appears in configuration/v2 as a factory PID with
// the definition its plug-in declares (DriverFactory.ocd, docs/packages.md); an instance and an
// asset created over REST read through /services/assets. Snapshots stay within
// configuration.snapshots.max (docs/configuration-v2.md).
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { startDaemon } from '../helpers/daemon.js';
import { basic } from '../helpers/session-client.js';
import { buildDp } from '../helpers/dp.js';

const C = '/services/configuration/v2';

const EXTENSION = `
export function activate(api) {
  api.registerDriverFactory({
    name: 'acme',
    ocd: {
      name: 'AcmeDriver',
      description: 'Acme field bus',
      instance: [{ id: 'acme.host', type: 'STRING', default: 'localhost', required: true }, { id: 'acme.rate', type: 'INTEGER', default: 9, min: 1, max: 99 }],
      channel: [{ id: 'acme.tag', type: 'STRING', options: ['A', 'B'] }],
    },
    instanceKeys: ['acme.host', 'acme.rate'],
    channelKeys: ['acme.tag'],
    validateInstance(props, path) { return props['acme.rate'] !== undefined && !(props['acme.rate'] >= 1 && props['acme.rate'] <= 99) ? [{ path: path + '.acme.rate', message: 'must be 1..99' }] : []; },
    validateChannel() { return []; },
    create() {
      return {
        async read(channels) { return channels.map((c) => ({ ok: true, value: { type: 'STRING', value: 'tag ' + c.driverProps['acme.tag'] } })); },
        async write(reqs) { return reqs.map((r) => ({ ok: true, value: r.value })); },
        async close() {},
      };
    },
  });
}
`;

t.test('a package driver factory with its declared definition', async (t) => {
  const d = await startDaemon(t, (_p, dir) => ({
    identities: { admin: { password: 'admin', permissions: ['kura.admin'] } },
    rest: { 'login.throttle.max.delay': 0 },
    deploy: { 'file.allowed.dirs': [dir] },
    'configuration.snapshots.max': 3,
  }));
  const admin = basic(d, 'admin', 'admin');
  const post = (p: string, body: unknown, method = 'POST') => admin.request(`${C}/${p}`, { method, body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  const dp = path.join(d.dir, 'acme.dp');
  fs.writeFileSync(dp, buildDp({ name: 'org.example.acme', version: '1.0.0', files: { 'driver/extension.js': EXTENSION }, extensions: ['driver/extension.js'] }));
  t.equal((await admin.request('/services/deploy/v2/_install', { method: 'POST', body: { url: `file://${dp}` } })).status, 200);
  let pids: string[] = [];
  for (let i = 0; i < 100 && !pids.includes('org.eclipse.kura.driver.acme'); i++) {
    await new Promise((r) => setTimeout(r, 100));
    pids = (await admin.request(`${C}/factoryComponents`)).json().pids;
  }
  t.ok(pids.includes('org.eclipse.kura.driver.acme'), 'the package factory is a factory PID');
  const ocd = (await post('factoryComponents/ocd/byFactoryPid', { pids: ['org.eclipse.kura.driver.acme'] })).json().configs[0];
  t.same(ocd.definition, {
    ad: [
      { name: 'acme.host', id: 'acme.host', type: 'STRING', cardinality: 0, defaultValue: 'localhost', isRequired: true },
      { name: 'acme.rate', id: 'acme.rate', type: 'INTEGER', cardinality: 0, min: '1', max: '99', defaultValue: '9', isRequired: false },
    ],
    name: 'AcmeDriver',
    description: 'Acme field bus',
    id: 'org.eclipse.kura.driver.acme',
  });
  // The factory's own validation refuses a bad value, naming the pid and the property.
  const bad = await post('factoryComponents', { configs: [{ factoryPid: 'org.eclipse.kura.driver.acme', pid: 'bus', properties: { 'acme.rate': { type: 'INTEGER', value: 500 } } }] });
  t.same([bad.status, bad.json()], [400, { message: 'Invalid configuration of bus, property acme.rate: must be 1..99' }]);
  t.equal((await post('factoryComponents', { configs: [{ factoryPid: 'org.eclipse.kura.driver.acme', pid: 'bus', properties: { 'acme.rate': { type: 'INTEGER', value: 5 } } }] })).status, 200);
  const asset = {
    configs: [
      {
        factoryPid: 'org.eclipse.kura.wire.WireAsset',
        pid: 'gadget',
        properties: { 'driver.pid': { type: 'STRING', value: 'bus' }, 'x#+type': { type: 'STRING', value: 'READ' }, 'x#+value.type': { type: 'STRING', value: 'STRING' }, 'x#acme.tag': { type: 'STRING', value: 'B' } },
      },
    ],
  };
  t.equal((await post('factoryComponents', asset)).status, 200);
  t.match((await admin.request('/services/assets/gadget/_read', { method: 'POST', body: { channels: ['x'] } })).body, /"value":"tag B"/);
  const conf = (await post('configurableComponents/configurations/byPid', { pids: ['gadget', 'bus'] })).json().configs;
  t.ok(conf[0].definition.ad.some((a: any) => a.id === 'x#acme.tag' && a.option.length === 2), "the asset shows the plug-in's channel definition");
  t.same(conf[1].properties['acme.host'], { value: 'localhost', type: 'STRING' }, 'declared default shown');

  // Snapshots stay within configuration.snapshots.max (3): the oldest go first.
  for (let i = 0; i < 4; i++) t.equal((await admin.request(`${C}/snapshots/_write`, { method: 'POST' })).status, 200);
  const ids = (await admin.request(`${C}/snapshots`)).json().ids;
  t.equal(ids.length, 3);
  t.same(fs.readdirSync(path.join(d.dataDir, 'config')).filter((n) => n.startsWith('snapshot_')).length, 3, 'on disk too');
});
