// The image's package database as INVENTORY-V1 reads it (docs/mqtt.md "INVENTORY-V1"): dpkg and
// opkg status files, whatever they hold. A pure unit over real files: ordinary content, dpkg's
// states, hostile names and versions, overlong lines, more packages than the bound, a file past the
// size bound, a FIFO, parallel readers, and the list kept until the file changes. The daemon-level
// test is test/mqtt/inventory-v1.test.ts.

import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { MAX_DATABASE_BYTES, MAX_SYSTEM_PACKAGES, SystemPackages, packageDatabaseProblem } from '../../src/deploy/system-packages.js';
import { createLogger, silentLogger } from '../../src/log.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-syspkg-'));
t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
const file = (name: string, content: string | Buffer) => {
  const f = path.join(dir, name);
  fs.writeFileSync(f, content);
  return f;
};
const reader = (setting: string, log = silentLogger) => new SystemPackages(() => setting, log);
const para = (name: string, version: string, status = 'install ok installed') => `Package: ${name}\nStatus: ${status}\nVersion: ${version}\n\n`;

t.test('settings', async (t) => {
  for (const ok of ['auto', 'none', 'dpkg:/var/lib/dpkg/status', 'opkg:/usr/lib/opkg/status']) t.equal(packageDatabaseProblem(ok), undefined, ok);
  t.match(packageDatabaseProblem('rpm:/x'), /auto, none, dpkg:<absolute path> or opkg:<absolute path>/);
  t.match(packageDatabaseProblem('dpkg:relative/status'), /absolute path after dpkg:/);
  t.match(packageDatabaseProblem('/var/lib/dpkg/status'), /expected auto/);
  t.same(await reader('none').list(), []);
});

t.test("dpkg's states, fields in any case, CRLF, continuation lines, the last paragraph without a blank line", async (t) => {
  const f = file('states', [
    para('a-installed', '1.0'),
    para('b-config-files', '1.0', 'deinstall ok config-files'),
    para('c-not-installed', '1.0', 'purge ok not-installed'),
    para('d-half', '2.0', 'install reinstreq half-installed'),
    'Package: e-desc\nVersion: 3.0\nDescription: x\n Package: not-a-field\n Version: 9\nStatus: install ok installed\n\n',
    'PACKAGE: f-case\r\nversion: 1:2.3~rc1+dfsg-4\r\nStatus: install ok installed\r\n\r\n',
    'Package: g-no-status\nVersion: 0.1',
  ].join(''));
  t.same(await reader(`dpkg:${f}`).list(), [
    { name: 'a-installed', version: '1.0', type: 'DEB' },
    { name: 'd-half', version: '2.0', type: 'DEB' },
    { name: 'e-desc', version: '3.0', type: 'DEB' },
    { name: 'f-case', version: '1:2.3~rc1+dfsg-4', type: 'DEB' },
    { name: 'g-no-status', version: '0.1', type: 'DEB' },
  ]);
  t.same((await reader(`opkg:${f}`).list()).map((p) => p.type), Array(5).fill('IPK'), 'opkg: IPK');
});

t.test('hostile content is skipped, never listed', async (t) => {
  const f = file('hostile', [
    para('<img src=x onerror=alert(1)>', '1.0'),
    para('"; DROP TABLE', '1.0'),
    para('caf\u00e9', '1.0'),
    para('ok-one', '1.0 ; rm -rf /'),
    para('ok-two', '\u001b[31mred'),
    para('n'.repeat(256), '1.0'),
    para('ok-three', '9'.repeat(256)),
    `Package: long\nVersion: 1\nDescription: ${'x'.repeat(3 * 1024 * 1024)}\nStatus: install ok installed\n\n`,
    `Package: ${'y'.repeat(5000)}\nVersion: 1\n\n`,
    '\u0000\u0001\u0002binary\u00ff\n\n',
    para('survivor', '1.0'),
  ].join(''));
  t.same(await reader(`dpkg:${f}`).list(), [
    { name: 'long', version: '1', type: 'DEB' },
    { name: 'survivor', version: '1.0', type: 'DEB' },
  ], 'only what looks like a package; an overlong line is skipped, not its paragraph');
});

