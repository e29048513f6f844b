// Assets at run time: driver instances, channel reads and writes with Kura's mode rules, polling.

import type { Logger } from '../log.js';
import type { DriverInstanceConfig } from './config.js';
import { DRIVER_NOT_ATTACHED, type Driver, type ChannelResult, type DeviceStatus } from '../drivers/driver.js';
import { SharedLines } from '../drivers/lines.js';
import type { DriverRegistry } from '../drivers/registry.js';
import { type ChannelConfig, type ChannelRecord, type TypedValue, type ValueType } from '../channels/types.js';
import { AssetNotFoundError, type AssetConfig, type AssetService } from './types.js';
import { applyScaleOffset } from '../channels/scaling.js';
import { convertValue } from '../channels/values.js';
import { isThenable } from '../core/thenable.js';
import { monotonicNow } from '../core/clock.js';
import { TIMER_MAX_MS, timerDelay } from '../core/timers.js';

export { DRIVER_NOT_ATTACHED };

interface DriverSlot {
  config: DriverInstanceConfig;
  driver?: Driver;
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Driver instances by id, created from their factory; detached while the factory is missing. */
export class DriverPool {
  private slots = new Map<string, DriverSlot>();
  private unsubscribe: () => void;
  /** Serial ports and converters shared by this pool's driver instances. */
  private readonly lines = new SharedLines();

  constructor(
    private readonly registry: DriverRegistry,
    private readonly log: Logger,
    private readonly dataDir: string,
  ) {
    this.unsubscribe = registry.onChange((name, added) => {
      for (const slot of this.slots.values()) {
        if (slot.config.factory !== name) continue;
        if (added) this.attach(slot);
        else this.detach(slot);
      }
    });
  }

  configure(drivers: Record<string, DriverInstanceConfig>): void {
    for (const [id, slot] of this.slots) {
      const next = drivers[id];
      if (!next || !sameJson(next, slot.config)) {
        this.detach(slot);
        this.slots.delete(id);
      }
    }
    for (const [id, cfg] of Object.entries(drivers)) {
      if (this.slots.has(id)) continue;
      const slot: DriverSlot = { config: cfg };
      this.slots.set(id, slot);
      this.attach(slot);
    }
  }

  get(id: string): Driver | undefined {
    return this.slots.get(id)?.driver;
  }

  /** The factory name of driver instance `id`, attached or not; undefined for no such instance. */
  factoryOf(id: string): string | undefined {
    return this.slots.get(id)?.config.factory;
  }

  private attach(slot: DriverSlot): void {
    const f = this.registry.get(slot.config.factory);
    if (!f || slot.driver) return;
    try {
      slot.driver = f.create(slot.config.props, { id: slot.config.id, log: this.log.child({ driver: slot.config.id }), dataDir: this.dataDir, lines: this.lines });
      this.log.info('driver attached', { driver: slot.config.id, factory: slot.config.factory });
    } catch (err) {
      this.log.error('driver could not be created', { driver: slot.config.id, factory: slot.config.factory, error: (err as Error).message });
    }
  }

  private detach(slot: DriverSlot): void {
    const d = slot.driver;
    slot.driver = undefined;
    if (d) {
      d.close().catch((err) => this.log.warn('driver close failed', { driver: slot.config.id, error: (err as Error).message }));
      this.log.info('driver detached', { driver: slot.config.id });
    }
  }

  async close(): Promise<void> {
    this.unsubscribe();
    const all = [...this.slots.values()];
    this.slots.clear();
    await Promise.all(all.map((s) => s.driver?.close().catch(() => {})));
  }
}

/** Counters of an asset's polling (times in ms since the epoch, 0: never). */
interface PollState {
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
}

const newPollState = (): PollState => ({ lastPoll: 0, lastSuccess: 0, consecutiveFailures: 0, polls: 0, overruns: 0 });

export interface AssetRuntimeOptions {
  /**
   * Safety net for a driver that never settles its promise: after this long the channels fail
   * with a clear message and the caller (an HTTP request, a poll cycle) moves on. Drivers have
   * their own, shorter timeouts (e.g. `modbus.timeout`); this only bounds a broken driver.
   */
  driverCallTimeoutMs?: number;
}

const READ_EXPECTED = 'Channel type not within expected types (READ or READ_WRITE)';
const WRITE_EXPECTED = 'Channel type not within expected types (WRITE or READ_WRITE)';

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
    private readonly slot?: { pending?: Promise<ChannelResult[]> },
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

export class AssetRuntime implements AssetService {
  private assets = new Map<string, AssetConfig>();
  private driverConfigs: Record<string, DriverInstanceConfig> = {};
  private pollTimers = new Map<string, NodeJS.Timeout>();
  private pollListeners = new Set<(pid: string, records: ChannelRecord[]) => void>();
  private pollStates = new Map<string, PollState>();
  /** What a poll cycle reads, per asset configuration: read(pid)'s channels, worked out once. */
  private pollPlans = new WeakMap<AssetConfig, { channels: ChannelConfig[]; key: string; pending?: Promise<ChannelResult[]> }>();
  // Single flight: identical reads of the same asset configuration in flight share one driver call
  // (and so one bus transaction). Keyed by the config object, so a reload never joins a stale read.
  private inflight = new WeakMap<AssetConfig, Map<string, Promise<ChannelResult[]>>>();
  private stopped = false;
  private pendingCalls = new PendingCalls();
  private watchdog: NodeJS.Timeout | undefined;
  private readonly callTimeoutMs: number;

