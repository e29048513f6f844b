// The deployment queue against a slow package server of the test's own, through the real daemon
// (docs/rest-api.md "deploy/v2", docs/packages.md "The install queue"): an upload is not held
// behind an unrelated download that trickles, and one that overtook a download of the same package
// wins as in queue order; the jobs queued, running or being uploaded are bounded in number
// (`deploy.queue.max.jobs`) and in the bytes they bring onto the device (`deploy.queue.max.bytes`),
// each bound reached exactly and refused one past it with 507 naming it; nothing refused is left in
// `packages/.incoming`; a cancelled job gives its room back.

import t from 'tap';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { startDaemon, type Daemon } from '../helpers/daemon.js';
import { buildDp, exampleDriverExtension } from '../helpers/dp.js';

const PASSWORD = 'Queue-Deploy-1';
const auth = (user: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${PASSWORD}`).toString('base64')}` });
const ADMIN = auth('admin');
const MAX_JOBS = 4;
const MAX_BYTES = 200_000;

const JOBS_FULL = `Insufficient storage: the deployment queue holds its limit of ${MAX_JOBS} jobs (deploy.queue.max.jobs); try again once one has ended`;
const BYTES_FULL = `Insufficient storage: the packages waiting in the deployment queue would exceed deploy.queue.max.bytes (${MAX_BYTES} bytes)`;

const BOUNDARY = '----queueboundary';
function multipart(file: Buffer): Buffer {
  const head = `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="p.dp"\r\nContent-Type: application/octet-stream\r\n\r\n`;
  return Buffer.concat([Buffer.from(head), file, Buffer.from(`\r\n--${BOUNDARY}--\r\n`)]);
}

/** A valid package of exactly `size` bytes (a stored padding file makes up the size). */
function packageOf(name: string, size: number, files: Record<string, string> = {}, extensions?: string[]): Buffer {
  const spec = { name, version: '1.0.0', files, extensions };
  const base = buildDp(spec, [{ name: 'pad.bin', data: Buffer.alloc(0), method: 'store' }]).length;
  const dp = buildDp(spec, [{ name: 'pad.bin', data: Buffer.alloc(size - base, 7), method: 'store' }]);
  if (dp.length !== size) throw new Error(`package of ${dp.length} bytes, wanted ${size}`);
  return dp;
}

/** An upload that sends its head and the first `sent` bytes of the body, then waits for `finish()`. */
function openUpload(d: Daemon, body: Buffer, sent: number) {
  let answer!: (r: { status: number; body: string }) => void;
  const answered = new Promise<{ status: number; body: string }>((r) => (answer = r));
  const req = http.request({ host: '127.0.0.1', port: d.ports.http[0], method: 'POST', path: '/services/deploy/v2/_upload', agent: false, headers: { ...ADMIN, 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, 'content-length': String(body.length) } }, (res) => {
    let text = '';
    res.on('data', (c) => (text += c));
    res.on('end', () => answer({ status: res.statusCode ?? 0, body: text }));
  });
  req.on('error', (err) => answer({ status: 0, body: err.message }));
  req.write(body.subarray(0, sent));
  return { answered, finish: () => req.end(body.subarray(sent)) };
}

