// Assets at run time: driver instances, channel reads and writes with Kura's mode rules, polling.

import type { Logger } from '../log.js';
import type { DriverInstanceConfig } from '../config/config.js';
import type { Driver, ChannelResult } from '../drivers/driver.js';
import type { DriverRegistry } from '../drivers/registry.js';
import {
  AssetNotFoundError, type AssetConfig, type AssetService, type ChannelConfig, type ChannelRecord, type TypedValue,
} from './types.js';
import { applyScaleOffset } from './scaling.js';

export const DRIVER_NOT_ATTACHED = 'Driver not attached';

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

  private attach(slot: DriverSlot): void {
    const f = this.registry.get(slot.config.factory);
    if (!f || slot.driver) return;
    try {
      slot.driver = f.create(slot.config.props, { id: slot.config.id, log: this.log.child({ driver: slot.config.id }), dataDir: this.dataDir });
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

export class AssetRuntime implements AssetService {
  private assets = new Map<string, AssetConfig>();
  private pollTimers = new Map<string, NodeJS.Timeout>();
  private pollListeners = new Set<(pid: string, records: ChannelRecord[]) => void>();
  private stopped = false;

  constructor(
    readonly drivers: DriverPool,
    private readonly log: Logger,
  ) {}

  configure(assets: AssetConfig[], drivers: Record<string, DriverInstanceConfig>): void {
    this.drivers.configure(drivers);
    this.assets = new Map(assets.map((a) => [a.pid, a]));
    this.restartPolling();
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

  async read(pid: string, names?: string[]): Promise<ChannelRecord[]> {
    const asset = this.require(pid);
    const byName = new Map(asset.channels.map((c) => [c.name, c]));
    const wanted: string[] = names
      ? [...new Set(names)]
      : asset.channels.filter((c) => c.enabled && c.mode !== 'WRITE').map((c) => c.name);
    const records: (ChannelRecord | undefined)[] = new Array(wanted.length);
    const toRead: { idx: number; ch: ChannelConfig }[] = [];
    const now = Date.now();
    wanted.forEach((name, idx) => {
      const ch = byName.get(name);
      if (!ch) records[idx] = failure(name, 'STRING', 'Channel not available', now);
      else if (!ch.enabled) records[idx] = failure(name, ch.valueType, 'Channel is not enabled', now, ch.unit);
      else if (ch.mode === 'WRITE') records[idx] = failure(name, ch.valueType, 'Channel type not within expected types (READ or READ_WRITE)', now, ch.unit);
      else toRead.push({ idx, ch });
    });
    if (toRead.length > 0) {
      const results = await this.callDriver(asset, (d) => d.read(toRead.map((x) => x.ch)), toRead.length);
      toRead.forEach(({ idx, ch }, i) => {
        records[idx] = toRecord(ch, results[i], true);
      });
    }
    return records as ChannelRecord[];
  }

  async write(pid: string, items: { name: string; value: TypedValue }[]): Promise<ChannelRecord[]> {
    const asset = this.require(pid);
    const byName = new Map(asset.channels.map((c) => [c.name, c]));
    const records: (ChannelRecord | undefined)[] = new Array(items.length);
    const toWrite: { idx: number; ch: ChannelConfig; value: TypedValue }[] = [];
    const now = Date.now();
    items.forEach((it, idx) => {
      const ch = byName.get(it.name);
      if (!ch) records[idx] = failure(it.name, it.value.type, 'Channel not available', now);
      else if (!ch.enabled) records[idx] = failure(it.name, ch.valueType, 'Channel is not enabled', now, ch.unit);
      else if (ch.mode === 'READ') records[idx] = failure(it.name, ch.valueType, 'Channel type not within expected types (WRITE or READ_WRITE)', now, ch.unit);
      else toWrite.push({ idx, ch, value: it.value });
    });
    if (toWrite.length > 0) {
      const results = await this.callDriver(asset, (d) => d.write(toWrite.map((x) => ({ channel: x.ch, value: x.value }))), toWrite.length);
      toWrite.forEach(({ idx, ch }, i) => {
        records[idx] = toRecord(ch, results[i], false);
      });
    }
    return records as ChannelRecord[];
  }

  private async callDriver(asset: AssetConfig, op: (d: Driver) => Promise<ChannelResult[]>, n: number): Promise<ChannelResult[]> {
    const driver = this.drivers.get(asset.driverPid);
    if (!driver) return new Array(n).fill({ ok: false, error: DRIVER_NOT_ATTACHED });
    try {
      const res = await op(driver);
      if (!Array.isArray(res) || res.length !== n) throw new Error('driver returned a malformed result');
      return res;
    } catch (err) {
      const msg = (err as Error)?.message || 'driver error';
      return new Array(n).fill({ ok: false, error: msg });
    }
  }

  onPoll(listener: (pid: string, records: ChannelRecord[]) => void): () => void {
    this.pollListeners.add(listener);
    return () => this.pollListeners.delete(listener);
  }

  private restartPolling(): void {
    for (const t of this.pollTimers.values()) clearTimeout(t);
    this.pollTimers.clear();
    if (this.stopped) return;
    for (const a of this.assets.values()) if (a.pollInterval > 0) this.schedule(a.pid, a.pollInterval);
  }

  // A cycle starts only after the previous one finished: a slow device never piles up reads.
  private schedule(pid: string, delay: number): void {
    const t = setTimeout(async () => {
      const asset = this.assets.get(pid);
      if (!asset || this.stopped) return;
      try {
        const records = await this.read(pid);
        for (const l of this.pollListeners) {
          try {
            l(pid, records);
          } catch (err) {
            this.log.warn('poll listener failed', { asset: pid, error: (err as Error).message });
          }
        }
      } catch (err) {
        this.log.warn('poll failed', { asset: pid, error: (err as Error).message });
      }
      if (this.pollTimers.get(pid) === t && this.assets.get(pid) === asset) this.schedule(pid, asset.pollInterval);
    }, delay);
    t.unref?.();
    this.pollTimers.set(pid, t);
  }

  async close(): Promise<void> {
    this.stopped = true;
    for (const t of this.pollTimers.values()) clearTimeout(t);
    this.pollTimers.clear();
    await this.drivers.close();
  }
}

function failure(name: string, valueType: ChannelRecord['valueType'], error: string, timestamp: number, unit?: string): ChannelRecord {
  const r: ChannelRecord = { name, status: 'FAILURE', valueType, error, timestamp };
  if (unit !== undefined) r.unit = unit;
  return r;
}

function toRecord(ch: ChannelConfig, res: ChannelResult | undefined, isRead: boolean): ChannelRecord {
  const ts = (res && res.ok && res.timestamp) || Date.now();
  if (!res) return failure(ch.name, ch.valueType, 'driver returned no result', ts, ch.unit);
  if (!res.ok) return failure(ch.name, ch.valueType, res.error || 'driver error', ts, ch.unit);
  const value = isRead ? applyScaleOffset(res.value, ch) : res.value;
  const r: ChannelRecord = { name: ch.name, status: 'SUCCESS', valueType: ch.valueType, value, timestamp: ts };
  if (ch.unit !== undefined) r.unit = ch.unit;
  return r;
}
