// Atomic files in dataDir: write a temporary file, fsync it, rename it over the target, fsync the
// folder. A power cut at any moment leaves either the old or the new content, never a torn file.

import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { checkSpace, spaceMeter, type SpaceOptions } from './reserve.js';

let counter = 0;

/** Pieces of a file written in parts are gathered into writes of about this many characters. */
const WRITE_CHUNK = 64 * 1024;

function tempName(file: string): string {
  return path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.${++counter}.tmp`);
}

/**
 * Writes `data` to `file` atomically and durably (file mode 0600 by default). `data` may be a
 * sequence of strings, written one after the other as they come: a large file made piece by piece is
 * never whole in memory. The write stops at the data partition's reserve (src/store/reserve.ts)
 * unless `space` lets it use the reserve.
 */
export async function writeFileAtomic(file: string, data: string | Buffer | Iterable<string>, mode = 0o600, space: SpaceOptions = {}): Promise<void> {
  const dir = path.dirname(file);
  if (typeof data === 'string' || Buffer.isBuffer(data)) checkSpace(dir, Buffer.byteLength(data), space);
  const tmp = tempName(file);
  const fh = await fsp.open(tmp, 'w', mode);
  try {
    if (typeof data === 'string' || Buffer.isBuffer(data)) await fh.writeFile(data);
    else {
      // Small pieces are gathered into writes of about WRITE_CHUNK characters.
      const wrote = spaceMeter(dir, space);
      let chunk = '';
      const flush = async () => {
        const b = Buffer.from(chunk);
        chunk = '';
        wrote(b.length);
        for (let at = 0; at < b.length; ) at += (await fh.write(b, at)).bytesWritten;
      };
      for (const part of data) {
        chunk += part;
        if (chunk.length >= WRITE_CHUNK) await flush();
      }
      if (chunk) await flush();
    }
    await fh.sync();
  } catch (err) {
    await fh.close().catch(() => {});
    await fsp.rm(tmp, { force: true }).catch(() => {});
    throw err;
  }
  await fh.close();
  try {
    await fsp.rename(tmp, file);
  } catch (err) {
    await fsp.rm(tmp, { force: true }).catch(() => {});
    throw err;
  }
  await syncDir(path.dirname(file));
}

/** Synchronous twin, for start-up and shutdown paths that must not yield. */
export function writeFileAtomicSync(file: string, data: string | Buffer, mode = 0o600, space: SpaceOptions = {}): void {
  checkSpace(path.dirname(file), Buffer.byteLength(data), space);
  const tmp = tempName(file);
  const fd = fs.openSync(tmp, 'w', mode);
  try {
    fs.writeFileSync(fd, data);
    fs.fsyncSync(fd);
  } catch (err) {
    fs.closeSync(fd);
    fs.rmSync(tmp, { force: true });
    throw err;
  }
  fs.closeSync(fd);
  try {
    fs.renameSync(tmp, file);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    throw err;
  }
  syncDirSync(path.dirname(file));
}

export async function syncDir(dir: string): Promise<void> {
  const fh = await fsp.open(dir, 'r');
  try {
    await fh.sync();
  } catch {
    // Some filesystems refuse fsync on a directory; the rename is still atomic there.
  } finally {
    await fh.close();
  }
}

export function syncDirSync(dir: string): void {
  const fd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(fd);
  } catch {
    // see syncDir
  } finally {
    fs.closeSync(fd);
  }
}

/** A JSON state file carrying a format version, so newer firmware can migrate older dataDirs. */
export interface Versioned {
  formatVersion: number;
}

export async function writeJsonAtomic(file: string, value: unknown, space: SpaceOptions = {}): Promise<void> {
  await writeFileAtomic(file, JSON.stringify(value, null, 1) + '\n', 0o600, space);
}

/** Reads a JSON file; `undefined` when it does not exist. Leftover temporary files are removed. */
export function readJsonFile<T>(file: string): T | undefined {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  return JSON.parse(text) as T;
}

/** Removes temporary files left by a write interrupted by a crash or power cut. */
export function cleanTempFiles(dir: string): void {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return;
  }
  for (const n of names) if (n.startsWith('.') && n.endsWith('.tmp')) fs.rmSync(path.join(dir, n), { force: true });
}

/** Creates dataDir (and subfolders) with mode 0700. */
export function ensurePrivateDir(dir: string): void {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  try {
    fs.chmodSync(dir, 0o700);
  } catch {
    // read-only or foreign-owned: the caller finds out on first write
  }
}
