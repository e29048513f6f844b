// Part 5: power cuts. The daemon is SIGKILLed at a random moment while four writers run at once:
// package uploads, password changes, identity creations/deletions and telemetry appended to the MQTT
// outbox (broker unreachable). After every cut it must start again and load consistent state: every
// change it acknowledged is there (an in-flight one may go either way), no index entry is dropped,
// no store is unreadable. "State lost" is the size of acknowledged changes missing after a restart.
// Then a full disk (a tiny tmpfs as dataDir, or `ulimit -f` when mounting is not allowed): writes
// fail with a clear error, the daemon stays up, and nothing on disk is torn.

import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { freePort, startDaemon, tempDir } from './lib/daemon.mjs';
import { agent, loginHeaders, rng, send, sleep } from './lib/http.mjs';

const ADMIN_PW = 'Admin-pw-123';
const ID = '/services/identity/v1/identities';
const DEPLOY = '/services/deploy/v2';

/** A deployment package built with the `zip` command: name, version and a payload of `kb` KiB. */
function buildPackage(dir, name, version, kb = 64) {
  const src = path.join(dir, `${name}-${version}`);
  fs.mkdirSync(path.join(src, 'META-INF'), { recursive: true });
  fs.writeFileSync(path.join(src, 'META-INF', 'MANIFEST.MF'), `Manifest-Version: 1.0\r\nDeploymentPackage-SymbolicName: ${name}\r\nDeploymentPackage-Version: ${version}\r\n\r\n`);
  fs.writeFileSync(path.join(src, 'payload.bin'), Buffer.alloc(kb * 1024, name.length));
  const out = path.join(dir, `${name}-${version}.dp`);
  execFileSync('zip', ['-q', '-r', out, 'META-INF/MANIFEST.MF', 'payload.bin'], { cwd: src });
  return fs.readFileSync(out);
}

