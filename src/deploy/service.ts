// The deployment agent: what the deploy/v2 REST API drives. It queues install and uninstall jobs
// (one at a time, in order), fetches package files, installs them into the store and starts or
// stops their extension code.
//
// Kura's repeat semantics (its DeploymentRestService and DeploymentAgent): an install whose exact
// URL string is still queued or running answers INSTALLING without queueing; an uninstall whose
// name is pending answers UNINSTALLING; anything else answers REQUEST_RECEIVED, including an
// uninstall of a name that is not installed (the job then fails, visible in the jobs list).

import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../log.js';
import type { DeployConfig } from './config.js';
import { JobCancelled, JobQueue, type Job, type JobSteps, type QueueLimits, type QueueSlot } from './jobs.js';
import { PackageStore, type ArchiveCheck, type InstalledPackage } from './store.js';
import { checkInstallUrl, fetchPackage, fetchText, redactUrl } from './fetch.js';
import { descriptorApiUrl, descriptorFromXml, nodeIdOf, type PackageDescriptor } from './descriptor.js';
import type { PluginHost } from '../plugins/host.js';
import type { ZipLimits } from './zip.js';
import { archiveCheckOf } from './signature.js';

const MAX_DESCRIPTOR_BYTES = 1024 * 1024;

export type DeploymentRequestStatus = 'REQUEST_RECEIVED' | 'INSTALLING' | 'UNINSTALLING';

/** What DEPLOY-V2 and INVENTORY-V1 list as a bundle (docs/packages.md "Bundles"). */
export interface BundleInfo {
  id: number;
  name: string;
  version: string;
  /** OSGi's names: ACTIVE while running, RESOLVED when stopped or its code failed to start. */
  state: 'ACTIVE' | 'RESOLVED';
  /** The daemon itself, bundle 0: never started or stopped from outside. */
  system: boolean;
  /** Its package's signature was verified with a trust anchor at install (the daemon's own: false). */
  signed: boolean;
}

/** The daemon as bundle 0, as an OSGi framework lists its system bundle first. */
export const SYSTEM_BUNDLE_NAME = 'org.eclipse.kura.gatewayd';

export interface DeploymentServiceOptions {
  dataDir: string;
  config: DeployConfig;
  log: Logger;
  plugins: PluginHost;
  /**
   * Runs before extraction, in place of the one `config` makes (archiveCheckOf: the signature check
   * when trust anchors are configured); fixed, whatever a reload brings.
   */
  check?: ArchiveCheck;
  zipLimits?: Partial<ZipLimits>;
}

export class DeploymentService {
  readonly store: PackageStore;
  private readonly jobs: JobQueue;
  private config: DeployConfig;
  /** The check of the configuration in force: an install uses the one in force when it is applied. */
  private archiveCheck: ArchiveCheck | undefined;
  private readonly log: Logger;
  /** Aborted at stop, so a running download does not hold up the daemon's shutdown. */
  private readonly shutdown = new AbortController();
  /**
   * The tail of the changes to packages' code and to the store (install, uninstall, bundle start
   * and stop), which run one after the other: a stop never lands in the middle of an install.
   */
  private changes: Promise<unknown> = Promise.resolve();

  constructor(private readonly opts: DeploymentServiceOptions) {
    this.log = opts.log.child({ component: 'deploy' });
    this.config = opts.config;
    this.archiveCheck = opts.check ?? archiveCheckOf(opts.config);
    this.store = new PackageStore({ dataDir: opts.dataDir, log: this.log, limits: opts.zipLimits, check: (zip, manifest) => this.archiveCheck?.(zip, manifest) ?? Promise.resolve() });
    this.jobs = new JobQueue(this.log, undefined, limitsOf(opts.config));
  }

  /** Loads the store and starts every installed package's code, in install order. */
  async start(): Promise<void> {
    this.store.open();
    for (const pkg of this.store.list()) {
      if (pkg.stopped) continue;
      try {
        await this.opts.plugins.activate(this.loadable(pkg));
      } catch (err) {
        // The package stays installed (it can be replaced or removed); the others still start.
        this.log.error('installed package failed to start', { package: pkg.name, error: (err as Error).message });
      }
    }
    if (this.store.list().length) this.log.info('deployment packages loaded', { count: this.store.list().length });
  }

