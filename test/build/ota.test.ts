// Over-the-air updates (docs/installation.md "Over-the-air updates"), with two real builds of the bundle:
// - "old" is this source tree as it is (dataDir format N), version 1.0.0-old;
// - "new" is the same tree with DATA_FORMAT_VERSION N+1 and a migration N → N+1 (injected by an
//   esbuild plugin through build/build.mjs, so both builds take the same code path), version 2.0.0-new.
// The new firmware must start on the old dataDir, migrate it once and keep the state files
// (identities, installed packages, MQTT outbox); the old firmware must refuse the migrated dataDir
// with a clear message and leave every file as it was.

import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from '../helpers/daemon.js';
import { freePort } from '../helpers/ports.js';
import { buildDp } from '../helpers/dp.js';
import { buildBundle, diffTrees, openTempDir, snapshotTree, watchProcess } from '../helpers/install.js';

const datadirSource = fs.readFileSync(path.join(ROOT, 'src', 'store', 'datadir.ts'), 'utf8');
const OLD_FORMAT = Number(/export const DATA_FORMAT_VERSION = (\d+);/.exec(datadirSource)?.[1]);
const NEW_FORMAT = OLD_FORMAT + 1;
const OLD_VERSION = '1.0.0-old';
const NEW_VERSION = '2.0.0-new';

// The plugin that makes the "new" build: format N+1 and a migration that records each run, so the
// test can tell it ran exactly once. It uses what datadir.ts already imports (fs, path, atomic write).
const PLUGIN = `import fs from 'node:fs';
export default {
  name: 'ota-next-format',
  setup(b) {
    b.onLoad({ filter: /[\\\\/]src[\\\\/]store[\\\\/]datadir\\.ts$/ }, (args) => {
      let src = fs.readFileSync(args.path, 'utf8');
      const decl = /export const DATA_FORMAT_VERSION = (\\d+);/;
      const n = Number(decl.exec(src)?.[1]);
      if (!n || !src.includes('export const MIGRATIONS') || !src.includes('writeFileAtomicSync')) throw new Error('datadir.ts changed shape: update test/build/ota.test.ts');
      src = src.replace(decl, 'export const DATA_FORMAT_VERSION = ' + (n + 1) + ';');
      src += \`
MIGRATIONS[\${n}] = (dir: string) => {
  const f = path.join(dir, 'ota-migration.json');
  const runs = fs.existsSync(f) ? JSON.parse(fs.readFileSync(f, 'utf8')).runs : 0;
  writeFileAtomicSync(f, JSON.stringify({ formatVersion: 1, from: \${n}, runs: runs + 1 }) + '\\\\n');
};
\`;
      return { contents: src, loader: 'ts' };
    });
  },
};
`;


