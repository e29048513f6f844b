// The remote command's runner (docs/mqtt.md "CMD-V1") on its own, with real programs: output cut at
// the bound without splitting a character, the bound on runs at once checked before anything
// starts, a start failure reported as a shell would, and stopAll ending every running group.

import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import { CommandRunner, RunnerBusyError, type RunSpec } from '../../src/command/runner.js';

const spec = (program: string, args: string[], o: Partial<RunSpec> = {}): RunSpec => ({
  program,
  args,
  cwd: os.tmpdir(),
  env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
  stdin: undefined,
  timeoutMs: 20_000,
  outputMaxBytes: 1024,
  ...o,
});

t.test('output is cut at the bound without splitting a UTF-8 character', async (t) => {
  const runner = new CommandRunner(() => 2);
  // 'é' is two bytes: 1025 bytes of bound would end in half of one.
  const r = await runner.run(spec('sh', ['-c', 'i=0; while [ $i -lt 2000 ]; do printf é; i=$((i+1)); done'], { outputMaxBytes: 1025 }));
  t.equal(r.exitCode, 0);
  t.equal(r.stdoutBytes, 4000, 'every byte read');
  t.equal(r.truncated, true);
  t.equal(r.stdout, 'é'.repeat(512), 'whole characters only');
  t.ok(Buffer.byteLength(r.stdout) <= 1025);
});

t.test('the bound on runs at once is checked before anything starts', async (t) => {
  const runner = new CommandRunner(() => 1);
  const first = runner.run(spec('sleep', ['1']));
  let busy: unknown;
  try {
    void runner.run(spec('true', []));
  } catch (err) {
    busy = err;
  }
  t.ok(busy instanceof RunnerBusyError, 'refused synchronously');
  t.match((busy as Error).message, /^1 commands are running, the most command\.max\.concurrent allows$/);
  t.equal(runner.size, 1);
  t.equal((await first).exitCode, 0);
  t.equal(runner.size, 0);
  t.equal((await runner.run(spec('true', []))).exitCode, 0, 'free again');
});

t.test('a program that cannot be started: 127 or 126, as a shell says', async (t) => {
  const runner = new CommandRunner(() => 2);
  const missing = await runner.run(spec('/no/such/program', []));
  t.match(missing, { exitCode: 127, startError: 'ENOENT', timedOut: false });
  const dir = fs.mkdtempSync(`${os.tmpdir()}/gw-runner-`);
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.writeFileSync(`${dir}/not-executable`, '#!/bin/sh\n', { mode: 0o644 });
  t.match(await runner.run(spec(`${dir}/not-executable`, [])), { exitCode: 126, startError: 'EACCES' });
});

t.test('a death by a signal is 128 + its number; stopAll ends every running group', async (t) => {
  const runner = new CommandRunner(() => 4);
  const self = await runner.run(spec('sh', ['-c', 'kill -TERM $$']));
  t.match(self, { exitCode: 143, signal: 'SIGTERM' });
  const runs = [runner.run(spec('sleep', ['60'])), runner.run(spec('sh', ['-c', 'sleep 60; echo never']))];
  await new Promise((r) => setTimeout(r, 300));
  runner.stopAll();
  for (const r of await Promise.all(runs)) t.match(r, { exitCode: 137, signal: 'SIGKILL', stdout: '' });
});
