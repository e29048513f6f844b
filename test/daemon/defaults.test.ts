// Safe defaults (docs/installation.md): the development configuration listens on loopback only; the
// self-signed certificate's SHA-256 fingerprint is logged so a technician can check what the browser
// shows; the production configuration refuses unsigned packages unless the integrator opts out.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import crypto from 'node:crypto';
import { ROOT, startDaemon, type Daemon } from '../helpers/daemon.js';
import { buildDp } from '../helpers/dp.js';

const read = (p: string) => JSON.parse(fs.readFileSync(path.join(ROOT, p), 'utf8'));

/** The local addresses the process listens on for `port`, from /proc/net/tcp{,6} (no traffic needed). */
function listeningOn(port: number): string[] {
  const out: string[] = [];
  for (const f of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of fs.readFileSync(f, 'utf8').split('\n').slice(1)) {
      const [, local, , state] = line.trim().split(/\s+/);
      if (state !== '0A' || !local) continue; // LISTEN
      const [addr, p] = local.split(':');
      if (parseInt(p, 16) !== port) continue;
      out.push(addr.length === 8 ? Buffer.from(addr, 'hex').reverse().join('.') : addr);
    }
  }
  return out;
}

t.test('config/dev.json listens on loopback only', async (t) => {
  const dev = read('config/dev.json');
  t.equal(dev.http['bind.address'], '127.0.0.1');
  const d = await startDaemon(t, (ports, dir) => ({ ...dev, dataDir: path.join(dir, 'data'), http: { ...dev.http, 'http.ports': ports.http, 'https.ports': ports.https } }), { https: 1 });
  for (const port of [d.ports.http[0], d.ports.https[0]]) t.same(listeningOn(port), ['127.0.0.1'], `port ${port}`);
  t.equal((await d.request('/services/session/v1/authenticationInfo')).status, 200);
});

t.test('the self-signed certificate fingerprint is logged at every start and is the one served', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-fp-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const served = (d: Daemon) =>
    new Promise<string>((resolve, reject) => {
      const s = tls.connect({ host: '127.0.0.1', port: d.ports.https[0], rejectUnauthorized: false }, () => {
        resolve(new crypto.X509Certificate(s.getPeerCertificate(true).raw).fingerprint256);
        s.end();
      });
      s.on('error', reject);
    });
  for (const round of ['generated', 'reused']) {
    const d = await startDaemon(t, {}, { dir, https: 1 });
    const line = await d.waitForLog(/msg="self-signed certificate"/);
    const logged = /sha256=(\S+)/.exec(line)![1];
    t.match(logged, /^([0-9A-F]{2}:){31}[0-9A-F]{2}$/, round);
    t.equal(logged, await served(d), `${round}: the logged fingerprint is the served certificate's`);
    t.equal(await d.stop(), 0);
  }
});

t.test('the production configuration refuses unsigned packages unless deploy.unsigned.allowed is true', async (t) => {
  const prod = read('rootfs/etc/gatewayd/gatewayd.json');
  t.equal(prod.deploy['unsigned.allowed'], false, 'shipped that way');
  const dp = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'gw-unsigned-')), 'p.dp');
  fs.writeFileSync(dp, buildDp({ name: 'org.example.unsigned', version: '1.0.0' }));
  t.teardown(() => fs.rmSync(path.dirname(dp), { recursive: true, force: true }));
  const auth = { authorization: `Basic ${Buffer.from('op:op-password-1').toString('base64')}` };
  for (const allowed of [false, true]) {
    const d = await startDaemon(t, {
      rest: { 'login.throttle.max.delay': 0 },
      identities: { op: { password: 'op-password-1', permissions: ['rest.deploy'] } },
      deploy: { ...prod.deploy, 'unsigned.allowed': allowed },
    });
    const out = execFileSync('curl', ['-s', '-H', `authorization: ${auth.authorization}`, '-F', `file=@${dp}`, `http://127.0.0.1:${d.ports.http[0]}/services/deploy/v2/_upload`], { encoding: 'utf8' });
    t.equal(out, '"REQUEST_RECEIVED"');
    let job: any;
    for (let i = 0; i < 200 && !(job && /SUCCEEDED|FAILED/.test(job.state)); i++) {
      job = (await d.request('/services/deploy/v2/_jobs', { headers: auth })).json()[0];
      await new Promise((r) => setTimeout(r, 50));
    }
    if (allowed) t.equal(job.state, 'SUCCEEDED', 'the integrator opted out');
    else t.match(job, { state: 'FAILED', error: /unsigned packages are refused \(deploy\.unsigned\.allowed is false\) and deploy\.trust\.anchors has no key/ });
    t.equal((await d.request('/services/deploy/v2', { headers: auth })).body, allowed ? '[{"name":"org.example.unsigned","version":"1.0.0"}]' : '[]');
  }
});
