// A data partition a client cannot fill (docs/installation.md "What dataDir holds",
// docs/configuration-v2.md "The two layers", snapshots): snapshots are bounded in bytes as well as in
// number, the oldest dropped first, and every writer of dataDir stops at the partition's reserve
// with 507 — snapshots, configuration changes, package uploads — while identities may use the
// reserve, so passwords can still be changed and identities added on a nearly full partition, and
// the daemon keeps serving and starts again. Through the real daemon, its dataDir on an 8 MiB tmpfs.
import t from 'tap';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { startDaemon, type Daemon } from '../helpers/daemon.js';
import { basic } from '../helpers/session-client.js';
import { buildDp } from '../helpers/dp.js';
import { RESERVE_MIN_BYTES, reserveOf } from '../../src/store/reserve.js';

const MiB = 1048576;
const C = '/services/configuration/v2';
const DAEMON = 'org.eclipse.kura.gatewayd.Daemon';

t.test('the reserve: 1 % of the file system, between 2 and 32 MiB', async (t) => {
  t.equal(reserveOf(8 * MiB), 2 * MiB);
  t.equal(reserveOf(1024 * MiB), Math.round(10.24 * MiB));
  t.equal(reserveOf(64 * 1024 * MiB), 32 * MiB);
});

/** An 8 MiB tmpfs (root only); undefined, with the test skipped or failed under CI, when it cannot be mounted. */
function smallPartition(t: { teardown(fn: () => void): void; fail(m: string): void; plan(n: number, why?: string): void }): string | undefined {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-reserve-'));
  const mnt = path.join(dir, 'mnt');
  fs.mkdirSync(mnt);
  if (spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=8m,mode=0700', 'tmpfs', mnt]).status !== 0) {
    fs.rmSync(dir, { recursive: true, force: true });
    if (process.env.CI === 'true') t.fail('cannot mount a tmpfs (needs root)');
    else t.plan(0, 'skip: cannot mount a tmpfs (needs root)');
    return undefined;
  }
  t.teardown(() => {
    spawnSync('umount', ['-l', mnt]);
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return mnt;
}

const free = (dir: string) => {
  const s = fs.statfsSync(dir);
  return s.bavail * s.bsize;
};

function multipart(file: Buffer, name: string): { type: string; body: Buffer } {
  const b = `----gw${Math.random().toString(16).slice(2)}`;
  const head = `--${b}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: application/octet-stream\r\n\r\n`;
  return { type: `multipart/form-data; boundary=${b}`, body: Buffer.concat([Buffer.from(head), file, Buffer.from(`\r\n--${b}--\r\n`)]) };
}

t.test('a snapshot flood, uploads and changes stop at the byte bound and the reserve; identities still work', async (t) => {
  const mnt = smallPartition(t);
  if (!mnt) return;
  const channels: Record<string, unknown> = {};
  for (let i = 0; i < 1500; i++) channels[`c${i}`] = { type: 'READ', 'value.type': 'INTEGER', simulation: 'constant' };
  const dataDir = path.join(mnt, 'data');
  const config = {
    dataDir,
    'configuration.snapshots.max': 1000,
    'configuration.snapshots.max.bytes': MiB,
    identities: { admin: { password: 'Admin-pass-12', permissions: ['kura.admin'], passwordChangeNeeded: false } },
    rest: { 'login.throttle.max.delay': 0 },
    drivers: { sim: { factory: 'simulator' } },
    assets: { big: { 'driver.pid': 'sim', 'poll.interval': 1000, channels } },
  };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-reserve-cfg-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  let d: Daemon = await startDaemon(t, config, { dir });
  const admin = basic(d, 'admin', 'Admin-pass-12');
  const v2 = (p: string, body: unknown, method = 'POST', as = admin) => as.request(`${C}/${p}`, { method, body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  const snapshots = () => fs.readdirSync(path.join(dataDir, 'config')).filter((n) => n.startsWith('snapshot_'));
  const snapshotBytes = () => snapshots().reduce((n, f) => n + fs.statSync(path.join(dataDir, 'config', f)).size, 0);
  const size = snapshotBytes();
  t.ok(size > 100_000, `one snapshot: ${size} bytes`);

  // The byte bound: 30 snapshots asked for, the newest kept within 1 MiB, the oldest dropped.
  const written: number[] = [];
  for (let i = 0; i < 30; i++) {
    const r = await v2('snapshots/_write', {});
    t.equal(r.status, 200);
    written.push(r.json().id);
  }
  const ids = (await admin.request(`${C}/snapshots`)).json().ids as number[];
  t.ok(snapshotBytes() <= MiB, `${snapshots().length} snapshots, ${snapshotBytes()} bytes: within the bound`);
  t.same(ids, written.slice(-ids.length), 'the newest kept, in order; the oldest dropped');
  t.ok(ids.length >= 2 && ids.length <= Math.floor(MiB / size), `${ids.length} kept`);

  // The reserve: with the byte bound raised, the flood stops at 507 with the reserve still free.
  t.equal((await v2('configurableComponents/configurations/_update', { configs: [{ pid: DAEMON, properties: { 'configuration.snapshots.max.bytes': { type: 'INTEGER', value: 1024 * MiB } } }] }, 'PUT')).status, 200);
  let refused: { status: number; body: string } | undefined;
  for (let i = 0; i < 80 && !refused; i++) {
    const r = await v2('snapshots/_write', {});
    if (r.status !== 200) refused = r;
  }
  t.equal(refused?.status, 507, 'the flood is refused once the reserve is reached');
  t.match(JSON.parse(refused!.body).message, /^Insufficient storage: the change could not be saved \(the data partition keeps its last 2\.0 MiB free for the device's identities; [\d.]+ MiB are free, [\d.]+ MiB to write\)$/);
  t.ok(free(mnt) >= RESERVE_MIN_BYTES, `${(free(mnt) / MiB).toFixed(2)} MiB still free`);
  t.equal(fs.readdirSync(path.join(dataDir, 'config')).filter((n) => n.endsWith('.tmp')).length, 0, 'no partial snapshot left');

  // A change whose snapshot would not fit: 507 and nothing applied; without a snapshot it fits.
  const up = await v2('configurableComponents/configurations/_update', { configs: [{ pid: 'big', properties: { 'poll.interval': { type: 'INTEGER', value: 3000 } } }] }, 'PUT');
  t.equal(up.status, 507, 'a change with its snapshot refused');
  t.equal((await admin.request('/services/assets/big/_status')).json().pollInterval, 1000, 'nothing applied');
  const small = await v2('configurableComponents/configurations/_update', { configs: [{ pid: 'big', properties: { 'poll.interval': { type: 'INTEGER', value: 2000 } } }], takeSnapshot: false }, 'PUT');
  t.equal(small.status, 200, 'one without a snapshot fits');

  // Uploads: refused, the partial file removed.
  const pkg = buildDp({ name: 'big.pkg', version: '1.0.0' }, [{ name: 'blob.bin', data: crypto.randomBytes(MiB), method: 'store' }]);
  const m = multipart(pkg, 'big.dp');
  const up2 = await admin.request('/services/deploy/v2/_upload', { method: 'POST', body: m.body, headers: { 'content-type': m.type } });
  t.equal(up2.status, 507, 'an upload refused');
  t.match(up2.body, /^Insufficient storage: the change could not be saved \(the data partition keeps its last 2\.0 MiB free/);
  t.same(fs.readdirSync(path.join(dataDir, 'packages', '.incoming')), [], 'nothing left of it');

  // Identities use the reserve: a new identity, a password change, both usable at once.
  const id = (body: unknown, method = 'POST') => admin.request('/services/identity/v1/identities', { method, body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  t.equal((await id({ userName: 'tech', password: 'Tech-pass-1234', permissions: ['rest.assets'], passwordChangeNeeded: false })).status, 200, 'an identity created');
  t.equal((await id({ userName: 'admin', password: 'Admin-pass-34' }, 'PUT')).status, 200, 'a password changed');
  t.equal((await basic(d, 'tech', 'Tech-pass-1234').request('/services/assets/big/_read', { method: 'POST', body: { channels: ['c1'] } })).status, 200, 'the new identity reads the asset');
  const admin2: typeof admin = basic(d, 'admin', 'Admin-pass-34');
  t.equal((await admin2.request(`${C}/snapshots`)).status, 200, 'the new password works');
  t.equal(d.proc.exitCode, null, 'the daemon keeps serving');

  // A lowered byte bound makes room: the oldest snapshots go before the next one needs the space.
  t.equal((await v2('configurableComponents/configurations/_update', { configs: [{ pid: DAEMON, properties: { 'configuration.snapshots.max.bytes': { type: 'INTEGER', value: MiB } } }], takeSnapshot: false }, 'PUT', admin2)).status, 200);
  t.equal((await v2('snapshots/_write', {}, 'POST', admin2)).status, 200, 'a snapshot fits again');
  t.ok(snapshotBytes() <= MiB, `${snapshotBytes()} bytes of snapshots`);

  // And the device starts again on the nearly full partition, its identities intact.
  await d.stop();
  d = await startDaemon(t, config, { dir });
  t.equal((await basic(d, 'tech', 'Tech-pass-1234').request('/services/assets/big/_read', { method: 'POST', body: { channels: ['c1'] } })).status, 200, 'after a restart');
  t.equal((await basic(d, 'admin', 'Admin-pass-34').request('/services/assets/big/_status')).json().pollInterval, 2000, 'with the change that fitted');
  await d.stop();
});