function multipart(file) {
  const boundary = `gwpc${Date.now()}`;
  return {
    type: `multipart/form-data; boundary=${boundary}`,
    body: Buffer.concat([Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="p.dp"\r\nContent-Type: application/octet-stream\r\n\r\n`), file, Buffer.from(`\r\n--${boundary}--\r\n`)]),
  };
}

function config(mqttPort) {
  return {
    'log.level': 'info',
    // The check after each cut tries every password that was in flight: no throttling of those tries.
    rest: { 'login.throttle.max.delay': 0 },
    identities: {
      admin: { password: ADMIN_PW, permissions: ['kura.admin'], passwordChangeNeeded: false },
      pc: { password: 'Pass-word-0', permissions: ['rest.assets'], passwordChangeNeeded: false },
    },
    mqtt: { enabled: true, 'broker-url': `mqtt://127.0.0.1:${mqttPort}`, 'client-id': 'pc', 'payload.encoding': 'json' },
    assets: { tele: { 'driver.pid': 'sim', 'poll.interval': 20, channels: { n: { type: 'READ', 'value.type': 'LONG', simulation: 'counter' }, s: { type: 'READ', 'value.type': 'DOUBLE', simulation: 'sine' } } } },
  };
}

/** What the daemon acknowledged (must survive) and what was in flight at the cut (either way). */
function newLedger() {
  return {
    identities: new Map(), // name → 'present' | 'absent' | 'pending-create' | 'pending-delete'
    password: { confirmed: 'Pass-word-0', pending: [] }, // pending: every one sent since the last acknowledgement
    packages: new Map(), // name → version confirmed installed (job SUCCEEDED)
    uploading: new Map(), // name → versions uploaded since the last check (any may have landed)
  };
}

export async function runPowerCuts({ cuts = 50, seed = 9 } = {}) {
  if (spawnSync('zip', ['-v']).status !== 0) return { row: { part: '5 power cuts', notRun: true, reason: 'the zip command is missing (packages are built with it)' } };
  const r = rng(seed);
  const work = tempDir('powercut');
  const pkgs = Array.from({ length: 6 }, (_, i) => ({ name: `cut.pkg${i % 3}`, version: `1.0.${i}`, bytes: buildPackage(work, `cut.pkg${i % 3}`, `1.0.${i}`, 32 + 32 * (i % 3)) }));
  const mqttPort = await freePort(); // nothing listens there: telemetry piles up in the outbox
  const d = await startDaemon(config(mqttPort));
  const port = d.port;
  const ledger = newLedger();
  const failures = [];
  const stats = { cuts: 0, ops: 0, acked: 0, lostBytes: 0, inconsistent: 0, notReady: 0, outboxTailsDiscarded: 0, outboxBytesDiscarded: 0, restartMs: [] };
  const rssBefore = d.rss();
  let rssPeak = rssBefore;
  let seq = 0;

  const fail = (kind, detail) => {
    stats.inconsistent++;
    if (failures.length < 10) failures.push({ kind, request: `after cut ${stats.cuts}`, detail });
  };

  async function verify(ag) {
    const admin = await loginHeaders(port, 'admin', ADMIN_PW, ag);
    const list = await send(port, { method: 'GET', path: ID, headers: admin }, ag);
    if (list.status !== 200) return fail('identity list', `${list.status} ${list.body}`);
    const names = new Set(JSON.parse(list.body).userConfig.map((u) => u.userName));
    for (const [name, state] of ledger.identities) {
      if (state === 'present' && !names.has(name)) {
        stats.lostBytes += JSON.stringify({ userName: name }).length + 64;
        fail('acknowledged identity lost', name);
      }
      if (state === 'absent' && names.has(name)) fail('acknowledged deletion undone', name);
      if (state.startsWith('pending')) ledger.identities.set(name, names.has(name) ? 'present' : 'absent');
    }
    // The password: the acknowledged one works, or the one in flight at the cut.
    const tryPw = async (pw) => (await send(port, { method: 'POST', path: '/services/session/v1/login/password', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: 'pc', password: pw }) }, ag)).status === 200;
    let works;
    for (const pw of [ledger.password.confirmed, ...[...ledger.password.pending].reverse()]) {
      if (await tryPw(pw)) {
        works = pw;
        break;
      }
    }
    if (works === undefined) {
      stats.lostBytes += ledger.password.confirmed.length;
      fail('acknowledged password lost', `neither ${ledger.password.confirmed} nor any of ${ledger.password.pending.join(', ') || 'none'} logs in`);
    } else ledger.password.confirmed = works;
    ledger.password.pending = [];
    const pk = await send(port, { method: 'GET', path: `${DEPLOY}/`, headers: admin }, ag);
    if (pk.status !== 200) return fail('package list', `${pk.status}`);
    const installed = new Map(JSON.parse(pk.body).map((p) => [p.name, p.version]));
    for (const [name, version] of ledger.packages) {
      const now = installed.get(name);
      // The acknowledged version, or one uploaded after it (in flight at the cut), must be there.
      if (now === undefined || (now !== version && !ledger.uploading.get(name)?.has(now))) {
        stats.lostBytes += pkgs.find((p) => p.version === version)?.bytes.length ?? 0;
        fail('acknowledged package lost', `${name} ${version} → ${now ?? 'absent'}`);
      }
    }
    ledger.uploading.clear();
    for (const [name, version] of installed) ledger.packages.set(name, version);
    return admin;
  }

  const ag = agent(8);
  let admin = await verify(ag);
  for (let cut = 0; cut < cuts; cut++) {
    let running = true;
    const writers = [
      // Package uploads: acknowledged once its job SUCCEEDED.
      (async () => {
        while (running) {
          const p = r.pick(pkgs);
          const m = multipart(p.bytes);
          stats.ops++;
          if (!ledger.uploading.has(p.name)) ledger.uploading.set(p.name, new Set());
          ledger.uploading.get(p.name).add(p.version);
          const res = await send(port, { method: 'POST', path: `${DEPLOY}/_upload`, headers: { ...admin, 'content-type': m.type }, body: m.body }, ag, 5000);
          if (res.status !== 200) continue;
          for (let i = 0; running && i < 40; i++) {
            const jobs = await send(port, { method: 'GET', path: `${DEPLOY}/_jobs`, headers: admin }, ag, 5000);
            if (jobs.status !== 200) break;
            const mine = JSON.parse(jobs.body).filter((j) => j.kind === 'install').at(-1);
            if (mine?.state === 'SUCCEEDED' && mine.version === p.version) {
              ledger.packages.set(p.name, p.version);
              stats.acked++;
              break;
            }
            if (mine?.state === 'FAILED') break;
            await sleep(25);
          }
        }
      })(),
      // Password changes of `pc` through the identity API.
      (async () => {
        while (running) {
          const pw = `Pass-word-${++seq}`;
          ledger.password.pending.push(pw);
          stats.ops++;
          const res = await send(port, { method: 'PUT', path: ID, headers: { ...admin, 'content-type': 'application/json' }, body: JSON.stringify({ userName: 'pc', password: pw }) }, ag, 5000);
          if (res.status === 200) {
            ledger.password.confirmed = pw;
            ledger.password.pending = [];
            stats.acked++;
          }
        }
      })(),
      // Identity creations and deletions.
      (async () => {
        while (running) {
          const existing = [...ledger.identities].filter(([, s]) => s === 'present').map(([n]) => n);
          const del = existing.length > 5 && r.chance(0.5);
          const name = del ? r.pick(existing) : `e${++seq}`;
          ledger.identities.set(name, del ? 'pending-delete' : 'pending-create');
          stats.ops++;
          const res = await send(port, { method: del ? 'DELETE' : 'POST', path: ID, headers: { ...admin, 'content-type': 'application/json' }, body: JSON.stringify(del ? { userName: name } : { userName: name, password: `Ident-pw-${seq}`, permissions: ['rest.assets'] }) }, ag, 5000);
          if (res.status === 200) {
            ledger.identities.set(name, del ? 'absent' : 'present');
            stats.acked++;
          }
        }
      })(),
    ];
    // The outbox writer is the daemon itself (telemetry every 20 ms); the cut lands at a random moment.
    await sleep(100 + r.int(1400));
    rssPeak = Math.max(rssPeak, d.rss());
    running = false; // no new writes after the cut; those in flight are cut
    await d.kill('SIGKILL');
    stats.cuts++;
    await Promise.all(writers);
    const t0 = Date.now();
    try {
      const before = d.logs.length;
      await d.start();
      stats.restartMs.push(Date.now() - t0);
      for (const line of d.logs.slice(before)) {
        if (/package index entry dropped|package index unreadable|identity store on disk is unusable|is unreadable|refusing to touch/.test(line)) fail('inconsistent state on disk', line);
        const tail = /discarded an incomplete tail.*bytes=(\d+)/.exec(line);
        if (tail) {
          stats.outboxTailsDiscarded++;
          stats.outboxBytesDiscarded += Number(tail[1]);
        }
      }
      ag.destroy();
      admin = await verify(ag);
    } catch (err) {
      stats.notReady++;
      fail('restart failed', err.message);
      await d.start().catch(() => {});
    }
    if (cut % 10 === 9) process.stderr.write(`  powercut: ${cut + 1}/${cuts} cuts, ${stats.acked} acknowledged changes, ${stats.inconsistent} inconsistencies\n`);
  }
  const rssAfter = d.rss();
  const identityCount = [...ledger.identities.values()].filter((s) => s === 'present').length;
  await d.stop();
  ag.destroy();

  const disk = await fullDisk();
  const row = {
    part: '5 power cuts + full disk',
    cases: stats.cuts + disk.cases,
    failures: stats.inconsistent + stats.notReady + disk.failures,
    http5xx: disk.http5xx,
    crashes: 0, // SIGKILLs are ours; a restart that fails is counted in failures
    lostBytes: stats.lostBytes,
    rssBefore,
    rssAfter,
    rssPeak,
  };
  const restart = stats.restartMs.sort((a, b) => a - b);
  return {
    row,
    notes: [
      `${stats.cuts} SIGKILLs during ${stats.ops} writes (${stats.acked} acknowledged: package installs, password changes, identity edits; telemetry into the outbox every 20 ms)`,
      `after each cut: restart ready in median ${restart[Math.floor(restart.length / 2)] ?? '-'} ms (max ${restart.at(-1) ?? '-'} ms); ${stats.notReady} failed restarts; ${stats.inconsistent} inconsistencies; acknowledged state lost: ${stats.lostBytes} bytes`,
      `end state: ${identityCount} created identities, packages ${[...ledger.packages].map(([n, v]) => `${n}@${v}`).join(' ')}, password of pc = the last acknowledged one`,
      `outbox: an incomplete tail record (never acknowledged to anyone) was discarded after ${stats.outboxTailsDiscarded} cuts, ${stats.outboxBytesDiscarded} bytes in all`,
      ...disk.notes,
    ],
    failures: [...failures, ...disk.failureList],
  };
}

