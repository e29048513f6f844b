// The package store and the job queue: install, replace, remove, refusal without leftovers,
// restart persistence, recovery from leftovers, and kill -9 in the middle of installs.

import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { buildSync } from 'esbuild';
import { PackageStore, PackageError } from '../../src/deploy/store.js';
import { JobQueue } from '../../src/deploy/jobs.js';
import { silentLogger } from '../../src/log.js';
import { buildDp, buildZip } from '../helpers/dp.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-store-'));
t.teardown(() => fs.rmSync(tmp, { recursive: true, force: true }));
let n = 0;
function dataDir(): string {
  const d = path.join(tmp, `data${++n}`);
  fs.mkdirSync(d);
  return d;
}
function dpFile(buf: Buffer): string {
  const f = path.join(tmp, `p${++n}.dp`);
  fs.writeFileSync(f, buf);
  return f;
}
function openStore(dir: string): PackageStore {
  const s = new PackageStore({ dataDir: dir, log: silentLogger });
  s.open();
  return s;
}
const pkgsOf = (s: PackageStore) => s.list().map((p) => `${p.name}@${p.version}`);

t.test('install, replace, remove, and what is on disk', async (t) => {
  const dir = dataDir();
  const store = openStore(dir);
  const a1 = dpFile(buildDp({ name: 'a', version: '1', files: { 'lib/x.txt': 'a1', 'ext.js': 'export function activate() {}' }, extensions: ['ext.js'] }));
  const { pkg, replaced } = await store.install(a1);
  t.equal(replaced, undefined);
  t.same([pkg.name, pkg.version, pkg.extensions], ['a', '1.0.0', ['ext.js']]);
  t.equal(fs.readFileSync(path.join(store.dirOf(pkg), 'lib/x.txt'), 'utf8'), 'a1');
  t.same(JSON.parse(fs.readFileSync(path.join(store.dirOf(pkg), 'package.json'), 'utf8')), { type: 'module' }, '.js extensions are ES modules');
  t.ok(fs.existsSync(a1), 'the source file is left alone');

  await store.install(dpFile(buildDp({ name: 'b', version: '4.2' })));
  const second = await store.install(dpFile(buildDp({ name: 'a', version: '2', files: { 'lib/x.txt': 'a2' } })));
  t.equal(second.replaced?.version, '1.0.0');
  t.same(pkgsOf(store), ['a@2.0.0', 'b@4.2.0'], 'replaced in place: install order kept');
  t.notOk(fs.existsSync(store.dirOf(pkg)), 'the replaced version\'s folder is gone');
  t.equal(fs.readFileSync(path.join(store.dirOf(second.pkg), 'lib/x.txt'), 'utf8'), 'a2');

  const index = JSON.parse(fs.readFileSync(path.join(dir, 'packages/index.json'), 'utf8'));
  t.equal(index.formatVersion, 1);
  t.same(index.packages.map((p: { name: string }) => p.name), ['a', 'b']);

  t.same(pkgsOf(openStore(dir)), ['a@2.0.0', 'b@4.2.0'], 'a restart reads the same packages');

  t.equal((await store.remove('a'))?.name, 'a');
  t.equal(await store.remove('nope'), undefined);
  t.same(pkgsOf(store), ['b@4.2.0']);
  t.notOk(fs.existsSync(store.dirOf(second.pkg)), 'files of the removed package are gone');
  t.same(pkgsOf(openStore(dir)), ['b@4.2.0']);
});

t.test('bundle ids (docs/packages.md "Bundles"): kept on replace, never given again; stopped kept across opens; an index without ids', async (t) => {
  const dir = dataDir();
  let store = openStore(dir);
  const ids = () => store.list().map((p) => `${p.name}:${p.bundleId}${p.stopped ? ':stopped' : ''}`);
  await store.install(dpFile(buildDp({ name: 'a', version: '1' })));
  await store.install(dpFile(buildDp({ name: 'b', version: '1' })));
  t.same(ids(), ['a:1', 'b:2']);
  await store.setStopped('a', true);
  await store.install(dpFile(buildDp({ name: 'b', version: '2' })));
  t.same(ids(), ['a:1:stopped', 'b:2'], 'a replaced package keeps its id');
  await store.remove('b');
  await store.install(dpFile(buildDp({ name: 'c', version: '1' })));
  t.same(ids(), ['a:1:stopped', 'c:3'], 'an uninstalled id is not given again');
  store = openStore(dir);
  t.same(ids(), ['a:1:stopped', 'c:3'], 'as written');
  await store.install(dpFile(buildDp({ name: 'd', version: '1' })));
  t.same(ids(), ['a:1:stopped', 'c:3', 'd:4'], 'the next id survives a restart');
  await store.install(dpFile(buildDp({ name: 'a', version: '2' })));
  t.same(ids(), ['a:1', 'c:3', 'd:4'], 'installing a stopped package again starts it');
  await store.remove('d');
  store = openStore(dir);
  await store.install(dpFile(buildDp({ name: 'e', version: '1' })));
  t.same(ids(), ['a:1', 'c:3', 'e:5'], 'not even the last one after a restart');

  // An index written before bundle ids: numbered in install order, as GET/bundles numbered them.
  const index = path.join(dir, 'packages', 'index.json');
  const old = JSON.parse(fs.readFileSync(index, 'utf8'));
  delete old.nextBundleId;
  for (const p of old.packages) delete p.bundleId;
  fs.writeFileSync(index, JSON.stringify(old));
  store = openStore(dir);
  t.same(ids(), ['a:1', 'c:2', 'e:3']);
  await store.install(dpFile(buildDp({ name: 'f', version: '1' })));
  t.same(ids(), ['a:1', 'c:2', 'e:3', 'f:4']);
  t.same(JSON.parse(fs.readFileSync(index, 'utf8')).packages.map((p: { bundleId: number }) => p.bundleId), [1, 2, 3, 4], 'written');
  const edited = JSON.parse(fs.readFileSync(index, 'utf8'));
  edited.packages[2].bundleId = 1;
  edited.packages[3].bundleId = -3;
  fs.writeFileSync(index, JSON.stringify(edited));
  store = openStore(dir);
  t.same(ids(), ['a:1', 'c:2', 'e:5', 'f:6'], 'a repeated or invalid id in a hand-edited index: the next free ones');
});

