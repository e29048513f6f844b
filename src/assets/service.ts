// Assets at run time (AssetService in types.ts): the asset configurations in force over the parts
// in this folder — the driver instances (driver-pool.ts), the calls into them with their deadline
// (driver-calls.ts), identical reads sharing one call (single-flight.ts), Kura's channel rules
// (channel-access.ts) and the poll cycles (poll-scheduler.ts).

import type { Logger } from '../log.js';
import type { DriverInstanceConfig } from './config.js';
import type { ChannelRecord, TypedValue } from '../channels/types.js';
import { AssetNotFoundError, type AssetConfig, type AssetService } from './types.js';
import { isThenable } from '../core/thenable.js';
import { sameJson, type DriverPool } from './driver-pool.js';
import { DriverCalls } from './driver-calls.js';
import { SharedReads } from './single-flight.js';
import { readRecord, readRecords, sortReads, sortWrites, writeRecord } from './channel-access.js';
import { PollScheduler, pollHealth, type PollStatus } from './poll-scheduler.js';

export type { PollStatus };

export interface AssetRuntimeOptions {
  /**
   * Safety net for a driver that never settles its promise: after this long the channels fail
   * with a clear message and the caller (an HTTP request, a poll cycle) moves on. Drivers have
   * their own, shorter timeouts (e.g. `modbus.timeout`); this only bounds a broken driver.
   */
  driverCallTimeoutMs?: number;
}

export class AssetRuntime implements AssetService {
  private assets = new Map<string, AssetConfig>();
  private driverConfigs: Record<string, DriverInstanceConfig> = {};
  private readonly calls: DriverCalls;
  private readonly reads: SharedReads;
  private readonly polls: PollScheduler;

  constructor(
    readonly drivers: DriverPool,
    private readonly log: Logger,
    opts: AssetRuntimeOptions = {},
  ) {
    this.calls = new DriverCalls(drivers, log, opts.driverCallTimeoutMs ?? 30_000);
    this.reads = new SharedReads(this.calls);
    this.polls = new PollScheduler((pid) => this.assets.get(pid), (asset) => this.pollRead(asset), log);
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
    this.polls.update(this.assets, prev);
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
    const { records, toRead } = sortReads(asset, names, Date.now());
    if (toRead.length > 0) {
      const results = await this.reads.read(asset, toRead.map((x) => x.ch));
      toRead.forEach(({ idx, ch }, i) => {
        records[idx] = readRecord(ch, results[i]);
      });
    }
    return records;
  }

  /**
   * Kura's BaseAsset.write: the same refusals with the WRITE wording; values are converted to
   * the channel's type, and one that cannot be fails that channel alone.
   */
  async write(pid: string, items: { name: string; value: TypedValue }[]): Promise<ChannelRecord[]> {
    const asset = this.require(pid);
    const { records, toWrite } = sortWrites(asset, items, Date.now());
    if (toWrite.length > 0) {
      const results = await this.calls.call(asset, (d) => d.write(toWrite.map((x) => ({ channel: x.ch, value: x.value }))), toWrite.length);
      toWrite.forEach(({ idx, ch, value }, i) => {
        records[idx] = writeRecord(ch, value, results[i]);
      });
    }
    return records;
  }

  onPoll(listener: (pid: string, records: ChannelRecord[]) => void): () => void {
    return this.polls.onPoll(listener);
  }

  /** The poll statistics of an asset (docs/rest-api.md "Poll status"). */
  pollStatus(pid: string): PollStatus {
    const asset = this.require(pid);
    const driver = this.drivers.get(asset.driverPid);
    const st = this.polls.stateOf(pid);
    return {
      pollInterval: asset.pollInterval, ...st, devices: driver?.devices?.() ?? [],
      driver: asset.driverPid, driverAttached: driver !== undefined, state: pollHealth(st, asset.pollInterval, driver !== undefined, Date.now()),
    };
  }

  /**
   * read(pid) of every channel, as a poll cycle does it ten times a second: the asset's read plan
   * (single-flight.ts), the same list handed to the driver each cycle.
   */
  private pollRead(asset: AssetConfig): ChannelRecord[] | Promise<ChannelRecord[]>;
  private pollRead<T>(asset: AssetConfig, map: (records: ChannelRecord[]) => T): T | Promise<T>;
  private pollRead<T>(asset: AssetConfig, map?: (records: ChannelRecord[]) => T): T | ChannelRecord[] | Promise<T | ChannelRecord[]> {
    const { channels, key } = this.reads.planOf(asset);
    if (channels.length === 0) return map ? map([]) : [];
    // A `then`, not an async function (its frame was a large part of what a REST read allocated),
    // and none at all when the driver answered from memory.
    const results = this.reads.read(asset, channels, key);
    if (!isThenable(results)) return readRecords(channels, results, map);
    return results.then((r) => readRecords(channels, r, map));
  }

  async close(): Promise<void> {
    this.polls.close();
    await this.drivers.close();
    // Calls into drivers that were just closed may never settle: answer their callers now.
    this.calls.failPending();
  }
}