/** A full disk: dataDir on a small tmpfs (root), filled up while the daemon writes. */
async function fullDisk() {
  const out = { cases: 0, failures: 0, http5xx: 0, notes: [], failureList: [] };
  const dir = tempDir('fulldisk');
  const mnt = path.join(dir, 'mnt');
  fs.mkdirSync(mnt);
  if (spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=4m,mode=0700', 'tmpfs', mnt]).status !== 0) {
    out.notes.push('full disk: NOT RUN (cannot mount a tmpfs here; needs root)');
    return out;
  }
  const mqttPort = await freePort();
  const cfg = config(mqttPort);
  cfg.dataDir = path.join(mnt, 'data');
  let d;
  try {
    d = await startDaemon(cfg, { dir });
    const ag = agent(4);
    const port = d.port;
    const admin = await loginHeaders(port, 'admin', ADMIN_PW, ag);
    const pkg = buildPackage(dir, 'disk.pkg', '1.0.0', 64);
    const m = multipart(pkg);
    await send(port, { method: 'POST', path: `${DEPLOY}/_upload`, headers: { ...admin, 'content-type': m.type }, body: m.body }, ag);
    await sleep(1000);
    const identitiesBefore = fs.readFileSync(path.join(cfg.dataDir, 'identities.json'), 'utf8');
    // Fill the disk to the last byte.
    spawnSync('sh', ['-c', `dd if=/dev/zero of=${mnt}/filler bs=64k 2>/dev/null; dd if=/dev/zero of=${mnt}/filler2 bs=1 2>/dev/null; true`]);
    const answers = [];
    const check = (what, res, wantFail = true) => {
      out.cases++;
      answers.push(`${what}: ${res.status} ${String(res.body ?? res.error).slice(0, 120)}`);
      if (res.status >= 500) out.http5xx++;
      if (wantFail && res.status === 200) return; // a write that fit in a page cache is fine
      if (res.status <= 0 || (res.status >= 500 && !/space|ENOSPC|disk|write/i.test(res.body ?? ''))) {
        out.failures++;
        out.failureList.push({ kind: 'unclear full-disk error', request: what, detail: `${res.status} ${res.body ?? res.error}` });
      }
    };
    check('identity create', await send(port, { method: 'POST', path: ID, headers: { ...admin, 'content-type': 'application/json' }, body: JSON.stringify({ userName: 'diskfull', password: 'Disk-full-pw-1', permissions: ['rest.assets'] }) }, ag));
    check('password change', await send(port, { method: 'PUT', path: ID, headers: { ...admin, 'content-type': 'application/json' }, body: JSON.stringify({ userName: 'pc', password: 'Disk-full-pw-2' }) }, ag));
    const m2 = multipart(buildPackage(dir, 'disk.pkg2', '1.0.0', 512));
    check('package upload', await send(port, { method: 'POST', path: `${DEPLOY}/_upload`, headers: { ...admin, 'content-type': m2.type }, body: m2.body }, ag));
    await sleep(1500); // telemetry keeps appending to the outbox meanwhile
    const jobs = await send(port, { method: 'GET', path: `${DEPLOY}/_jobs`, headers: admin }, ag);
    const lastJob = JSON.parse(jobs.body ?? '[]').at(-1);
    answers.push(`upload job: ${lastJob?.state} ${lastJob?.error ?? ''}`);
    const diskLogs = d.logs.filter((l) => /ENOSPC|no space/i.test(l)).slice(0, 3);
    const alive = d.alive();
    if (!alive) {
      out.failures++;
      out.failureList.push({ kind: 'crash on a full disk', request: 'writes on a full dataDir', detail: d.errors.at(-1) });
    }
    // Free the space and restart: every store must load, the identity file be whole.
    fs.rmSync(path.join(mnt, 'filler'), { force: true });
    fs.rmSync(path.join(mnt, 'filler2'), { force: true });
    await d.kill('SIGKILL');
    const torn = [];
    for (const f of ['identities.json', 'gatewayd-data.json', 'packages/index.json']) {
      const p = path.join(cfg.dataDir, f);
      if (!fs.existsSync(p)) continue;
      try {
        JSON.parse(fs.readFileSync(p, 'utf8'));
      } catch {
        torn.push(f);
      }
    }
    if (torn.length) {
      out.failures++;
      out.failureList.push({ kind: 'torn file after a full disk', request: torn.join(', '), detail: 'does not parse' });
    }
    const before = d.logs.length;
    await d.start();
    const bad = d.logs.slice(before).filter((l) => /unreadable|unusable|dropped|refusing/.test(l));
    if (bad.length) {
      out.failures++;
      out.failureList.push({ kind: 'inconsistent after a full disk', request: 'restart', detail: bad[0] });
    }
    const idNow = fs.readFileSync(path.join(cfg.dataDir, 'identities.json'), 'utf8');
    out.notes.push(
      `full disk (4 MB tmpfs dataDir, filled): ${answers.join('; ')}`,
      `full disk: daemon ${alive ? 'stayed up' : 'DIED'}; ENOSPC log lines: ${diskLogs.length ? diskLogs.map((l) => l.replace(/^time=\S+ /, '')).join(' | ') : 'none'}; torn files: ${torn.length ? torn.join(', ') : 'none'}; identity store after restart ${idNow === identitiesBefore ? 'unchanged' : 'changed (a write completed)'}`,
    );
    ag.destroy();
    await d.stop();
  } finally {
    if (d?.alive()) await d.kill();
    spawnSync('umount', ['-l', mnt]);
  }
  return out;
}
