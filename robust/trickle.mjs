// Part: a trickling download (docs/configuration.md "`deploy`: deployment packages", `download.deadline`). A package server sends a byte every 4 s, so the
// idle timeout never fires; gatewayd runs with `deploy.download.deadline` 5 s. While that download
// runs: a second trickling install queued behind it is cancelled with DELETE _jobs/<id>, and an
// uninstall of an installed package must complete at once (not wait behind the download); the
// first download must then end FAILED at its deadline. A legitimate client keeps listing packages.
//
// Then the queue flood (docs/rest-api.md "deploy/v2", the queue's bounds): while another trickling
// download holds the download lane, an upload of the administrator's must install beside it, and a
// `rest.deploy` identity floods the queue with installs of slow URLs of its own and uploads (small,
// large, and ones whose Content-Length alone is past the byte bound), several at once. Every answer
// must be 200 or 507 naming `deploy.queue.max.jobs` / `deploy.queue.max.bytes`; the jobs pending
// never exceed `queue.max.jobs`, and `packages/.incoming` never holds more than `queue.max.bytes`
// (plus one network chunk per upload in flight); once the administrator cancels what is queued, an
// upload installs and `.incoming` is empty.
// Reported: how long the uninstall and the deadline took (figures), the flood's answers and peaks,
// failures, RSS.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { startDaemon, tempDir } from './lib/daemon.mjs';
import { agent, loginHeaders, send, sleep } from './lib/http.mjs';

const DEADLINE_MS = 5000;
// The queue's bounds for the flood, and its size.
const MAX_JOBS = 8;
const MAX_BYTES = 3 << 20;
const FLOOD_IN_FLIGHT = 8;
const CHUNK_SLACK = 64 * 1024;
const BOUNDARY = '----robustqueue';
const JOBS_FULL = `Insufficient storage: the deployment queue holds its limit of ${MAX_JOBS} jobs (deploy.queue.max.jobs); try again once one has ended`;
const BYTES_FULL = `Insufficient storage: the packages waiting in the deployment queue would exceed deploy.queue.max.bytes (${MAX_BYTES} bytes)`;

