// Deployment jobs against a trickling HTTP server (docs/packages.md "The install queue"; README "Robustness", part 7): a download that sends a byte
// every 2 s never hits the idle timeout, so only the overall deadline (`download.deadline`) ends
// it; a queued or downloading job is cancelled with `DELETE /services/deploy/v2/_jobs/<id>`; an
// uninstall of an installed package is not held behind a stuck download, and an install that an
// uninstall queued after it overtook is skipped, so the end state is the queue order's.

import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import http from 'node:http';
import { HttpServer } from '../../src/http/server.js';
import { silentLogger } from '../../src/log.js';
import { DriverRegistry } from '../../src/drivers/registry.js';
import { PluginHost } from '../../src/plugins/host.js';
import { DeploymentService } from '../../src/deploy/service.js';
import { validateDeploySection } from '../../src/deploy/config.js';
import { mountDeployApi } from '../helpers/deploy-api.js';
import type { Job } from '../../src/deploy/jobs.js';
import { buildDp } from '../helpers/dp.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-jobs-'));
t.teardown(() => fs.rmSync(tmp, { recursive: true, force: true }));

// A package server: /trickle sends a byte every 2 s of a 100 kB body; /gate/<name> waits for the gate.
const pkgs = new Map<string, Buffer>([
  ['a', buildDp({ name: 'a', version: '1' })],
  ['b', buildDp({ name: 'b', version: '2' })],
]);
let release = () => {};
let gate = new Promise<void>((r) => (release = r));
const trickles = new Set<http.ServerResponse>();
const origin = http.createServer(async (req, res) => {
  const url = req.url ?? '';
  if (url === '/trickle') {
    res.writeHead(200, { 'content-length': '100000' });
    trickles.add(res);
    const timer = setInterval(() => res.write('x'), 2000);
    res.on('close', () => {
      clearInterval(timer);
      trickles.delete(res);
    });
    return;
  }
  if (url.startsWith('/gate/')) await gate;
  const body = pkgs.get(url.replace(/^\/(gate\/)?/, ''));
  res.writeHead(body ? 200 : 404);
  res.end(body);
});
await new Promise<void>((r) => origin.listen(0, '127.0.0.1', r));
const originUrl = `http://127.0.0.1:${(origin.address() as { port: number }).port}`;
t.teardown(() => new Promise<void>((r) => origin.close(() => r())));

async function stack(name: string, overrides: Record<string, unknown>) {
  const dataDir = path.join(tmp, name);
  fs.mkdirSync(dataDir);
  const { value: config, problems } = validateDeploySection({ 'download.timeout': 20_000, 'file.allowed.dirs': [tmp], ...overrides });
  if (problems.length) throw new Error(JSON.stringify(problems));
  const plugins = new PluginHost({ log: silentLogger, drivers: new DriverRegistry() });
  const deploy = new DeploymentService({ dataDir, config, log: silentLogger, plugins });
  await deploy.start();
  const server = new HttpServer(silentLogger);
  mountDeployApi(server, { deploy, log: silentLogger });
  await server.listen([{ port: 0, kind: 'http' }], '127.0.0.1');
  const port = server.listeners()[0]!.port;
  t.teardown(async () => {
    await server.close(100);
    await deploy.stop();
  });
  const request = (method: string, p: string, body?: object) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request({ agent: false, host: '127.0.0.1', port, method, path: `/services/deploy/v2${p}`, headers: body ? { 'content-type': 'application/json' } : {} }, (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      });
      req.on('error', reject);
      req.end(body ? JSON.stringify(body) : undefined);
    });
  const jobs = async () => JSON.parse((await request('GET', '/_jobs')).body) as Job[];
  const until = async (what: string, cond: (j: Job[]) => boolean) => {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const j = await jobs();
      if (cond(j)) return j;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(j)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  return { deploy, request, jobs, until, incoming: path.join(dataDir, 'packages/.incoming') };
}

t.test('a trickling download is ended by download.deadline, not kept RUNNING', async (t) => {
  const s = await stack('deadline', { 'download.deadline': 5000 });
  t.equal((await s.request('POST', '/_install', { url: `${originUrl}/trickle` })).body, '"REQUEST_RECEIVED"');
  await s.until('the download to start', (j) => j[0]?.phase === 'download');
  await s.request('POST', '/_install', { url: `${originUrl}/a` });
  const j = await s.until('both jobs to end', (j) => j.every((x) => x.state !== 'QUEUED' && x.state !== 'RUNNING'));
  t.match(j[0], { state: 'FAILED', error: /did not complete within download\.deadline \(5000 ms\)/ });
  t.match(j[1], { state: 'SUCCEEDED', name: 'a' }, 'the install queued behind it ran');
  t.same(fs.readdirSync(s.incoming), [], 'the partial download is removed');
});

