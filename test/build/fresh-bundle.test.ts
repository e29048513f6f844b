// Tests run the built daemon (dist/gatewayd.js); a bundle older than a source it is built from is
// rebuilt before a test spawns it, so a changed answer cannot pass on yesterday's build
// (README "Developing").
import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { bundleIsStale, ensureFreshBundle, newestMtime } from '../helpers/launch.mjs';

/** A checkout-shaped folder: src/, console/, build/build.mjs, package.json and dist/gatewayd.js. */
function tree(t: { teardown(fn: () => unknown): void }): { root: string; bundle: string; touch(rel: string, ageS: number): void } {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-fresh-'));
  t.teardown(() => fs.rmSync(root, { recursive: true, force: true }));
  const touch = (rel: string, ageS: number) => {
    const f = path.join(root, rel);
    fs.mkdirSync(path.dirname(f), { recursive: true });
    if (!fs.existsSync(f)) fs.writeFileSync(f, '// x\n');
    const at = Date.now() / 1000 - ageS;
    fs.utimesSync(f, at, at);
  };
  for (const rel of ['src/cli/main.ts', 'src/http/server.ts', 'console/src/main.ts', 'build/build.mjs', 'package.json']) touch(rel, 100);
  touch('dist/gatewayd.js', 50);
  return { root, bundle: path.join(root, 'dist', 'gatewayd.js'), touch };
}

t.test('a bundle newer than every source is fresh; one older than any source is stale', async (t) => {
  const { root, bundle, touch } = tree(t);
  t.equal(bundleIsStale(root, bundle), false, 'built after every source');
  touch('src/http/server.ts', 10);
  t.equal(bundleIsStale(root, bundle), true, 'a nested source changed after the build');
  touch('dist/gatewayd.js', 5);
  t.equal(bundleIsStale(root, bundle), false);
  touch('console/src/main.ts', 1);
  t.equal(bundleIsStale(root, bundle), true, 'a console source changed after the build');
  fs.rmSync(bundle);
  t.equal(bundleIsStale(root, bundle), true, 'no bundle at all');
  t.ok(newestMtime(root) > 0);
});

t.test('a stale bundle is rebuilt before use, once, and a fresh one is left alone', async (t) => {
  const { root, bundle, touch } = tree(t);
  const marker = path.join(root, 'builds.txt');
  // The build command stands in for build/build.mjs: it counts its runs and writes a new bundle.
  const build = [process.execPath, '-e', `const fs=require('fs');fs.appendFileSync(${JSON.stringify(marker)},'b');fs.writeFileSync(${JSON.stringify(bundle)},'built')`];
  t.equal(ensureFreshBundle({ root, build }), false, 'fresh: no build');
  t.notOk(fs.existsSync(marker));
  touch('src/cli/main.ts', 1);
  t.equal(ensureFreshBundle({ root, build }), true, 'stale: built');
  t.equal(fs.readFileSync(marker, 'utf8'), 'b');
  t.equal(fs.readFileSync(bundle, 'utf8'), 'built');
  t.equal(ensureFreshBundle({ root, build }), false, 'fresh again after the build');
  t.notOk(fs.existsSync(path.join(root, 'dist', '.build-lock')), 'the lock is released');
});

t.test('a failing build is an error, not a silent run of the old bundle', async (t) => {
  const { root, touch } = tree(t);
  touch('src/cli/main.ts', 1);
  t.throws(() => ensureFreshBundle({ root, build: [process.execPath, '-e', 'process.exit(3)'] }), /bundle build failed.*exit 3/);
  t.notOk(fs.existsSync(path.join(root, 'dist', '.build-lock')), 'the lock is released after a failure');
});
