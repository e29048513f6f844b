// Driver calls with a deadline (docs/drivers.md "Writing a driver"): a driver's answer is held to
// the contract (one result per channel), and every way a call can fail (a throw, a rejection, a
// malformed answer, no answer within the call timeout) becomes per-channel failures, so a broken
// driver never holds up the request or poll cycle that asked.

import type { Logger } from '../log.js';
import { DRIVER_NOT_ATTACHED, type Driver, type ChannelResult } from '../drivers/driver.js';
import type { AssetConfig } from './types.js';
import type { DriverPool } from './driver-pool.js';
import { isThenable } from '../core/thenable.js';
import { monotonicNow } from '../core/clock.js';
import { timerDelay } from '../core/timers.js';

/** Where a call is shared while it runs (a poll plan's `pending`): emptied when it settles. */
export interface CallSlot {
  pending?: Promise<ChannelResult[]>;
}

/**
 * The driver calls in flight, oldest first: a list through the calls themselves, so a read adds and
 * removes one without a Set's table growing and shrinking (V8 reallocates it when it empties).
 */
class PendingCalls {
  private first: DriverCall | undefined;
  private last: DriverCall | undefined;
  size = 0;

  add(c: DriverCall): void {
    c.prev = this.last;
    c.next = undefined;
    if (this.last) this.last.next = c;
    else this.first = c;
    this.last = c;
    c.listed = true;
    this.size++;
  }

  /** False when the call was not in the list (already settled). */
  delete(c: DriverCall): boolean {
    if (!c.listed) return false;
    c.listed = false;
    if (c.prev) c.prev.next = c.next;
    else this.first = c.next;
    if (c.next) c.next.prev = c.prev;
    else this.last = c.prev;
    c.prev = c.next = undefined;
    this.size--;
    return true;
  }

  oldest(): DriverCall | undefined {
    return this.first;
  }

  /** Calls `fn` for each call in the list, oldest first; `fn` may settle (remove) the call. */
  each(fn: (c: DriverCall) => void): void {
    for (let c = this.first; c; ) {
      const next = c.next;
      fn(c);
      c = next;
    }
  }
}

const failAll = (n: number, error: string): ChannelResult[] => new Array(n).fill({ ok: false, error });

/**
 * One driver call of callDriver, settled once: by the driver's answer, its failure or the watchdog.
 * A class rather than closures: every REST read makes one.
 */
class DriverCall {
  readonly promise: Promise<ChannelResult[]>;
  readonly deadline: number;
  private resolve!: (res: ChannelResult[]) => void;
  /** Links of PendingCalls. */
  prev: DriverCall | undefined;
  next: DriverCall | undefined;
  listed = false;

  constructor(
    private readonly pending: PendingCalls,
    private readonly log: Logger,
    private readonly asset: AssetConfig,
    private readonly n: number,
    private readonly timeoutMs: number,
    /** Where the call is shared while it runs (a poll plan's `pending`): emptied when it settles. */
    private readonly slot?: CallSlot,
  ) {
    // The monotonic clock: cheaper to read than Date.now() (every REST read makes a call), and a
    // wall-clock step cannot fail a call early or keep it waiting.
    this.deadline = monotonicNow() + timeoutMs;
    this.promise = new Promise<ChannelResult[]>((resolve) => (this.resolve = resolve));
  }

  /** A call is pending exactly while it is in the list: the first outcome settles it. */
  private settle(res: ChannelResult[]): void {
    if (!this.pending.delete(this)) return;
    if (this.slot?.pending === this.promise) this.slot.pending = undefined;
    this.resolve(res);
  }

  fail(): void {
    this.settle(failAll(this.n, `Driver ${this.asset.driverPid} did not answer within ${this.timeoutMs} ms`));
  }

  failed(err: unknown): void {
    this.settle(failAll(this.n, callFailed(this.log, this.asset, err)));
  }

  answered(res: unknown): void {
    this.settle(checkedResults(this.log, this.asset, res, this.n));
  }
}

/** The calls into the pool's drivers, each bounded by `timeoutMs`, watched by one timer. */
export class DriverCalls {
  private pendingCalls = new PendingCalls();
  private watchdog: NodeJS.Timeout | undefined;

