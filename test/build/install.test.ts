// `make install` (docs/installation.md "Installing into a firmware image") lays out the image tree, and the installed tree runs exactly as its
// systemd unit and its BusyBox init script start it (dataDir and ports redirected), writing nothing
// outside dataDir: the daemon runs as an unprivileged user when we are root, every write-like system
// call is recorded with strace, and the image tree is compared before and after.

import t from 'tap';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BUNDLE, ensureBundle } from '../helpers/daemon.js';
import { freePort } from '../helpers/ports.js';
import { haveOpenssl, makePki } from '../helpers/certs.js';
import { Browser, certificateLogin } from '../helpers/session-client.js';
import {
  ROOT, cleanEnv, clientFor, daemonUser, diffTrees, haveStrace, install, makeStateDir, openTempDir, redirectConfig, serviceEnv,
  snapshotTree, spawnAsDaemonUser, straceArgs, unitDirective, watchProcess, writesInTrace,
} from '../helpers/install.js';

const CI = process.env.CI === 'true';
function need(ok: boolean, what: string): { skip?: string } {
  if (ok) return {};
  if (CI) throw new Error(`${what} not installed but CI=true`);
  return { skip: `${what} not installed` };
}

t.test('make install runs build/install.sh with DESTDIR and PREFIX', async (t) => {
  const r = spawnSync('make', ['-n', '-s', 'install', 'DESTDIR=/tmp/some image', 'PREFIX=/opt/gw'], { cwd: ROOT, encoding: 'utf8' });
  t.equal(r.status, 0, r.stderr);
  t.match(r.stdout, /DESTDIR="\/tmp\/some image" PREFIX="\/opt\/gw" sh build\/install\.sh/);
});

