// The image's own packages, for INVENTORY-V1 and inventory/v1 `systemPackages` (docs/mqtt.md
// "INVENTORY-V1"): read from the package manager's status database, dpkg's or opkg's, which share
// the control-file format of Debian Policy section 5 ("Package:", "Version:", "Status:" fields in
// paragraphs separated by blank lines; Debian Policy section 5.1 for continuation lines). Kura runs
// `dpkg-query -W`; gatewayd reads the file instead (no process, no shell, and the same answer on
// an opkg image, where Kura finds nothing).
//
// The file is whatever the image holds, so the reading is bounded whatever it says: it is read in
// chunks and at most MAX_DATABASE_BYTES of it; a line longer than MAX_LINE_BYTES is skipped without
// being held; a name or version that is no package name or version is skipped; at most
// MAX_SYSTEM_PACKAGES are listed (the rest is cut, with one log line). Only a regular file is read
// (a FIFO or a device would never end). The list is kept until the file changes (size, mtime, inode).

import fs from 'node:fs';
import fsp from 'node:fs/promises';
import type { Logger } from '../log.js';

export const MAX_DATABASE_BYTES = 64 * 1024 * 1024;
export const MAX_LINE_BYTES = 4096;
export const MAX_SYSTEM_PACKAGES = 10_000;
const MAX_FIELD_CHARS = 255;
const CHUNK_BYTES = 64 * 1024;

/** The `deploy` key `system.packages.database`: `auto`, `none`, `dpkg:<path>` or `opkg:<path>`. */
export type PackageDatabaseSetting = string;

/** Kura's SystemResourceType names: DEB for dpkg; opkg's packages are IPK (Kura has no name for them). */
export type SystemPackageType = 'DEB' | 'IPK';

export interface SystemPackage {
  name: string;
  version: string;
  type: SystemPackageType;
}

interface Database {
  file: string;
  type: SystemPackageType;
}

/** Where `auto` looks, in order: Debian's dpkg, then opkg's two usual places (OpenWrt, Yocto). */
const AUTO: readonly Database[] = [
  { file: '/var/lib/dpkg/status', type: 'DEB' },
  { file: '/var/lib/opkg/status', type: 'IPK' },
  { file: '/usr/lib/opkg/status', type: 'IPK' },
];

const FORMATS: Record<string, SystemPackageType> = { dpkg: 'DEB', opkg: 'IPK' };

/** Why a setting is not one; undefined when it is. */
export function packageDatabaseProblem(setting: string): string | undefined {
  if (setting === 'auto' || setting === 'none') return undefined;
  const m = /^(dpkg|opkg):(.*)$/.exec(setting);
  if (!m) return 'expected auto, none, dpkg:<absolute path> or opkg:<absolute path>';
  if (!m[2]!.startsWith('/')) return `expected an absolute path after ${m[1]}:`;
  return undefined;
}

// Debian Policy sections 5.6.1 (package names) and 5.6.12 (versions), with the upper-case letters and
// underscores opkg feeds use; anything else (control characters, quotes, markup) is no package.
const NAME = /^[A-Za-z0-9][A-Za-z0-9+._-]*$/;
const VERSION = /^[A-Za-z0-9][A-Za-z0-9.+~:_-]*$/;
/** dpkg's states in which some of the package is on the system (dpkg-query(1) "Package states"). */
const NOT_PRESENT = new Set(['not-installed', 'config-files']);

/** Reads the system package database a setting names, keeping the list until the file changes. */
export class SystemPackages {
  private cached: { key: string; file: string; list: SystemPackage[] } | undefined;
  private reading: { key: string; promise: Promise<SystemPackage[]> } | undefined;

  constructor(
    private readonly setting: () => PackageDatabaseSetting,
    private readonly log: Logger,
  ) {}

