// Installed deployment packages in `<dataDir>/packages`.
//
// Layout:
//   packages/index.json                the truth: which packages are installed, in install order
//   packages/<name>_<version>_<id>/    one folder per installed package, its files as in the .dp
//   packages/.staging-<id>/            a package being extracted (never referenced by the index)
//   packages/.incoming/                downloads and uploads waiting for their install job
//
// An install extracts into a staging folder, fsyncs every file and folder, renames the folder to its
// final name and only then rewrites the index atomically (src/store/atomic.ts). The index write is
// the commit point: a crash before it leaves the old index (the new folder is an orphan), a crash
// after it leaves the new one (the replaced folder is an orphan). At open, every folder the index
// does not name is removed, so either way the disk matches the old or the new state.

import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { nodeCrypto } from '../core/builtin.js';
import type { Logger } from '../log.js';
import { cleanTempFiles, ensurePrivateDir, readJsonFile, syncDir, writeJsonAtomic } from '../store/atomic.js';
import { spaceMeter, type SpaceOptions } from '../store/reserve.js';
import { ZipArchive, type ZipLimits } from './zip.js';
import { MANIFEST_PATH, isSymbolicName, readPackageManifest, type PackageManifest } from './manifest.js';

export const STORE_FORMAT_VERSION = 1;

export interface InstalledPackage {
  name: string;
  version: string;
  /** Folder name under `packages/`. */
  dir: string;
  /** Extension modules (paths inside the package), in load order. */
  extensions: string[];
  installedAt: string;
  /**
   * Its plug-in's bundle id (docs/packages.md "Bundles"): given at the first install, kept when the
   * package is replaced, never given again after an uninstall (as OSGi numbers bundles). Absent in
   * an index written before bundle ids: given in index order at open.
   */
  bundleId?: number;
  /** Its plug-in was stopped (EXEC/stop): it stays stopped across restarts until started or replaced. */
  stopped?: boolean;
  /** Its signature (src/deploy/signature.ts) was verified with a trust anchor when it was installed. */
  signed?: boolean;
}

interface IndexFile {
  formatVersion: number;
  packages: InstalledPackage[];
  /** The bundle id the next new package gets. */
  nextBundleId?: number;
}

/** A package that cannot be installed (bad archive, manifest or signature): the user's problem. */
export class PackageError extends Error {
  override name = 'PackageError';
}

/**
 * Checks an archive before anything is extracted (e.g. its signature); throws to refuse it.
 * Resolves `{ signed: true }` when it verified the package's signature.
 */
export type ArchiveCheck = (zip: ZipArchive, manifest: PackageManifest) => Promise<void | { signed: boolean }>;

export interface PackageStoreOptions {
  dataDir: string;
  log: Logger;
  limits?: Partial<ZipLimits>;
  check?: ArchiveCheck;
}

const DIR_NAME = /^[A-Za-z0-9_.-]+_[0-9a-f]{8}$/;

export class PackageStore {
  readonly root: string;
  private readonly indexFile: string;
  private packages: InstalledPackage[] = [];
  /** Bundle id 0 is the daemon itself (the system bundle); packages count from 1. */
  private nextBundleId = 1;

  constructor(private readonly opts: PackageStoreOptions) {
    this.root = path.join(opts.dataDir, 'packages');
    this.indexFile = path.join(this.root, 'index.json');
  }

