// Licences in the image: the project's EPL-2.0 text, and THIRD-PARTY-NOTICES listing exactly the npm
// packages esbuild put into the bundle (from its metafile) with their licence files, installed by
// `make install` and named by the Yocto and Buildroot recipes with matching checksums. Also: the
// Buildroot package copies only what the image needs (no node_modules, no development data/).

import t from 'tap';
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ensureBundle } from '../helpers/daemon.js';
import { ROOT, install, openTempDir } from '../helpers/install.js';

const md5 = (f: string) => crypto.createHash('md5').update(fs.readFileSync(f)).digest('hex');
const read = (p: string) => fs.readFileSync(path.join(ROOT, p), 'utf8');

t.test('LICENSE is the full EPL-2.0 text, as package.json says', async (t) => {
  t.equal(JSON.parse(read('package.json')).license, 'EPL-2.0');
  const text = read('LICENSE');
  t.match(text, /^Eclipse Public License - v 2\.0\n/);
  for (const s of ['1. DEFINITIONS', '2. GRANT OF RIGHTS', '3. REQUIREMENTS', '4. COMMERCIAL DISTRIBUTION', '5. NO WARRANTY', '6. DISCLAIMER OF LIABILITY', '7. GENERAL', 'Exhibit A - Form of Secondary Licenses Notice']) {
    t.ok(text.includes(s), s);
  }
  t.ok(text.length > 12_000, 'the whole text, not a summary');
});

t.test('THIRD-PARTY-NOTICES in the image lists every bundled package with its licence text', async (t) => {
  ensureBundle();
  // The bundled packages, from esbuild's own account of what went into a fresh build.
  const dir = openTempDir(t, 'gw-meta-');
  const meta = path.join(dir, 'meta.json');
  const b = spawnSync(process.execPath, [path.join(ROOT, 'build', 'build.mjs')], { env: { ...process.env, GATEWAYD_OUTFILE: path.join(dir, 'gatewayd.js'), GATEWAYD_METAFILE: meta }, encoding: 'utf8' });
  t.equal(b.status, 0, b.stderr);
  const bundled = new Set<string>();
  for (const input of Object.keys(JSON.parse(fs.readFileSync(meta, 'utf8')).inputs)) {
    const m = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(input);
    if (m) bundled.add(m[1]);
  }
  for (const p of ['mqtt-packet', 'busboy', 'streamsearch', 'uuid']) t.ok(bundled.has(p), `${p} is bundled`);
  t.notOk(bundled.has('readable-stream'), 'readable-stream is replaced by node:stream, so not shipped');

  const img = install(t);
  const notices = fs.readFileSync(img.at('/usr/share/licenses/gatewayd/THIRD-PARTY-NOTICES'), 'utf8');
  t.equal(fs.readFileSync(img.at('/usr/share/licenses/gatewayd/LICENSE'), 'utf8'), read('LICENSE'), 'LICENSE installed');
  const listed = [...notices.matchAll(/^={78}\n(\S+) (\S+) \(([^)]+)\)\n={78}$/gm)];
  t.same(listed.map((m) => m[1]).sort(), [...bundled].sort(), 'exactly the bundled packages');
  for (const [, name, version, licence] of listed) {
    const pkgDir = path.join(ROOT, 'node_modules', name);
    const pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8'));
    t.equal(version, pkg.version, `${name}: version`);
    const files = fs.readdirSync(pkgDir).filter((f) => /^licen[cs]e/i.test(f));
    t.ok(files.length > 0 && files.every((f) => notices.includes(fs.readFileSync(path.join(pkgDir, f), 'utf8').trim())), `${name}: licence text included`);
  }

  // The recipes name both files with the checksums of what make install ships.
  const bb = read('build/yocto/recipes-gatewayd/gatewayd/gatewayd_0.1.0.bb');
  const fix = 'update LIC_FILES_CHKSUM in build/yocto/recipes-gatewayd/gatewayd/gatewayd_0.1.0.bb';
  t.ok(bb.includes(`file://usr/share/licenses/gatewayd/LICENSE;md5=${md5(img.at('/usr/share/licenses/gatewayd/LICENSE'))}`), fix);
  t.ok(bb.includes(`file://usr/share/licenses/gatewayd/THIRD-PARTY-NOTICES;md5=${md5(img.at('/usr/share/licenses/gatewayd/THIRD-PARTY-NOTICES'))}`), `${fix} (the bundled packages changed)`);
  const declared = /^LICENSE = "([^"]+)"/m.exec(bb)![1].split(' & ');
  const br = read('build/buildroot/package/gatewayd/gatewayd.mk');
  const brDeclared = /^GATEWAYD_LICENSE = (.+)$/m.exec(br)![1].split(', ');
  // Exactly the licences shipped: none missing, none left over from a dependency that went away.
  const shipped = [...new Set(['EPL-2.0', ...listed.map((m) => m[3])])].sort();
  t.same([...declared].sort(), shipped, 'Yocto LICENSE');
  t.same([...brDeclared].sort(), shipped, 'Buildroot GATEWAYD_LICENSE');
  t.match(bb, /install -m 0644 \$\{S\}\/usr\/share\/licenses\/gatewayd\/LICENSE \$\{S\}\/usr\/share\/licenses\/gatewayd\/THIRD-PARTY-NOTICES/);
  t.match(br, /^GATEWAYD_LICENSE_FILES = LICENSE dist\/THIRD-PARTY-NOTICES$/m);
});