  /** Stops taking jobs, aborts a running download, waits for the job, stops every package's code. */
  async stop(): Promise<void> {
    this.shutdown.abort();
    await this.jobs.stop();
    await this.exclusive(() => this.opts.plugins.deactivateAll());
  }

  /**
   * Applies a reloaded `deploy` section to later requests; trust anchors and `unsigned.allowed` to
   * the next install applied, also one queued before (docs/configuration.md "deploy").
   */
  reconfigure(config: DeployConfig): void {
    const changed = JSON.stringify(config['trust.anchors']) !== JSON.stringify(this.config['trust.anchors']) || config['unsigned.allowed'] !== this.config['unsigned.allowed'];
    if (!this.opts.check) this.archiveCheck = archiveCheckOf(config);
    if (changed) this.log.info('package trust settings applied', { anchors: config['trust.anchors'].length, unsignedAllowed: config['unsigned.allowed'] });
    this.config = config;
    // Later jobs meet the new bounds; jobs already queued stay.
    this.jobs.budget.limits = limitsOf(config);
  }

  /**
   * A place in the queue for an upload about to be received, holding its bytes as they arrive
   * (`hold`); hand it to `installUploaded`, or `release` it. Throws QueueFullError at the bound.
   */
  reserveUpload(): QueueSlot {
    return this.jobs.reserve();
  }

  get settings(): Readonly<DeployConfig> {
    return this.config;
  }

  /** The driver factories the package's running plug-in registered (none when it is not running). */
  driverFactoriesOf(name: string): string[] {
    return this.opts.plugins.factoriesOf(name);
  }

  list(): { name: string; version: string }[] {
    return this.store.list().map((p) => ({ name: p.name, version: p.version }));
  }

  /** Names of the packages whose code is running. */
  activePackages(): string[] {
    return this.opts.plugins.active();
  }

  /** Bundle 0 (the daemon, `version`) and each installed package's plug-in, by bundle id. */
  bundles(version: string): BundleInfo[] {
    const active = new Set(this.opts.plugins.active());
    const list: BundleInfo[] = [{ id: 0, name: SYSTEM_BUNDLE_NAME, version, state: 'ACTIVE', system: true, signed: false }];
    for (const p of this.store.list()) {
      // A package without code has nothing to run: started unless stopped.
      const running = !p.stopped && (p.extensions.length === 0 || active.has(p.name));
      list.push({ id: p.bundleId!, name: p.name, version: p.version, state: running ? 'ACTIVE' : 'RESOLVED', system: false, signed: p.signed === true });
    }
    return list.sort((a, b) => a.id - b.id);
  }

  /**
   * Starts (`start`) or stops a package's plug-in, as OSGi's Bundle.start/stop: what was asked is
   * recorded first (a stopped plug-in stays stopped across restarts), then its code is activated
   * (its driver factories, providers and applications come back) or deactivated (they go). Starting
   * a running one or stopping a stopped one changes nothing. Throws when its code fails to start
   * (the plug-in is then RESOLVED) or the package is not installed.
   */
  setBundleStarted(name: string, start: boolean): Promise<void> {
    return this.exclusive(async () => {
      const pkg = this.store.get(name);
      if (!pkg) throw new Error(`no deployment package named ${name} is installed`);
      await this.store.setStopped(name, !start);
      if (!start) {
        if (this.opts.plugins.active().includes(name)) this.log.info('package plug-in stopped', { package: name });
        await this.opts.plugins.deactivate(name);
        return;
      }
      if (this.opts.plugins.active().includes(name)) return;
      await this.opts.plugins.activate(this.loadable(pkg));
      this.log.info('package plug-in started', { package: name });
    });
  }

  recentJobs(): Job[] {
    return this.jobs.list();
  }

  /** Resolves when no job is queued or running (tests, shutdown). */
  idle(): Promise<void> {
    return this.jobs.idle();
  }

