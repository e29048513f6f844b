// Part: a snapshot flood on a small data partition (docs/installation.md "What dataDir holds",
// docs/configuration-v2.md "The two layers"). dataDir on a 16 MiB tmpfs; a `rest.configuration`
// client asks for snapshots of a 2,000-channel configuration from 4 connections at once, while
// another uploads packages and a client reads an asset. Snapshots must stop at the partition's
// reserve (507), never below it; then, with `configuration.snapshots.max.bytes` lowered, the flood
// must stay within it with the oldest dropped. Identities must keep working throughout (a password
// change and a new identity on the nearly full partition), and the daemon must start again.

import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync, spawnSync } from 'node:child_process';
import { startDaemon, tempDir } from './lib/daemon.mjs';
import { agent, send, sleep } from './lib/http.mjs';

const MiB = 1048576;
const RESERVE = 2 * MiB; // 1 % of 16 MiB is less than the 2 MiB minimum (src/store/reserve.ts)
const PW = 'Snapshot-flood-pw1';
const C = '/services/configuration/v2';
const auth = (user, pw = PW) => ({ authorization: `Basic ${Buffer.from(`${user}:${pw}`).toString('base64')}`, 'content-type': 'application/json' });

/** A deployment package (the `zip` command) holding `bytes` random, incompressible bytes. */
function packageOf(dir, name, bytes) {
  const src = path.join(dir, name);
  fs.mkdirSync(path.join(src, 'META-INF'), { recursive: true });
  fs.writeFileSync(path.join(src, 'META-INF', 'MANIFEST.MF'), `Manifest-Version: 1.0\r\nDeploymentPackage-SymbolicName: ${name}\r\nDeploymentPackage-Version: 1.0.0\r\n\r\n`);
  fs.writeFileSync(path.join(src, 'blob.bin'), crypto.randomBytes(bytes));
  const out = path.join(dir, `${name}.dp`);
  execFileSync('zip', ['-q', '-0', '-r', out, 'META-INF/MANIFEST.MF', 'blob.bin'], { cwd: src });
  return fs.readFileSync(out);
}

function multipart(file) {
  const b = `----gw${crypto.randomBytes(6).toString('hex')}`;
  const head = `--${b}\r\nContent-Disposition: form-data; name="file"; filename="p.dp"\r\nContent-Type: application/octet-stream\r\n\r\n`;
  return { type: `multipart/form-data; boundary=${b}`, body: Buffer.concat([Buffer.from(head), file, Buffer.from(`\r\n--${b}--\r\n`)]) };
}