t.test('the image tree', async (t) => {
  ensureBundle();
  const img = install(t);
  const mode = (p: string) => fs.statSync(img.at(p)).mode & 0o7777;

  t.same(fs.readFileSync(img.at('/usr/lib/gatewayd/gatewayd.mjs')), fs.readFileSync(BUNDLE), 'bundle installed as gatewayd.mjs, unchanged');
  t.equal(mode('/usr/lib/gatewayd/gatewayd.mjs'), 0o644);
  const shipped = fs.readdirSync(path.join(path.dirname(BUNDLE), 'console')).sort();
  t.same(fs.readdirSync(img.at('/usr/lib/gatewayd/console')).sort(), shipped, 'the console files are installed beside the bundle');
  t.ok(shipped.includes('index.html') && shipped.includes('index.html.br'), 'page and precompressed forms');
  t.equal(mode('/usr/bin/gatewayd'), 0o755, 'launcher executable');
  t.equal(mode('/etc/init.d/gatewayd'), 0o755, 'init script executable');
  t.equal(mode('/usr/lib/systemd/system/gatewayd.service'), 0o644);
  t.ok(fs.existsSync(img.at('/usr/lib/sysusers.d/gatewayd.conf')), 'sysusers.d entry for the dedicated user');
  t.match(fs.readFileSync(img.at('/usr/lib/systemd/system-preset/80-gatewayd.preset'), 'utf8'), /^enable gatewayd\.service$/m, 'preset enables the unit');
  t.equal(spawnSync('sh', ['-n', img.at('/etc/init.d/gatewayd')]).status, 0, 'init script parses (sh -n)');
  t.equal(spawnSync('sh', ['-n', img.at('/usr/bin/gatewayd')]).status, 0, 'launcher parses (sh -n)');

  const launcher = fs.readFileSync(img.at('/usr/bin/gatewayd'), 'utf8');
  t.match(launcher, /^NODE_FLAGS="[^"]*--max-old-space-size=\d+/m, 'launcher bounds the V8 heap');
  t.match(launcher, /^export MALLOC_MMAP_THRESHOLD_=/m, 'launcher keeps glibc from hoarding scrypt buffers');

  // Production configuration: HTTPS for the technician, a client-certificate port, BASIC off,
  // MQTT toward the local broker, dataDir /var/lib/gatewayd — and the daemon accepts it.
  const cfg = JSON.parse(fs.readFileSync(img.at('/etc/gatewayd/gatewayd.json'), 'utf8'));
  t.equal(cfg.dataDir, '/var/lib/gatewayd');
  t.same(cfg.http['http.ports'], [], 'no plain HTTP');
  t.equal(cfg.http['https.ports'].length, 1);
  t.equal(cfg.http['https.client.auth.ports'].length, 1);
  t.equal(cfg.rest['auth.basic.enabled'], false);
  t.equal(cfg.mqtt.enabled, true);
  t.match(cfg.mqtt['broker-url'], /^mqtt:\/\/127\.0\.0\.1:1883$/);
  // Safe defaults: no factory password anywhere, unsigned packages refused (the integrator opts out
  // with deploy.unsigned.allowed or sets deploy.trust.anchors).
  t.same(Object.values(cfg.identities).map((i: any) => [i.password, i.passwordHash]), [[undefined, undefined]], 'no factory password');
  t.equal(cfg.deploy['unsigned.allowed'], false, 'unsigned packages refused');
  const check = spawnSync(img.at('/usr/bin/gatewayd'), ['check-config', '--config', img.at('/etc/gatewayd/gatewayd.json')], { encoding: 'utf8', env: serviceEnv() });
  t.equal(check.status, 0, `check-config through the launcher: ${check.stdout}${check.stderr}`);
  const ver = spawnSync(img.at('/usr/bin/gatewayd'), ['--version'], { encoding: 'utf8', env: serviceEnv() });
  t.match(ver.stdout, /^gatewayd \d+\.\d+\.\d+/, 'the installed .mjs runs as an ES module outside the repository');

  // The unit: dedicated user with serial and GPIO groups, StateDirectory, read-only system, restart
  // on failure, memory limit, reload by SIGHUP.
  const unit = fs.readFileSync(img.at('/usr/lib/systemd/system/gatewayd.service'), 'utf8');
  t.same(unitDirective(unit, 'User'), ['gatewayd']);
  t.same(unitDirective(unit, 'SupplementaryGroups'), ['dialout gpio']);
  t.same(unitDirective(unit, 'StateDirectory'), ['gatewayd']);
  t.same(unitDirective(unit, 'ProtectSystem'), ['strict']);
  t.same(unitDirective(unit, 'Restart'), ['on-failure']);
  t.match(unitDirective(unit, 'MemoryMax')[0], /^\d+M$/);
  t.match(unitDirective(unit, 'ExecReload')[0], /kill -HUP \$MAINPID$/);
  t.same(unitDirective(unit, 'ExecStart'), ['/usr/bin/gatewayd --config /etc/gatewayd/gatewayd.json']);
  t.notMatch(unit, /ReadWritePaths/, 'nothing but the StateDirectory is writable');

  const analyze = spawnSync('systemd-analyze', ['--version'], { encoding: 'utf8' });
  if (analyze.status === 0) {
    // systemd-analyze checks that ExecStart exists: point it at the staged launcher.
    const dir = openTempDir(t, 'gatewayd-unit-');
    fs.writeFileSync(path.join(dir, 'gatewayd.service'), unit.replace('ExecStart=/usr/bin/gatewayd', `ExecStart=${img.at('/usr/bin/gatewayd')}`));
    const v = spawnSync('systemd-analyze', ['verify', path.join(dir, 'gatewayd.service')], { encoding: 'utf8' });
    t.equal(v.status, 0, `systemd-analyze verify: ${v.stderr}`);
    t.notMatch(v.stderr, /Unknown key|Unknown lvalue|Failed to parse/, 'systemd knows every directive');
  }
});

t.test('PREFIX and INIT are honoured', async (t) => {
  const img = install(t, { PREFIX: '/opt/gw', INIT: 'sysvinit' });
  t.ok(fs.existsSync(img.at('/opt/gw/lib/gatewayd/gatewayd.mjs')));
  t.ok(fs.existsSync(img.at('/opt/gw/bin/gatewayd')));
  t.notOk(fs.existsSync(img.at('/opt/gw/lib/systemd/system/gatewayd.service')), 'no unit with INIT=sysvinit');
  t.match(fs.readFileSync(img.at('/etc/init.d/gatewayd'), 'utf8'), /LAUNCHER=\$\{GATEWAYD_LAUNCHER:-\/opt\/gw\/bin\/gatewayd\}/);
  const ver = spawnSync(img.at('/opt/gw/bin/gatewayd'), ['--version'], { encoding: 'utf8', env: serviceEnv() });
  t.equal(ver.status, 0, 'launcher finds the bundle relative to itself');
  const img2 = install(t, { INIT: 'systemd' });
  t.notOk(fs.existsSync(img2.at('/etc/init.d/gatewayd')), 'no init script with INIT=systemd');
  t.ok(fs.existsSync(img2.at('/usr/lib/systemd/system/gatewayd.service')));
});

