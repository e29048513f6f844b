// Install and uninstall jobs, applied one at a time in the order they were queued, as Kura's
// single-thread "DeploymentAgent" executor does, with these changes so that a slow download cannot
// hold the device's deployments hostage nor fill its data partition (docs/rest-api.md "deploy/v2"):
//
// - A download (an install's `fetch` step) runs in its own lane, one at a time, before the job is
//   applied. A job whose package is already on the device (an upload, a DEPLOY-V2 download kept for
//   later) and an uninstall of an *installed* package are applied without waiting for downloads
//   queued before them. A job that turns out to touch a package a job queued after it has already
//   installed or removed is then skipped (CANCELLED, "superseded"), so the end state is the queue
//   order's. An uninstall of a package that is not installed waits for the downloads before it (one
//   of them may bring it), and so does everything queued after it.
// - Any job that is queued or still downloading can be cancelled (`cancel`); the download's abort
//   signal fires and the job ends CANCELLED. A job being applied (a local extract) runs to its end.
// - The queue is bounded (QueueBudget): at most `maxJobs` jobs queued or running, uploads still
//   being received included, and at most `maxBytes` of package files those jobs bring onto the
//   device (uploads as they arrive, downloads by their declared size and as they arrive). A job
//   over a bound is refused with QueueFullError before it is queued; an upload or download that
//   grows past `maxBytes` ends there.
//
// Kura's repeat detection ("is this URL/name already pending?") is derived from the queue: a job
// is pending while QUEUED or RUNNING and forgotten once it ends, whatever the outcome. Finished jobs
// are kept (the most recent `keep`) for `GET /deploy/v2/_jobs`, because Kura's API never says
// whether an install failed.

import type { Logger } from '../log.js';
import { DEPLOY_DEFAULTS } from './config.js';

export type JobState = 'QUEUED' | 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'CANCELLED';
/** `download`: a DEPLOY-V2 download kept for a later EXEC/install (docs/mqtt.md). */
export type JobKind = 'install' | 'uninstall' | 'download';

export interface Job {
  id: number;
  kind: JobKind;
  /** install: the requested URL (credentials masked), or `upload:<file name>` for uploads. */
  url?: string;
  /** uninstall: the requested name; install: the installed package's name once known. */
  name?: string;
  version?: string;
  state: JobState;
  /** While RUNNING: `download` (its fetch step), `downloaded` (waiting to be applied), `apply`. */
  phase?: 'download' | 'downloaded' | 'apply';
  error?: string;
  queuedAt: string;
  startedAt?: string;
  finishedAt?: string;
}

/** The work of a job; it may fill in `job.name`/`job.version` once the package is known. */
export type JobWork = (job: Job) => Promise<void>;

export interface JobSteps {
  /**
   * Runs in the download lane before `work`; must stop when `signal` aborts (cancel, deadline,
   * stop), and tells `slot` the bytes it brings onto the device (`hold` throws past the bound).
   */
  fetch?: (job: Job, signal: AbortSignal, slot: QueueSlot) => Promise<void>;
  /** A job without a download that must still wait for the downloads queued before it. */
  waitsForDownloads?: () => boolean;
  /** Runs once the job has ended, however it ended (removes a downloaded file). */
  cleanup?: () => Promise<void>;
  /** Told the job as it ended (DEPLOY-V2's notifications), before `cleanup`. */
  onEnd?: (job: Job) => void;
}

/** Thrown by a job's work to end it CANCELLED rather than FAILED. */
export class JobCancelled extends Error {}

/** Bounds of the queue (the `deploy` keys `queue.max.jobs` and `queue.max.bytes`). */
export interface QueueLimits {
  maxJobs: number;
  maxBytes: number;
}

/** A job refused, or a transfer ended, at a bound of the queue; the message names the bound (REST: 507). */
export class QueueFullError extends Error {
  override name = 'QueueFullError';
}

/**
 * What the queue holds against its bounds: the number of jobs queued or running (with the uploads
 * still being received, which will be jobs) and the bytes of the package files they brought.
 */
export class QueueBudget {
  private slots = 0;
  private bytes = 0;

  constructor(public limits: QueueLimits) {}

  /** A place for one job; throws QueueFullError when `maxJobs` are held already. */
  reserve(): QueueSlot {
    if (this.slots >= this.limits.maxJobs) {
      throw new QueueFullError(`Insufficient storage: the deployment queue holds its limit of ${this.limits.maxJobs} jobs (deploy.queue.max.jobs); try again once one has ended`);
    }
    this.slots++;
    return new QueueSlot(this);
  }

