// Deployment packages (docs/packages.md) against the real bundle: a plug-in driver package uploaded with curl starts
// serving an asset's channels without a restart, survives a restart, and after DELETE its channels
// answer errors and its files are gone. Also: deploy/v2 needs the `rest.deploy` permission.

import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFile, execFileSync } from 'node:child_process';
import { startDaemon, type Daemon } from '../helpers/daemon.js';
import { buildDp, exampleDriverExtension, commandWorks } from '../helpers/dp.js';

const hasCurl = commandWorks('curl', ['--version']);
if (!hasCurl && process.env.CI === 'true') t.fail('curl is required under CI');

const PASSWORD = 'Deploy-Test-1';
const auth = (user: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${PASSWORD}`).toString('base64')}` });
const config = {
  identities: {
    operator: { password: PASSWORD, permissions: ['rest.deploy', 'rest.assets'], passwordChangeNeeded: false },
    viewer: { password: PASSWORD, permissions: ['rest.assets'], passwordChangeNeeded: false },
  },
  drivers: { plc: { factory: 'example' } },
  assets: {
    pump1: { 'driver.pid': 'plc', channels: { speed: { type: 'READ', 'value.type': 'INTEGER', value: 42 } } },
  },
};

async function readSpeed(d: Daemon): Promise<Record<string, any>> {
  const r = await d.request('/services/assets/pump1/_read', { headers: auth('operator') });
  if (r.status !== 200) throw new Error(`_read answered ${r.status}: ${r.body}`);
  return r.json()[0];
}

async function waitForJob(d: Daemon, count: number): Promise<Record<string, any>> {
  for (let i = 0; i < 200; i++) {
    const jobs = (await d.request('/services/deploy/v2/_jobs', { headers: auth('operator') })).json();
    const last = jobs[count - 1];
    if (last && (last.state === 'SUCCEEDED' || last.state === 'FAILED')) return last;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('job did not finish');
}

t.test('plug-in driver: upload, serve, restart, uninstall', { skip: !hasCurl && 'curl is not installed' }, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-deploy-e2e-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const dpFile = path.join(dir, 'example-driver.dp');
  fs.writeFileSync(dpFile, buildDp({
    name: 'org.example.driver',
    version: '1.0.0',
    files: { 'driver/extension.js': exampleDriverExtension('example') },
    extensions: ['driver/extension.js'],
  }));

  let d = await startDaemon(t, config, { dir });
  t.match(await readSpeed(d), { channelStatus: { channelFlag: 'FAILURE', exceptionMessage: /Driver not attached/ } }, 'no driver before the package');

  // permissions: none → 401, without rest.deploy → 403
  t.equal((await d.request('/services/deploy/v2')).status, 401);
  t.equal((await d.request('/services/deploy/v2', { headers: auth('viewer') })).status, 403);

  const out = execFileSync('curl', ['-s', '-u', `operator:${PASSWORD}`, '-F', `file=@${dpFile}`, '-w', ' %{http_code}', `http://127.0.0.1:${d.ports.http[0]}/services/deploy/v2/_upload`], { encoding: 'utf8' });
  t.equal(out, '"REQUEST_RECEIVED" 200');
  t.match(await waitForJob(d, 1), { state: 'SUCCEEDED', name: 'org.example.driver', version: '1.0.0' });
  t.equal((await d.request('/services/deploy/v2', { headers: auth('operator') })).body, '[{"name":"org.example.driver","version":"1.0.0"}]');
  t.match(await readSpeed(d), { channelStatus: { channelFlag: 'SUCCESS' }, name: 'speed', valueType: 'INTEGER', value: 42 }, 'served without a restart');

  t.equal(await d.stop(), 0);
  d = await startDaemon(t, config, { dir });
  t.match(await readSpeed(d), { channelStatus: { channelFlag: 'SUCCESS' }, value: 42 }, 'served after a restart');
  t.equal((await d.request('/services/deploy/v2', { headers: auth('operator') })).body, '[{"name":"org.example.driver","version":"1.0.0"}]');

  const del = await d.request('/services/deploy/v2/org.example.driver', { method: 'DELETE', headers: auth('operator') });
  t.same([del.status, del.body], [200, '"REQUEST_RECEIVED"']);
  t.match(await waitForJob(d, 1), { kind: 'uninstall', state: 'SUCCEEDED' });
  t.match(await readSpeed(d), { channelStatus: { channelFlag: 'FAILURE', exceptionMessage: /Driver not attached/ } }, 'channels answer errors after DELETE');
  t.same(fs.readdirSync(path.join(d.dataDir, 'packages')), ['index.json'], 'its files are gone');
  t.equal((await d.request('/services/deploy/v2', { headers: auth('operator') })).body, '[]');
  t.equal(await d.stop(), 0);
});

