// dataDir format versioning, for over-the-air updates: a newer gatewayd migrates an older dataDir
// forward; an older gatewayd refuses a newer dataDir instead of corrupting it.

import fs from 'node:fs';
import path from 'node:path';
import { cleanTempFiles, ensurePrivateDir, readJsonFile, writeFileAtomicSync } from './atomic.js';

/** The dataDir layout this build writes. Bump it together with a migration below. */
export const DATA_FORMAT_VERSION = 1;

export interface DataDirInfo {
  formatVersion: number;
  writtenBy: string;
}

export class DataDirError extends Error {}

/** Migrations from format N to N+1, by N. Each must be idempotent (a power cut may repeat it). */
export type Migration = (dataDir: string) => void;
export const MIGRATIONS: Record<number, Migration> = {};

const MARKER = 'gatewayd-data.json';

/**
 * Prepares dataDir: creates it 0700, removes temp files of interrupted writes, checks the format
 * version and migrates forward. Throws DataDirError with a message for the operator.
 */
export function openDataDir(dataDir: string, version: string, migrations: Record<number, Migration> = MIGRATIONS, current = DATA_FORMAT_VERSION): DataDirInfo {
  try {
    ensurePrivateDir(dataDir);
  } catch (err) {
    throw new DataDirError(`cannot create dataDir ${dataDir}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  cleanTempFiles(dataDir);
  const file = path.join(dataDir, MARKER);
  let info: DataDirInfo | undefined;
  try {
    info = readJsonFile<DataDirInfo>(file);
  } catch (err) {
    throw new DataDirError(`${file} is unreadable (${(err as Error).message}); refusing to touch this dataDir`);
  }
  if (info === undefined) {
    // A dataDir with content but no marker was written by the first format.
    const fresh = fs.readdirSync(dataDir).filter((n) => n !== MARKER).length === 0;
    info = { formatVersion: fresh ? current : 1, writtenBy: fresh ? version : 'unknown' };
  }
  if (typeof info.formatVersion !== 'number' || !Number.isInteger(info.formatVersion) || info.formatVersion < 1) {
    throw new DataDirError(`${file} has no valid formatVersion; refusing to touch this dataDir`);
  }
  if (info.formatVersion > current) {
    throw new DataDirError(
      `dataDir ${dataDir} has format ${info.formatVersion} (written by gatewayd ${info.writtenBy}); this gatewayd ${version} understands up to format ${current}. Install a newer gatewayd or point dataDir elsewhere.`,
    );
  }
  while (info.formatVersion < current) {
    const m = migrations[info.formatVersion];
    if (!m) throw new DataDirError(`no migration from dataDir format ${info.formatVersion}`);
    m(dataDir);
    info = { formatVersion: info.formatVersion + 1, writtenBy: version };
    writeFileAtomicSync(file, JSON.stringify(info) + '\n', 0o600, { useReserve: true });
  }
  if (info.writtenBy !== version || !fs.existsSync(file)) {
    info = { formatVersion: current, writtenBy: version };
    writeFileAtomicSync(file, JSON.stringify(info) + '\n', 0o600, { useReserve: true });
  }
  return info;
}

/** uid and gid of `user` from /etc/passwd (the image has no other user database). */
function lookupUser(user: string): { uid: number; gid: number } | undefined {
  let text = '';
  try {
    text = fs.readFileSync('/etc/passwd', 'utf8');
  } catch {
    return undefined;
  }
  const f = text.split('\n').map((l) => l.split(':')).find((f) => f[0] === user && f.length >= 4);
  return f ? { uid: Number(f[2]), gid: Number(f[3]) } : undefined;
}

/** Gives every root-owned entry under `dir` (a previous root run's files) to uid:gid. */
function giveBack(dir: string, uid: number, gid: number): number {
  let n = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (fs.lstatSync(p).uid === 0) {
      fs.lchownSync(p, uid, gid);
      n++;
    }
    if (e.isDirectory()) n += giveBack(p, uid, gid);
  }
  return n;
}

/**
 * Run as root, a command that writes dataDir (`gatewayd passwd`) becomes the dataDir's owner before
 * touching it, so every file it writes stays the daemon's (docs/installation.md, "Field recovery").
 * Root-owned files a previous root run left there are given back first. A missing dataDir is
 * created 0700 for `user` (the daemon's user) when that user exists. When the dataDir is root's, or
 * the caller is not root, nothing changes. Returns the uid now acted as and the files given back.
 */
export function actAsDataDirOwner(dataDir: string, user: string): { uid: number; repaired: number } | undefined {
  if (process.getuid?.() !== 0 || !process.setuid || !process.setgid) return undefined;
  let st = fs.statSync(dataDir, { throwIfNoEntry: false });
  if (!st) {
    const pw = lookupUser(user);
    if (!pw || pw.uid === 0) return undefined;
    fs.mkdirSync(path.dirname(dataDir), { recursive: true });
    fs.mkdirSync(dataDir, { mode: 0o700 });
    fs.chownSync(dataDir, pw.uid, pw.gid);
    st = fs.statSync(dataDir);
  }
  if (st.uid === 0) return undefined;
  const repaired = giveBack(dataDir, st.uid, st.gid);
  process.setgroups?.([st.gid]);
  process.setgid(st.gid);
  process.setuid(st.uid);
  return { uid: st.uid, repaired };
}
