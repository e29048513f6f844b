// CMD-V1, Kura's remote command (docs/mqtt.md "CMD-V1"), against the real daemon and a real
// Mosquitto, sent as Eclipse Kapua's command tab sends it: QoS 0, a requester `KapuaPool-…`, a
// random signed long as `request.id` (negative ones included), `command.argument<N>` and
// `command.environment.pair<N>` STRING metrics, `command.timeout` INT32 in seconds; the reply read
// from exactly `$EDC/<account>/<requester>/CMD-V1/REPLY/<request.id>` with Kapua's casts. Off by
// default (not registered, not in BIRTH), switched on and off at run time over configuration/v2
// (docs/configuration.md "command"), with the password, the timeout killing the process tree, the
// output bound, the working directory kept inside dataDir, no shell, requester permissions and what
// the log may and may not say. The requester is test/helpers/kapua-command.ts; the file-enabled,
// reload, stop and bare-JSON cases are in cmd-v1-lifecycle.test.ts.

import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { startDaemon } from '../helpers/daemon.js';
import { buildZip } from '../helpers/dp.js';
import { mosquittoSkip, startMosquitto } from '../helpers/mosquitto.js';
import { until, watchBirths } from '../helpers/mqtt-fixture.js';
import { CLOUD, DAEMON_SECRET, ENV_SECRET, Kapua, PASSWORD, PID, STDIN_SECRET, ACCOUNT, DEVICE, alive, command, s, type Reply } from '../helpers/kapua-command.js';

// About 30 s alone (the password-guessing waits, timeouts); more on a loaded machine.
t.setTimeout(240_000);