t.test('refused packages leave nothing behind', async (t) => {
  const dir = dataDir();
  const store = openStore(dir);
  await store.install(dpFile(buildDp({ name: 'keep', version: '1' })));
  const before = fs.readdirSync(path.join(dir, 'packages')).sort();
  const cases: [string, Buffer, RegExp][] = [
    ['no manifest', buildZip([{ name: 'a.txt', data: 'x' }]), /META-INF\/MANIFEST\.MF is missing/],
    ['malformed manifest', buildZip([{ name: 'META-INF/MANIFEST.MF', data: 'garbage' }]), /MANIFEST\.MF: line 1: expected "Name: value"/],
    ['no version', buildZip([{ name: 'META-INF/MANIFEST.MF', data: 'DeploymentPackage-SymbolicName: x\n' }]), /missing DeploymentPackage-Version/],
    ['traversal', buildDp({ name: 'evil', version: '1' }, [{ name: '../../escape', data: 'x' }]), /parent folder reference/],
    ['bad CRC late in the archive', buildDp({ name: 'keep', version: '9', files: { a: 'a' } }, [{ name: 'z', data: 'zzz', crc: 7 }]), /z: CRC-32 mismatch/],
    ['missing extension file', buildDp({ name: 'x', version: '1', extensions: ['nope.js'] }), /Gatewayd-Extension nope\.js is not a file/],
    ['truncated', buildDp({ name: 'x', version: '1', files: { a: 'aaaa' } }).subarray(0, 60), /truncated/],
    ['empty file', Buffer.alloc(0), /not a zip archive/],
    ['file and folder clash', buildDp({ name: 'x', version: '1', files: { a: '1', 'a/b': '2' } }), /a\/b: inside "a", which is a file/],
  ];
  for (const [name, buf, re] of cases) {
    const err = await store.install(dpFile(buf)).then(() => undefined, (e: Error) => e);
    t.match(err?.message, re, name);
    t.type(err, PackageError, `${name}: a package error`);
    t.same(fs.readdirSync(path.join(dir, 'packages')).sort(), before, `${name}: nothing half-installed`);
  }
  t.same(pkgsOf(store), ['keep@1.0.0'], 'the installed package is untouched');
  t.equal(fs.existsSync(path.join(tmp, '..', 'escape')), false);
});

t.test('open removes leftovers of interrupted work and trusts the index', async (t) => {
  const dir = dataDir();
  const store = openStore(dir);
  const { pkg } = await store.install(dpFile(buildDp({ name: 'a', version: '1' })));
  const root = path.join(dir, 'packages');
  fs.mkdirSync(path.join(root, '.staging-12345678/sub'), { recursive: true });
  fs.mkdirSync(path.join(root, 'a_2.0.0_abcdef12'));
  fs.mkdirSync(path.join(root, '.incoming'));
  fs.writeFileSync(path.join(root, '.incoming/x.dp'), 'x');
  fs.writeFileSync(path.join(root, '.index.json.1.1.tmp'), '{');
  const again = openStore(dir);
  t.same(pkgsOf(again), ['a@1.0.0']);
  t.same(fs.readdirSync(root).sort(), ['index.json', pkg.dir].sort());

  // an index entry whose folder vanished is dropped instead of crashing the start
  fs.rmSync(path.join(root, pkg.dir), { recursive: true });
  t.same(pkgsOf(openStore(dir)), []);

  // an unreadable index is set aside, the daemon starts without packages
  fs.writeFileSync(path.join(root, 'index.json'), '{not json');
  t.same(pkgsOf(openStore(dir)), []);
  t.ok(fs.readdirSync(root).some((f) => f.startsWith('index.json.unreadable-')));

  fs.writeFileSync(path.join(root, 'index.json'), JSON.stringify({ formatVersion: 99, packages: [] }));
  t.throws(() => openStore(dir), /formatVersion 99 is not supported/);
});