  /** Loads the index and removes whatever an interrupted install or uninstall left behind. */
  open(): void {
    ensurePrivateDir(this.root);
    cleanTempFiles(this.root);
    let index: IndexFile | undefined;
    try {
      index = readJsonFile<IndexFile>(this.indexFile);
    } catch (err) {
      // Atomic writes make this unexpected (disk corruption, a hand edit). Keep every folder for
      // manual recovery, set the file aside, and start with no packages rather than not at all.
      const aside = `${this.indexFile}.unreadable-${Date.now()}`;
      fs.renameSync(this.indexFile, aside);
      this.opts.log.error('package index unreadable; starting without packages', { file: aside, error: (err as Error).message });
      this.packages = [];
      return;
    }
    if (index && index.formatVersion !== STORE_FORMAT_VERSION) {
      throw new Error(`${this.indexFile}: formatVersion ${index.formatVersion} is not supported (expected ${STORE_FORMAT_VERSION})`);
    }
    this.packages = [];
    for (const p of index?.packages ?? []) {
      if (!isSymbolicName(p.name) || !DIR_NAME.test(p.dir) || !fs.existsSync(path.join(this.root, p.dir))) {
        this.opts.log.warn('package index entry dropped: its folder is missing or invalid', { package: p.name, dir: p.dir });
        continue;
      }
      this.packages.push(p);
    }
    this.nextBundleId = Math.max(1, Number.isSafeInteger(index?.nextBundleId) ? index!.nextBundleId! : 1, ...this.packages.map((p) => (Number.isSafeInteger(p.bundleId) ? p.bundleId! + 1 : 1)));
    // A missing, invalid or repeated id (a hand-edited index) gets the next free one.
    const seen = new Set<number>();
    for (const p of this.packages) {
      if (!Number.isSafeInteger(p.bundleId) || p.bundleId! < 1 || seen.has(p.bundleId!)) p.bundleId = this.nextBundleId++;
      seen.add(p.bundleId!);
    }
    const keep = new Set(this.packages.map((p) => p.dir));
    for (const entry of fs.readdirSync(this.root)) {
      if (entry === 'index.json' || keep.has(entry)) continue;
      fs.rmSync(path.join(this.root, entry), { recursive: true, force: true });
      if (!entry.startsWith('.')) this.opts.log.info('removed leftover package folder', { dir: entry });
    }
  }

  list(): readonly InstalledPackage[] {
    return this.packages;
  }

  get(name: string): InstalledPackage | undefined {
    return this.packages.find((p) => p.name === name);
  }

  /** Absolute folder of an installed package. */
  dirOf(pkg: InstalledPackage): string {
    return path.join(this.root, pkg.dir);
  }

  /** A fresh path for a download or upload waiting to be installed (inside dataDir). */
  incomingPath(): string {
    const dir = path.join(this.root, '.incoming');
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    return path.join(dir, `${nodeCrypto().randomUUID()}.dp`);
  }

  /**
   * Validates and installs the package in `file` (which is left in place). A package of the same
   * name is replaced atomically; it is returned as `replaced` so its code can be stopped. `veto`
   * sees the manifest before anything is extracted and may throw to stop the install.
   */
  async install(file: string, veto?: (m: PackageManifest) => void): Promise<{ pkg: InstalledPackage; replaced?: InstalledPackage }> {
    let zip: ZipArchive;
    try {
      zip = await ZipArchive.open(file, this.opts.limits);
    } catch (err) {
      throw asPackageError(err);
    }
    const id = nodeCrypto().randomUUID().slice(0, 8);
    const staging = path.join(this.root, `.staging-${id}`);
    let finalDir: string | undefined;
    try {
      const manifestEntry = zip.get(MANIFEST_PATH);
      if (!manifestEntry) throw new PackageError(`${MANIFEST_PATH} is missing`);
      let manifest: PackageManifest;
      try {
        manifest = readPackageManifest((await zip.read(manifestEntry)).toString('utf8'));
      } catch (err) {
        throw asPackageError(err, `${MANIFEST_PATH}: `);
      }
      veto?.(manifest);
      for (const ext of manifest.extensions) {
        const e = zip.get(ext);
        if (!e || e.isDirectory) throw new PackageError(`Gatewayd-Extension ${ext} is not a file in the package`);
      }
      const verdict = await this.opts.check?.(zip, manifest).catch((err) => {
        throw asPackageError(err);
      });

      await extract(zip, staging, manifest);
      const dirName = `${manifest.name}_${manifest.version}_${id}`;
      finalDir = path.join(this.root, dirName);
      await fsp.rename(staging, finalDir);
      await syncDir(this.root);

      const replaced = this.get(manifest.name);
      // A replaced package keeps its bundle id; a new one takes the next. A replaced package that
      // was stopped starts again, as OSGi's Deployment Admin starts the bundles it installs.
      const pkg: InstalledPackage = {
        name: manifest.name,
        version: manifest.version,
        dir: dirName,
        extensions: manifest.extensions,
        installedAt: new Date().toISOString(),
        bundleId: replaced?.bundleId ?? this.nextBundleId,
        ...(verdict?.signed === true ? { signed: true } : {}),
      };
      // Same name: replaced in place, so the start-up order stays the order of first install.
      const next = replaced ? this.packages.map((p) => (p === replaced ? pkg : p)) : [...this.packages, pkg];
      const nextId = replaced ? this.nextBundleId : this.nextBundleId + 1;
      await this.writeIndex(next, undefined, nextId);
      finalDir = undefined; // committed
      this.packages = next;
      this.nextBundleId = nextId;
      if (replaced) await fsp.rm(this.dirOf(replaced), { recursive: true, force: true });
      return { pkg, replaced };
    } finally {
      await zip.close();
      await fsp.rm(staging, { recursive: true, force: true });
      if (finalDir) await fsp.rm(finalDir, { recursive: true, force: true });
    }
  }

