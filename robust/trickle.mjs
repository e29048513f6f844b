// Part: a trickling download (issue 13 item 8). A package server sends a byte every 4 s, so the
// idle timeout never fires; gatewayd runs with `deploy.download.deadline` 5 s. While that download
// runs: a second trickling install queued behind it is cancelled with DELETE _jobs/<id>, and an
// uninstall of an installed package must complete at once (not wait behind the download); the
// first download must then end FAILED at its deadline. A legitimate client keeps listing packages.
// Reported: how long the uninstall and the deadline took (figures), failures, RSS.

import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { startDaemon, tempDir } from './lib/daemon.mjs';
import { agent, loginHeaders, send, sleep } from './lib/http.mjs';

const DEADLINE_MS = 5000;

export async function runTrickle() {
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
      identities: { admin: { password: 'Admin-pw-123', permissions: ['kura.admin'], passwordChangeNeeded: false } },
      deploy: { 'download.deadline': DEADLINE_MS, 'download.timeout': 20_000, 'file.allowed.dirs': [dir] },
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
    return {
      row: { part: '7 download trickle', cases, failures: failures.length, http5xx, crashes: d.crashes, lostBytes: 0, rssBefore, rssAfter: d.rss(), rssPeak },
      notes,
      failures,
      internalErrors: d.errors.filter((l) => !/install failed|download/.test(l)).slice(0, 5),
    };
  } finally {
    ag.destroy();
    for (const r of open) r.destroy();
    server.close();
    if (d.alive()) await d.stop();
  }
}