t.test('jobs run one at a time in order; pending keys are exact strings', async (t) => {
  const q = new JobQueue(silentLogger, 3);
  const order: string[] = [];
  let running = 0;
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const work = (tag: string, fail = false) => async () => {
    running++;
    t.equal(running, 1, `${tag} runs alone`);
    if (tag === 'first') await gate;
    order.push(tag);
    running--;
    if (fail) throw new Error(`${tag} broke`);
  };
  q.enqueue('install', 'http://x/a.dp', { url: 'http://x/a.dp' }, work('first'));
  q.enqueue('uninstall', 'a', { name: 'a' }, work('second', true));
  q.enqueue('install', 'http://x/b.dp', { url: 'http://x/b.dp' }, work('third'));
  t.ok(q.isPending('install', 'http://x/a.dp'));
  t.notOk(q.isPending('install', 'http://x/a.dp?'), 'a trailing ? is another request');
  t.notOk(q.isPending('install', 'HTTP://x/a.dp'), 'case matters');
  t.ok(q.isPending('uninstall', 'a'));
  t.notOk(q.isPending('install', 'a'), 'kinds are separate');
  t.same(q.list().map((j) => j.state), ['RUNNING', 'QUEUED', 'QUEUED']);
  release();
  await q.idle();
  t.same(order, ['first', 'second', 'third']);
  const jobs = q.list();
  t.same(jobs.map((j) => [j.state, j.error]), [['SUCCEEDED', undefined], ['FAILED', 'second broke'], ['SUCCEEDED', undefined]]);
  t.ok(jobs.every((j) => j.queuedAt && j.startedAt && j.finishedAt));
  t.notOk(q.isPending('install', 'http://x/a.dp'), 'forgotten once finished');
  q.enqueue('install', 'k', {}, async () => {});
  await q.idle();
  t.same(q.list().map((j) => j.id), [2, 3, 4], 'only the most recent finished jobs are kept');
  await q.stop();
  t.throws(() => q.enqueue('install', 'k', {}, async () => {}), /stopped/);
});

t.test('kill -9 during installs leaves the old or the new state', async (t) => {
  const dir = dataDir();
  const versions = [1, 2, 3].map((v) => dpFile(buildDp({ name: 'p', version: String(v), files: { 'v.txt': String(v), 'blob.bin': Buffer.alloc(300_000, v) } })));
  const other = dpFile(buildDp({ name: 'q', version: '1', files: { 'v.txt': 'q' } }));
  const child = path.join(tmp, 'install-loop.mts');
  fs.writeFileSync(child, `
import { PackageStore } from ${JSON.stringify(path.resolve('src/deploy/store.js'))};
import { silentLogger } from ${JSON.stringify(path.resolve('src/log.js'))};
async function main(): Promise<void> {
  const [dir, ...files] = process.argv.slice(2);
  const store = new PackageStore({ dataDir: dir!, log: silentLogger });
  store.open();
  for (let i = 0; ; i++) {
    await store.install(files[i % files.length]!);
    if (i % 4 === 3) await store.remove('q');
    process.stdout.write('.');
  }
}
void main();
`);
  // Bundled once to plain JS, so each round's child starts in milliseconds instead of compiling.
  const childJs = path.join(tmp, 'install-loop.mjs');
  buildSync({ entryPoints: [child], outfile: childJs, bundle: true, platform: 'node', format: 'esm', logLevel: 'error' });
  for (let round = 0; round < 5; round++) {
    const proc = spawn(process.execPath, [childJs, dir, ...versions, other], { stdio: ['ignore', 'pipe', 'inherit'] });
    let count = 0;
    await new Promise<void>((resolve, reject) => {
      proc.on('error', reject);
      proc.on('exit', (code, signal) => (signal === 'SIGKILL' ? resolve() : reject(new Error(`install loop exited early with ${code}`))));
      const onData = (d: Buffer) => {
        count += d.length;
        if (count < 3 + round) return;
        // after a few installs, kill at a moment that varies from round to round
        proc.stdout.off('data', onData);
        proc.stdout.resume();
        setTimeout(() => proc.kill('SIGKILL'), round * 7);
      };
      proc.stdout.on('data', onData);
    });
    const store = openStore(dir);
    const list = store.list();
    const p = list.find((x) => x.name === 'p');
    t.ok(p, `round ${round}: p is installed`);
    if (!p) continue;
    t.equal(fs.readFileSync(path.join(store.dirOf(p), 'v.txt'), 'utf8') + '.0.0', p.version, `round ${round}: files match the indexed version`);
    t.equal(fs.statSync(path.join(store.dirOf(p), 'blob.bin')).size, 300_000, `round ${round}: files complete`);
    const folders = fs.readdirSync(path.join(dir, 'packages')).filter((f) => f !== 'index.json').sort();
    t.same(folders, list.map((x) => x.dir).sort(), `round ${round}: no leftovers, nothing missing`);
  }
});
