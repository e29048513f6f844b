// Over-the-air update under a runtime overlay (docs/configuration-v2.md), with two real builds: the
// "new" build changes two defaults in code (an esbuild plugin through build/build.mjs, as
// test/build/ota.test.ts does) and comes with a new image file. A component never changed at run
// time follows the new image and the new defaults; a changed one keeps its runtime values, property
// by property; a runtime-created asset and a runtime deletion survive.
import t from 'tap';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from '../helpers/daemon.js';
import { freePort } from '../helpers/ports.js';
import { buildBundle, openTempDir, watchProcess } from '../helpers/install.js';

const PLUGIN = `import fs from 'node:fs';
export default {
  name: 'ota-new-defaults',
  setup(b) {
    b.onLoad({ filter: /[\\\\/]src[\\\\/]auth[\\\\/]config\\.ts$/ }, (args) => {
      const src = fs.readFileSync(args.path, 'utf8');
      const out = src
        .replace("'session.inactivity.interval': [duration('s', 1, 604_800), 900]", "'session.inactivity.interval': [duration('s', 1, 604_800), 1234]")
        .replace("'new.password.min.length': [num({ int: true, min: 0, max: 1024 }), 8]", "'new.password.min.length': [num({ int: true, min: 0, max: 1024 }), 12]");
      if (out.split('1234').length !== 2 || !out.includes('1024 }), 12]')) throw new Error('auth/config.ts changed shape: update test/configuration/ota.test.ts');
      return { contents: out, loader: 'ts' };
    });
  },
};
`;


t.test('an update changes image defaults under a runtime overlay', async (t) => {
  const dir = openTempDir(t, 'gatewayd-conf-ota-');
  fs.writeFileSync(path.join(dir, 'plugin.mjs'), PLUGIN);
  const oldBundle = path.join(dir, 'old', 'gatewayd.mjs');
  const newBundle = path.join(dir, 'new', 'gatewayd.mjs');
  buildBundle(oldBundle, '1.0.0-old');
  buildBundle(newBundle, '2.0.0-new', path.join(dir, 'plugin.mjs'));

  const port = await freePort();
  const ports = { http: [port], https: [] as number[], clientAuth: [] as number[] };
  const configFile = path.join(dir, 'gatewayd.json');
  const image = (version: string, unit: string, poll: number) => ({
    dataDir: path.join(dir, 'data'),
    http: { 'http.ports': [port], 'bind.address': '127.0.0.1' },
    identities: { admin: { password: 'admin', permissions: ['kura.admin'], passwordChangeNeeded: false } },
    console: { 'access.banner.enabled': true, 'access.banner.content': `image ${version}` },
    drivers: { sim: { factory: 'simulator' } },
    assets: {
      demo: { 'driver.pid': 'sim', 'poll.interval': poll, channels: { t: { type: 'READ', 'value.type': 'INTEGER', unit, simulation: 'counter' } } },
      spare: { 'driver.pid': 'sim', channels: { s: { type: 'READ', 'value.type': 'INTEGER' } } },
    },
  });
  const start = async (bundle: string) => {
    const proc = spawn(process.execPath, [bundle, '--config', configFile], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    const d = watchProcess(t, proc, ports, path.join(dir, 'data'), configFile, dir);
    await d.waitForLog(/msg="gatewayd ready"/, 15_000);
    return d;
  };
  const auth = { authorization: `Basic ${Buffer.from('admin:admin').toString('base64')}`, 'content-type': 'application/json' };
  const C = '/services/configuration/v2';
  const props = async (d: Awaited<ReturnType<typeof start>>, pid: string) =>
    (await d.request(`${C}/configurableComponents/configurations/byPid`, { method: 'POST', headers: auth, body: JSON.stringify({ pids: [pid] }) })).json().configs[0]?.properties;
  const REST = 'org.eclipse.kura.internal.rest.provider.RestService';
  const CONSOLE = 'org.eclipse.kura.web.Console';

  // Old firmware, old image: change REST (one property) and demo (one property) at run time,
  // create an asset, delete another. The console is never changed.
  fs.writeFileSync(configFile, JSON.stringify(image('1', 'C', 1000)));
  const old = await start(oldBundle);
  t.same((await props(old, REST))['session.inactivity.interval'].value, 900, 'old default');
  const upd = await old.request(`${C}/configurableComponents/configurations/_update`, {
    method: 'PUT',
    headers: auth,
    body: JSON.stringify({ configs: [{ pid: REST, properties: { 'auth.basic.enabled': { type: 'BOOLEAN', value: true }, 'session.max.count': { type: 'LONG', value: 500 } } }, { pid: 'demo', properties: { 'poll.interval': { type: 'INTEGER', value: 5000 } } }] }),
  });
  t.equal(upd.status, 200, upd.body);
  const made = await old.request(`${C}/factoryComponents`, {
    method: 'POST',
    headers: auth,
    body: JSON.stringify({ configs: [{ factoryPid: 'org.eclipse.kura.wire.WireAsset', pid: 'made', properties: { 'driver.pid': { type: 'STRING', value: 'sim' }, 'c#+type': { type: 'STRING', value: 'READ' }, 'c#+value.type': { type: 'STRING', value: 'BOOLEAN' } } }] }),
  });
  t.equal(made.status, 200, made.body);
  t.equal((await old.request(`${C}/factoryComponents/byPid`, { method: 'DELETE', headers: auth, body: JSON.stringify({ pids: ['spare'] }) })).status, 200);
  t.equal(await old.stop(), 0);

  // The update: new firmware (new defaults) and a new image file.
  fs.writeFileSync(configFile, JSON.stringify(image('2', 'K', 2000)));
  const next = await start(newBundle);
  t.match(next.logs.find((l) => l.includes('gatewayd ready'))!, 'version=2.0.0-new');
  const rest = await props(next, REST);
  t.same(rest['session.max.count'], { value: 500, type: 'LONG' }, 'changed property keeps its runtime value');
  t.same(rest['session.inactivity.interval'], { value: 1234, type: 'INTEGER' }, "an unchanged property of a changed component takes the new build's default");
  const consoleProps = await props(next, CONSOLE);
  t.same(consoleProps['access.banner.content'], { value: 'image 2', type: 'STRING' }, 'an unchanged component follows the new image');
  t.same(consoleProps['new.password.min.length'], { value: 12, type: 'INTEGER' }, "and the new build's defaults");
  const demo = await props(next, 'demo');
  t.same(demo['poll.interval'], { value: 5000, type: 'INTEGER' }, 'runtime value kept');
  t.same(demo['t#+unit'], { value: 'K', type: 'STRING' }, "the asset's unchanged property follows the new image");
  const pids = (await next.request(`${C}/configurableComponents`, { headers: auth })).json().pids;
  t.ok(pids.includes('made'), 'runtime-created asset kept');
  t.notOk(pids.includes('spare'), 'runtime-deleted asset stays deleted');
  t.equal(await next.stop(), 0);
});