const haveRsync = spawnSync('rsync', ['--version']).status === 0;
if (!haveRsync && process.env.CI === 'true') throw new Error('rsync not installed but CI=true (build/test-deps.sh installs it)');
t.test('Buildroot copies only the image files into its build folder (no node_modules, no data/)', { skip: haveRsync ? false : 'rsync not installed' }, async (t) => {
  ensureBundle();
  const mk = read('build/buildroot/package/gatewayd/gatewayd.mk');
  const m = /^GATEWAYD_OVERRIDE_SRCDIR_RSYNC_EXCLUSIONS = ((?:.*\\\n)*.*)$/m.exec(mk);
  t.ok(m, 'the package sets its rsync filter');
  const filter = m![1].replace(/\\\n/g, ' ').trim().split(/\s+/);
  // A checkout as a developer has it after `make run` and `make test`.
  const dir = openTempDir(t, 'gw-br-');
  const src = path.join(dir, 'src');
  const put = (p: string, content: string | Buffer) => {
    fs.mkdirSync(path.dirname(path.join(src, p)), { recursive: true });
    fs.writeFileSync(path.join(src, p), content);
  };
  fs.mkdirSync(src, { recursive: true });
  spawnSync('cp', ['-a', path.join(ROOT, 'rootfs'), path.join(ROOT, 'LICENSE'), src + '/']);
  put('dist/gatewayd.js', fs.readFileSync(path.join(ROOT, 'dist', 'gatewayd.js')));
  put('dist/THIRD-PARTY-NOTICES', fs.readFileSync(path.join(ROOT, 'dist', 'THIRD-PARTY-NOTICES')));
  put('dist/console/index.html', '<!doctype html>');
  put('dist/ota-second.js', 'x');
  put('data/tls/selfsigned-key.pem', '-----BEGIN PRIVATE KEY-----\n');
  put('data/identities.json', '{"identities":[{"passwordHash":"$scrypt$"}]}');
  put('node_modules/mqtt-packet/package.json', '{}');
  put('src/cli/main.ts', '');
  put('.git/HEAD', 'ref: refs/heads/main\n');
  // Buildroot's own command for a local package (package/pkg-generic.mk, .stamp_rsynced).
  const build = path.join(dir, 'build');
  const r = spawnSync('rsync', ['-au', '--chmod=u=rwX,go=rX', ...filter, '--exclude', '.git', src + '/', build], { encoding: 'utf8' });
  t.equal(r.status, 0, r.stderr);
  const got: string[] = [];
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else got.push(path.relative(build, p));
    }
  };
  walk(build);
  t.notOk(got.some((p) => /^(data|node_modules|src|\.git)\//.test(p)), `nothing of data/, node_modules/, src/: ${got.join(' ')}`);
  t.notOk(got.includes('dist/ota-second.js'));
  // ... and everything the package installs is there.
  for (const [, p] of mk.matchAll(/\$\(@D\)\/(\S+)/g)) t.ok(got.includes(p) || got.some((g) => g.startsWith(`${p}/`)), `${p} copied`);
  t.ok(got.includes('rootfs/usr/bin/gatewayd'));
});