  /** Removes an installed package; `undefined` when no package has that name. */
  async remove(name: string): Promise<InstalledPackage | undefined> {
    const pkg = this.get(name);
    if (!pkg) return undefined;
    const next = this.packages.filter((p) => p !== pkg);
    // An uninstall frees space: its index write may use the data partition's reserve.
    await this.writeIndex(next, { useReserve: true });
    this.packages = next;
    await fsp.rm(this.dirOf(pkg), { recursive: true, force: true });
    return pkg;
  }

  /**
   * Records that a package's plug-in is stopped or started (written before the plug-in changes, so
   * a power cut between the two leaves what was asked for at the next start).
   */
  async setStopped(name: string, stopped: boolean): Promise<void> {
    const pkg = this.get(name);
    if (!pkg || Boolean(pkg.stopped) === stopped) return;
    const changed: InstalledPackage = { ...pkg, stopped: stopped || undefined };
    const next = this.packages.map((p) => (p === pkg ? changed : p));
    await this.writeIndex(next);
    this.packages = next;
  }

  private async writeIndex(packages: InstalledPackage[], space?: SpaceOptions, nextBundleId = this.nextBundleId): Promise<void> {
    const index: IndexFile = { formatVersion: STORE_FORMAT_VERSION, packages, nextBundleId };
    await writeJsonAtomic(this.indexFile, index, space);
  }
}

function asPackageError(err: unknown, prefix = ''): Error {
  const e = err as Error;
  if (e.name === 'ZipError' || e.name === 'ManifestError' || e.name === 'PackageError') return new PackageError(prefix + e.message);
  return e;
}

/** Writes every entry under `dest`, each file and folder fsynced before the caller renames `dest`. */
async function extract(zip: ZipArchive, dest: string, manifest: PackageManifest): Promise<void> {
  await fsp.mkdir(dest, { mode: 0o700 });
  const dirs = new Set<string>([dest]);
  const ensureDir = async (d: string) => {
    if (dirs.has(d)) return;
    await fsp.mkdir(d, { recursive: true, mode: 0o700 });
    // every level between dest and d must be fsynced too, so remember them all
    for (let p = d; p !== dest && !dirs.has(p); p = path.dirname(p)) dirs.add(p);
  };
  for (const entry of zip.entries) {
    // Names were checked by the reader (no `..`, no absolute paths); resolve once more anyway so a
    // reader bug cannot become a write outside the package folder.
    const target = path.resolve(dest, entry.name);
    if (!target.startsWith(dest + path.sep)) throw new PackageError(`unsafe entry name ${JSON.stringify(entry.name)}`);
    if (entry.isDirectory) {
      await ensureDir(target);
      continue;
    }
    await ensureDir(path.dirname(target));
    // Streamed: a large file never sits whole in memory. A bad entry aborts the whole install.
    await writeDurably(target, zip.chunks(entry)).catch((err) => {
      throw asPackageError(err);
    });
  }
  // Extensions named `.js` are ES modules (see src/plugins/api.ts): tell Node so, unless the package
  // brings its own package.json at the root.
  if (manifest.extensions.some((e) => e.endsWith('.js')) && !zip.get('package.json')) {
    await writeDurably(path.join(dest, 'package.json'), '{"type":"module"}\n');
  }
  // Deepest first, so each folder's entry in its parent is durable after its own content.
  for (const d of [...dirs].sort((a, b) => b.length - a.length)) await syncDir(d);
}

async function writeDurably(file: string, data: string | AsyncIterable<Buffer>): Promise<void> {
  // An extraction stops at the data partition's reserve (src/store/reserve.ts).
  const wrote = spaceMeter(path.dirname(file));
  if (typeof data === 'string') wrote(Buffer.byteLength(data));
  const fh = await fsp.open(file, 'wx', 0o600);
  try {
    if (typeof data === 'string') await fh.writeFile(data);
    else {
      for await (const chunk of data) {
        wrote(chunk.length);
        await fh.write(chunk);
      }
    }
    await fh.sync();
  } finally {
    await fh.close();
  }
}