  /** Changes the bytes held by `delta`; throws QueueFullError (and changes nothing) past `maxBytes`. */
  take(delta: number): void {
    if (delta > 0 && this.bytes + delta > this.limits.maxBytes) {
      throw new QueueFullError(`Insufficient storage: the packages waiting in the deployment queue would exceed deploy.queue.max.bytes (${this.limits.maxBytes} bytes)`);
    }
    this.bytes += delta;
  }

  free(slotBytes: number): void {
    this.slots--;
    this.bytes -= slotBytes;
  }
}

/** One job's place in the queue and the bytes of its package file; released once the job ended. */
export class QueueSlot {
  private held = 0;
  private released = false;

  constructor(private readonly budget: QueueBudget) {}

  get bytes(): number {
    return this.held;
  }

  /** The file now takes `bytes`; throws QueueFullError when that would take the queue past its byte bound. */
  hold(bytes: number): void {
    if (this.released) return;
    this.budget.take(bytes - this.held);
    this.held = bytes;
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.budget.free(this.held);
    this.held = 0;
  }
}

interface Entry {
  job: Job;
  /** The exact pending key (Kura compares the raw string, no normalisation). */
  key: string;
  work: JobWork;
  steps: JobSteps;
  abort: AbortController;
  fetched: boolean;
  slot: QueueSlot;
}

const now = () => new Date().toISOString();
const pending = (s: JobState) => s === 'QUEUED' || s === 'RUNNING';

export class JobQueue {
  private readonly entries: Entry[] = [];
  private nextId = 1;
  private applying = false;
  private downloading = false;
  private idleWaiters: (() => void)[] = [];
  private stopped = false;
  readonly budget: QueueBudget;

  constructor(
    private readonly log: Logger,
    private readonly keep = 50,
    limits: QueueLimits = { maxJobs: DEPLOY_DEFAULTS['queue.max.jobs'], maxBytes: DEPLOY_DEFAULTS['queue.max.bytes'] },
  ) {
    this.budget = new QueueBudget(limits);
  }

  /** A place in the queue for a job about to be queued (an upload being received); see QueueBudget. */
  reserve(): QueueSlot {
    return this.budget.reserve();
  }

  /** True while an install of exactly this key is queued or running. */
  isPending(kind: JobKind, key: string): boolean {
    return this.entries.some((e) => e.job.kind === kind && e.key === key && pending(e.job.state));
  }

  /**
   * Queues a job in `slot` (reserved for it before, as for an upload; else one is reserved here).
   * Throws QueueFullError at the queue's bound of jobs; the slot is released when the job ends, or
   * at once when it cannot be queued.
   */
  enqueue(kind: JobKind, key: string, fields: Pick<Job, 'url' | 'name'>, work: JobWork, steps: JobSteps = {}, slot?: QueueSlot): Job {
    if (this.stopped) {
      slot?.release();
      throw new Error('deployment jobs are stopped');
    }
    slot ??= this.budget.reserve();
    const job: Job = { id: this.nextId++, kind, ...fields, state: 'QUEUED', queuedAt: now() };
    this.entries.push({ job, key, work, steps, abort: new AbortController(), fetched: !steps.fetch, slot });
    this.trim();
    this.pump();
    return job;
  }

  /** Recent jobs, oldest first. */
  list(): Job[] {
    return this.entries.map((e) => ({ ...e.job }));
  }

  /**
   * The job queued after job `id` that has already installed or removed package `name` (it
   * overtook job `id` while that one downloaded, so job `id` must not undo it), if any.
   */
  supersededBy(id: number, name: string): Job | undefined {
    const e = this.entries.find(
      (x) => x.job.id > id && ((x.job.kind === 'uninstall' && x.key === name && !pending(x.job.state)) || (x.job.kind === 'install' && x.job.name === name && x.job.state === 'SUCCEEDED')),
    );
    return e && { ...e.job };
  }

  /**
   * Cancels a queued or downloading job. `undefined`: no such job (or forgotten); `busy`: it is
   * being applied; `finished`: it already ended; otherwise the job as it now is.
   */
  cancel(id: number): Job | 'busy' | 'finished' | undefined {
    const e = this.entries.find((x) => x.job.id === id);
    if (!e) return undefined;
    if (!pending(e.job.state)) return 'finished';
    if (e.job.phase === 'apply') return 'busy';
    this.log.info(`${e.job.kind} cancelled`, { job: id, url: e.job.url, package: e.job.name });
    if (e.job.phase === 'download') {
      // The download's abort makes its fetch reject; finish() then records CANCELLED.
      e.abort.abort(new JobCancelled('cancelled by request'));
    } else {
      this.finish(e, 'CANCELLED', 'cancelled by request');
    }
    return { ...e.job };
  }