  /** A fresh path inside dataDir for an upload; pass it to `installUploaded` or remove it. */
  incomingPath(): string {
    return this.store.incomingPath();
  }

  /**
   * Queues an install from a URL. Throws UrlRefusedError for a URL that can never be installed,
   * QueueFullError when the queue is at its bound of jobs.
   */
  requestInstall(rawUrl: string): DeploymentRequestStatus {
    if (this.jobs.isPending('install', rawUrl)) return 'INSTALLING';
    const cfg = this.config;
    const url = checkInstallUrl(rawUrl, cfg['file.allowed.dirs']);
    const file = this.store.incomingPath();
    this.jobs.enqueue('install', rawUrl, { url: redactUrl(rawUrl) }, (job) => this.installFile(file, job), {
      // Downloads run in their own lane, bounded by download.deadline and cancellable (jobs.ts).
      fetch: (_job, signal, slot) =>
        fetchPackage(url, file, {
          timeoutMs: cfg['download.timeout'],
          deadlineMs: cfg['download.deadline'],
          maxBytes: cfg['upload.max.bytes'],
          maxRedirects: cfg['download.max.redirects'],
          allowedDirs: cfg['file.allowed.dirs'],
          signal,
          onProgress: holdBytes(slot),
        }),
      cleanup: () => fsp.rm(file, { force: true }),
    });
    return 'REQUEST_RECEIVED';
  }

  /**
   * Queues the install of an uploaded file already written to `file` (from `incomingPath()`) in
   * the `slot` it was received in (`reserveUpload`); the file is removed when the job ends.
   * Uploads never repeat: each is a new file (as in Kura).
   */
  installUploaded(file: string, originalName: string, slot: QueueSlot): DeploymentRequestStatus {
    this.jobs.enqueue('install', file, { url: `upload:${originalName}` }, (job) => this.installFile(file, job), { cleanup: () => fsp.rm(file, { force: true }) }, slot);
    return 'REQUEST_RECEIVED';
  }

  /** `<dataDir>/downloads`: packages DEPLOY-V2 downloaded, as `<name>_<version>.dp` (created). */
  downloadsDir(): string {
    const dir = path.join(this.opts.dataDir, 'downloads');
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    return dir;
  }

  /**
   * DEPLOY-V2's download: fetches `url` into `file` in the download lane (`onProgress`), then runs
   * `afterFetch` (hash check, notifications), then installs the file when `install` (and removes
   * it); a download-only job keeps the file for a later `requestFileInstall`. A failed or
   * cancelled job leaves no file. `onEnd` is told how the job ended.
   */
  requestDownload(o: {
    url: URL;
    file: string;
    install: boolean;
    /** The file is there already (not forced): no transfer. */
    reuse?: boolean;
    timeoutMs?: number;
    headers?: Record<string, string>;
    onProgress: (received: number, total: number | undefined) => void;
    afterFetch: () => Promise<void>;
    onEnd: (job: Job) => void;
  }): Job {
    const cfg = this.config;
    let done = false;
    const steps: JobSteps = {
      fetch: async (_job, signal, slot) => {
        const hold = holdBytes(slot);
        if (!o.reuse) await fetchPackage(o.url, o.file, {
          timeoutMs: o.timeoutMs ?? cfg['download.timeout'],
          deadlineMs: cfg['download.deadline'],
          maxBytes: cfg['upload.max.bytes'],
          maxRedirects: cfg['download.max.redirects'],
          allowedDirs: [],
          headers: o.headers,
          onProgress: (received, total) => {
            hold(received, total);
            o.onProgress(received, total);
          },
          signal,
        });
        await o.afterFetch();
      },
      onEnd: (job) => {
        done = job.state === 'SUCCEEDED' && !o.install;
        o.onEnd(job);
      },
      // A kept download stays for EXEC/install; anything else leaves no file behind.
      cleanup: () => (done ? Promise.resolve() : fsp.rm(o.file, { force: true })),
    };
    return this.jobs.enqueue(o.install ? 'install' : 'download', o.url.href, { url: redactUrl(o.url.href) }, o.install ? (job) => this.installFile(o.file, job) : async () => {}, steps);
  }

