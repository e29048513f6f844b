// `gatewayd passwd` as a technician runs it: on a real terminal (a pty) the password is not echoed
// and is asked twice; run as root it keeps the dataDir's owner on every file, so the daemon (another
// user) still reads the store, on the running daemon and after a restart.
import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BUNDLE, ensureBundle, runCli, watchProcess } from '../helpers/daemon.js';
import { freePort } from '../helpers/ports.js';
import { Browser } from '../helpers/session-client.js';

ensureBundle();

// Runs the bundle on a new pty, answering each prompt in `answers` in turn; returns everything the
// terminal showed (prompts, echo if any, messages) and the exit status.
const PTY = `
import os, pty, sys, json, select, time
answers = json.loads(sys.argv[1]); argv = sys.argv[2:]
pid, fd = pty.fork()
if pid == 0:
    os.execv(argv[0], argv)
out = b''; deadline = time.time() + 60
while time.time() < deadline:
    r, _, _ = select.select([fd], [], [], 0.5)
    if r:
        try: chunk = os.read(fd, 4096)
        except OSError: break
        if not chunk: break
        out += chunk
        if answers and out.rstrip().endswith(b':'):
            time.sleep(0.2); os.write(fd, answers.pop(0).encode())
_, status = os.waitpid(pid, 0)
print(json.dumps({'out': out.decode('utf8', 'replace'), 'status': os.waitstatus_to_exitcode(status)}))
`;
function onPty(args: string[], answers: string[]) {
  const r = spawnSync('/usr/bin/python3', ['-c', PTY, JSON.stringify(answers), process.execPath, BUNDLE, ...args], { encoding: 'utf8', timeout: 90_000 });
  if (r.status !== 0) throw new Error(`pty driver failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as { out: string; status: number };
}

function config(dir: string, extra: Record<string, unknown> = {}) {
  const f = path.join(dir, 'gatewayd.json');
  fs.writeFileSync(f, JSON.stringify({ dataDir: path.join(dir, 'data'), identities: { admin: { password: 'admin', permissions: ['kura.admin'], passwordChangeNeeded: true } }, ...extra }));
  fs.chmodSync(f, 0o644);
  return f;
}

t.test('on a terminal: no echo, asked twice, a mismatch changes nothing', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-passwd-pty-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const f = config(dir);
  const ok = onPty(['passwd', '--config', f, 'admin'], ['Typed-secret-1\r', 'Typed-secret-1\r']);
  t.equal(ok.status, 0, ok.out);
  t.match(ok.out, /New password: /);
  t.match(ok.out, /Retype new password: /);
  t.notMatch(ok.out, /Typed-secret/, 'the password never appears on the terminal');
  t.match(ok.out, /password of admin set/);
  const hash = JSON.parse(fs.readFileSync(path.join(dir, 'data', 'identities.json'), 'utf8')).identities[0].passwordHash;

  const differ = onPty(['passwd', '--config', f, 'admin'], ['Typed-secret-2\r', 'Typed-secreT-2\r']);
  t.equal(differ.status, 1);
  t.match(differ.out, /the two passwords differ; nothing changed/);
  t.notMatch(differ.out, /Typed-secre/);
  // Backspace edits what was typed, as on any password prompt.
  const edited = onPty(['passwd', '--config', f, 'admin'], ['Typed-secret-3x\x7f\r', 'Typed-secret-3\r']);
  t.equal(edited.status, 0, edited.out);
  t.not(JSON.parse(fs.readFileSync(path.join(dir, 'data', 'identities.json'), 'utf8')).identities[0].passwordHash, hash, 'changed by the third run only');
});

const root = process.getuid?.() === 0;
t.test('run as root: the dataDir owner keeps every file; the daemon running as that user reads the new password', { skip: root ? false : 'needs root (chown, setuid)' }, async (t) => {
  const NOBODY = 65534;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-passwd-root-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.chmodSync(dir, 0o755);
  const bundle = path.join(dir, 'gatewayd.mjs');
  fs.copyFileSync(BUNDLE, bundle);
  fs.chmodSync(bundle, 0o644);
  const port = await freePort();
  const f = config(dir, { http: { 'http.ports': [port], 'bind.address': '127.0.0.1' }, rest: { 'login.throttle.max.delay': 0 } });
  const data = path.join(dir, 'data');
  fs.mkdirSync(data, { mode: 0o700 });
  fs.chownSync(data, NOBODY, NOBODY);
  const start = () => {
    // Without tap's NODE_OPTIONS: its process-info hook would write into the worktree as root's
    // files, and could not even be loaded from a checkout the daemon user cannot read. The hook puts
    // NODE_OPTIONS back into the environment of every spawn, so env(1) drops it before node starts.
    const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'NODE_OPTIONS' && !k.startsWith('TAP')));
    const proc = spawn('env', ['-u', 'NODE_OPTIONS', process.execPath, bundle, '--config', f], { uid: NOBODY, gid: NOBODY, cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
    return watchProcess(t, proc, { http: [port], https: [], clientAuth: [] }, data, f, dir);
  };
  const owners = () => {
    const bad: string[] = [];
    const walk = (d: string) => {
      for (const n of fs.readdirSync(d)) {
        const p = path.join(d, n);
        if (fs.lstatSync(p).uid !== NOBODY) bad.push(p);
        if (fs.lstatSync(p).isDirectory()) walk(p);
      }
    };
    walk(data);
    return bad;
  };

  let d = start();
  await d.waitForLog(/gatewayd ready/);
  const environ = fs.readFileSync(`/proc/${d.proc.pid}/environ`, 'utf8').split('\0');
  t.notOk(environ.some((e) => e.startsWith('NODE_OPTIONS=')), "the daemon runs without tap's NODE_OPTIONS");
  const r = runCli(['passwd', '--config', f, 'admin'], { input: 'Recovered-pw1\n' });
  t.equal(r.status, 0, r.stderr);
  t.same(owners(), [], 'every file in the dataDir still belongs to the daemon user');
  t.equal((await new Browser(d).loginPassword('admin', 'Recovered-pw1')).status, 200, 'the running daemon takes the new password');
  t.equal(await d.stop(), 0);
  d = start();
  await d.waitForLog(/gatewayd ready/);
  t.equal((await new Browser(d).loginPassword('admin', 'Recovered-pw1')).status, 200, 'and so does the next start');
  t.equal(await d.stop(), 0);

  // What an older passwd left behind (root-owned 0600 store): the daemon says how to repair it, and
  // passwd gives it back.
  fs.chownSync(path.join(data, 'identities.json'), 0, 0);
  d = start();
  t.equal(await d.exited, 1);
  t.ok(d.logs.some((l) => l.includes(`EACCES`) && l.includes(`chown -R nobody ${data}`)), 'the refusal names the repair');
  const again = runCli(['passwd', '--config', f, 'admin'], { input: 'Recovered-pw2\n' });
  t.equal(again.status, 0, again.stderr);
  t.match(again.stderr, /gave 1 root-owned file\(s\) in .* back to uid 65534/);
  t.same(owners(), []);
  d = start();
  await d.waitForLog(/gatewayd ready/);
  t.equal((await new Browser(d).loginPassword('admin', 'Recovered-pw2')).status, 200);
  await d.stop();

  // A device that never started: the dataDir is created for the daemon's user (GATEWAYD_USER).
  fs.rmSync(data, { recursive: true });
  const fresh = runCli(['passwd', '--config', f, 'admin'], { input: 'Recovered-pw3\n', env: { GATEWAYD_USER: 'nobody' } });
  t.equal(fresh.status, 0, fresh.stderr);
  t.equal(fs.statSync(data).uid, NOBODY);
  t.equal((fs.statSync(data).mode & 0o777).toString(8), '700');
  t.same(owners(), []);

  // Another unprivileged user cannot write it: refused with the exact command to use instead.
  fs.chownSync(data, 0, 0);
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'NODE_OPTIONS' && !k.startsWith('TAP')));
  const other = spawnSync('env', ['-u', 'NODE_OPTIONS', process.execPath, bundle, 'passwd', '--config', f, 'admin'], { input: 'Recovered-pw4\n', encoding: 'utf8', uid: NOBODY, gid: NOBODY, env, cwd: dir });
  t.equal(other.status, 1);
  t.match(other.stderr, `run it as root or as the owner of ${data} (runuser -u gatewayd -- gatewayd passwd --config ${f} admin)`);
});