  /** Resolves once no job is queued or running. */
  idle(): Promise<void> {
    if (!this.entries.some((e) => pending(e.job.state))) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Refuses new jobs, drops queued ones, aborts downloads and waits for the job being applied. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const e of [...this.entries]) {
      if (e.job.phase === 'download') e.abort.abort(new Error('download aborted: the daemon is stopping'));
      else if (pending(e.job.state) && e.job.phase !== 'apply') this.finish(e, 'FAILED', 'cancelled: the daemon is stopping');
    }
    await this.idle();
  }

  private finish(e: Entry, state: 'SUCCEEDED' | 'FAILED' | 'CANCELLED', error?: string): void {
    const { job } = e;
    if (!pending(job.state)) return;
    job.state = state;
    job.phase = undefined;
    if (error !== undefined) job.error = error;
    job.finishedAt = now();
    if (state === 'SUCCEEDED') this.log.info(`${job.kind} succeeded`, { job: job.id, url: job.url, package: job.name, version: job.version });
    else if (state === 'FAILED') this.log.error(`${job.kind} failed`, { job: job.id, url: job.url, package: job.name, error: job.error });
    else this.log.info(`${job.kind} cancelled`, { job: job.id, url: job.url, package: job.name, reason: job.error });
    this.trim();
    try {
      e.steps.onEnd?.({ ...job });
    } catch (err) {
      this.log.warn('job end listener failed', { job: job.id, error: (err as Error).message });
    }
    // Idle (and the next job, and its place in the queue) only once the job's files are gone.
    const cleaned = e.steps.cleanup?.().catch((err) => this.log.warn('job clean-up failed', { job: job.id, error: (err as Error).message }));
    void Promise.resolve(cleaned).then(() => {
      e.slot.release();
      if (!this.entries.some((x) => pending(x.job.state))) {
        const waiters = this.idleWaiters;
        this.idleWaiters = [];
        for (const w of waiters) w();
      }
      this.pump();
    });
  }

  private ended(e: Entry, err: unknown): void {
    const reason = e.abort.signal.aborted ? e.abort.signal.reason : err;
    const message = (reason as Error)?.message ?? String(reason);
    this.finish(e, reason instanceof JobCancelled ? 'CANCELLED' : 'FAILED', message);
  }

  private pump(): void {
    if (this.stopped && !this.entries.some((e) => pending(e.job.state))) return;
    if (!this.downloading) {
      const d = this.entries.find((e) => e.job.state === 'QUEUED' && !e.fetched);
      if (d && !this.stopped) this.download(d);
    }
    if (!this.applying) {
      const a = this.nextToApply();
      if (a) this.apply(a);
    }
  }

  /**
   * The first job in queue order whose package is here; downloads still running ahead of it do
   * not hold it, unless it must wait for them, which then holds every job after it (see the header).
   */
  private nextToApply(): Entry | undefined {
    let downloadsAhead = false;
    for (const e of this.entries) {
      if (!pending(e.job.state)) continue;
      if (!e.fetched) {
        downloadsAhead = true;
        continue;
      }
      if (downloadsAhead && e.steps.waitsForDownloads?.()) return undefined;
      return e;
    }
    return undefined;
  }

  private download(e: Entry): void {
    this.downloading = true;
    const { job } = e;
    job.state = 'RUNNING';
    job.phase = 'download';
    job.startedAt = now();
    e.steps.fetch!(job, e.abort.signal, e.slot).then(
      () => {
        this.downloading = false;
        if (e.abort.signal.aborted) return this.ended(e, e.abort.signal.reason);
        e.fetched = true;
        job.phase = 'downloaded';
        this.pump();
      },
      (err) => {
        this.downloading = false;
        this.ended(e, err);
      },
    );
  }

  private apply(e: Entry): void {
    this.applying = true;
    const { job } = e;
    job.state = 'RUNNING';
    job.phase = 'apply';
    job.startedAt ??= now();
    e.work(job).then(
      () => {
        this.applying = false;
        this.finish(e, 'SUCCEEDED');
      },
      (err) => {
        this.applying = false;
        this.ended(e, err);
      },
    );
  }

  /** Forgets the oldest finished jobs beyond `keep`; pending ones are never dropped. */
  private trim(): void {
    let excess = this.entries.length - this.keep;
    for (let i = 0; i < this.entries.length && excess > 0; ) {
      if (!pending(this.entries[i]!.job.state)) {
        this.entries.splice(i, 1);
        excess--;
      } else {
        i++;
      }
    }
  }
}
