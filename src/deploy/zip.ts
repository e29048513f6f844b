// A small zip reader for deployment packages (.dp files are JARs, i.e. zips).
//
// It trusts nothing in the archive. The central directory is the index; every entry's local header
// is checked against it; names that could escape the extraction folder are refused; sizes declared
// by the archive are bounded before anything is inflated, and inflation itself stops at the declared
// size, so a lying header cannot make us allocate more than the limits allow. Only what a .dp needs
// is supported: stored and deflated entries, no encryption, no Zip64, no multi-disk archives.
//
// Format reference: PKWARE APPNOTE.TXT 6.3 (section numbers cited below).

import fsp from 'node:fs/promises';
import type zlibMod from 'node:zlib';
import { lazyBuiltin } from '../core/builtin.js';

// Loaded on first use (gzip'ed payloads and deployment packages are the exception).
const zlib = lazyBuiltin<typeof zlibMod>('node:zlib');
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { crc32 } from '../store/crc32.js';

export { crc32 }; // re-exported for the package tests' zip writer

const CHUNK = 64 * 1024;

export interface ZipLimits {
  /** Most entries (files and folders) an archive may have. */
  maxEntries: number;
  /** Largest uncompressed size of one entry, in bytes. */
  maxEntrySize: number;
  /** Largest sum of uncompressed sizes, in bytes. */
  maxTotalSize: number;
  /** Largest uncompressed/compressed ratio, checked for entries above `ratioFloor` bytes. */
  maxRatio: number;
  /** Entries smaller than this may compress as well as they like (small text compresses well). */
  ratioFloor: number;
}

export const DEFAULT_ZIP_LIMITS: ZipLimits = {
  maxEntries: 1000,
  maxEntrySize: 64 * 1024 * 1024,
  maxTotalSize: 256 * 1024 * 1024,
  maxRatio: 100,
  ratioFloor: 1024 * 1024,
};

export class ZipError extends Error {
  override name = 'ZipError';
}

export interface ZipEntry {
  /** The path inside the archive, `/`-separated; folders end with `/`. */
  name: string;
  isDirectory: boolean;
  /** 0 stored, 8 deflated. */
  method: number;
  crc32: number;
  compressedSize: number;
  size: number;
  /** Offset of the local file header. */
  localOffset: number;
}

const EOCD_SIG = 0x06054b50;
const CEN_SIG = 0x02014b50;
const LOC_SIG = 0x04034b50;
const EOCD_LEN = 22;
const CEN_LEN = 46;
const LOC_LEN = 30;
const MAX_COMMENT = 0xffff;

/**
 * Why a path may not be extracted, or `undefined` when it is safe: no absolute paths, drive letters,
 * backslashes (a Windows separator that could hide `..\`), `.`/`..`/empty segments or control chars.
 */
export function unsafePathReason(name: string): string | undefined {
  if (name.length === 0) return 'empty name';
  if (name.length > 1024) return 'name too long';
  if (/[\u0000-\u001f\u007f]/.test(name)) return 'control character in name';
  if (name.includes('\\')) return 'backslash in name';
  if (name.startsWith('/')) return 'absolute path';
  if (/^[a-zA-Z]:/.test(name)) return 'drive letter';
  const segs = (name.endsWith('/') ? name.slice(0, -1) : name).split('/');
  for (const s of segs) {
    if (s === '..') return 'parent folder reference';
    if (s === '' || s === '.') return 'empty or "." path segment';
  }
  return undefined;
}

/** An open archive. `close()` it when done. */
export class ZipArchive {
  private constructor(
    private readonly fh: fsp.FileHandle,
    readonly entries: ZipEntry[],
  ) {}

  static async open(file: string, limits: Partial<ZipLimits> = {}): Promise<ZipArchive> {
    const lim = { ...DEFAULT_ZIP_LIMITS, ...limits };
    const fh = await fsp.open(file, 'r');
    try {
      const entries = await readDirectory(fh, (await fh.stat()).size, lim);
      return new ZipArchive(fh, entries);
    } catch (err) {
      await fh.close();
      throw err;
    }
  }

  get(name: string): ZipEntry | undefined {
    return this.entries.find((e) => e.name === name);
  }

  /** The entry's content, inflated and CRC-checked. */
  async read(entry: ZipEntry): Promise<Buffer> {
    const parts: Buffer[] = [];
    for await (const chunk of this.chunks(entry)) parts.push(chunk);
    return Buffer.concat(parts);
  }

