// Atomic state files: killed with SIGKILL in the middle of writes, the file is always either the old
// or the new content, never torn; temporary files of interrupted writes are cleaned at start.

import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { writeFileAtomic, readJsonFile, cleanTempFiles } from '../../src/store/atomic.js';
import { openDataDir } from '../../src/store/datadir.js';
import { withoutRunnerHook } from '../helpers/launch.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-store-'));
t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));

t.test('writeFileAtomic replaces content and leaves no temporary file', async (t) => {
  const f = path.join(dir, 'state.json');
  await writeFileAtomic(f, '{"v":1}');
  await writeFileAtomic(f, '{"v":2}');
  t.same(readJsonFile(f), { v: 2 });
  t.equal(fs.statSync(f).mode & 0o777, 0o600);
  t.same(fs.readdirSync(dir).filter((n) => n.endsWith('.tmp')), []);
  t.equal(readJsonFile(path.join(dir, 'absent.json')), undefined);
});

t.test('writeFileAtomic writes a sequence of strings piece by piece, as they are made', async (t) => {
  const f = path.join(dir, 'parts.json');
  const made: number[] = [];
  const parts = function* () {
    for (let i = 0; i < 3; i++) {
      made.push(i);
      yield `${i === 0 ? '[' : ','}"ü${i}"`;
    }
    yield ']';
  };
  await writeFileAtomic(f, parts());
  t.same(made, [0, 1, 2]);
  t.same(readJsonFile(f), ['ü0', 'ü1', 'ü2'], 'multi-byte text intact');
  t.same(fs.readdirSync(dir).filter((n) => n.endsWith('.tmp')), []);
  const failing = function* () {
    yield 'x';
    throw new Error('made badly');
  };
  await t.rejects(writeFileAtomic(f, failing()), { message: 'made badly' });
  t.same(readJsonFile(f), ['ü0', 'ü1', 'ü2'], 'a failure while making the content keeps the old file');
  t.same(fs.readdirSync(dir).filter((n) => n.endsWith('.tmp')), [], 'and removes the temporary one');
});

t.test('a write into a missing folder fails cleanly', async (t) => {
  await t.rejects(writeFileAtomic(path.join(dir, 'no', 'such', 'file'), 'x'), { code: 'ENOENT' });
});

t.test('SIGKILL during writes never leaves a torn file', async (t) => {
  const script = path.join(dir, 'writer.mjs');
  const entry = path.join(dir, 'writer-entry.ts');
  fs.writeFileSync(
    entry,
    `import { writeFileAtomic } from ${JSON.stringify(path.join(here, '..', '..', 'src', 'store', 'atomic.ts'))};
const file = process.argv[2];
let i = 0;
// Large, distinct generations so a torn write would be visible.
for (;;) {
  i++;
  const body = JSON.stringify({ gen: i, pad: String(i % 10).repeat(200000) });
  await writeFileAtomic(file, body);
  if (i === 1) process.stdout.write('first\\n');
}
`,
  );
  await build({ entryPoints: [entry], outfile: script, bundle: true, platform: 'node', format: 'esm', logLevel: 'error' });
  const target = path.join(dir, 'killed.json');
  const rounds = 25;
  let generations = 0;
  for (let round = 0; round < rounds; round++) {
    // Without the test runner's process hook (test/helpers/launch.mjs): it would double each round's start.
    const [cmd, ...argv] = withoutRunnerHook([process.execPath, script, target]);
    const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve) => child.stdout!.once('data', () => resolve()));
    await new Promise((r) => setTimeout(r, 5 + Math.random() * 60));
    child.kill('SIGKILL');
    await new Promise((r) => child.once('exit', r));
    const text = fs.readFileSync(target, 'utf8');
    const v = JSON.parse(text); // throws on a torn file
    if (v.pad !== String(v.gen % 10).repeat(200000)) t.fail(`round ${round}: content of generation ${v.gen} is inconsistent`);
    generations += v.gen;
    cleanTempFiles(dir);
    t.same(fs.readdirSync(dir).filter((n) => n.endsWith('.tmp')), [], `round ${round}: temporary files cleaned`);
  }
  t.ok(generations > rounds, `writes were really in progress (${generations} generations seen)`);
});

t.test('openDataDir migrates forward and refuses newer formats', async (t) => {
  const dd = path.join(dir, 'dd');
  let info = openDataDir(dd, '1.0.0', {}, 1);
  t.equal(info.formatVersion, 1);
  const ran: number[] = [];
  info = openDataDir(dd, '2.0.0', { 1: () => ran.push(1), 2: () => ran.push(2) }, 3);
  t.same(ran, [1, 2]);
  t.equal(info.formatVersion, 3);
  t.throws(() => openDataDir(dd, '1.0.0', {}, 1), /has format 3 \(written by gatewayd 2\.0\.0\); this gatewayd 1\.0\.0 understands up to format 1/);
});