t.test('the deployment queue: uploads beside a trickling download, bounded in jobs and bytes', async (t) => {
  // /trickle/<n>: declares `n` bytes and sends one every 500 ms (no idle timeout fires, the download
  // lane stays busy); /chunked: no length, 300 kB at once; anything else: 404.
  const trickles = new Set<http.ServerResponse>();
  let openGate = () => {};
  const gate = new Promise<void>((r) => (openGate = r));
  const sameV1 = buildDp({ name: 'org.example.same', version: '1.0.0' });
  const server = http.createServer(async (req, res) => {
    if (req.url === '/gate/same.dp') {
      // Version 1 of a package, sent once the test opens the gate.
      await gate;
      res.writeHead(200, { 'content-length': sameV1.length });
      return res.end(sameV1);
    }
    const m = /^\/trickle\/(\d+)/.exec(req.url ?? '');
    if (m) {
      res.writeHead(200, { 'content-length': m[1] });
      trickles.add(res);
      const timer = setInterval(() => res.write('x'), 500);
      res.on('close', () => (clearInterval(timer), trickles.delete(res)));
      return;
    }
    if (req.url === '/chunked') {
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      for (let i = 0; i < 30; i++) res.write(Buffer.alloc(10_000, 1));
      return res.end();
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const d = await startDaemon(t, {
    identities: {
      admin: { password: PASSWORD, permissions: ['kura.admin'], passwordChangeNeeded: false },
      deployer: { password: PASSWORD, permissions: ['rest.deploy'], passwordChangeNeeded: false },
    },
    deploy: { 'queue.max.jobs': MAX_JOBS, 'queue.max.bytes': MAX_BYTES, 'upload.max.bytes': 400_000, 'download.deadline': 3_600_000, 'download.timeout': 30_000 },
  });
  const incoming = path.join(d.dataDir, 'packages', '.incoming');
  const api = (p: string, o: { method?: string; body?: object; user?: string } = {}) => d.request(`/services/deploy/v2${p}`, { method: o.method, body: o.body, headers: o.user ? auth(o.user) : ADMIN });
  const upload = (file: Buffer, user?: string) => d.request('/services/deploy/v2/_upload', { method: 'POST', body: multipart(file), headers: { ...(user ? auth(user) : ADMIN), 'content-type': `multipart/form-data; boundary=${BOUNDARY}` } });
  const jobs = async () => (await api('/_jobs')).json() as any[];
  const until = async (what: string, cond: (j: any[]) => boolean, ms = 20_000) => {
    const deadline = Date.now() + ms;
    for (;;) {
      const j = await jobs();
      if (cond(j)) return j;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(j)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const pending = (j: any[]) => j.filter((x) => x.state === 'QUEUED' || x.state === 'RUNNING');
  /** Resolves once the running download has stored a byte (its answer's head was read before). */
  const arrived = async () => {
    for (let i = 0; i < 400; i++) {
      if (fs.readdirSync(incoming).some((f) => fs.statSync(path.join(incoming, f)).size > 0)) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('the download stored nothing');
  };
  const cancelAll = async () => {
    for (const j of pending(await jobs())) await api(`/_jobs/${j.id}`, { method: 'DELETE' });
    await until('every job to end', (j) => pending(j).length === 0);
  };

  await t.test('an upload installs while an unrelated download trickles in the download lane', async (t) => {
    t.equal((await api('/_install', { method: 'POST', body: { url: `${origin}/trickle/1000` }, user: 'deployer' })).body, '"REQUEST_RECEIVED"');
    await until('the trickle to download', (j) => j[0]?.phase === 'download');
    const plugin = packageOf('org.example.beside', 4000, { 'x.js': exampleDriverExtension('besidefactory') }, ['x.js']);
    const r = await upload(plugin);
    t.same([r.status, r.body], [200, '"REQUEST_RECEIVED"']);
    const j = await until('the upload to be installed', (j) => j[1]?.state === 'SUCCEEDED');
    t.match(j[0], { state: 'RUNNING', phase: 'download' }, 'the download is still running');
    t.match(j[1], { url: 'upload:p.dp', name: 'org.example.beside', state: 'SUCCEEDED' });
    await d.waitForLog(/example driver active.*besidefactory/, 10_000);
    t.equal((await api('')).body, '[{"name":"org.example.beside","version":"1.0.0"}]');
    await cancelAll();
  });

  await t.test('an upload that overtook a download of the same package wins, as in queue order', async (t) => {
    await api('/_install', { method: 'POST', body: { url: `${origin}/gate/same.dp` }, user: 'deployer' });
    const held = pending(await until('the download to start', (j) => pending(j)[0]?.phase === 'download'))[0];
    t.equal((await upload(buildDp({ name: 'org.example.same', version: '2.0.0' }))).status, 200);
    await until('version 2 to be installed', (j) => j.some((x) => x.name === 'org.example.same' && x.version === '2.0.0' && x.state === 'SUCCEEDED'));
    openGate();
    const j = await until('the download to end', (j) => pending(j).length === 0);
    t.match(j.find((x) => x.id === held.id), { state: 'CANCELLED', error: 'superseded by the later install of org.example.same' });
    t.match((await api('')).json(), [{ name: 'org.example.beside' }, { name: 'org.example.same', version: '2.0.0' }], 'the later upload\'s version stays');
  });

  await t.test(`at most ${MAX_JOBS} jobs queued or running: the last one fits, the next is 507`, async (t) => {
    for (let i = 0; i < MAX_JOBS; i++) {
      const r = await api('/_install', { method: 'POST', body: { url: `${origin}/trickle/1000?n=${i}` }, user: 'deployer' });
      t.same([r.status, r.body], [200, '"REQUEST_RECEIVED"'], `install ${i + 1} of ${MAX_JOBS}`);
    }
    const over = await api('/_install', { method: 'POST', body: { url: `${origin}/trickle/1000?n=over` }, user: 'deployer' });
    t.same([over.status, over.body], [507, JOBS_FULL], 'one past the bound');
    t.match(over.headers['content-type'], /^text\/plain/);
    const again = await api('/_install', { method: 'POST', body: { url: `${origin}/trickle/1000?n=0` }, user: 'deployer' });
    t.same([again.status, again.body], [200, '"INSTALLING"'], 'a repeat of a pending URL queues nothing and is not refused');
    const up = await upload(packageOf('org.example.late', 3000));
    t.same([up.status, up.body], [507, JOBS_FULL], 'an upload is refused at once when the queue is full');
    const del = await api('/org.example.beside', { method: 'DELETE' });
    t.same([del.status, del.body], [507, JOBS_FULL], 'an uninstall too');
    t.equal(pending(await jobs()).length, MAX_JOBS);
    t.ok(fs.readdirSync(incoming).length <= 1, 'no file but the running download\'s');
    // A cancelled job gives its place back.
    const first = pending(await jobs())[0];
    t.equal((await api(`/_jobs/${first.id}`, { method: 'DELETE' })).status, 200);
    // CANCELLED shows at once; the place is given back once the job's files are removed, and the
    // next download then starts (src/deploy/jobs.ts finish): wait for that, not for the state alone.
    await until('the cancel to end it and the next download to start', (j) => pending(j).length === MAX_JOBS - 1 && pending(j)[0]?.state === 'RUNNING');
    const fits = await upload(packageOf('org.example.late', 3000));
    t.same([fits.status, fits.body], [200, '"REQUEST_RECEIVED"'], 'room again after a cancel');
    await until('the upload to be installed', (j) => j.some((x) => x.name === 'org.example.late' && x.state === 'SUCCEEDED'));
    await cancelAll();
  });

  await t.test('uploads being received count: parallel uploads past the bound are refused before their body is read', async (t) => {
    const body = multipart(packageOf('org.example.parallel', 5000));
    const open = Array.from({ length: MAX_JOBS }, () => openUpload(d, body, 1000));
    // Each has its file in .incoming once the daemon read its part's head.
    for (let i = 0; i < 400 && fs.readdirSync(incoming).length < MAX_JOBS; i++) await new Promise((r) => setTimeout(r, 50));
    t.equal(fs.readdirSync(incoming).length, MAX_JOBS, `${MAX_JOBS} uploads being received`);
    t.equal(pending(await jobs()).length, 0, 'none of them is a job yet');
    const late = await upload(packageOf('org.example.past', 3000));
    t.same([late.status, late.body], [507, JOBS_FULL], `upload ${MAX_JOBS + 1} while ${MAX_JOBS} are being received`);
    for (const u of open) u.finish();
    const answers = await Promise.all(open.map((u) => u.answered));
    t.same(answers.map((a) => a.status), open.map(() => 200), `all ${MAX_JOBS} open uploads were taken`);
    await until('every job to end', (j) => pending(j).length === 0);
    t.same(fs.readdirSync(incoming), [], 'nothing left in .incoming');
  });

  await t.test(`at most ${MAX_BYTES} bytes of packages: exactly the bound fits, one byte more is 507`, async (t) => {
    const exact = await upload(packageOf('org.example.exact', MAX_BYTES));
    t.same([exact.status, exact.body], [200, '"REQUEST_RECEIVED"'], `an upload of ${MAX_BYTES} bytes`);
    await until('it to be installed', (j) => j.some((x) => x.name === 'org.example.exact' && x.state === 'SUCCEEDED'));
    const past = await upload(packageOf('org.example.past', MAX_BYTES + 1));
    t.same([past.status, past.body], [507, BYTES_FULL], `an upload of ${MAX_BYTES + 1} bytes`);
    t.same(fs.readdirSync(incoming), [], 'the refused upload left no file');

    // A download holds its declared size from its first byte: an upload that would not fit beside it is refused.
    await api('/_install', { method: 'POST', body: { url: `${origin}/trickle/150000` }, user: 'deployer' });
    await arrived();
    const beside = await upload(packageOf('org.example.beside2', 60_000));
    t.same([beside.status, beside.body], [507, BYTES_FULL], '150000 declared + 60000 uploaded is past the bound');
    const small = await upload(packageOf('org.example.small', 40_000));
    t.same([small.status, small.body], [200, '"REQUEST_RECEIVED"'], '150000 + 40000 fits');
    await until('the small upload to be installed', (j) => j.some((x) => x.name === 'org.example.small' && x.state === 'SUCCEEDED'));
    // A download that declares more than the bound fails at once, naming it.
    await cancelAll();
    await api('/_install', { method: 'POST', body: { url: `${origin}/trickle/${MAX_BYTES + 1}` }, user: 'deployer' });
    let j = await until('the oversized download to fail', (j) => j.at(-1)?.state === 'FAILED');
    t.match(j.at(-1), { state: 'FAILED', error: new RegExp(`deploy\\.queue\\.max\\.bytes \\(${MAX_BYTES} bytes\\)`) }, 'a declared size past the bound');
    // One without a declared size fails when its bytes pass the bound.
    await api('/_install', { method: 'POST', body: { url: `${origin}/chunked` }, user: 'deployer' });
    j = await until('the chunked download to fail', (j) => j.at(-1)?.state === 'FAILED');
    t.match(j.at(-1), { url: `${origin}/chunked`, state: 'FAILED', error: /deploy\.queue\.max\.bytes/ }, 'a chunked download growing past the bound');
    t.same(fs.readdirSync(incoming), [], 'no partial download left');
    t.equal(trickles.size, 0, 'no connection to the package server left open');
  });
});