t.test('an upload over deploy.upload.max.bytes is 413 and leaves nothing', { skip: !hasCurl && 'curl is not installed' }, async (t) => {
  const d = await startDaemon(t, { ...config, deploy: { 'upload.max.bytes': 1000 } });
  const big = path.join(d.dir, 'big.dp');
  fs.writeFileSync(big, Buffer.alloc(50_000));
  const out = await new Promise<string>((resolve, reject) =>
    execFile('curl', ['-s', '-u', `operator:${PASSWORD}`, '-F', `file=@${big}`, '-w', ' %{http_code}', `http://127.0.0.1:${d.ports.http[0]}/services/deploy/v2/_upload`], (err, so) => (err ? reject(err) : resolve(so))),
  );
  t.equal(out, 'Upload larger than 1000 bytes 413');
  t.same(fs.readdirSync(path.join(d.dataDir, 'packages')).filter((f) => f !== '.incoming'), []);
  t.same(fs.existsSync(path.join(d.dataDir, 'packages/.incoming')) ? fs.readdirSync(path.join(d.dataDir, 'packages/.incoming')) : [], []);
});

t.test('an authentication provider from a package works until the package is removed', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-deploy-e2e-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const allowed = path.join(dir, 'incoming');
  fs.mkdirSync(allowed);
  const dpFile = path.join(allowed, 'token-auth.dp');
  fs.writeFileSync(dpFile, buildDp({
    name: 'org.example.tokenauth',
    version: '2.0',
    files: {
      'auth.mjs': `export function activate(api) {
        api.registerAuthProvider({
          name: 'device-token',
          priority: 50,
          authenticate(req) { return req.headers['x-device-token'] === 'let-me-in' ? 'operator' : undefined; },
        });
      }`,
    },
    extensions: ['auth.mjs'],
  }));
  const d = await startDaemon(t, { ...config, deploy: { 'file.allowed.dirs': [allowed] } }, { dir });
  const token = { 'x-device-token': 'let-me-in' };
  t.equal((await d.request('/services/deploy/v2', { headers: token })).status, 401, 'no provider yet');
  const r = await d.request('/services/deploy/v2/_install', { method: 'POST', headers: auth('operator'), body: { url: `file://${dpFile}` } });
  t.same([r.status, r.body], [200, '"REQUEST_RECEIVED"']);
  t.match(await waitForJob(d, 1), { state: 'SUCCEEDED', name: 'org.example.tokenauth', version: '2.0.0' });
  t.ok(fs.existsSync(dpFile), 'file: installs copy, the source stays');
  const list = await d.request('/services/deploy/v2', { headers: token });
  t.same([list.status, list.body], [200, '[{"name":"org.example.tokenauth","version":"2.0.0"}]'], 'the package\'s provider authenticates');
  await d.request('/services/deploy/v2/org.example.tokenauth', { method: 'DELETE', headers: token });
  t.match(await waitForJob(d, 2), { kind: 'uninstall', state: 'SUCCEEDED' });
  t.equal((await d.request('/services/deploy/v2', { headers: token })).status, 401, 'provider gone with its package');
});