t.test('over-the-air update: new firmware on an old dataDir, old firmware refused', async (t) => {
  t.ok(OLD_FORMAT >= 1, `current dataDir format is ${OLD_FORMAT}`);
  const dir = openTempDir(t, 'gatewayd-ota-');
  fs.writeFileSync(path.join(dir, 'next-format.mjs'), PLUGIN);
  const oldBundle = path.join(dir, 'old', 'gatewayd.mjs');
  const newBundle = path.join(dir, 'new', 'gatewayd.mjs');
  buildBundle(oldBundle, OLD_VERSION);
  buildBundle(newBundle, NEW_VERSION, path.join(dir, 'next-format.mjs'));
  t.not(fs.readFileSync(oldBundle, 'utf8'), fs.readFileSync(newBundle, 'utf8'), 'two different builds');

  const dataDir = path.join(dir, 'data');
  const uploads = path.join(dir, 'uploads');
  fs.mkdirSync(uploads);
  const port = await freePort();
  const ports = { http: [port], https: [] as number[], clientAuth: [] as number[] };
  const configFile = path.join(dir, 'gatewayd.json');
  fs.writeFileSync(
    configFile,
    JSON.stringify({
      dataDir,
      http: { 'http.ports': [port], 'bind.address': '127.0.0.1' },
      rest: { 'auth.basic.enabled': true },
      identities: { admin: { password: 'first-password', permissions: ['kura.admin'], passwordChangeNeeded: false } },
      deploy: { 'file.allowed.dirs': [uploads] },
      drivers: { sim: { factory: 'simulator' } },
      // Polled with MQTT toward a port where no broker listens: telemetry waits in the outbox.
      assets: { demo: { 'driver.pid': 'sim', 'poll.interval': 50, channels: { counter: { type: 'READ', 'value.type': 'INTEGER', simulation: 'counter' } } } },
      mqtt: { enabled: true, 'broker-url': `mqtt://127.0.0.1:${await freePort()}`, 'payload.encoding': 'json' },
    }),
  );
  const start = (bundle: string) => {
    const proc = spawn(process.execPath, [bundle, '--config', configFile], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    return watchProcess(t, proc, ports, dataDir, configFile, dir);
  };
  const basic = (password: string) => ({ authorization: `Basic ${Buffer.from(`admin:${password}`).toString('base64')}` });
  const marker = () => JSON.parse(fs.readFileSync(path.join(dataDir, 'gatewayd-data.json'), 'utf8'));

  // --- the old firmware makes state: a package, telemetry in the outbox, then a password change.
  const old = start(oldBundle);
  await old.waitForLog(/msg="gatewayd ready"/);
  const dp = path.join(uploads, 'ota-kept.dp');
  fs.writeFileSync(dp, buildDp({ name: 'ota-kept', version: '1.2.3', files: { 'readme.txt': 'kept across updates' } }));
  const inst = await old.request('/services/deploy/v2/_install', { method: 'POST', headers: basic('first-password'), body: { url: `file://${dp}` } });
  t.equal(inst.status, 200, `package install accepted: ${inst.body}`);
  const listed = async (d: typeof old, password: string) => {
    for (let i = 0; i < 100; i++) {
      const r = await d.request('/services/deploy/v2/', { headers: basic(password) });
      if (r.status === 200 && r.json().some((p: any) => p.name === 'ota-kept')) return true;
      await new Promise((r) => setTimeout(r, 100));
    }
    return false;
  };
  t.ok(await listed(old, 'first-password'), 'package installed by the old firmware');
  const outbox = path.join(dataDir, 'mqtt', 'outbox.log');
  for (let i = 0; i < 100 && !(fs.existsSync(outbox) && fs.statSync(outbox).size > 0); i++) await new Promise((r) => setTimeout(r, 100));
  t.ok(fs.existsSync(outbox) && fs.statSync(outbox).size > 0, 'telemetry waiting in the outbox');
  t.equal(await old.stop(), 0, 'old firmware stops cleanly');
  const pw = spawnSync(process.execPath, [oldBundle, 'passwd', '--config', configFile, 'admin'], { input: 'second-password\n', encoding: 'utf8' });
  t.equal(pw.status, 0, `passwd with the old firmware: ${pw.stderr}`);

  t.same(marker(), { formatVersion: OLD_FORMAT, writtenBy: OLD_VERSION }, 'old dataDir marker');
  for (const f of ['identities.json', path.join('packages', 'index.json')]) {
    const p = path.join(dataDir, f);
    if (fs.existsSync(p)) t.equal(typeof JSON.parse(fs.readFileSync(p, 'utf8')).formatVersion, 'number', `${f} carries a formatVersion`);
  }
  const oldState = snapshotTree(dataDir);

  // --- the update: the new firmware starts on the old dataDir and migrates it forward once.
  const next = start(newBundle);
  await next.waitForLog(/msg="gatewayd ready"/);
  t.match(next.logs.find((l) => l.includes('gatewayd ready'))!, `version=${NEW_VERSION}`);
  t.same(marker(), { formatVersion: NEW_FORMAT, writtenBy: NEW_VERSION }, 'dataDir migrated to the new format');
  t.same(JSON.parse(fs.readFileSync(path.join(dataDir, 'ota-migration.json'), 'utf8')), { formatVersion: 1, from: OLD_FORMAT, runs: 1 }, 'migration ran once');
  // Every state file of the old firmware is still there; identities and packages byte for byte.
  const afterUpdate = snapshotTree(dataDir);
  for (const [p, s] of oldState) {
    if (s.sha256 === undefined) continue; // folders; the package store recreates its staging folder
    t.ok(afterUpdate.has(p), `kept ${p}`);
    if (p === 'identities.json' || p.startsWith('packages')) t.equal(afterUpdate.get(p)?.sha256, s.sha256, `${p} unchanged`);
  }
  await next.waitForLog(/outbox: messages waiting from before the restart/);
  t.pass('the new firmware picked up the old outbox');
  t.equal((await next.request('/services/assets/demo/_read', { headers: basic('second-password') })).status, 200, 'password set by the old firmware works');
  t.equal((await next.request('/services/assets/demo/_read', { headers: basic('first-password') })).status, 401, 'the seed did not overwrite it');
  t.ok(await listed(next, 'second-password'), 'package installed by the old firmware still listed');
  t.equal(await next.stop(), 0, 'new firmware stops cleanly');

  const again = start(newBundle);
  await again.waitForLog(/msg="gatewayd ready"/);
  t.equal(JSON.parse(fs.readFileSync(path.join(dataDir, 'ota-migration.json'), 'utf8')).runs, 1, 'a second start does not migrate again');
  t.equal(await again.stop(), 0, 'stops cleanly again');

  // --- a rollback to the old firmware: refused, and nothing in dataDir touched.
  const migrated = snapshotTree(dataDir);
  const back = start(oldBundle);
  const code = await back.exited;
  t.not(code, 0, `old firmware refuses to start (exit ${code})`);
  const why = back.logs.join('\n');
  t.match(why, `has format ${NEW_FORMAT} (written by gatewayd ${NEW_VERSION})`, 'says which format and who wrote it');
  t.match(why, `this gatewayd ${OLD_VERSION} understands up to format ${OLD_FORMAT}`, 'says what it understands');
  t.notMatch(why, /\n\s+at /, 'no stack trace');
  t.same(diffTrees(migrated, snapshotTree(dataDir)), [], 'every file in dataDir as it was (content, mode, mtime)');
  // Field recovery with the old firmware is refused the same way.
  const pw2 = spawnSync(process.execPath, [oldBundle, 'passwd', '--config', configFile, 'admin'], { input: 'third-password\n', encoding: 'utf8' });
  t.not(pw2.status, 0, 'old passwd refuses the newer dataDir');
  t.match(pw2.stderr + pw2.stdout, `has format ${NEW_FORMAT}`);
  t.same(diffTrees(migrated, snapshotTree(dataDir)), [], 'still untouched');
});