const multipart = (file) =>
  Buffer.concat([Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="flood.dp"\r\nContent-Type: application/octet-stream\r\n\r\n`), file, Buffer.from(`\r\n--${BOUNDARY}--\r\n`)]);

function dirBytes(dir) {
  let total = 0;
  for (const f of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
    try {
      total += fs.statSync(path.join(dir, f)).size;
    } catch {
      // removed meanwhile
    }
  }
  return total;
}

export async function runTrickle({ floodRequests = 160 } = {}) {
  const FLOOD_REQUESTS = Math.max(8, floodRequests);
  if (spawnSync('zip', ['-v']).error) return { row: { part: '7 download trickle', notRun: true, reason: 'zip is not installed' } };
  const dir = tempDir('trickle');
  // A deployment package: the manifest is all it needs.
  fs.mkdirSync(path.join(dir, 'pkg/META-INF'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'pkg/META-INF/MANIFEST.MF'), 'Manifest-Version: 1.0\r\nDeploymentPackage-SymbolicName: robust.pkg\r\nDeploymentPackage-Version: 1.0.0\r\n\r\n');
  spawnSync('zip', ['-q', '-r', path.join(dir, 'robust.dp'), 'META-INF'], { cwd: path.join(dir, 'pkg') });

  const open = new Set();
  const server = http.createServer((req, res) => {
    res.writeHead(200, { 'content-length': String(1 << 20) });
    open.add(res);
    const timer = setInterval(() => res.write('x'), 4000);
    res.on('close', () => (clearInterval(timer), open.delete(res)));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const slow = `http://127.0.0.1:${server.address().port}/pkg.dp`;
  const d = await startDaemon(
    {
      identities: {
        admin: { password: 'Admin-pw-123', permissions: ['kura.admin'], passwordChangeNeeded: false },
        deployer: { password: 'Deployer-pw-123', permissions: ['rest.deploy'], passwordChangeNeeded: false },
      },
      deploy: { 'download.deadline': DEADLINE_MS, 'download.timeout': 20_000, 'file.allowed.dirs': [dir], 'queue.max.jobs': MAX_JOBS, 'queue.max.bytes': MAX_BYTES, 'upload.max.bytes': 2 << 20 },
    },
    { dir },
  );
  const ag = agent(4);
  const failures = [];
  const notes = [];
  let cases = 0;
  let http5xx = 0;
  const rssBefore = d.rss();
  let rssPeak = rssBefore;
  try {
    const auth = await loginHeaders(d.port, 'admin', 'Admin-pw-123', ag);
    const call = async (method, p, body) => {
      const r = await send(d.port, { method, path: `/services/deploy/v2${p}`, headers: { ...auth, ...(body ? { 'content-type': 'application/json' } : {}) }, body: body && JSON.stringify(body) }, ag);
      if (r.status >= 500) http5xx++;
      return r;
    };
    const jobs = async () => JSON.parse((await call('GET', '/_jobs')).body);
    const waitJob = async (id, cond, ms) => {
      const t0 = Date.now();
      for (;;) {
        const j = (await jobs()).find((x) => x.id === id);
        if (j && cond(j)) return { job: j, ms: Date.now() - t0 };
        if (Date.now() - t0 > ms) return { job: j, ms: Date.now() - t0, timedOut: true };
        rssPeak = Math.max(rssPeak, d.rss());
        await sleep(50);
      }
    };
    const check = (ok, kind, detail) => {
      cases++;
      if (!ok) failures.push({ kind, request: 'trickle', detail });
    };

    await call('POST', '/_install', { url: `file://${path.join(dir, 'robust.dp')}` });
    const installed = await waitJob(1, (j) => j.state === 'SUCCEEDED', 20_000);
    check(!installed.timedOut, 'set-up', `install of robust.pkg: ${JSON.stringify(installed.job)}`);

    const t0 = Date.now();
    await call('POST', '/_install', { url: slow });
    await call('POST', '/_install', { url: `${slow}?second` });
    await call('DELETE', '/robust.pkg');
    const all = await jobs();
    const [first, second, uninstall] = all.slice(-3);
    const u = await waitJob(uninstall.id, (j) => j.state !== 'QUEUED' && j.state !== 'RUNNING', 20_000);
    check(u.job?.state === 'SUCCEEDED', 'uninstall blocked', `uninstall behind a trickling download: ${JSON.stringify(u.job)} after ${u.ms} ms`);
    const c = await call('DELETE', `/_jobs/${second.id}`);
    check(c.status === 200 && JSON.parse(c.body).state === 'CANCELLED', 'cancel', `DELETE _jobs/${second.id}: ${c.status} ${c.body}`);
    const f = await waitJob(first.id, (j) => j.state !== 'QUEUED' && j.state !== 'RUNNING', DEADLINE_MS * 6);
    const took = Date.now() - t0;
    check(f.job?.state === 'FAILED' && /download\.deadline/.test(f.job.error ?? ''), 'deadline', `trickling download: ${JSON.stringify(f.job)} after ${took} ms`);
    const list = await call('GET', '');
    check(list.status === 200 && list.body === '[]', 'legit client', `GET /services/deploy/v2: ${list.status} ${list.body}`);
    for (let i = 0; i < 50 && open.size > 0; i++) await sleep(100);
    check(open.size === 0, 'connection kept', `${open.size} connections to the trickling server still open`);
    notes.push(`server sends 1 byte / 4 s; uninstall of an installed package done ${u.ms} ms after being queued behind the download; second download cancelled (HTTP ${c.status}); first ended ${f.job?.state} after ${took} ms (deadline ${DEADLINE_MS} ms): ${f.job?.error}`);

    // ---- the queue flood ----
    const incoming = path.join(d.dataDir, 'packages', '.incoming');
    const deployer = await loginHeaders(d.port, 'deployer', 'Deployer-pw-123', ag);
    const robustDp = fs.readFileSync(path.join(dir, 'robust.dp'));
    const upload = (file, headers = auth) => send(d.port, { method: 'POST', path: '/services/deploy/v2/_upload', headers: { ...headers, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }, body: multipart(file) }, ag);
    const pendingJobs = async () => (await jobs()).filter((j) => j.state === 'QUEUED' || j.state === 'RUNNING');
    // A download holding the lane (1 MiB declared: a third of the byte bound).
    await call('POST', '/_install', { url: `${slow}?lane` });
    const lane = (await jobs()).at(-1);
    const beside = await upload(robustDp);
    const b = beside.status === 200 ? await waitJob(lane.id + 1, (j) => j.state !== 'QUEUED' && j.state !== 'RUNNING', 20_000) : { job: undefined, ms: 0 };
    check(beside.status === 200 && b.job?.state === 'SUCCEEDED', 'upload held', `upload beside a trickling download: ${beside.status} ${beside.body}, job ${JSON.stringify(b.job)} after ${b.ms} ms`);
    const counts = { ok: 0, jobsFull: 0, bytesFull: 0 };
    let peakPending = 0;
    let peakIncoming = 0;
    let stop = false;
    const sampler = (async () => {
      while (!stop) {
        peakIncoming = Math.max(peakIncoming, dirBytes(incoming));
        peakPending = Math.max(peakPending, (await pendingJobs()).length);
        rssPeak = Math.max(rssPeak, d.rss());
        await sleep(20);
      }
    })();
    const floodAgent = agent(FLOOD_IN_FLIGHT);
    let next = 0;
    const worker = async () => {
      while (next < FLOOD_REQUESTS) {
        const i = next++;
        const kind = i % 4;
        let r;
        if (kind === 0) r = await send(d.port, { method: 'POST', path: '/services/deploy/v2/_install', headers: { ...deployer, 'content-type': 'application/json' }, body: JSON.stringify({ url: `${slow}?flood=${i}` }) }, floodAgent);
        else if (kind === 1) r = await send(d.port, { method: 'POST', path: '/services/deploy/v2/_upload', headers: { ...deployer, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }, body: multipart(Buffer.alloc(300_000, i)) }, floodAgent);
        else if (kind === 2) r = await send(d.port, { method: 'POST', path: '/services/deploy/v2/_upload', headers: { ...deployer, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }, body: multipart(Buffer.alloc(1_500_000, i)) }, floodAgent);
        else r = await send(d.port, { method: 'POST', path: '/services/deploy/v2/_upload', headers: { ...deployer, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }, body: multipart(Buffer.alloc(1_900_000, i)) }, floodAgent);
        cases++;
        if (r.status === 200) counts.ok++;
        else if (r.status === 507 && r.body === JOBS_FULL) counts.jobsFull++;
        else if (r.status === 507 && r.body === BYTES_FULL) counts.bytesFull++;
        else if (r.status === 0 && kind !== 0) {
          // A refused upload is answered before its body is read and the connection closed: the
          // client may see the close before the answer. Asked again alone, it must be refused or taken.
          const again = await send(d.port, { method: 'POST', path: '/services/deploy/v2/_upload', headers: { ...deployer, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` }, body: multipart(Buffer.alloc(kind === 1 ? 300_000 : kind === 2 ? 1_500_000 : 1_900_000, i)) }, agent(1));
          if (again.status === 200 || (again.status === 507 && (again.body === JOBS_FULL || again.body === BYTES_FULL))) counts[again.status === 200 ? 'ok' : again.body === JOBS_FULL ? 'jobsFull' : 'bytesFull']++;
          else failures.push({ kind: 'flood answer', request: `flood ${i} (kind ${kind}), replayed`, detail: `${again.status} ${again.body ?? again.error}` });
        } else failures.push({ kind: 'flood answer', request: `flood ${i} (kind ${kind})`, detail: `${r.status} ${r.body ?? r.error}` });
        if (r.status >= 500 && r.status !== 507) http5xx++;
      }
    };
    await Promise.all(Array.from({ length: FLOOD_IN_FLIGHT }, worker));
    stop = true;
    await sampler;
    floodAgent.destroy();
    check(peakPending <= MAX_JOBS, 'queue bound', `${peakPending} jobs pending at once (deploy.queue.max.jobs ${MAX_JOBS})`);
    check(peakIncoming <= MAX_BYTES + FLOOD_IN_FLIGHT * CHUNK_SLACK, 'byte bound', `${peakIncoming} bytes in .incoming at once (deploy.queue.max.bytes ${MAX_BYTES})`);
    check(counts.jobsFull > 0 && counts.bytesFull > 0, 'bounds not reached', `the flood reached neither bound or only one: ${JSON.stringify(counts)}`);
    // The administrator clears the queue; an upload then installs and nothing is left behind.
    for (const j of await pendingJobs()) await call('DELETE', `/_jobs/${j.id}`);
    const cleared = Date.now();
    while ((await pendingJobs()).length > 0 && Date.now() - cleared < 30_000) await sleep(50);
    const after = await upload(robustDp);
    const last = (await jobs()).at(-1);
    const a = await waitJob(last.id, (j) => j.state !== 'QUEUED' && j.state !== 'RUNNING', 20_000);
    check(after.status === 200 && a.job?.state === 'SUCCEEDED' && a.job.url === 'upload:flood.dp', 'after the flood', `upload after the queue was cleared: ${after.status} ${after.body}, job ${JSON.stringify(a.job)}`);
    for (let i = 0; i < 100 && dirBytes(incoming) > 0; i++) await sleep(50);
    check(dirBytes(incoming) === 0 && fs.readdirSync(incoming).length === 0, 'files left', `.incoming after the flood: ${fs.readdirSync(incoming).join(', ')}`);
    notes.push(`queue flood: upload beside a trickling download installed in ${b.ms} ms; ${FLOOD_REQUESTS} requests from a rest.deploy identity, ${FLOOD_IN_FLIGHT} at once: ${counts.ok} taken, ${counts.jobsFull} refused at deploy.queue.max.jobs (${MAX_JOBS}), ${counts.bytesFull} at deploy.queue.max.bytes (${MAX_BYTES}); peak ${peakPending} jobs pending, peak ${peakIncoming} bytes in .incoming; after cancelling, an upload installed and .incoming is empty`);
    return {
      row: { part: '7 download trickle', cases, failures: failures.length, http5xx, crashes: d.crashes, lostBytes: 0, rssBefore, rssAfter: d.rss(), rssPeak },
      notes,
      failures,
      internalErrors: d.errors.filter((l) => !/install failed|download|upload could not be stored/.test(l)).slice(0, 5),
    };
  } finally {
    ag.destroy();
    for (const r of open) r.destroy();
    server.close();
    if (d.alive()) await d.stop();
  }
}
