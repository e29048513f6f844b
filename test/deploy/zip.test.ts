// The zip reader and manifest parser against tables of good, malformed and malicious archives.

import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { execFileSync } from 'node:child_process';
import { ZipArchive, ZipError, crc32, unsafePathReason } from '../../src/deploy/zip.js';
import { ManifestError, parseManifest, readPackageManifest } from '../../src/deploy/manifest.js';
import { compareVersions, normaliseVersion, parseVersion } from '../../src/deploy/version.js';
import { buildDp, buildZip, manifestText, type ZipEntrySpec, type ZipOptions, commandWorks } from '../helpers/dp.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-zip-'));
t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
let n = 0;
function save(buf: Buffer): string {
  const f = path.join(dir, `a${++n}.zip`);
  fs.writeFileSync(f, buf);
  return f;
}

async function readAll(file: string, limits = {}): Promise<Record<string, string>> {
  const zip = await ZipArchive.open(file, limits);
  try {
    const out: Record<string, string> = {};
    for (const e of zip.entries) out[e.name] = (await zip.read(e)).toString('latin1');
    return out;
  } finally {
    await zip.close();
  }
}

t.test('crc32 matches known vectors', async (t) => {
  t.equal(crc32(Buffer.from('123456789')), 0xcbf43926);
  t.equal(crc32(Buffer.alloc(0)), 0);
});

t.test('good archives', async (t) => {
  const big = Buffer.alloc(200_000, 'abcdefgh');
  const random = Buffer.from(Array.from({ length: 5000 }, (_, i) => (i * 7919) % 251));
  const cases: [string, ZipEntrySpec[], ZipOptions, Record<string, string>][] = [
    ['stored and deflated', [{ name: 'a.txt', data: 'hello', method: 'store' }, { name: 'd/b.txt', data: 'world' }], {}, { 'a.txt': 'hello', 'd/b.txt': 'world' }],
    ['empty file and folder', [{ name: 'd/' }, { name: 'd/e', data: '' }], {}, { 'd/': '', 'd/e': '' }],
    ['archive comment', [{ name: 'x', data: 'y' }], { comment: 'PK\x05\x06 fake end record in the comment' }, { x: 'y' }],
    ['compressible but under the ratio floor', [{ name: 'big', data: big }], {}, { big: big.toString('latin1') }],
    ['binary', [{ name: 'bin', data: random }], {}, { bin: random.toString('latin1') }],
    ['stored across many read chunks', [{ name: 'big', data: big, method: 'store' }], {}, { big: big.toString('latin1') }],
    ['name with dots inside segments', [{ name: 'a..b/.hidden/c...', data: '1' }], {}, { 'a..b/.hidden/c...': '1' }],
  ];
  for (const [name, specs, opts, want] of cases) {
    t.same(await readAll(save(buildZip(specs, opts))), want, name);
  }
});

const zipMissing = !commandWorks('zip', ['-v']);
if (zipMissing && process.env.CI === 'true') t.fail('the zip command is required under CI');

t.test('archives made by the zip command read back', { skip: zipMissing && 'zip command not installed' }, async (t) => {
  const src = path.join(dir, 'src');
  fs.mkdirSync(path.join(src, 'META-INF'), { recursive: true });
  fs.writeFileSync(path.join(src, 'META-INF/MANIFEST.MF'), manifestText({ name: 'x.y', version: '1.2' }));
  fs.writeFileSync(path.join(src, 'data.bin'), Buffer.alloc(10_000, 'q'));
  const out = path.join(dir, 'cmd.dp');
  execFileSync('zip', ['-q', '-r', out, 'META-INF', 'data.bin'], { cwd: src });
  const files = await readAll(out);
  t.equal(files['data.bin']!.length, 10_000);
  t.same(readPackageManifest(files['META-INF/MANIFEST.MF']!), { name: 'x.y', version: '1.2.0', extensions: [] });
});