  /** Queues the install of a file DEPLOY-V2 downloaded earlier; the file is removed when the job ends. */
  requestFileInstall(file: string, onEnd: (job: Job) => void): Job {
    return this.jobs.enqueue('install', file, { url: `file:${path.basename(file)}` }, (job) => this.installFile(file, job), { onEnd, cleanup: () => fsp.rm(file, { force: true }) });
  }

  requestUninstall(name: string, onEnd?: (job: Job) => void): DeploymentRequestStatus {
    if (this.jobs.isPending('uninstall', name)) return 'UNINSTALLING';
    this.jobs.enqueue(
      'uninstall',
      name,
      { name },
      async () => {
        await this.exclusive(async () => {
          if (!this.store.get(name)) throw new Error(`no deployment package named ${name} is installed`);
          await this.opts.plugins.deactivate(name);
          await this.store.remove(name);
        });
        this.log.info('package uninstalled', { package: name });
      },
      // Removing an installed package need not wait for slow downloads queued before it; one
      // that is not installed yet may come with one of them.
      { waitsForDownloads: () => this.store.get(name) === undefined, onEnd },
    );
    return 'REQUEST_RECEIVED';
  }

  /**
   * The marketplace descriptor for a marketplace install URL. Throws DescriptorRequestError (400)
   * for a URL Kura's checks refuse; any other error means the descriptor could not be had (500).
   */
  async packageDescriptor(marketplaceUrl: unknown): Promise<PackageDescriptor> {
    const nodeId = nodeIdOf(marketplaceUrl);
    const cfg = this.config;
    const xml = await fetchText(new URL(descriptorApiUrl(cfg['marketplace.url'], nodeId)), {
      timeoutMs: cfg['download.timeout'],
      maxBytes: MAX_DESCRIPTOR_BYTES,
      maxRedirects: cfg['download.max.redirects'],
      signal: this.shutdown.signal,
    });
    return descriptorFromXml(xml, cfg['gateway.version']);
  }

  /**
   * Cancels a queued or downloading job (`DELETE /services/deploy/v2/_jobs/<id>`): the job, or why
   * not (`busy`: being applied; `finished`; undefined: no such job).
   */
  cancelJob(id: number): Job | 'busy' | 'finished' | undefined {
    return this.jobs.cancel(id);
  }

  /** Runs `fn` after every change to packages' code or the store asked for before it. */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.changes.then(fn, fn);
    this.changes = run.catch(() => undefined);
    return run;
  }

  private installFile(file: string, job: Job): Promise<void> {
    return this.exclusive(() => this.installFileNow(file, job));
  }

  private async installFileNow(file: string, job: Job): Promise<void> {
    const { pkg, replaced } = await this.store.install(file, (m) => {
      // A job queued after this install already installed or removed the package while this one
      // downloaded: queue order wins.
      const later = this.jobs.supersededBy(job.id, m.name);
      if (later) throw new JobCancelled(`superseded by the later ${later.kind} of ${m.name}`);
    });
    job.name = pkg.name;
    job.version = pkg.version;
    this.log.info('package installed', { package: pkg.name, version: pkg.version, replaced: replaced?.version });
    // activate() first stops a replaced version's code, so its names (driver factories) are free.
    try {
      await this.opts.plugins.activate(this.loadable(pkg));
    } catch (err) {
      throw new Error(`installed, but its code did not start: ${(err as Error).message}`);
    }
  }

  private loadable(pkg: InstalledPackage) {
    return { name: pkg.name, version: pkg.version, dir: this.store.dirOf(pkg), extensions: pkg.extensions };
  }
}

function limitsOf(config: DeployConfig): QueueLimits {
  return { maxJobs: config['queue.max.jobs'], maxBytes: config['queue.max.bytes'] };
}

/**
 * A download's progress as the bytes its job holds in the queue: the declared size as soon as the
 * server names it (a transfer that cannot fit is refused before it fills the disk), else what has
 * arrived so far.
 */
function holdBytes(slot: QueueSlot): (received: number, total: number | undefined) => void {
  return (received, total) => slot.hold(Math.max(received, total ?? 0));
}