  /**
   * The entry's content in chunks of at most 64 KiB, so a large file is extracted without being
   * held in memory (the daemon may run under a tight memory limit). Inflation stops as soon as the
   * output passes the declared size (already bounded by the limits): a bomb whose header lies ends
   * there. Size and CRC-32 are checked at the end; a consumer must discard what it got on error.
   */
  async *chunks(entry: ZipEntry): AsyncGenerator<Buffer> {
    const head = await readAt(this.fh, entry.localOffset, LOC_LEN);
    // The name/extra lengths of the local header may differ from the central ones (APPNOTE 4.4.10).
    const dataStart = entry.localOffset + LOC_LEN + head.readUInt16LE(26) + head.readUInt16LE(28);
    const raw = rawChunks(this.fh, dataStart, entry.compressedSize);
    let size = 0;
    let crc = 0;
    if (entry.method === 0) {
      for await (const c of raw) {
        size += c.length;
        crc = crc32(c, crc);
        yield c;
      }
    } else {
      const inflater = zlib().createInflateRaw({ chunkSize: CHUNK });
      // Feed the inflater in the background; its errors surface through the iteration below.
      void pipeline(Readable.from(raw), inflater).catch(() => {});
      try {
        for await (const c of inflater as AsyncIterable<Buffer>) {
          size += c.length;
          if (size > entry.size) throw new ZipError(`${entry.name}: inflates to more than its declared size ${entry.size}`);
          crc = crc32(c, crc);
          yield c;
        }
      } catch (err) {
        if (err instanceof ZipError) throw err;
        throw new ZipError(`${entry.name}: corrupt deflate data`);
      } finally {
        inflater.destroy();
      }
    }
    if (size !== entry.size) throw new ZipError(`${entry.name}: size ${size} differs from the declared ${entry.size}`);
    if (crc !== entry.crc32) throw new ZipError(`${entry.name}: CRC-32 mismatch`);
  }

  async close(): Promise<void> {
    await this.fh.close();
  }
}

async function* rawChunks(fh: fsp.FileHandle, pos: number, len: number): AsyncGenerator<Buffer> {
  for (let off = 0; off < len; off += CHUNK) yield await readAt(fh, pos + off, Math.min(CHUNK, len - off));
}

async function readAt(fh: fsp.FileHandle, pos: number, len: number): Promise<Buffer> {
  const buf = Buffer.alloc(len);
  let off = 0;
  while (off < len) {
    const { bytesRead } = await fh.read(buf, off, len - off, pos + off);
    if (bytesRead === 0) throw new ZipError('archive is truncated');
    off += bytesRead;
  }
  return buf;
}