  constructor(
    readonly drivers: DriverPool,
    private readonly log: Logger,
    opts: AssetRuntimeOptions = {},
  ) {
    this.callTimeoutMs = opts.driverCallTimeoutMs ?? 30_000;
  }

  /**
   * Applies assets and drivers (start, reload, runtime configuration). An asset whose configuration
   * and driver are unchanged keeps its configuration object and its poll timer: polling of untouched
   * assets goes on undisturbed (docs/configuration-v2.md).
   */
  configure(assets: AssetConfig[], drivers: Record<string, DriverInstanceConfig>): void {
    const prevDrivers = this.driverConfigs;
    this.drivers.configure(drivers);
    this.driverConfigs = drivers;
    const prev = this.assets;
    this.assets = new Map(
      assets.map((a) => {
        const o = prev.get(a.pid);
        const same = o && sameJson(o, a) && sameJson(prevDrivers[a.driverPid], drivers[a.driverPid]);
        return [a.pid, same ? o : a];
      }),
    );
    for (const [pid, t] of this.pollTimers) {
      if (this.assets.get(pid) !== prev.get(pid)) {
        clearTimeout(t);
        this.pollTimers.delete(pid);
      }
    }
    for (const pid of this.pollStates.keys()) if (this.assets.get(pid) !== prev.get(pid)) this.pollStates.delete(pid);
    if (this.stopped) return;
    for (const a of this.assets.values()) if (a.pollInterval > 0 && !this.pollTimers.has(a.pid)) this.schedule(a, Date.now() + a.pollInterval);
  }

  list(): string[] {
    return [...this.assets.keys()];
  }

  get(pid: string): AssetConfig | undefined {
    return this.assets.get(pid);
  }

  private require(pid: string): AssetConfig {
    const a = this.assets.get(pid);
    if (!a) throw new AssetNotFoundError(pid);
    return a;
  }

