// Install and uninstall jobs, applied one at a time in the order they were queued, as Kura's
// single-thread "DeploymentAgent" executor does, with two changes so that a slow download cannot
// hold the device's deployments hostage (docs/rest-api.md):
//
// - A download (an install's `fetch` step) runs in its own lane, one at a time, before the job is
//   applied. While installs are still downloading, an uninstall of an *installed* package is applied
//   at once instead of waiting behind them; an install that downloads a package an uninstall queued
//   after it has already removed is then skipped (CANCELLED), so the end state is the queue order's.
//   Everything else keeps the queue order.
// - Any job that is queued or still downloading can be cancelled (`cancel`); the download's abort
//   signal fires and the job ends CANCELLED. A job being applied (a local extract) runs to its end.
//
// Kura's repeat detection ("is this URL/name already pending?") is derived from the queue: a job
// is pending while QUEUED or RUNNING and forgotten once it ends, whatever the outcome. Finished jobs
// are kept (the most recent `keep`) for `GET /deploy/v2/_jobs`, because Kura's API never says
// whether an install failed.

import type { Logger } from '../log.js';

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
  /** Runs in the download lane before `work`; must stop when `signal` aborts (cancel, deadline, stop). */
  fetch?: (job: Job, signal: AbortSignal) => Promise<void>;
  /** An uninstall that may be applied while earlier installs are still downloading. */
  mayOvertakeDownloads?: () => boolean;
  /** Runs once the job has ended, however it ended (removes a downloaded file). */
  cleanup?: () => Promise<void>;
  /** Told the job as it ended (DEPLOY-V2's notifications), before `cleanup`. */
  onEnd?: (job: Job) => void;
}

/** Thrown by a job's work to end it CANCELLED rather than FAILED. */
export class JobCancelled extends Error {}

interface Entry {
  job: Job;
  /** The exact pending key (Kura compares the raw string, no normalisation). */
  key: string;
  work: JobWork;
  steps: JobSteps;
  abort: AbortController;
  fetched: boolean;
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

  constructor(
    private readonly log: Logger,
    private readonly keep = 50,
  ) {}

  /** True while an install of exactly this key is queued or running. */
  isPending(kind: JobKind, key: string): boolean {
    return this.entries.some((e) => e.job.kind === kind && e.key === key && pending(e.job.state));
  }

  enqueue(kind: JobKind, key: string, fields: Pick<Job, 'url' | 'name'>, work: JobWork, steps: JobSteps = {}): Job {
    if (this.stopped) throw new Error('deployment jobs are stopped');
    const job: Job = { id: this.nextId++, kind, ...fields, state: 'QUEUED', queuedAt: now() };
    this.entries.push({ job, key, work, steps, abort: new AbortController(), fetched: !steps.fetch });
    this.trim();
    this.pump();
    return job;
  }

  /** Recent jobs, oldest first. */
  list(): Job[] {
    return this.entries.map((e) => ({ ...e.job }));
  }

  /** True when an uninstall of `name` queued after job `id` has ended (it superseded that install). */
  uninstalledAfter(id: number, name: string): boolean {
    return this.entries.some((e) => e.job.id > id && e.job.kind === 'uninstall' && e.key === name && !pending(e.job.state));
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
    // Idle (and the next job) only once the job's files are gone.
    const cleaned = e.steps.cleanup?.().catch((err) => this.log.warn('job clean-up failed', { job: job.id, error: (err as Error).message }));
    void Promise.resolve(cleaned).then(() => {
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

  /** The first job in queue order that can be applied now (see the header). */
  private nextToApply(): Entry | undefined {
    let downloadsAhead = false;
    for (const e of this.entries) {
      if (!pending(e.job.state)) continue;
      if (!e.fetched) {
        downloadsAhead = true;
        continue;
      }
      if (!downloadsAhead || e.steps.mayOvertakeDownloads?.()) return e;
      return undefined;
    }
    return undefined;
  }

  private download(e: Entry): void {
    this.downloading = true;
    const { job } = e;
    job.state = 'RUNNING';
    job.phase = 'download';
    job.startedAt = now();
    e.steps.fetch!(job, e.abort.signal).then(
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
