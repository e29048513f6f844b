// Polling (docs/configuration.md "`assets`: assets and channels", docs/rest-api.md "Poll status"): one read of all
// readable channels per cycle (the driver coalesces it), on a fixed period: cycle k starts at
// start + k × poll.interval. A cycle still running when the next is due is an overrun: counted, and
// the next starts as soon as it ends (never two at once, missed periods are not made up), so a slow
// device never piles up reads. Each asset has its own timer, so it never delays another asset or an
// HTTP request. A wait longer than a timer honours (never from a validated configuration:
// docs/configuration.md "Time-valued keys") is waited for in steps.

import type { Logger } from '../log.js';
import type { DeviceStatus } from '../drivers/driver.js';
import type { ChannelRecord } from '../channels/types.js';
import type { AssetConfig } from './types.js';
import { TIMER_MAX_MS, timerDelay } from '../core/timers.js';

/** Counters of an asset's polling (times in ms since the epoch, 0: never). */
export interface PollState {
  lastPoll: number;
  lastSuccess: number;
  consecutiveFailures: number;
  polls: number;
  /** Cycles that were still running when the next one was due. */
  overruns: number;
}

export interface PollStatus extends PollState {
  pollInterval: number;
  devices: DeviceStatus[];
  /** The asset's `driver.pid`. */
  driver: string;
  /** Whether that driver instance exists and its factory is installed. */
  driverAttached: boolean;
  /** The asset's health in one word (docs/rest-api.md "Poll status"; pollHealth below). */
  state: PollHealth;
}

export type PollHealth = 'driverMissing' | 'notPolled' | 'pending' | 'stale' | 'failing' | 'ok';

/**
 * An asset's health at a glance (docs/rest-api.md "Poll status"): its driver is missing; it is not
 * polled (`poll.interval` 0); no poll has started yet; the last poll started too long ago (more than
 * three poll intervals and at least the interval plus 2 s: a poll that hangs, or a stopped timer);
 * the last poll failed a channel; or it is well.
 */
export function pollHealth(s: PollState, pollInterval: number, driverAttached: boolean, now: number): PollHealth {
  if (!driverAttached) return 'driverMissing';
  if (pollInterval <= 0) return 'notPolled';
  if (s.lastPoll === 0) return 'pending';
  if (now - s.lastPoll > Math.max(3 * pollInterval, pollInterval + 2000)) return 'stale';
  return s.consecutiveFailures > 0 ? 'failing' : 'ok';
}

export const newPollState = (): PollState => ({ lastPoll: 0, lastSuccess: 0, consecutiveFailures: 0, polls: 0, overruns: 0 });

export class PollScheduler {
  private timers = new Map<string, NodeJS.Timeout>();
  private listeners = new Set<(pid: string, records: ChannelRecord[]) => void>();
  private states = new Map<string, PollState>();
  private stopped = false;

  constructor(
    /** The asset configuration in force for a pid: a cycle of another one stops its timer. */
    private readonly current: (pid: string) => AssetConfig | undefined,
    /** One cycle's read of every readable channel. */
    private readonly read: (asset: AssetConfig) => ChannelRecord[] | Promise<ChannelRecord[]>,
    private readonly log: Logger,
  ) {}

  /**
   * After a configuration: an asset whose configuration object changed loses its timer and its
   * counters; every polled asset without a timer gets one, so untouched assets poll on undisturbed.
   */
  update(assets: ReadonlyMap<string, AssetConfig>, prev: ReadonlyMap<string, AssetConfig>): void {
    for (const [pid, t] of this.timers) {
      if (assets.get(pid) !== prev.get(pid)) {
        clearTimeout(t);
        this.timers.delete(pid);
      }
    }
    for (const pid of this.states.keys()) if (assets.get(pid) !== prev.get(pid)) this.states.delete(pid);
    if (this.stopped) return;
    for (const a of assets.values()) if (a.pollInterval > 0 && !this.timers.has(a.pid)) this.schedule(a, Date.now() + a.pollInterval);
  }

  onPoll(listener: (pid: string, records: ChannelRecord[]) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The counters of an asset's polling since its configuration last changed. */
  stateOf(pid: string): PollState {
    return this.states.get(pid) ?? newPollState();
  }

  close(): void {
    this.stopped = true;
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
  }

  private schedule(asset: AssetConfig, at: number): void {
    const wait = at - Date.now();
    const t = setTimeout(async () => {
      if (this.stopped || this.current(asset.pid) !== asset) return;
      if (wait > TIMER_MAX_MS) return this.schedule(asset, at);
      let st = this.states.get(asset.pid);
      if (!st) this.states.set(asset.pid, (st = newPollState()));
      st.lastPoll = Date.now();
      st.polls++;
      try {
        const records = await this.read(asset);
        if (this.current(asset.pid) !== asset) return;
        // A poll fails when any of its channels fails.
        if (records.every((r) => r.status === 'SUCCESS')) {
          st.lastSuccess = Date.now();
          st.consecutiveFailures = 0;
        } else st.consecutiveFailures++;
        for (const l of this.listeners) {
          try {
            l(asset.pid, records);
          } catch (err) {
            this.log.warn('poll listener failed', { asset: asset.pid, error: (err as Error).message });
          }
        }
      } catch (err) {
        this.log.warn('poll failed', { asset: asset.pid, error: (err as Error).message });
      }
      if (this.stopped || this.timers.get(asset.pid) !== t || this.current(asset.pid) !== asset) return;
      const now = Date.now();
      let next = at + asset.pollInterval;
      if (next <= now) {
        st.overruns++;
        next = now;
      }
      this.schedule(asset, next);
    }, timerDelay(wait));
    t.unref?.();
    this.timers.set(asset.pid, t);
  }
}
