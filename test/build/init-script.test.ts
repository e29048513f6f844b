// The init script's `start` says why the daemon did not start, on the terminal of whoever ran it,
// instead of only in the system log: a configuration with errors (with their keys) is refused
// before anything starts, and a daemon that exits at once (here: its HTTPS port is taken) is
// reported with its exit status.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { freePort } from '../helpers/ports.js';
import { cleanEnv, install, openTempDir, redirectConfig, serviceEnv } from '../helpers/install.js';

async function setUp(t: any, edit: (config: any) => void = () => {}) {
  const img = install(t, { INIT: 'sysvinit' });
  const work = openTempDir(t, 'gatewayd-initwhy-');
  const dataDir = path.join(work, 'data');
  const runDir = path.join(work, 'run');
  const ports = { https: await freePort(), clientAuth: await freePort() };
  const { file, config } = redirectConfig(img, work, { dataDir, ports, brokerUrl: `mqtt://127.0.0.1:${await freePort()}` });
  edit(config);
  fs.writeFileSync(file, JSON.stringify(config, null, 2));
  // As the caller (no user switch), so the test needs no particular account.
  const env = serviceEnv({ GATEWAYD_CONFIG: file, GATEWAYD_DATADIR: dataDir, GATEWAYD_RUNDIR: runDir, GATEWAYD_LAUNCHER: img.at('/usr/bin/gatewayd'), GATEWAYD_USER: '' });
  env.LOGNAME = env.USER = process.env.USER ?? 'root';
  const rc = (cmd: string) => spawnSync('env', cleanEnv(env, ['sh', img.at('/etc/init.d/gatewayd'), cmd]).slice(1), { cwd: '/', encoding: 'utf8', timeout: 60_000 });
  t.teardown(() => rc('stop'));
  return { rc, ports, file };
}

t.test('a configuration with errors: start prints them with their keys and starts nothing', async (t) => {
  const { rc, file } = await setUp(t, (c) => {
    c.http['http.prots'] = [8080];
    c.rest['session.inactivity.interval'] = -1;
  });
  const r = rc('start');
  t.equal(r.status, 6, 'LSB "program is not configured"');
  t.match(r.stdout, `gatewayd: not started: ${file} cannot be used:`);
  t.match(r.stdout, /error: http\.http\.prots: unknown key; did you mean "http\.ports"\?/);
  t.match(r.stdout, /error: rest\.session\.inactivity\.interval: must be between 1 and 604800 s \(7 days\), got -1/);
  t.equal(rc('status').status, 3, 'not running');
});

t.test('a daemon that exits at once: start reports it with the exit status', async (t) => {
  const { rc, ports } = await setUp(t);
  const blocker = net.createServer().listen(ports.https, '127.0.0.1');
  await new Promise((r) => blocker.once('listening', r));
  t.teardown(() => blocker.close());
  const r = rc('start');
  t.equal(r.status, 1, r.stdout + r.stderr);
  t.match(r.stdout, /gatewayd: the daemon exited at once with status 1; the reason is its last "not starting" line in the system log/);
  t.equal(rc('stop').status, 0);
});

t.test('a good configuration still starts, and says so', async (t) => {
  const { rc } = await setUp(t);
  const r = rc('start');
  t.equal(r.status, 0, r.stdout + r.stderr);
  t.match(r.stdout, /^gatewayd: started \(supervisor pid \d+\)$/m);
  t.equal(rc('status').status, 0);
  t.equal(rc('stop').status, 0);
});