t.test('malformed and malicious archives are refused', async (t) => {
  const bomb = Buffer.alloc(4 * 1024 * 1024); // 4 MiB of zeros deflates ~1000:1
  const good = buildZip([{ name: 'a', data: 'aaaa' }, { name: 'b', data: 'bbbb' }]);
  const cases: [string, Buffer, RegExp, object?][] = [
    ['empty file', Buffer.alloc(0), /not a zip archive/],
    ['not a zip', Buffer.from('this is a text file that is long enough to scan'), /not a zip archive/],
    ['truncated in the middle', good.subarray(0, 40), /not a zip archive or truncated/],
    ['end record cut off', good.subarray(0, good.length - 5), /not a zip archive or truncated/],
    ['central directory beyond the data', (() => { const b = Buffer.from(good); b.writeUInt32LE(9999, b.length - 6); return b; })(), /truncated/],
    ['parent traversal', buildZip([{ name: '../evil', data: 'x' }]), /unsafe entry name.*parent folder/],
    ['nested traversal', buildZip([{ name: 'a/../../evil', data: 'x' }]), /parent folder/],
    ['absolute path', buildZip([{ name: '/etc/passwd', data: 'x' }]), /absolute path/],
    ['backslash', buildZip([{ name: '..\\evil', data: 'x' }]), /backslash/],
    ['drive letter', buildZip([{ name: 'C:evil', data: 'x' }]), /drive letter/],
    ['empty segment', buildZip([{ name: 'a//b', data: 'x' }]), /empty or "\." path segment/],
    ['dot segment', buildZip([{ name: './a', data: 'x' }]), /empty or "\." path segment/],
    ['NUL in name', buildZip([{ name: 'a\u0000b', data: 'x' }]), /control character/],
    ['symlink', buildZip([{ name: 'link', data: '/etc/passwd', unixMode: 0o120777 }]), /symbolic links/],
    ['duplicate entry', buildZip([{ name: 'a', data: '1' }, { name: 'A', data: '2' }]), /duplicate entry/],
    ['file used as a folder', buildZip([{ name: 'a', data: '1' }, { name: 'A/b', data: '2' }]), /A\/b: inside "a", which is a file/],
    ['local name differs', buildZip([{ name: 'a', localName: 'b', data: '1' }]), /local header names/],
    ['encrypted', buildZip([{ name: 'a', data: '1', flags: 1 }]), /encrypted/],
    ['unknown method', buildZip([{ name: 'a', data: '1', methodNumber: 12 }]), /method 12/],
    ['too many entries', buildZip(Array.from({ length: 11 }, (_, i) => ({ name: `f${i}`, data: '' }))), /too many entries: 11/, { maxEntries: 10 }],
    ['entry above the size limit', buildZip([{ name: 'big', data: Buffer.alloc(2000) }]), /exceeds the entry size limit 1000/, { maxEntrySize: 1000 }],
    ['total above the limit', buildZip([{ name: 'a', data: Buffer.alloc(600) }, { name: 'b', data: Buffer.alloc(600) }]), /total size limit 1000/, { maxTotalSize: 1000 }],
    ['compression ratio bomb', buildZip([{ name: 'zeros', data: bomb }]), /compression ratio exceeds 100/],
    ['declared size smaller than the data (lying bomb)', buildZip([{ name: 'zeros', data: bomb, declaredSize: 1000 }]), /inflates to more than its declared size 1000/],
    ['declared size larger than the data', buildZip([{ name: 'a', data: 'abc', declaredSize: 10 }]), /size 3 differs from the declared 10/],
    ['stored with differing sizes', buildZip([{ name: 'a', data: 'abc', method: 'store', declaredSize: 10 }]), /stored entry with differing sizes/],
    ['bad CRC', buildZip([{ name: 'a', data: 'abc', crc: 1234 }]), /CRC-32 mismatch/],
    ['overlapping entries', buildZip([{ name: 'a', data: 'abcd' }, { name: 'b', data: 'abcd', sharesDataWith: 0 }]), /local header names|overlaps/],
    ['count in end record lies', buildZip([{ name: 'a', data: '1' }], { declaredCount: 3 }), /corrupt central directory/],
    ['corrupt deflate data', (() => {
      const z = buildZip([{ name: 'a', data: 'hello hello hello hello' }]);
      z.fill(0xff, 30 + 1, 30 + 6); // inside the deflate stream of entry "a"
      return z;
    })(), /corrupt deflate data|CRC-32|differs/],
  ];
  for (const [name, buf, re, limits] of cases) {
    await t.rejects(readAll(save(buf), limits), re, name);
  }
  // the error type lets callers tell a bad package from an I/O failure
  await t.rejects(readAll(save(Buffer.alloc(10))), ZipError);
});

t.test('a lying bomb never inflates beyond its declared size', async (t) => {
  const zeros = Buffer.alloc(8 * 1024 * 1024);
  const file = save(buildZip([{ name: 'z', data: zeros, declaredSize: 512 * 1024 }]));
  const zip = await ZipArchive.open(file);
  t.teardown(() => zip.close());
  const before = process.memoryUsage().arrayBuffers;
  await t.rejects(zip.read(zip.entries[0]!), /inflates to more than its declared size 524288/);
  t.ok(process.memoryUsage().arrayBuffers - before < 8 * 1024 * 1024, 'did not materialise the whole bomb');
  t.ok(zlib.deflateRawSync(zeros).length < 20_000, 'fixture really is a bomb');
});