t.test('at most MAX_SYSTEM_PACKAGES, with one warning', async (t) => {
  const lines: string[] = [];
  for (let i = 0; i < MAX_SYSTEM_PACKAGES + 5; i++) lines.push(para(`pkg${i}`, `1.${i}`));
  const f = file('many', lines.join(''));
  const logged: string[] = [];
  const log = createLogger('warn', (line: string) => void logged.push(line));
  const list = await reader(`dpkg:${f}`, log).list();
  t.equal(list.length, MAX_SYSTEM_PACKAGES);
  t.same(list.at(-1), { name: `pkg${MAX_SYSTEM_PACKAGES - 1}`, version: `1.${MAX_SYSTEM_PACKAGES - 1}`, type: 'DEB' });
  t.equal(logged.filter((l) => /system package list cut at its bound/.test(l)).length, 1, logged.join('\n'));
});

t.test('a file past the size bound, a FIFO, a folder, a missing file: errors; auto with none: empty', async (t) => {
  const huge = path.join(dir, 'huge');
  fs.closeSync(fs.openSync(huge, 'w'));
  fs.truncateSync(huge, MAX_DATABASE_BYTES + 1);
  await t.rejects(reader(`dpkg:${huge}`).list(), { message: `the system package database ${huge} is larger than ${MAX_DATABASE_BYTES} bytes` });
  const fifo = path.join(dir, 'fifo');
  execFileSync('mkfifo', [fifo]);
  // Opening a FIFO for reading would wait for a writer: it must be refused at once instead.
  await t.rejects(reader(`dpkg:${fifo}`).list(), { message: /is not a regular file/ });
  await t.rejects(reader(`dpkg:${dir}`).list(), { message: /is not a regular file/ });
  await t.rejects(reader(`dpkg:${path.join(dir, 'absent')}`).list(), { message: /cannot be read \(ENOENT\)/ });
  // `auto` on this machine: Debian's database when there is one, else nothing; never an error.
  const auto = await reader('auto').list();
  t.equal(auto.length > 0, fs.existsSync('/var/lib/dpkg/status') || fs.existsSync('/var/lib/opkg/status') || fs.existsSync('/usr/lib/opkg/status'));
});

t.test('one line of 40 MB: read in bounded memory', async (t) => {
  const f = path.join(dir, 'oneline');
  const fd = fs.openSync(f, 'w');
  const chunk = Buffer.alloc(1024 * 1024, 'z');
  for (let i = 0; i < 40; i++) fs.writeSync(fd, chunk);
  fs.writeSync(fd, '\n\n' + para('after', '1.0'));
  fs.closeSync(fd);
  globalThis.gc?.();
  const before = process.memoryUsage();
  let peak = 0;
  const sample = setInterval(() => (peak = Math.max(peak, process.memoryUsage().heapUsed + process.memoryUsage().external)), 5);
  const list = await reader(`dpkg:${f}`).list();
  clearInterval(sample);
  t.same(list, [{ name: 'after', version: '1.0', type: 'DEB' }]);
  // The 40 MB line is never held: what the reading takes stays far below the file's size.
  t.ok(peak - (before.heapUsed + before.external) < 16 * 1024 * 1024, `grew ${Math.round((peak - before.heapUsed - before.external) / 1024)} KiB`);
});

t.test('kept until the file changes; parallel readers share one reading', async (t) => {
  const f = file('cache', para('one', '1.0'));
  const r = reader(`dpkg:${f}`);
  const [a, b, c] = await Promise.all([r.list(), r.list(), r.list()]);
  t.equal(a, b, 'the same list object');
  t.equal(b, c);
  t.equal(await r.list(), a, 'unchanged file: not read again');
  fs.writeFileSync(f, para('one', '1.0') + para('two', '2.0'));
  t.same((await r.list()).map((p) => p.name), ['one', 'two'], 'changed: read again');
});