  /**
   * Kura's BaseAsset.read: refused channels (unknown, disabled, WRITE) get a
   * FAILURE record stamped now, in request order alongside the others; the rest go to the driver
   * in one batch.
   */
  read(pid: string, names?: string[]): Promise<ChannelRecord[]> {
    const asset = this.assets.get(pid);
    if (!asset) return Promise.reject(new AssetNotFoundError(pid));
    if (names) return this.readNamed(asset, names);
    // Every readable channel (a REST GET _read, a poll): none is refused, the plan is made once.
    try {
      return Promise.resolve(this.pollRead(asset));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  readAll<T>(pid: string, map: (records: ChannelRecord[]) => T): T | Promise<T> {
    const asset = this.assets.get(pid);
    if (!asset) return Promise.reject(new AssetNotFoundError(pid));
    return this.pollRead(asset, map);
  }

  private async readNamed(asset: AssetConfig, names: string[]): Promise<ChannelRecord[]> {
    const byName = new Map(asset.channels.map((c) => [c.name, c]));
    const wanted = [...new Set(names)];
    const records: ChannelRecord[] = new Array(wanted.length);
    const toRead: { idx: number; ch: ChannelConfig }[] = [];
    const now = Date.now();
    wanted.forEach((name, idx) => {
      const ch = byName.get(name);
      if (!ch) records[idx] = refused(name, 'STRING', 'Channel not available', now);
      else if (ch.mode === 'WRITE') records[idx] = refused(name, ch.valueType, READ_EXPECTED, now);
      else if (!ch.enabled) records[idx] = refused(name, ch.valueType, 'Channel is not enabled', now);
      else toRead.push({ idx, ch });
    });
    if (toRead.length > 0) {
      const results = await this.sharedRead(asset, toRead.map((x) => x.ch));
      toRead.forEach(({ idx, ch }, i) => {
        records[idx] = readRecord(ch, results[i]);
      });
    }
    return records;
  }

  private sharedRead(asset: AssetConfig, channels: ChannelConfig[], key = channels.map((c) => c.name).join('\u0000')): ChannelResult[] | Promise<ChannelResult[]> {
    // A read of the whole asset (polls, GET _read) keeps its call on the plan: no map entry made
    // and removed per read.
    const plan = this.pollPlans.get(asset);
    if (plan !== undefined && plan.key === key) {
      if (plan.pending) return plan.pending;
      // The same channels asked for by name just before the plan existed.
      const named = this.inflight.get(asset)?.get(key);
      if (named) return named;
      // The call empties plan.pending itself when it settles: no `then` per read for it.
      return this.callDriver(asset, (d) => d.read(channels), channels.length, plan);
    }
    let byKey = this.inflight.get(asset);
    if (!byKey) this.inflight.set(asset, (byKey = new Map()));
    const pending = byKey.get(key);
    if (pending) return pending;
    const p = this.callDriver(asset, (d) => d.read(channels), channels.length);
    if (!isThenable(p)) return p;
    byKey.set(key, p);
    const forget = () => {
      if (byKey!.get(key) === p) byKey!.delete(key);
    };
    p.then(forget, forget);
    return p;
  }

  /**
   * Kura's BaseAsset.write: the same refusals with the WRITE wording; values are converted to
   * the channel's type (values.ts convertValue), and one that cannot be fails that channel alone.
   */
  async write(pid: string, items: { name: string; value: TypedValue }[]): Promise<ChannelRecord[]> {
    const asset = this.require(pid);
    const byName = new Map(asset.channels.map((c) => [c.name, c]));
    const records: ChannelRecord[] = new Array(items.length);
    const toWrite: { idx: number; ch: ChannelConfig; value: TypedValue }[] = [];
    const now = Date.now();
    items.forEach((it, idx) => {
      const ch = byName.get(it.name);
      const rec = (error: string, value = it.value): ChannelRecord => ({ ...refused(it.name, value.type, error, now), value });
      if (!ch) records[idx] = rec('Channel not available');
      else if (ch.mode === 'READ') records[idx] = rec(WRITE_EXPECTED);
      else if (!ch.enabled) records[idx] = rec('Channel is not enabled');
      else {
        const value = convertValue(it.value, ch.valueType);
        if (typeof value === 'string') records[idx] = { name: it.name, status: 'FAILURE', valueType: it.value.type, value: it.value, error: value, timestamp: now };
        else toWrite.push({ idx, ch, value });
      }
    });
    if (toWrite.length > 0) {
      const results = await this.callDriver(asset, (d) => d.write(toWrite.map((x) => ({ channel: x.ch, value: x.value }))), toWrite.length);
      toWrite.forEach(({ idx, ch, value }, i) => {
        const res = results[i];
        const r: ChannelRecord = { name: ch.name, status: res.ok ? 'SUCCESS' : 'FAILURE', valueType: value.type, value, timestamp: stampOf(res) };
        if (!res.ok) r.error = res.error || 'driver error';
        records[idx] = r;
      });
    }
    return records;
  }

  /**
   * One driver call; never throws or rejects: every way it can fail becomes per-channel failures (a
   * driver error is a FAILURE record, docs/rest-api.md). A driver that answers with the list itself
   * gets it back checked, at once; a promise that has not settled within `callTimeoutMs` fails its
   * channels. The deadline is watched by one shared timer (`watchdog`), not a timer per call: every
   * REST read goes through here.
   */
  private callDriver(asset: AssetConfig, op: (d: Driver) => ChannelResult[] | Promise<ChannelResult[]>, n: number, slot?: { pending?: Promise<ChannelResult[]> }): ChannelResult[] | Promise<ChannelResult[]> {
    const driver = this.drivers.get(asset.driverPid);
    if (!driver) return failAll(n, DRIVER_NOT_ATTACHED);
    let p: ChannelResult[] | Promise<ChannelResult[]>;
    try {
      p = op(driver);
    } catch (err) {
      return failAll(n, callFailed(this.log, asset, err));
    }
    // An answer from memory (the simulator): no call to watch, no promise, and the REST read that
    // asked answers in the same step (docs/architecture.md "The cost of a request").
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

  onPoll(listener: (pid: string, records: ChannelRecord[]) => void): () => void {
    this.pollListeners.add(listener);
    return () => this.pollListeners.delete(listener);
  }

  /** The poll statistics of an asset (docs/rest-api.md "Poll status"). */
  pollStatus(pid: string): PollStatus {
    const asset = this.require(pid);
    const st = this.pollStates.get(pid) ?? newPollState();
    return { pollInterval: asset.pollInterval, ...st, devices: this.drivers.get(asset.driverPid)?.devices?.() ?? [] };
  }

  // One read of all readable channels per cycle (the driver coalesces it), on a fixed period:
  // cycle k starts at start + k × poll.interval. A cycle still running when the next is due is an
  // overrun: counted, and the next starts as soon as it ends (never two at once, missed periods
  // are not made up), so a slow device never piles up reads. Each asset has its own timer, so it
  // never delays another asset or an HTTP request. A wait longer than a timer honours (never from a
  // validated configuration: docs/configuration.md "Time-valued keys") is waited for in steps.
  private schedule(asset: AssetConfig, at: number): void {
    const wait = at - Date.now();
    const t = setTimeout(async () => {
      if (this.stopped || this.assets.get(asset.pid) !== asset) return;
      if (wait > TIMER_MAX_MS) return this.schedule(asset, at);
      let st = this.pollStates.get(asset.pid);
      if (!st) this.pollStates.set(asset.pid, (st = newPollState()));
      st.lastPoll = Date.now();
      st.polls++;
      try {
        const records = await this.pollRead(asset);
        if (this.assets.get(asset.pid) !== asset) return;
        // A poll fails when any of its channels fails.
        if (records.every((r) => r.status === 'SUCCESS')) {
          st.lastSuccess = Date.now();
          st.consecutiveFailures = 0;
        } else st.consecutiveFailures++;
        for (const l of this.pollListeners) {
          try {
            l(asset.pid, records);
          } catch (err) {
            this.log.warn('poll listener failed', { asset: asset.pid, error: (err as Error).message });
          }
        }
      } catch (err) {
        this.log.warn('poll failed', { asset: asset.pid, error: (err as Error).message });
      }
      if (this.stopped || this.pollTimers.get(asset.pid) !== t || this.assets.get(asset.pid) !== asset) return;
      const now = Date.now();
      let next = at + asset.pollInterval;
      if (next <= now) {
        st.overruns++;
        next = now;
      }
      this.schedule(asset, next);
    }, timerDelay(wait));
    t.unref?.();
    this.pollTimers.set(asset.pid, t);
  }

  /**
   * read(pid) of every channel, as a poll cycle does it ten times a second: every enabled READ or
   * READ_WRITE channel (none is refused), the list and its single-flight key made once per
   * configuration, and the same list handed to the driver each cycle (drivers may cache their plan
   * for it).
   */
  private pollRead(asset: AssetConfig): ChannelRecord[] | Promise<ChannelRecord[]>;
  private pollRead<T>(asset: AssetConfig, map: (records: ChannelRecord[]) => T): T | Promise<T>;
  private pollRead<T>(asset: AssetConfig, map?: (records: ChannelRecord[]) => T): T | ChannelRecord[] | Promise<T | ChannelRecord[]> {
    let plan = this.pollPlans.get(asset);
    if (!plan) {
      const readable = (c: ChannelConfig) => c.enabled && c.mode !== 'WRITE';
      // The asset's own list when every channel is read (no copy of 1,000 references per asset).
      const channels = asset.channels.every(readable) ? asset.channels : asset.channels.filter(readable);
      this.pollPlans.set(asset, (plan = { channels, key: channels.map((c) => c.name).join('\u0000') }));
    }
    const { channels } = plan;
    if (channels.length === 0) return map ? map([]) : [];
    // A `then`, not an async function (its frame was a large part of what a REST read allocated),
    // and none at all when the driver answered from memory.
    const results = this.sharedRead(asset, channels, plan.key);
    if (!isThenable(results)) return readRecords(channels, results, map);
    return results.then((r) => readRecords(channels, r, map));
  }

  async close(): Promise<void> {
    this.stopped = true;
    for (const t of this.pollTimers.values()) clearTimeout(t);
    this.pollTimers.clear();
    await this.drivers.close();
    // Calls into drivers that were just closed may never settle: answer their callers now.
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

function readRecords<T>(channels: ChannelConfig[], results: ChannelResult[], map: ((records: ChannelRecord[]) => T) | undefined): T | ChannelRecord[] {
  const records: ChannelRecord[] = new Array(channels.length);
  for (let i = 0; i < channels.length; i++) records[i] = readRecord(channels[i]!, results[i]!);
  return map ? map(records) : records;
}

function stampOf(res: ChannelResult): number {
  return (res.ok && res.timestamp) || Date.now();
}

function refused(name: string, valueType: ValueType, error: string, timestamp: number): ChannelRecord {
  return { name, status: 'FAILURE', valueType, error, timestamp, refused: true };
}

function readRecord(ch: ChannelConfig, res: ChannelResult): ChannelRecord {
  const r: ChannelRecord = { name: ch.name, status: res.ok ? 'SUCCESS' : 'FAILURE', valueType: ch.valueType, timestamp: stampOf(res) };
  if (res.ok) {
    const value = res.value.type === ch.valueType ? res.value : convertValue(res.value, ch.valueType);
    if (typeof value === 'string') {
      r.status = 'FAILURE';
      r.error = `Driver returned ${value}`;
    } else r.value = applyScaleOffset(value, ch);
  } else r.error = res.error || 'driver error';
  if (ch.unit !== undefined) r.unit = ch.unit;
  return r;
}