/** Provisioning the image: the operator's CA as truststore. Returns the PKI for client certificates. */
function provision(t: Parameters<typeof install>[0], img: ReturnType<typeof install>) {
  const pki = makePki();
  t.teardown(() => fs.rmSync(pki.dir, { recursive: true, force: true }));
  fs.copyFileSync(pki.caCert, img.at('/etc/gatewayd/truststore.pem'));
  fs.chmodSync(img.at('/etc/gatewayd/truststore.pem'), 0o644);
  return pki;
}

/** What the technician does against the production configuration. */
async function exerciseProduction(t: any, d: ReturnType<typeof watchProcess>, pki: ReturnType<typeof makePki>, img: ReturnType<typeof install>) {
  await d.waitForLog(/msg="gatewayd ready"/, 20_000);
  const ready = d.logs.find((l) => l.includes('gatewayd ready'))!;
  t.match(ready, new RegExp(`https:${d.ports.https[0]}`), 'HTTPS port for the technician');
  t.match(ready, new RegExp(`client-auth:${d.ports.clientAuth[0]}`), 'client-certificate port (truststore provisioned)');
  t.notMatch(ready, /http:\d/, 'no plain HTTP port');

  // BASIC is off: credentials in the header authenticate nothing.
  const basic = await d.request('/services/assets/demo/_read', { port: d.ports.https[0], tls: true, headers: { authorization: `Basic ${Buffer.from('admin:admin').toString('base64')}` } });
  t.equal(basic.status, 401, 'BASIC refused');

  // No factory password: password login is off, and the start says how to provision one.
  t.equal((await new Browser(d, { port: d.ports.https[0], tls: true }).loginPassword('admin', 'admin')).status, 401, 'no admin/admin');
  t.ok(d.logs.some((l) => /no administrator has a password: .*gatewayd passwd NAME.*identities=admin/.test(l)), 'the log names the provisioning step');
  t.ok(d.logs.some((l) => /msg="self-signed certificate" sha256=([0-9A-F]{2}:){31}[0-9A-F]{2}/.test(l)), 'the certificate fingerprint is logged');
  // The technician sets it on the device through the installed launcher (as root when we are: the
  // store stays the daemon user's, and the running daemon takes it at once).
  const pw = spawnSync(img.at('/usr/bin/gatewayd'), ['passwd', '--config', d.configFile, 'admin'], { input: 'Provisioned-1234\n', encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } });
  t.equal(pw.status, 0, pw.stderr);
  // Password login works over HTTPS; the provisioned admin must still change its password first.
  const b = new Browser(d, { port: d.ports.https[0], tls: true });
  const login = await b.loginPassword('admin', 'Provisioned-1234');
  t.equal(login.status, 200, 'password login over HTTPS');
  t.equal(login.json().passwordChangeNeeded, true, 'the provisioned admin password must be changed');
  t.match(String(login.headers['set-cookie']), /Secure/, 'session cookie is Secure over HTTPS');

  // The field console is served next to the installed bundle.
  const page = await d.request('/console/', { port: d.ports.https[0], tls: true });
  t.equal(page.status, 200, 'console served by the installed daemon');
  t.match(page.headers['content-security-policy'], /frame-ancestors 'none'/);

  // Certificate login on the client-auth port, then the demo asset.
  const c = await certificateLogin(d, pki.client('admin'));
  const read = await c.request('/services/assets/demo/_read');
  t.equal(read.status, 200, 'demo asset read with a certificate session');
  t.ok(read.json().some((r: any) => r.name === 'temperature' && typeof r.value === 'number'), 'temperature read');

  // State went where it should: the self-signed server certificate and the identities in dataDir.
  t.ok(fs.readdirSync(d.dataDir).length > 1, 'dataDir holds state');
}