t.test('path safety table', async (t) => {
  for (const ok of ['a', 'a/b', 'a/', 'a.b/c..d', '...']) t.equal(unsafePathReason(ok), undefined, ok);
  for (const bad of ['', '..', '../a', 'a/..', '/a', '\\a', 'c:/x', 'a//b', '.', 'a/./b', 'x\ny']) {
    t.type(unsafePathReason(bad), 'string', JSON.stringify(bad));
  }
});

t.test('manifest parsing', async (t) => {
  const m = parseManifest('Manifest-Version: 1.0\r\nDeploymentPackage-SymbolicName: org.exa\r\n mple.long\r\nDeploymentPackage-Version: 1\r\n\r\nName: b.jar\r\nBundle-SymbolicName: b\r\n\r\n');
  t.equal(m.main.get('deploymentpackage-symbolicname'), 'org.example.long', 'continuation line joined');
  t.equal(m.sections.get('b.jar')?.get('bundle-symbolicname'), 'b');
  t.same(readPackageManifest(manifestText({ name: 'pkg', version: '2.1.3.beta-1', extensions: ['ext/a.js', 'b.mjs'] })), {
    name: 'pkg', version: '2.1.3.beta-1', extensions: ['ext/a.js', 'b.mjs'],
  });
  t.same(readPackageManifest('deploymentpackage-symbolicname: a\ndeploymentpackage-version: 01.2\n'), { name: 'a', version: '1.2.0', extensions: [] }, 'names are case-insensitive, LF endings');

  const bad: [string, string, RegExp][] = [
    ['empty', '', /missing DeploymentPackage-SymbolicName/],
    ['no version', 'DeploymentPackage-SymbolicName: a\n', /missing DeploymentPackage-Version/],
    ['no name', 'DeploymentPackage-Version: 1.0.0\n', /missing DeploymentPackage-SymbolicName/],
    ['bad name', 'DeploymentPackage-SymbolicName: ../x\nDeploymentPackage-Version: 1\n', /invalid DeploymentPackage-SymbolicName/],
    ['name with slash', 'DeploymentPackage-SymbolicName: a/b\nDeploymentPackage-Version: 1\n', /invalid DeploymentPackage-SymbolicName/],
    ['empty name', 'DeploymentPackage-SymbolicName: \nDeploymentPackage-Version: 1\n', /invalid DeploymentPackage-SymbolicName/],
    ['bad version', 'DeploymentPackage-SymbolicName: a\nDeploymentPackage-Version: 1.x\n', /invalid DeploymentPackage-Version "1.x"/],
    ['version too big', 'DeploymentPackage-SymbolicName: a\nDeploymentPackage-Version: 9999999999\n', /invalid DeploymentPackage-Version/],
    ['no colon', 'DeploymentPackage-SymbolicName a\n', /line 1: expected "Name: value"/],
    ['continuation first', ' x\n', /line 1: continuation line without a header/],
    ['duplicate header', 'DeploymentPackage-Version: 1\ndeploymentpackage-version: 2\n', /line 2: duplicate header/],
    ['section without Name', 'A: b\n\nB: c\n', /line 3: a section must start with "Name:"/],
    ['extension not js', manifestText({ name: 'a', version: '1', extensions: ['x.sh'] }), /must be a \.js or \.mjs file/],
  ];
  for (const [name, text, re] of bad) t.throws(() => readPackageManifest(text), re, name);
  t.throws(() => readPackageManifest(''), ManifestError);
});

t.test('OSGi versions', async (t) => {
  t.equal(normaliseVersion('1'), '1.0.0');
  t.equal(normaliseVersion(' 5.4 '), '5.4.0');
  t.equal(normaliseVersion('5.5.0.SNAPSHOT'), '5.5.0.SNAPSHOT');
  t.equal(normaliseVersion('1.2.3.'), undefined);
  t.equal(normaliseVersion('-1'), undefined);
  const cmp = (a: string, b: string) => Math.sign(compareVersions(parseVersion(a)!, parseVersion(b)!));
  t.equal(cmp('5.4.0', '5.10.0'), -1);
  t.equal(cmp('5.4.0', '5.4'), 0);
  t.equal(cmp('5.4.0.a', '5.4.0'), 1, 'a qualifier sorts after none');
});

t.test('a built package reads back whole', async (t) => {
  const files = await readAll(save(buildDp({ name: 'p', version: '1', files: { 'ext.js': 'export {}' } })));
  t.same(Object.keys(files), ['META-INF/', 'META-INF/MANIFEST.MF', 'ext.js']);
});
