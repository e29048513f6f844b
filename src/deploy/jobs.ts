// Install and uninstall jobs, run one at a time in the order they were queued, as Kura's
// single-thread "DeploymentAgent" executor does (kura/deploy-assets-messaging.md §1.2).
//
// Kura's repeat detection ("is this URL/name already pending?") is derived from the queue: a job
// is pending while QUEUED or RUNNING and forgotten once it ends, whatever the outcome. Finished jobs
// are kept (the most recent `keep`) for `GET /deploy/v2/_jobs`, because Kura's API never says
// whether an install failed.

import type { Logger } from '../log.js';

export type JobState = 'QUEUED' | 'RUNNING' | 'SUCCEEDED' | 'FAILED';
export type JobKind = 'install' | 'uninstall';

export interface Job {
  id: number;
  kind: JobKind;
  /** install: the requested URL (credentials masked), or `upload:<file name>` for uploads. */
  url?: string;
  /** uninstall: the requested name; install: the installed package's name once known. */
  name?: string;
  version?: string;
  state: JobState;
  error?: string;
  queuedAt: string;
  startedAt?: string;
  finishedAt?: string;
}

/** The work of a job; it may fill in `job.name`/`job.version` once the package is known. */
export type JobWork = (job: Job) => Promise<void>;

interface Entry {
  job: Job;
  /** The exact pending key (Kura compares the raw string, no normalisation). */
  key: string;
  work: JobWork;
}

export class JobQueue {
  private readonly entries: Entry[] = [];
  private nextId = 1;
  private running = false;
  private idleWaiters: (() => void)[] = [];
  private stopped = false;

  constructor(
    private readonly log: Logger,
    private readonly keep = 50,
  ) {}

  /** True while an install of exactly this key is queued or running. */
  isPending(kind: JobKind, key: string): boolean {
    return this.entries.some((e) => e.job.kind === kind && e.key === key && (e.job.state === 'QUEUED' || e.job.state === 'RUNNING'));
  }

  enqueue(kind: JobKind, key: string, fields: Pick<Job, 'url' | 'name'>, work: JobWork): Job {
    if (this.stopped) throw new Error('deployment jobs are stopped');
    const job: Job = { id: this.nextId++, kind, ...fields, state: 'QUEUED', queuedAt: new Date().toISOString() };
    this.entries.push({ job, key, work });
    this.trim();
    void this.pump();
    return job;
  }

  /** Recent jobs, oldest first. */
  list(): Job[] {
    return this.entries.map((e) => ({ ...e.job }));
  }

  /** Resolves once no job is queued or running. */
  idle(): Promise<void> {
    if (!this.running && !this.entries.some((e) => e.job.state === 'QUEUED')) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Refuses new jobs, drops queued ones and waits for the running one. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const e of this.entries) {
      if (e.job.state === 'QUEUED') {
        e.job.state = 'FAILED';
        e.job.error = 'cancelled: the daemon is stopping';
        e.job.finishedAt = new Date().toISOString();
      }
    }
    await this.idle();
  }

  private async pump(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      for (;;) {
        const next = this.entries.find((e) => e.job.state === 'QUEUED');
        if (!next) break;
        const { job } = next;
        job.state = 'RUNNING';
        job.startedAt = new Date().toISOString();
        try {
          await next.work(job);
          job.state = 'SUCCEEDED';
          this.log.info(`${job.kind} succeeded`, { job: job.id, url: job.url, package: job.name, version: job.version });
        } catch (err) {
          job.state = 'FAILED';
          job.error = (err as Error)?.message ?? String(err);
          this.log.error(`${job.kind} failed`, { job: job.id, url: job.url, package: job.name, error: job.error });
        }
        job.finishedAt = new Date().toISOString();
        this.trim();
      }
    } finally {
      this.running = false;
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
  }

  /** Forgets the oldest finished jobs beyond `keep`; pending ones are never dropped. */
  private trim(): void {
    let excess = this.entries.length - this.keep;
    for (let i = 0; i < this.entries.length && excess > 0; ) {
      const s = this.entries[i]!.job.state;
      if (s === 'SUCCEEDED' || s === 'FAILED') {
        this.entries.splice(i, 1);
        excess--;
      } else {
        i++;
      }
    }
  }
}