  /** The packages, in the database's order; empty when there is none. Throws when it cannot be read. */
  async list(): Promise<SystemPackage[]> {
    const db = this.database();
    if (!db) return [];
    let fh: fsp.FileHandle;
    try {
      // Non-blocking: opening a FIFO for reading would wait for a writer.
      fh = await fsp.open(db.file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' && this.setting() === 'auto') return [];
      throw new Error(`the system package database ${db.file} cannot be read (${code ?? (err as Error).message})`);
    }
    try {
      const st = await fh.stat();
      if (!st.isFile()) throw new Error(`the system package database ${db.file} is not a regular file`);
      const key = `${db.file}:${db.type}:${st.dev}:${st.ino}:${st.size}:${st.mtimeMs}`;
      if (this.cached?.key === key) return this.cached.list;
      // Parallel requests share one reading of the file.
      if (this.reading?.key !== key) {
        const promise = parseDatabase(fh, db, this.log).then((list) => {
          this.cached = { key, file: db.file, list };
          return list;
        });
        this.reading = { key, promise };
        promise.then(
          () => this.reading?.promise === promise && (this.reading = undefined),
          () => this.reading?.promise === promise && (this.reading = undefined),
        );
        const list = await promise;
        return list;
      }
      return await this.reading.promise;
    } finally {
      await fh.close();
    }
  }

  private database(): Database | undefined {
    const s = this.setting();
    if (s === 'none') return undefined;
    if (s === 'auto') return AUTO.find((d) => fs.existsSync(d.file)) ?? AUTO[0];
    const at = s.indexOf(':');
    return { file: s.slice(at + 1), type: FORMATS[s.slice(0, at)] ?? 'DEB' };
  }
}

/** Parses a status database read from `fh` in bounded chunks (the header says what is bounded). */
async function parseDatabase(fh: fsp.FileHandle, db: Database, log: Logger): Promise<SystemPackage[]> {
  const list: SystemPackage[] = [];
  let name: string | undefined;
  let version: string | undefined;
  let state: string | undefined;
  let cut = false;
  const endParagraph = () => {
    if (name !== undefined && version !== undefined && !(state !== undefined && NOT_PRESENT.has(state))) {
      if (list.length < MAX_SYSTEM_PACKAGES) list.push({ name, version, type: db.type });
      else cut = true;
    }
    name = version = state = undefined;
  };
  const field = (line: string) => {
    if (line.trim() === '') return endParagraph();
    // A continuation line (Debian Policy section 5.1) belongs to a field gatewayd does not read.
    if (line.startsWith(' ') || line.startsWith('\t')) return;
    const colon = line.indexOf(':');
    if (colon <= 0) return;
    // Field names are case-insensitive (Debian Policy section 5.1).
    const key = line.slice(0, colon).toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (key === 'package') name = value.length <= MAX_FIELD_CHARS && NAME.test(value) ? value : undefined;
    else if (key === 'version') version = value.length <= MAX_FIELD_CHARS && VERSION.test(value) ? value : undefined;
    // `Status: <want> <flag> <state>`: the state is the last word.
    else if (key === 'status') state = value.split(/\s+/).pop();
  };

  const buf = Buffer.alloc(CHUNK_BYTES);
  let pending = '';
  let skipping = false;
  let total = 0;
  for (;;) {
    const { bytesRead } = await fh.read(buf, 0, CHUNK_BYTES, null);
    if (bytesRead === 0) break;
    total += bytesRead;
    if (total > MAX_DATABASE_BYTES) throw new Error(`the system package database ${db.file} is larger than ${MAX_DATABASE_BYTES} bytes`);
    // Latin-1 keeps one character per byte: a line's length is its bytes, and a name or version
    // with anything beyond ASCII fails its pattern.
    const text = buf.toString('latin1', 0, bytesRead);
    let at = 0;
    for (;;) {
      const nl = text.indexOf('\n', at);
      if (nl < 0) break;
      if (!skipping && pending.length + nl - at <= MAX_LINE_BYTES) field((pending + text.slice(at, nl)).replace(/\r$/, ''));
      pending = '';
      skipping = false;
      at = nl + 1;
    }
    if (!skipping) {
      if (pending.length + text.length - at > MAX_LINE_BYTES) {
        skipping = true;
        pending = '';
      } else pending += text.slice(at);
    }
  }
  if (!skipping && pending !== '') field(pending);
  endParagraph();
  if (cut) log.warn('system package list cut at its bound', { file: db.file, listed: MAX_SYSTEM_PACKAGES });
  return list;
}