t.test('the installed tree started as the systemd unit starts it', { ...need(haveOpenssl(), 'openssl') }, async (t) => {
  const img = install(t);
  const pki = provision(t, img);
  const work = openTempDir(t, 'gatewayd-run-');
  const dataDir = path.join(work, 'state', 'gatewayd');
  fs.mkdirSync(path.dirname(dataDir), { mode: 0o755 });
  makeStateDir(dataDir); // StateDirectory=gatewayd, StateDirectoryMode=0700
  const ports = { http: [] as number[], https: [await freePort()], clientAuth: [await freePort()] };
  const { file } = redirectConfig(img, work, { dataDir, ports: { https: ports.https[0], clientAuth: ports.clientAuth[0] }, brokerUrl: `mqtt://127.0.0.1:${await freePort()}` });

  // ExecStart=, with the image paths redirected into the staging tree.
  const unit = fs.readFileSync(img.at('/usr/lib/systemd/system/gatewayd.service'), 'utf8');
  const [cmd, ...args] = unitDirective(unit, 'ExecStart')[0].split(/\s+/);
  const argv = [img.at(cmd), ...args.map((a) => (a === '/etc/gatewayd/gatewayd.json' ? file : a))];
  t.equal(argv.length, 3, 'ExecStart is launcher --config FILE');

  const before = snapshotTree(img.destdir);
  const tmpBefore = new Set(fs.readdirSync('/tmp'));
  const trace = haveStrace() ? path.join(work, 'strace.txt') : undefined;
  if (!trace && CI) throw new Error('strace not installed but CI=true: cannot check for writes outside dataDir');
  if (!trace) t.comment('strace not installed: checking the image tree and /tmp only');
  // systemd: cwd /, a clean environment, the service user (strace switches to it when tracing).
  // Its own process group: strace killed by a failing test must not leave the traced daemon behind.
  const opts = { cwd: '/', detached: true, stdio: ['ignore', 'pipe', 'pipe'] as ['ignore', 'pipe', 'pipe'] };
  const service = cleanEnv(serviceEnv(), argv);
  const traced = trace ? [...straceArgs(trace, daemonUser()?.name), ...service] : service;
  const proc = trace ? spawn(traced[0], traced.slice(1), opts) : spawnAsDaemonUser(service[0], service.slice(1), opts);
  t.teardown(() => {
    try {
      process.kill(-proc.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  });
  const d = watchProcess(t, proc, ports, dataDir, file, work);
  await exerciseProduction(t, d, pki, img);

  // $MAINPID is the node process (the launcher execs it); under strace it is not our child.
  const mainPid = Number(/ pid=(\d+)/.exec(d.logs.find((l) => l.includes('gatewayd ready'))!)![1]);
  // ExecReload=kill -HUP $MAINPID
  process.kill(mainPid, 'SIGHUP');
  await d.waitForLog(/configuration reloaded/);
  t.pass('SIGHUP reloads');
  process.kill(mainPid, 'SIGTERM');
  t.equal(await d.exited, 0, 'SIGTERM stops cleanly');

  t.same(diffTrees(before, snapshotTree(img.destdir)), [], 'image tree unchanged');
  const u = daemonUser();
  if (u) {
    const newTmp = [...fs.readdirSync('/tmp')].filter((n) => !tmpBefore.has(n)).filter((n) => {
      try {
        return fs.lstatSync(path.join('/tmp', n)).uid === u.uid;
      } catch {
        return false;
      }
    });
    t.same(newTmp, [], `nothing created in /tmp by ${u.name}`);
  }
  if (trace) {
    const outside = writesInTrace(trace).filter((p) => p !== dataDir && !p.startsWith(dataDir + '/'));
    t.same(outside, [], 'no write-like system call outside dataDir');
    t.ok(writesInTrace(trace).some((p) => p.startsWith(dataDir + '/')), 'the trace does record the dataDir writes');
  }
});

// The init script under the system's /bin/sh with Debian's start-stop-daemon, and under BusyBox
// (ash and its applets: start-stop-daemon, logger, readlink, sleep …) as on a BusyBox image.
const haveBusybox = spawnSync('busybox', ['true']).status === 0;
for (const shell of ['system sh', 'busybox'] as const) {
  const opts = shell === 'busybox' ? need(haveBusybox, 'busybox') : {};
  t.test(`the installed tree started by the init script (${shell})`, { ...need(haveOpenssl(), 'openssl'), ...opts }, (t) => initScriptTest(t, shell));
}

async function initScriptTest(t: any, shell: 'system sh' | 'busybox') {
  const img = install(t, { INIT: 'sysvinit' });
  const pki = provision(t, img);
  // Removed by the teardown below, after the daemon is surely gone (teardowns run in order).
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-init-'));
  fs.chmodSync(work, 0o755);
  const dataDir = path.join(work, 'var-lib-gatewayd');
  const runDir = path.join(work, 'run');
  const ports = { http: [] as number[], https: [await freePort()], clientAuth: [await freePort()] };
  const { file } = redirectConfig(img, work, { dataDir, ports: { https: ports.https[0], clientAuth: ports.clientAuth[0] }, brokerUrl: `mqtt://127.0.0.1:${await freePort()}` });
  const u = daemonUser();
  const env = serviceEnv({
    GATEWAYD_CONFIG: file,
    GATEWAYD_DATADIR: dataDir,
    GATEWAYD_RUNDIR: runDir,
    GATEWAYD_LAUNCHER: img.at('/usr/bin/gatewayd'),
    // As root the script switches to the dedicated user; here `nobody` stands in for it.
    GATEWAYD_USER: u?.name ?? '',
  });
  if (shell === 'busybox') {
    // Applets first on PATH, node after them: what a BusyBox image looks like to the script.
    const bin = path.join(work, 'busybox-bin');
    fs.mkdirSync(bin, { mode: 0o755 });
    const r = spawnSync('busybox', ['--install', '-s', bin]);
    if (r.status !== 0) throw new Error('busybox --install failed');
    env.PATH = `${bin}:${path.dirname(process.execPath)}:/usr/bin:/bin`;
  }
  const sh = shell === 'busybox' ? ['busybox', 'sh'] : ['sh'];
  const rc = (cmd: string) => spawnSync('env', cleanEnv(env, [...sh, img.at('/etc/init.d/gatewayd'), cmd]).slice(1), { cwd: '/', encoding: 'utf8', timeout: 30_000 });
  const pidOf = (f: string) => {
    try {
      return Number(fs.readFileSync(path.join(runDir, f), 'utf8').trim());
    } catch {
      return 0;
    }
  };
  const alive = (pid: number) => {
    if (!pid) return false;
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  const waitFor = async (cond: () => boolean, what: string, ms = 20_000) => {
    const end = Date.now() + ms;
    while (!cond()) {
      if (Date.now() > end) throw new Error(`timed out: ${what}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  t.teardown(() => {
    rc('stop');
    // Whatever a failed stop left behind.
    for (const f of ['gatewayd.pid', 'gatewayd.child.pid']) {
      const pid = pidOf(f);
      if (alive(pid)) process.kill(pid, 'SIGKILL');
    }
    fs.rmSync(work, { recursive: true, force: true });
  });
  const d = clientFor(ports);
  // The logs go to syslog under the init script, so readiness is probed on the HTTPS port.
  const answering = async () => {
    for (let i = 0; i < 200; i++) {
      const ok = await d.request('/services/session/v1/authenticationInfo', { port: ports.https[0], tls: true }).then((r) => r.status === 200, () => false);
      if (ok) return true;
      await new Promise((r) => setTimeout(r, 100));
    }
    return false;
  };
  const before = snapshotTree(img.destdir);

  t.equal(rc('status').status, 3, 'status before start: not running (3)');
  const start = rc('start');
  t.equal(start.status, 0, `start: ${start.stdout}${start.stderr}`);
  t.equal(rc('status').status, 0, 'status after start: running');
  t.equal(rc('start').status, 0, 'a second start is harmless');
  const supervisor = pidOf('gatewayd.pid');
  t.ok(alive(supervisor), 'pid file names the live supervisor');
  t.ok(await answering(), 'HTTPS answers');
  const c = await certificateLogin(d, pki.client('admin'));
  t.equal((await c.request('/services/assets/demo/_read')).status, 200, 'demo asset read on the client-certificate port');
  const st = fs.statSync(dataDir);
  t.equal(st.mode & 0o777, 0o700, 'dataDir created 0700');
  const daemonPid = pidOf('gatewayd.child.pid');
  t.ok(alive(daemonPid), 'child pid file names the live daemon');
  if (u) {
    t.equal(st.uid, u.uid, 'dataDir belongs to the daemon user');
    t.equal(fs.statSync(`/proc/${daemonPid}`).uid, u.uid, 'daemon runs as the daemon user');
  }

  // reload passes SIGHUP on: the sessions survive it.
  t.equal(rc('reload').status, 0, 'reload');
  await new Promise((r) => setTimeout(r, 500));
  t.equal((await c.request('/services/assets/demo/_read')).status, 200, 'session survives reload');
  t.equal(pidOf('gatewayd.child.pid'), daemonPid, 'reload does not restart the daemon');

  // Respawn on crash: kill -9 the daemon; the supervisor starts a new one.
  process.kill(daemonPid, 'SIGKILL');
  await waitFor(() => alive(pidOf('gatewayd.child.pid')) && pidOf('gatewayd.child.pid') !== daemonPid, 'respawn');
  const respawned = pidOf('gatewayd.child.pid');
  t.ok(await answering(), 'respawned after a crash, answering again');
  t.equal(pidOf('gatewayd.pid'), supervisor, 'same supervisor');

  const stop = rc('stop');
  t.equal(stop.status, 0, `stop: ${stop.stdout}`);
  t.notOk(alive(supervisor), 'supervisor gone');
  t.notOk(alive(respawned), 'daemon gone');
  t.equal(rc('status').status, 3, 'status after stop: not running');
  t.notOk(fs.existsSync(path.join(runDir, 'gatewayd.pid')), 'pid file removed');
  t.same(diffTrees(before, snapshotTree(img.destdir)), [], 'image tree unchanged');
}


// Yocto and Buildroot cannot run here; at least every file they install must exist where they look:
// the .bb reads ${S}/… from the `make install` tree (the tarball), the .mk reads $(@D)/… from this
// repository, and both must install what `make install` installs.
t.test('the Yocto recipe and the Buildroot package name files that exist', async (t) => {
  const img = install(t);
  const bb = fs.readFileSync(path.join(ROOT, 'build', 'yocto', 'recipes-gatewayd', 'gatewayd', `gatewayd_${JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version}.bb`), 'utf8');
  const fromTree = [...bb.matchAll(/\$\{S\}(\/[^\s]+)/g)].map((m) => m[1]);
  t.ok(fromTree.length >= 5, `the recipe installs ${fromTree.length} files`);
  for (const f of fromTree) t.ok(fs.existsSync(img.at(f)), `recipe source ${f} is in the make install tree`);
  t.match(bb, /RDEPENDS:\$\{PN\} = "nodejs/, 'depends on the image nodejs');
  t.match(bb, /inherit [^\n]*useradd/, 'creates the user with the useradd class');

  const mk = fs.readFileSync(path.join(ROOT, 'build', 'buildroot', 'package', 'gatewayd', 'gatewayd.mk'), 'utf8');
  const fromRepo = [...mk.matchAll(/\$\(@D\)(\/[^\s]+)/g)].map((m) => m[1]);
  t.ok(fromRepo.length >= 5, `the package installs ${fromRepo.length} files`);
  for (const f of fromRepo) t.ok(fs.existsSync(path.join(ROOT, f)), `package source ${f} exists in the repository`);
  for (const f of ['external.desc', 'external.mk', 'Config.in', 'package/gatewayd/Config.in']) t.ok(fs.existsSync(path.join(ROOT, 'build', 'buildroot', f)), `BR2_EXTERNAL has ${f}`);
  t.match(fs.readFileSync(path.join(ROOT, 'build', 'buildroot', 'external.desc'), 'utf8'), /^name: GATEWAYD$/m, 'BR2_EXTERNAL name matches BR2_EXTERNAL_GATEWAYD_PATH');
});