async function readDirectory(fh: fsp.FileHandle, fileSize: number, lim: ZipLimits): Promise<ZipEntry[]> {
  if (fileSize < EOCD_LEN) throw new ZipError('not a zip archive (too short or truncated)');
  // The end-of-central-directory record (APPNOTE 4.3.16) sits at the end, before a comment of up to
  // 64 KiB; scan backwards for its signature.
  const tailLen = Math.min(fileSize, EOCD_LEN + MAX_COMMENT);
  const tailStart = fileSize - tailLen;
  const tail = await readAt(fh, tailStart, tailLen);
  let eocd = -1;
  for (let i = tailLen - EOCD_LEN; i >= 0; i--) {
    if (tail.readUInt32LE(i) === EOCD_SIG && i + EOCD_LEN + tail.readUInt16LE(i + 20) === tailLen) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0) throw new ZipError('not a zip archive or truncated (no end of central directory)');
  const disk = tail.readUInt16LE(eocd + 4);
  const cdDisk = tail.readUInt16LE(eocd + 6);
  const countOnDisk = tail.readUInt16LE(eocd + 8);
  const count = tail.readUInt16LE(eocd + 10);
  const cdSize = tail.readUInt32LE(eocd + 12);
  const cdOffset = tail.readUInt32LE(eocd + 16);
  if (disk !== 0 || cdDisk !== 0 || countOnDisk !== count) throw new ZipError('multi-disk archives are not supported');
  if (count === 0xffff || cdSize === 0xffffffff || cdOffset === 0xffffffff) throw new ZipError('Zip64 archives are not supported');
  if (count > lim.maxEntries) throw new ZipError(`too many entries: ${count} (limit ${lim.maxEntries})`);
  const eocdPos = tailStart + eocd;
  if (cdOffset + cdSize > eocdPos) throw new ZipError('archive is truncated (central directory out of bounds)');

  const cd = await readAt(fh, cdOffset, cdSize);
  const entries: ZipEntry[] = [];
  const seen = new Set<string>();
  let total = 0;
  let p = 0;
  for (let i = 0; i < count; i++) {
    if (p + CEN_LEN > cd.length || cd.readUInt32LE(p) !== CEN_SIG) throw new ZipError('corrupt central directory');
    const flags = cd.readUInt16LE(p + 8);
    const method = cd.readUInt16LE(p + 10);
    const crc = cd.readUInt32LE(p + 16);
    const compressedSize = cd.readUInt32LE(p + 20);
    const size = cd.readUInt32LE(p + 24);
    const nameLen = cd.readUInt16LE(p + 28);
    const extraLen = cd.readUInt16LE(p + 30);
    const commentLen = cd.readUInt16LE(p + 32);
    const externalAttrs = cd.readUInt32LE(p + 38);
    const localOffset = cd.readUInt32LE(p + 42);
    const end = p + CEN_LEN + nameLen + extraLen + commentLen;
    if (end > cd.length) throw new ZipError('corrupt central directory');
    const name = cd.toString('utf8', p + CEN_LEN, p + CEN_LEN + nameLen);
    p = end;

    const bad = unsafePathReason(name);
    if (bad) throw new ZipError(`unsafe entry name ${JSON.stringify(name)}: ${bad}`);
    if (flags & 0x1) throw new ZipError(`${name}: encrypted entries are not supported`);
    if (method !== 0 && method !== 8) throw new ZipError(`${name}: compression method ${method} is not supported`);
    if (compressedSize === 0xffffffff || size === 0xffffffff || localOffset === 0xffffffff) {
      throw new ZipError(`${name}: Zip64 entries are not supported`);
    }
    // Unix mode in the high 16 bits (APPNOTE 4.4.15, "version made by" = 3): refuse symlinks.
    if (((externalAttrs >>> 16) & 0o170000) === 0o120000) throw new ZipError(`${name}: symbolic links are not allowed`);
    const key = name.toLowerCase();
    if (seen.has(key)) throw new ZipError(`duplicate entry ${JSON.stringify(name)}`);
    seen.add(key);
    if (method === 0 && size !== compressedSize) throw new ZipError(`${name}: stored entry with differing sizes`);
    if (size > lim.maxEntrySize) throw new ZipError(`${name}: ${size} bytes exceeds the entry size limit ${lim.maxEntrySize}`);
    total += size;
    if (total > lim.maxTotalSize) throw new ZipError(`archive expands beyond the total size limit ${lim.maxTotalSize}`);
    if (size > lim.ratioFloor && size > compressedSize * lim.maxRatio) {
      throw new ZipError(`${name}: compression ratio exceeds ${lim.maxRatio}`);
    }
    entries.push({ name, isDirectory: name.endsWith('/'), method, crc32: crc, compressedSize, size, localOffset });
  }

  // A file cannot also be a folder: `a` and `a/b` together could not be extracted.
  const files = new Set(entries.filter((e) => !e.isDirectory).map((e) => e.name.toLowerCase()));
  for (const e of entries) {
    const segs = e.name.toLowerCase().split('/');
    for (let i = 1; i < segs.length; i++) {
      const parent = segs.slice(0, i).join('/');
      if (files.has(parent)) throw new ZipError(`${e.name}: inside ${JSON.stringify(parent)}, which is a file`);
    }
  }

  // Every local header must be where the directory says, and the entries' data must not overlap
  // one another or the directory: overlapping entries are the classic way to build a zip bomb whose
  // declared sizes all look reasonable.
  const byOffset = [...entries].sort((a, b) => a.localOffset - b.localOffset);
  for (let i = 0; i < byOffset.length; i++) {
    const e = byOffset[i]!;
    if (e.localOffset + LOC_LEN > cdOffset) throw new ZipError(`${e.name}: archive is truncated`);
    const head = await readAt(fh, e.localOffset, LOC_LEN);
    if (head.readUInt32LE(0) !== LOC_SIG) throw new ZipError(`${e.name}: bad local header`);
    const localName = (await readAt(fh, e.localOffset + LOC_LEN, head.readUInt16LE(26))).toString('utf8');
    if (localName !== e.name) throw new ZipError(`${e.name}: local header names ${JSON.stringify(localName)}`);
    const dataEnd = e.localOffset + LOC_LEN + head.readUInt16LE(26) + head.readUInt16LE(28) + e.compressedSize;
    const limit = i + 1 < byOffset.length ? byOffset[i + 1]!.localOffset : cdOffset;
    if (dataEnd > cdOffset && i + 1 === byOffset.length) throw new ZipError(`${e.name}: archive is truncated`);
    if (dataEnd > limit) throw new ZipError(`${e.name}: entry data overlaps another entry`);
  }
  return entries;
}