  constructor(
    private readonly drivers: DriverPool,
    private readonly log: Logger,
    private readonly callTimeoutMs: number,
  ) {}

  /**
   * One driver call; never throws or rejects: every way it can fail becomes per-channel failures (a
   * driver error is a FAILURE record, docs/rest-api.md). A driver that answers with the list itself
   * gets it back checked, at once; a promise that has not settled within `callTimeoutMs` fails its
   * channels. The deadline is watched by one shared timer (`watchdog`), not a timer per call: every
   * REST read goes through here.
   */
  call(asset: AssetConfig, op: (d: Driver) => ChannelResult[] | Promise<ChannelResult[]>, n: number, slot?: CallSlot): ChannelResult[] | Promise<ChannelResult[]> {
    const driver = this.drivers.get(asset.driverPid);
    if (!driver) return failAll(n, DRIVER_NOT_ATTACHED);
    let p: ChannelResult[] | Promise<ChannelResult[]>;
    try {
      p = op(driver);
    } catch (err) {
      return failAll(n, callFailed(this.log, asset, err));
    }
    // An answer from memory (the simulator): no call to watch, no promise, and the REST read that
    // asked answers in the same step (docs/performance.md "The cost of a request").
    if (!isThenable(p)) return checkedResults(this.log, asset, p, n);
    const call = new DriverCall(this.pendingCalls, this.log, asset, n, this.callTimeoutMs, slot);
    this.pendingCalls.add(call);
    // Shared while the driver works: the call empties it when it settles.
    if (slot) slot.pending = call.promise;
    this.armWatchdog();
    Promise.resolve(p).then(
      (res) => call.answered(res),
      (err) => call.failed(err),
    );
    return call.promise;
  }

  /**
   * The watchdog fires at the deadline of the oldest call in flight (calls share one timeout, so
   * it is the earliest), fails what is due and is armed again for the next oldest, if any. Calls
   * usually settle long before: with polls every 100 ms it wakes the process about once per timeout
   * (30 s) instead of on a fixed period, and a stuck call fails at its deadline, not up to a period
   * later. Every wake from idle costs CPU on a small device (make bench, Node-RED section).
   */
  private armWatchdog(): void {
    if (this.watchdog) return;
    const oldest = this.pendingCalls.oldest();
    if (!oldest) return;
    // Not unref'd while calls are pending: a caller is waiting on them.
    this.watchdog = setTimeout(() => {
      this.watchdog = undefined;
      const now = monotonicNow();
      this.pendingCalls.each((call) => {
        if (now >= call.deadline) call.fail();
      });
      this.armWatchdog();
    }, Math.max(1, timerDelay(Math.ceil(oldest.deadline - monotonicNow()))));
  }

  /** Fails every call in flight at once: the drivers were closed, and calls into them may never settle. */
  failPending(): void {
    this.pendingCalls.each((call) => call.fail());
    clearTimeout(this.watchdog);
    this.watchdog = undefined;
  }
}

/** A driver call that threw or rejected: the message every channel of it fails with (logged at debug). */
function callFailed(log: Logger, asset: AssetConfig, err: unknown): string {
  const msg = (err as Error)?.message || `Driver ${asset.driverPid} failed`;
  log.debug('driver call failed', { asset: asset.pid, driver: asset.driverPid, error: msg });
  return msg;
}

/**
 * A driver's answer held to the contract (src/drivers/driver.ts): one result object per channel.
 * A list of another length fails every channel; a missing entry fails its own. The driver's list is
 * returned as it is when it is whole (no copy per read).
 */
function checkedResults(log: Logger, asset: AssetConfig, res: unknown, n: number): ChannelResult[] {
  if (!Array.isArray(res) || res.length !== n) return failAll(n, callFailed(log, asset, new Error(`Driver ${asset.driverPid} returned a malformed result`)));
  let out = res as ChannelResult[];
  for (let i = 0; i < n; i++) {
    const r: unknown = res[i];
    if (r && typeof r === 'object') continue;
    if (out === res) out = res.slice();
    out[i] = { ok: false, error: `Driver ${asset.driverPid} returned no result` };
  }
  return out;
}