t.test('CMD-V1 as Kapua drives it', mosquittoSkip(), async (t) => {
  const broker = await startMosquitto();
  t.teardown(() => broker.close());

  const births = await watchBirths(t, broker.url, `$EDC/${ACCOUNT}/${DEVICE}/MQTT/#`, 'birth-watcher');

  const d = await startDaemon(
    t,
    {
      'log.level': 'debug',
      rest: { 'auth.basic.enabled': true, 'login.throttle.max.delay': 0 },
      identities: {
        admin: { password: 'Adm1n-Secret!', passwordChangeNeeded: false, permissions: ['kura.admin'] },
        conf: { password: 'C0nf-Secret!', passwordChangeNeeded: false, permissions: ['rest.configuration'] },
      },
      mqtt: { enabled: true, 'broker-url': broker.url, 'client-id': DEVICE, 'topic.context.account-name': ACCOUNT, 'payload.encoding': 'kura-protobuf' },
    },
    { env: { GATEWAYD_TEST_DAEMON_SECRET: DAEMON_SECRET } },
  );
  await d.waitForLog(/msg="mqtt connected"/);
  const kapua = new Kapua(broker.url);
  await kapua.start();
  t.teardown(() => kapua.client.end());

  const basic = (user: string, pw: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${pw}`).toString('base64')}` });
  const admin = basic('admin', 'Adm1n-Secret!');
  const update = (properties: Record<string, unknown>, headers = admin, pid = PID) =>
    d.request('/services/configuration/v2/configurableComponents/configurations/_update', { method: 'PUT', headers, body: { configs: [{ pid, properties }], takeSnapshot: false } });
  const setCommand = async (props: Record<string, [string, unknown]>) => {
    const r = await update(Object.fromEntries(Object.entries(props).map(([k, [type, value]]) => [k, { type, value }])));
    if (r.status !== 200) throw new Error(`configuration update ${r.status} ${r.body}`);
  };
  const workDir = path.join(d.dataDir, 'command');

  await t.test('off by default: not in BIRTH, a request gets no reply, the component says so', async (t) => {
    await until(() => births.length > 0, 10_000, 'BIRTH');
    t.notOk(births.at(-1)!.split(',').includes('CMD-V1'), `application_ids ${births.at(-1)}`);
    t.equal(await kapua.send('EXEC/command', command('true', [], { password: '' }), { wait: 1500 }), undefined, 'no reply: no application');
    const c = (await d.request('/services/configuration/v2/configurableComponents/configurations/byPid', { method: 'POST', headers: admin, body: { pids: [PID] } })).json();
    const props = c.configs[0].properties;
    t.same(props['command.enabled'], { value: false, type: 'BOOLEAN' });
    t.same(props['command.password'], { value: 'placeholder', type: 'PASSWORD' }, 'the password is a PASSWORD, masked');
    t.same(props['command.timeout'], { value: 60, type: 'INTEGER' });
  });

  await t.test('switching it on is reserved to kura.admin; the working directory must stay in dataDir', async (t) => {
    const r = await update({ 'command.enabled': { type: 'BOOLEAN', value: true } }, basic('conf', 'C0nf-Secret!'));
    t.equal(r.status, 403);
    t.same(r.json(), { message: `Only kura.admin may change ${PID} property command.enabled` });
    const out = await update({ 'command.working.directory': { type: 'STRING', value: '/etc' } });
    t.equal(out.status, 400);
    t.match(out.json().message, /command\.working\.directory.*must be inside dataDir/);
    const up = await update({ 'command.working.directory': { type: 'STRING', value: '../..' } });
    t.equal(up.status, 400, '.. out of dataDir');
  });

  await t.test('switched on: a new BIRTH names CMD-V1; an empty password accepts nothing', async (t) => {
    const before = births.length;
    await setCommand({ 'command.enabled': ['BOOLEAN', true] });
    await until(() => births.length > before && births.at(-1)!.split(',').includes('CMD-V1'), 10_000, 'BIRTH with CMD-V1');
    for (const pw of [undefined, '']) {
      const r = await kapua.exec(command('true', [], { password: pw }));
      t.equal(r.metrics['response.code'], 400);
      t.equal(r.types['response.code'], 'INT32');
      t.match(r.metrics['response.exception.message'], /no command\.password/);
    }
    await setCommand({ 'command.password': ['PASSWORD', PASSWORD] });
  });

  await t.test('the password: missing or wrong is 400, right runs the command', async (t) => {
    for (const pw of [undefined, '', 'cmd-Pa55-w0rd', `${PASSWORD}x`, PASSWORD.toUpperCase()]) {
      const r = await kapua.exec(command('true', [], { password: pw }));
      t.equal(r.metrics['response.code'], 400, `password ${JSON.stringify(pw)}`);
      t.equal(r.metrics['response.exception.message'], 'Bad request. Password required but not correct and/or missing');
      t.notOk('command.exit.code' in r.metrics, 'nothing ran');
    }
    const ok = await kapua.exec(command('true', [], { password: PASSWORD }), { negative: true });
    t.equal(ok.metrics['response.code'], 200);
    t.same(ok.metrics, { 'response.code': 200, 'command.stderr': '', 'command.stdout': '', 'command.exit.code': 0, 'command.timedout': false });
    t.same(ok.types, { 'response.code': 'INT32', 'command.stderr': 'STRING', 'command.stdout': 'STRING', 'command.exit.code': 'INT32', 'command.timedout': 'BOOL' }, 'the types Kapua casts to');
    const pos = await kapua.exec(command('true', [], { password: PASSWORD }), { negative: false });
    t.equal(pos.metrics['response.code'], 200, 'a positive request id too');
    const conf = (await d.request('/services/configuration/v2/configurableComponents/configurations/byPid', { method: 'POST', headers: admin, body: { pids: [PID] } })).json();
    t.same(conf.configs[0].properties['command.password'], { value: 'placeholder', type: 'PASSWORD' }, 'never shown');
  });

  await t.test('guessing the password: after a few wrong ones, no password is checked for a while', async (t) => {
    const replies: Reply[] = [];
    // Five free failures, then waits of 1, 2, 4, 8 s: some of ten quick guesses find it closed.
    for (let i = 0; i < 10; i++) replies.push(await kapua.exec(command('true', [], { password: `guess-${i}` })));
    t.ok(replies.every((r) => r.metrics['response.code'] === 400 && !('command.exit.code' in r.metrics)), 'all refused, nothing ran');
    t.same(replies.slice(0, 6).map((r) => r.metrics['response.exception.message']), Array(6).fill('Bad request. Password required but not correct and/or missing'), 'five free, the sixth checked');
    const closed = replies.filter((r) => /too many wrong passwords: no password is checked for \d+ s/.test(String(r.metrics['response.exception.message'])));
    t.ok(closed.length > 0, `${closed.length} refused unchecked`);
    // The right password works again once the wait is over, and clears the count.
    let ok: Reply | undefined;
    for (let i = 0; i < 40 && ok?.metrics['response.code'] !== 200; i++) {
      ok = await kapua.exec(command('true', [], { password: PASSWORD }));
      if (ok.metrics['response.code'] !== 200) {
        t.match(ok.metrics['response.exception.message'], /too many wrong passwords/, 'refused only while closed');
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
    t.equal(ok?.metrics['response.code'], 200, 'the right password, once the wait is over');
    t.equal((await kapua.exec(command('true', [], { password: 'one-typo' }))).metrics['response.exception.message'], 'Bad request. Password required but not correct and/or missing', 'the count started again');
    t.equal((await kapua.exec(command('true', [], { password: PASSWORD }))).metrics['response.code'], 200);
    t.ok(d.logs.some((l) => /too many wrong passwords/.test(l)), 'logged');
  });

  await t.test('no shell: arguments with metacharacters reach the program as given', async (t) => {
    const args = ['a;b', '$(id)', '`id`', '*', '|x', '&& echo pwned', "'quoted'", '$HOME', 'two words', '>out.txt'];
    const r = await kapua.exec(command('printf', ['%s\\n', ...args], { password: PASSWORD }));
    t.equal(r.metrics['response.code'], 200);
    t.equal(r.metrics['command.stdout'], args.map((a) => `${a}\n`).join(''));
    t.notOk(fs.existsSync(path.join(workDir, 'out.txt')), 'no redirection happened');
    // Kura reads command.argument0, 1, … up to the first absent or empty one.
    const gap = await kapua.exec([...command('printf', ['%s|', 'x'], { password: PASSWORD }), s('command.argument3', 'after-gap')]);
    t.equal(gap.metrics['command.stdout'], 'x|');
  });

  await t.test('stdin, environment pairs and the working directory', async (t) => {
    const cat = await kapua.exec(command('cat', [], { password: PASSWORD, stdin: `${STDIN_SECRET}\nline 2` }));
    t.equal(cat.metrics['command.stdout'], `${STDIN_SECRET}\nline 2`);
    const env = await kapua.exec(command('env', [], { password: PASSWORD, env: [`GW_TEST=${ENV_SECRET}`, 'WITH_EQ=a=b'] }));
    const lines = String(env.metrics['command.stdout']).split('\n');
    t.ok(lines.includes(`GW_TEST=${ENV_SECRET}`), 'the pair');
    t.ok(lines.includes('WITH_EQ=a=b'), 'a value with =');
    t.ok(lines.some((l) => l.startsWith('PATH=')), 'PATH');
    t.notOk(String(env.metrics['command.stdout']).includes(DAEMON_SECRET), "the daemon's own environment is not handed on");
    const badPair = await kapua.exec(command('env', [], { password: PASSWORD, env: ['NOEQUALS'] }));
    t.equal(badPair.metrics['response.code'], 400);
    t.match(badPair.metrics['response.exception.message'], /command\.environment\.pair0 must be NAME=value/);

    const pwd = await kapua.exec(command('pwd', [], { password: PASSWORD }));
    t.equal(pwd.metrics['command.stdout'], `${fs.realpathSync(workDir)}\n`, 'default: <dataDir>/command');
    fs.mkdirSync(path.join(workDir, 'jobs'));
    const sub = await kapua.exec(command('pwd', [], { password: PASSWORD, dir: 'jobs' }));
    t.equal(sub.metrics['command.stdout'], `${fs.realpathSync(path.join(workDir, 'jobs'))}\n`, 'relative to the working directory');
    const inData = await kapua.exec(command('pwd', [], { password: PASSWORD, dir: d.dataDir }));
    t.equal(inData.metrics['response.code'], 200, 'dataDir itself is inside');
  });

  await t.test('a working directory escaping dataDir is refused, symbolic links included', async (t) => {
    fs.symlinkSync('/tmp', path.join(workDir, 'to-tmp'));
    for (const dir of ['/etc', '../..', '../../..', 'to-tmp', 'to-tmp/.', 'jobs/../to-tmp', path.dirname(d.dataDir)]) {
      const r = await kapua.exec(command('pwd', [], { password: PASSWORD, dir }));
      t.equal(r.metrics['response.code'], 400, dir);
      t.match(r.metrics['response.exception.message'], /outside the data directory/, dir);
      t.notOk('command.stdout' in r.metrics, `${dir}: nothing ran`);
    }
    fs.writeFileSync(path.join(workDir, 'a-file'), 'x');
    const file = await kapua.exec(command('pwd', [], { password: PASSWORD, dir: 'a-file' }));
    t.equal(file.metrics['response.code'], 400);
    t.match(file.metrics['response.exception.message'], /command\.working\.directory a-file is not a directory/);
    const missing = await kapua.exec(command('pwd', [], { password: PASSWORD, dir: 'nope' }));
    t.equal(missing.metrics['response.code'], 400);
    t.match(missing.metrics['response.exception.message'], /does not exist/);
  });

  await t.test('a failing command is Kura\'s 500 with stderr; a missing program 127', async (t) => {
    const r = await kapua.exec(command('sh', ['-c', 'echo out; echo oops >&2; exit 3'], { password: PASSWORD }));
    t.equal(r.metrics['response.code'], 500);
    t.equal(r.metrics['response.exception.message'], 'oops\n');
    t.match(r.metrics, { 'command.stdout': 'out\n', 'command.stderr': 'oops\n', 'command.exit.code': 3, 'command.timedout': false });
    const nf = await kapua.exec(command('/no/such/program', [], { password: PASSWORD }));
    t.equal(nf.metrics['response.code'], 500);
    t.equal(nf.metrics['command.exit.code'], 127);
    t.match(nf.metrics['response.exception.message'], /cannot run \/no\/such\/program: no such program/);
  });

  await t.test('a timeout kills the whole process tree; a request cannot ask for more than command.timeout', async (t) => {
    await setCommand({ 'command.timeout': ['INTEGER', 2] });
    // The child writes its background grandchild's pid, then both sleep far beyond the timeout.
    const script = 'sleep 300 & echo $! > grandchild.pid; echo started; sleep 300';
    const r = await kapua.exec(command('sh', ['-c', script], { password: PASSWORD, timeout: 60 }));
    t.equal(r.metrics['response.code'], 200, "Kura's timed-out reply is a success");
    t.equal(r.metrics['command.timedout'], true);
    t.equal(r.types['command.timedout'], 'BOOL');
    t.notOk('command.exit.code' in r.metrics, 'no exit code after a timeout');
    t.equal(r.metrics['command.stdout'], 'started\n', 'the output before the timeout');
    const grandchild = Number(fs.readFileSync(path.join(workDir, 'grandchild.pid'), 'utf8'));
    await until(() => !alive(grandchild), 5000, 'grandchild gone');
    t.pass(`grandchild ${grandchild} killed`);
    // A process that leaves the group holds the output pipe open: the run still ends when the program does.
    // The program waits until the escaped process has its own session (it writes its pid then).
    const escape = "setsid sh -c 'echo $$ > escaped.pid; exec sleep 300' & while [ ! -s escaped.pid ]; do sleep 0.05; done; cat escaped.pid";
    const escaped = await kapua.exec(command('sh', ['-c', escape], { password: PASSWORD }));
    t.equal(escaped.metrics['response.code'], 200);
    t.equal(escaped.metrics['command.exit.code'], 0, 'answered, though a process of its own session keeps the pipe');
    const escapedPid = Number(escaped.metrics['command.stdout']);
    t.teardown(() => {
      if (alive(escapedPid)) process.kill(escapedPid, 'SIGKILL');
    });
    const short = await kapua.exec(command('sleep', ['300'], { password: PASSWORD, timeout: 1 }));
    t.equal(short.metrics['command.timedout'], true, 'a shorter timeout of the request applies');
    await setCommand({ 'command.timeout': ['INTEGER', 60] });
  });

  await t.test('a flood of output is cut at command.output.max.bytes, and the program still ends', async (t) => {
    await setCommand({ 'command.output.max.bytes': ['INTEGER', 65536] });
    const zeros = await kapua.exec(command('head', ['-c', '5000000', '/dev/zero'], { password: PASSWORD }));
    t.equal(zeros.metrics['response.code'], 200);
    t.equal(Buffer.byteLength(String(zeros.metrics['command.stdout'])), 65536);
    t.equal(zeros.metrics['command.output.truncated'], true);
    t.equal(zeros.metrics['command.exit.code'], 0, 'drained to its end, not blocked on a full pipe');
    // Bytes that are no UTF-8 become U+FFFD (3 bytes each): the text is cut to the bound again.
    const random = await kapua.exec(command('head', ['-c', '300000', '/dev/urandom'], { password: PASSWORD }));
    t.ok(Buffer.byteLength(String(random.metrics['command.stdout'])) <= 65536, `${Buffer.byteLength(String(random.metrics['command.stdout']))} bytes`);
    const both = await kapua.exec(command('sh', ['-c', 'head -c 200000 /dev/zero; head -c 200000 /dev/zero >&2'], { password: PASSWORD }));
    t.equal(Buffer.byteLength(String(both.metrics['command.stderr'])), 65536, 'stderr bounded too');
    const small = await kapua.exec(command('printf', ['short'], { password: PASSWORD }));
    t.notOk('command.output.truncated' in small.metrics, 'no flag when nothing was cut');
  });

  await t.test('bad requests: types, a body, other resources and methods', async (t) => {
    const wrongType = await kapua.exec([s('command.command', 'true'), s('command.password', PASSWORD), s('command.timeout', '5')]);
    t.equal(wrongType.metrics['response.code'], 400);
    t.match(wrongType.metrics['response.exception.message'], /command\.timeout must be a INT32 metric/);
    const nul = await kapua.exec(command('printf', ['a\u0000b'], { password: PASSWORD }));
    t.equal(nul.metrics['response.code'], 400);
    t.match(nul.metrics['response.exception.message'], /command\.argument0 contains a NUL character/);
    const noCmd = await kapua.exec([s('command.password', PASSWORD)]);
    t.equal(noCmd.metrics['response.code'], 400);
    t.match(noCmd.metrics['response.exception.message'], /command\.command is required/);
    const zip = await kapua.send('EXEC/command', command('true', [], { password: PASSWORD }), { body: Buffer.from('PK\u0003\u0004zip') });
    t.same([zip!.metrics['response.code'], zip!.metrics['command.exit.code']], [400, undefined], 'a broken zip body is refused, and nothing runs');
    t.match(zip!.metrics['response.exception.message'], /^Bad request\. command zip: /);
    t.equal((await kapua.send('EXEC/other', command('true', [], { password: PASSWORD })))!.metrics['response.code'], 404);
    t.equal((await kapua.send('EXEC/command/x', command('true', [], { password: PASSWORD })))!.metrics['response.code'], 400);
    t.equal((await kapua.send('GET/command', command('true', [], { password: PASSWORD })))!.metrics['response.code'], 500);
    t.ok(kapua.topics.every((x) => /^\$EDC\/acct\/KapuaPool-\d+-\d+\/CMD-V1\/REPLY\/-?\d+$/.test(x)), 'every reply on a 6-level REPLY topic');
  });

  await t.test("a zip body is unpacked into the working directory before the command runs (Kura's command.zip)", async (t) => {
    const cwd = path.join(d.dataDir, 'command');
    const withZip = (entries: { name: string; data: string }[], args: string[], o: { password?: string; dir?: string } = {}) =>
      kapua.send('EXEC/command', command('sh', args, { password: o.password ?? PASSWORD, dir: o.dir }), { body: buildZip(entries) });
    const ok = await withZip([{ name: 'job/', data: '' }, { name: 'job/run.sh', data: 'echo unpacked; cat job/data/a.txt' }, { name: 'job/data/a.txt', data: 'hello' }], ['job/run.sh']);
    t.same([ok!.metrics['response.code'], ok!.metrics['command.stdout'], ok!.metrics['command.exit.code']], [200, 'unpacked\nhello', 0], 'unpacked, then run');
    t.equal(fs.readFileSync(path.join(cwd, 'job/data/a.txt'), 'utf8'), 'hello');
    t.equal(fs.statSync(path.join(cwd, 'job/data/a.txt')).mode & 0o777, 0o600, 'files are the daemon\'s alone');
    const again = await withZip([{ name: 'job/data/a.txt', data: 'again' }], ['-c', 'cat job/data/a.txt']);
    t.equal(again!.metrics['command.stdout'], 'again', 'a file already there is replaced, as Kura does');
    fs.mkdirSync(path.join(cwd, 'sub'), { recursive: true });
    const inSub = await withZip([{ name: 'x.txt', data: 'in sub' }], ['-c', 'cat x.txt'], { dir: 'sub' });
    t.equal(inSub!.metrics['command.stdout'], 'in sub', 'into the working directory the request names');

    const outside = path.join(d.dir, 'outside');
    fs.mkdirSync(outside, { recursive: true });
    fs.symlinkSync(outside, path.join(cwd, 'out-link'));
    fs.writeFileSync(path.join(outside, 'target.txt'), 'untouched');
    fs.symlinkSync(path.join(outside, 'target.txt'), path.join(cwd, 'file-link'));
    const refused: [string, { name: string; data: string }[], RegExp][] = [
      ['a parent reference', [{ name: '../escaped.txt', data: 'x' }], /command zip: .*parent folder reference/],
      ['an absolute name', [{ name: '/tmp/gatewayd-cmd-abs.txt', data: 'x' }], /command zip: .*absolute path/],
      ['through a linked folder', [{ name: 'out-link/escaped.txt', data: 'x' }], /command zip: "out-link\/escaped.txt": a link leads outside the working directory/],
      ['onto a link to a file', [{ name: 'file-link', data: 'x' }], /command zip: "file-link": a link is in its place/],
    ];
    for (const [what, entries, re] of refused) {
      const r = await withZip(entries, ['-c', 'echo ran']);
      t.equal(r!.metrics['response.code'], 400, what);
      t.match(r!.metrics['response.exception.message'], re, what);
      t.notOk('command.stdout' in r!.metrics, `${what}: the command did not run`);
    }
    t.same(fs.readdirSync(outside).sort(), ['target.txt'], 'nothing written outside');
    t.equal(fs.readFileSync(path.join(outside, 'target.txt'), 'utf8'), 'untouched');
    t.notOk(fs.existsSync(path.join(d.dataDir, 'escaped.txt')));
    t.notOk(fs.existsSync('/tmp/gatewayd-cmd-abs.txt'));

    const notZip = await kapua.send('EXEC/command', command('true', [], { password: PASSWORD }), { body: Buffer.from('hello') });
    t.match(notZip!.metrics['response.exception.message'], /command zip: the body is not a zip file/);
    const many = await withZip(Array.from({ length: 1025 }, (_, i) => ({ name: `f${i}`, data: '' })), ['-c', 'echo ran']);
    t.match(many!.metrics['response.exception.message'], /command zip: too many entries: 1025 \(limit 1024\)/, 'bounded as Kura bounds it');
    const wrong = await withZip([{ name: 'nope.txt', data: 'x' }], ['-c', 'true'], { password: 'wrong' });
    t.match(wrong!.metrics['response.exception.message'], /Password required/);
    t.notOk(fs.existsSync(path.join(cwd, 'nope.txt')), 'nothing unpacked before the password is checked');
    t.ok(d.logs.some((l) => /msg="command zip unpacked" .*files=2/.test(l)), 'logged with the number of files');
  });

  await t.test('concurrency is bounded; an asynchronous run answers at once and is logged when it ends', async (t) => {
    await setCommand({ 'command.max.concurrent': ['INTEGER', 1] });
    const a = await kapua.exec(command('sh', ['-c', 'sleep 2; exit 4'], { password: PASSWORD, async: true }));
    t.same(a.metrics, { 'response.code': 200 }, 'async: 200 without metrics, as Kura');
    const busy = await kapua.exec(command('true', [], { password: PASSWORD }));
    t.equal(busy.metrics['response.code'], 500);
    t.match(busy.metrics['response.exception.message'], /^Busy: 1 commands are running/);
    await d.waitForLog(/msg="command run".* command=sh .*exit\.code=4 /, 10_000);
    const after = await kapua.exec(command('true', [], { password: PASSWORD }));
    t.equal(after.metrics['response.code'], 200, 'free again once it ended');
    await setCommand({ 'command.max.concurrent': ['INTEGER', 2] });
  });

  await t.test('parallel requesters: each gets its own replies; the third at once is busy', async (t) => {
    const other = new Kapua(broker.url);
    await other.start();
    t.teardown(() => other.client.end());
    // Each runs until the test makes `release`, which it does once the third has its answer.
    const held = (name: string) => `: > ${name}.started; while [ ! -e release ]; do sleep 0.1; done; echo ${name}`;
    const results = await Promise.all([
      kapua.exec(command('sh', ['-c', held('one')], { password: PASSWORD })),
      other.exec(command('sh', ['-c', held('two')], { password: PASSWORD })),
      (async () => {
        await until(() => fs.existsSync(path.join(workDir, 'one.started')) && fs.existsSync(path.join(workDir, 'two.started')), 10_000, 'both started');
        const third = await other.exec(command('echo', ['three'], { password: PASSWORD }));
        fs.writeFileSync(path.join(workDir, 'release'), '');
        return third;
      })(),
    ]);
    t.same(results.map((r) => r.metrics['response.code']), [200, 200, 500]);
    t.equal(results[0]!.metrics['command.stdout'], 'one\n');
    t.equal(results[1]!.metrics['command.stdout'], 'two\n');
    t.match(results[2]!.metrics['response.exception.message'], /^Busy: 2 commands are running/);
    t.ok(results[0]!.topic.includes(`/${kapua.id}/`) && results[1]!.topic.includes(`/${other.id}/`), 'to its own requester');
  });

  await t.test('requester permissions: rest.command or kura.admin', async (t) => {
    const set = async (perms: string[]) => {
      const r = await update({ 'requester.permissions': { type: 'STRING', value: perms } }, admin, CLOUD);
      t.equal(r.status, 200, r.body);
      await d.waitForLog(/mqtt requester policy or outbox bounds changed/);
    };
    await set(['rest.assets', 'rest.configuration']);
    const r = await kapua.exec(command('true', [], { password: PASSWORD }));
    t.equal(r.metrics['response.code'], 400);
    t.equal(r.metrics['response.exception.message'], 'Forbidden: requires rest.command');
    await set(['rest.command']);
    t.equal((await kapua.exec(command('true', [], { password: PASSWORD }))).metrics['response.code'], 200);
    await set(['kura.admin']);
  });

  await t.test('every run is logged with its exit code; never the password, stdin or environment values', async (t) => {
    const runs = d.logs.filter((l) => l.includes('msg="command run"'));
    t.ok(runs.length >= 15, `${runs.length} runs logged`);
    t.ok(runs.every((l) => /exit\.code=(\d+|"") /.test(l) && / timedout=(true|false) /.test(l)), 'exit code and timeout in each');
    t.ok(runs.some((l) => / command=printf .*arguments=/.test(l)), 'the program and its arguments');
    t.ok(runs.some((l) => /environment=GW_TEST,WITH_EQ/.test(l)), 'environment names only');
    const all = d.logs.join('\n');
    for (const secret of [PASSWORD, STDIN_SECRET, ENV_SECRET, DAEMON_SECRET]) t.notOk(all.includes(secret), `no ${secret} in the log`);
    t.ok(d.logs.some((l) => /wrong or missing password/.test(l)), 'refusals are logged');
  });

  await t.test('switched off: a new BIRTH without CMD-V1, running commands end, no reply any more', async (t) => {
    const r = await kapua.exec(command('sh', ['-c', 'echo $$ > long.pid; exec sleep 300'], { password: PASSWORD, async: true }));
    t.equal(r.metrics['response.code'], 200);
    await until(() => fs.existsSync(path.join(workDir, 'long.pid')) && fs.readFileSync(path.join(workDir, 'long.pid'), 'utf8').endsWith('\n'), 5000, 'long.pid');
    const pid = Number(fs.readFileSync(path.join(workDir, 'long.pid'), 'utf8'));
    t.ok(alive(pid), 'running');
    const before = births.length;
    await setCommand({ 'command.enabled': ['BOOLEAN', false] });
    await until(() => births.length > before, 10_000, 'BIRTH');
    t.notOk(births.at(-1)!.split(',').includes('CMD-V1'), `application_ids ${births.at(-1)}`);
    await until(() => !alive(pid), 5000, 'the running command ended');
    t.pass('killed');
    t.equal(await kapua.send('EXEC/command', command('true', [], { password: PASSWORD }), { wait: 1500 }), undefined, 'no reply');
  });
});