t.test('cancel: DELETE _jobs/<id>; uninstalls are not held behind a stuck download', async (t) => {
  const s = await stack('cancel', { 'download.deadline': 3_600_000 });
  await s.request('POST', '/_install', { url: `${originUrl}/a` });
  await s.until('a installed', (j) => j[0]?.state === 'SUCCEEDED');

  await s.request('POST', '/_install', { url: `${originUrl}/trickle` });
  const stuck = (await s.until('the trickle to start', (j) => j[1]?.phase === 'download'))[1]!;
  await s.request('POST', '/_install', { url: `${originUrl}/b` });
  t.equal((await s.request('DELETE', '/a')).body, '"REQUEST_RECEIVED"');
  let j = await s.until('the uninstall of a', (j) => j[3]?.state === 'SUCCEEDED');
  t.match(j[1], { state: 'RUNNING', phase: 'download' }, 'the trickle is still downloading');
  t.match(j[2], { state: 'QUEUED' }, 'the next install waits its turn');
  t.same(JSON.parse((await s.request('GET', '')).body), [], 'a was uninstalled meanwhile');

  const r = await s.request('DELETE', `/_jobs/${stuck.id}`);
  t.equal(r.status, 200);
  t.match(JSON.parse(r.body), { id: stuck.id });
  j = await s.until('all jobs to end', (j) => j.every((x) => x.state !== 'QUEUED' && x.state !== 'RUNNING'));
  t.match(j[1], { state: 'CANCELLED', error: 'cancelled by request' });
  t.match(j[2], { state: 'SUCCEEDED', name: 'b' });
  t.same(fs.readdirSync(s.incoming), [], 'the partial download is removed');
  t.equal(trickles.size, 0, 'the connection to the trickling server is closed');

  // A queued job is cancelled before it starts.
  await s.request('POST', '/_install', { url: `${originUrl}/trickle` });
  await s.request('POST', '/_install', { url: `${originUrl}/b?again` });
  j = await s.until('queued', (j) => j[5]?.state === 'QUEUED');
  t.match(JSON.parse((await s.request('DELETE', `/_jobs/${j[5]!.id}`)).body), { state: 'CANCELLED' });
  await s.request('DELETE', `/_jobs/${j[4]!.id}`);
  await s.until('all jobs to end', (j) => j.every((x) => x.state !== 'QUEUED' && x.state !== 'RUNNING'));

  const errors: [string, number, RegExp][] = [
    [`/_jobs/${stuck.id}`, 409, /has already ended/],
    ['/_jobs/999', 404, /No deployment job 999/],
    ['/_jobs/x', 404, /No deployment job x/],
  ];
  for (const [p, status, re] of errors) {
    const e = await s.request('DELETE', p);
    t.equal(e.status, status, p);
    t.match(e.body, re, p);
  }
});

t.test('an install overtaken by a later uninstall of its package is skipped (queue order wins)', async (t) => {
  const s = await stack('order', { 'download.deadline': 60_000 });
  await s.request('POST', '/_install', { url: `${originUrl}/a` });
  await s.until('a installed', (j) => j[0]?.state === 'SUCCEEDED');
  gate = new Promise<void>((r) => (release = r));
  await s.request('POST', '/_install', { url: `${originUrl}/gate/a` });
  await s.until('held download', (j) => j[1]?.phase === 'download');
  await s.request('DELETE', '/a');
  await s.until('the uninstall', (j) => j[2]?.state === 'SUCCEEDED');
  release();
  const j = await s.until('all jobs to end', (j) => j.every((x) => x.state !== 'QUEUED' && x.state !== 'RUNNING'));
  t.match(j[1], { state: 'CANCELLED', error: 'superseded by the later uninstall of a' });
  t.same(JSON.parse((await s.request('GET', '')).body), [], 'a stays uninstalled, as install-then-uninstall would leave it');

  // An uninstall of a package that is not installed waits for the downloads before it (one of
  // them may bring it), as in queue order.
  gate = new Promise<void>((r) => (release = r));
  await s.request('POST', '/_install', { url: `${originUrl}/gate/b` });
  await s.request('DELETE', '/b');
  t.equal((await s.request('DELETE', '/b')).body, '"UNINSTALLING"', 'still pending behind the download');
  release();
  const k = await s.until('all jobs to end', (j) => j.every((x) => x.state !== 'QUEUED' && x.state !== 'RUNNING'));
  t.match(k.slice(-2), [{ state: 'SUCCEEDED', name: 'b' }, { kind: 'uninstall', state: 'SUCCEEDED' }]);
  t.same(JSON.parse((await s.request('GET', '')).body), []);
});