export async function runSnapshotFlood({ requests = 400, concurrency = 4 } = {}) {
  const row = { part: '15 snapshot flood', cases: 0, failures: 0, http5xx: 0, crashes: 0, lostBytes: 0, rssBefore: 0, rssAfter: 0, rssPeak: 0 };
  const dir = tempDir('snapflood');
  const mnt = path.join(dir, 'mnt');
  fs.mkdirSync(mnt);
  if (spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=16m,mode=0700', 'tmpfs', mnt]).status !== 0) {
    return { row: { part: row.part, notRun: true, reason: 'cannot mount a tmpfs here (needs root)' } };
  }
  const failures = [];
  const fail = (kind, request, detail) => {
    row.failures++;
    if (failures.length < 10) failures.push({ kind, request, detail });
  };
  const freeBytes = () => {
    const s = fs.statfsSync(mnt);
    return s.bavail * s.bsize;
  };
  let lowest = Infinity;
  const sample = () => (lowest = Math.min(lowest, freeBytes()));
  const channels = {};
  for (let i = 0; i < 2000; i++) channels[`c${i}`] = { type: 'READ', 'value.type': 'INTEGER', simulation: 'constant' };
  const config = {
    dataDir: path.join(mnt, 'data'),
    'configuration.snapshots.max': 1000,
    identities: {
      admin: { password: PW, permissions: ['kura.admin'], passwordChangeNeeded: false },
      conf: { password: PW, permissions: ['rest.configuration'], passwordChangeNeeded: false },
      reader: { password: PW, permissions: ['rest.assets'], passwordChangeNeeded: false },
      pc: { password: PW, permissions: ['rest.assets'], passwordChangeNeeded: false },
    },
    rest: { 'login.throttle.max.delay': 0 },
    assets: { big: { 'driver.pid': 'sim', 'poll.interval': 1000, channels } },
  };
  let d;
  const ag = agent(concurrency + 3);
  try {
    d = await startDaemon(config, { dir });
    const port = d.port;
    row.rssBefore = d.rss();
    row.rssPeak = row.rssBefore;
    const answers = new Map();
    const count = (what, status) => answers.set(`${what} ${status}`, (answers.get(`${what} ${status}`) ?? 0) + 1);
    // Phase 1: the flood against the default byte bound (16 MiB, more than the partition holds).
    let next = 0;
    const flood = async (limit) => {
      while (next < limit) {
        next++;
        const r = await send(port, { method: 'POST', path: `${C}/snapshots/_write`, headers: auth('conf'), body: '{}' }, ag, 60_000);
        row.cases++;
        count('snapshot', r.status);
        if (r.status >= 500 && r.status !== 507) row.http5xx++;
        if (r.status !== 200 && !(r.status === 507 && /^\{"message":"Insufficient storage: the change could not be saved \(the data partition keeps its last/.test(r.body ?? ''))) fail('answer', 'snapshots/_write', `${r.status} ${String(r.body ?? r.error).slice(0, 160)}`);
        sample();
        row.rssPeak = Math.max(row.rssPeak, d.rss());
      }
    };
    let reading = true;
    const reads = { ok: 0, errors: 0 };
    const reader = (async () => {
      while (reading) {
        const r = await send(port, { method: 'POST', path: '/services/assets/big/_read', headers: auth('reader'), body: '{"channels":["c1"]}' }, ag, 30_000);
        if (r.status === 200) reads.ok++;
        else reads.errors++, reads.last = `${r.status} ${String(r.body ?? r.error).slice(0, 120)}`;
        await sleep(100);
      }
    })();
    const uploads = (async () => {
      for (let i = 0; i < 6; i++) {
        const m = multipart(packageOf(dir, `flood.pkg${i}`, MiB));
        const r = await send(port, { method: 'POST', path: '/services/deploy/v2/_upload', headers: { ...auth('admin'), 'content-type': m.type }, body: m.body }, ag, 60_000);
        row.cases++;
        count('upload', r.status);
        if (r.status !== 200 && r.status !== 507) fail('answer', '_upload 1 MiB', `${r.status} ${String(r.body ?? r.error).slice(0, 160)}`);
        sample();
        await sleep(200);
      }
    })();
    await Promise.all([...Array.from({ length: concurrency }, () => flood(Math.round(requests / 2))), uploads]);
    const snapshotsAfterFlood = fs.readdirSync(path.join(config.dataDir, 'config')).filter((n) => n.startsWith('snapshot_')).length;
    if (!answers.has('snapshot 507')) fail('bound', 'snapshot flood', `never stopped: ${snapshotsAfterFlood} snapshots on a 16 MiB partition`);
    // Identities on the nearly full partition: a password change and a new identity, both usable.
    const pc = await send(port, { method: 'PUT', path: '/services/identity/v1/identities', headers: auth('admin'), body: JSON.stringify({ userName: 'pc', password: 'Changed-pw-12' }) }, ag);
    const nu = await send(port, { method: 'POST', path: '/services/identity/v1/identities', headers: auth('admin'), body: JSON.stringify({ userName: 'late', password: 'Late-comer-pw-12', permissions: ['rest.assets'], passwordChangeNeeded: false }) }, ag);
    const lateRead = await send(port, { method: 'POST', path: '/services/assets/big/_read', headers: auth('late', 'Late-comer-pw-12'), body: '{"channels":["c1"]}' }, ag);
    row.cases += 3;
    if (pc.status !== 200 || nu.status !== 200 || lateRead.status !== 200) fail('identities', 'password change / new identity / its read on the nearly full partition', `${pc.status} ${nu.status} ${lateRead.status} ${String(pc.body || nu.body || lateRead.body).slice(0, 120)}`);
    reading = false;
    await reader;
    if (reads.errors) fail('service', 'asset reads during the flood', `${reads.errors} failed, the last: ${reads.last}`);
    sample();
    // Phase 2: the byte bound lowered (no snapshot for that change: there is no room for one).
    const low = await send(port, { method: 'PUT', path: `${C}/configurableComponents/configurations/_update`, headers: auth('conf'), body: JSON.stringify({ configs: [{ pid: 'org.eclipse.kura.gatewayd.Daemon', properties: { 'configuration.snapshots.max.bytes': { type: 'INTEGER', value: 2 * MiB } } }], takeSnapshot: false }) }, ag);
    if (low.status !== 200) fail('answer', 'lowering configuration.snapshots.max.bytes', `${low.status} ${String(low.body).slice(0, 160)}`);
    const before = answers.get('snapshot 200') ?? 0;
    await Promise.all(Array.from({ length: concurrency }, () => flood(requests)));
    const ok2 = (answers.get('snapshot 200') ?? 0) - before;
    const snapDir = path.join(config.dataDir, 'config');
    const files = fs.readdirSync(snapDir);
    const snapBytes = files.filter((n) => n.startsWith('snapshot_')).reduce((n, f) => n + fs.statSync(path.join(snapDir, f)).size, 0);
    if (snapBytes > 2 * MiB) fail('bound', 'snapshots after lowering the bound', `${snapBytes} bytes`);
    if (ok2 === 0) fail('bound', 'snapshots after lowering the bound', 'none written: the oldest were not dropped');
    if (files.some((n) => n.endsWith('.tmp'))) fail('torn', 'dataDir/config', 'a temporary file left');
    if (lowest < RESERVE) fail('reserve', 'free space during the flood', `${lowest} bytes free, under the ${RESERVE}-byte reserve`);
    row.rssAfter = d.rss();
    // The device starts again and its identities are whole.
    await d.stop();
    await d.start();
    const again = await send(port, { method: 'POST', path: '/services/assets/big/_read', headers: auth('pc', 'Changed-pw-12'), body: '{"channels":["c1"]}' }, ag);
    row.cases++;
    if (again.status !== 200) fail('restart', 'a read with the changed password after a restart', `${again.status}`);
    row.crashes = d.crashes;
    row.failures += d.crashes;
    return {
      row,
      notes: [
        `16 MiB tmpfs dataDir, 2,000-channel configuration; answers ${[...answers].map(([k, v]) => `${k}:${v}`).join(' ')}`,
        `lowest free space ${(lowest / MiB).toFixed(2)} MiB (reserve ${(RESERVE / MiB).toFixed(0)} MiB); after lowering the bound to 2 MiB ${ok2} more snapshots written, ${(snapBytes / MiB).toFixed(2)} MiB of snapshots kept`,
        `identities on the nearly full partition: password change ${pc.status}, new identity ${nu.status} and its read ${lateRead.status}; asset reads ${reads.ok} ok, ${reads.errors} errors; after a restart ${again.status}`,
      ],
      failures,
    };
  } finally {
    ag.destroy();
    if (d?.alive()) await d.kill();
    spawnSync('umount', ['-l', mnt]);
  }
}
