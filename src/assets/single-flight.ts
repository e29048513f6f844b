// Single flight: identical reads of the same asset configuration in flight share one driver call,
// and so one bus transaction (docs/drivers.md "Writing a driver"). Keyed by the configuration
// object, so a reload never joins a stale read. A read of the whole asset (a poll, a REST GET
// `_read`) follows its plan, worked out once per configuration, and keeps its call there: no map
// entry made and removed per read.

import type { ChannelResult } from '../drivers/driver.js';
import type { ChannelConfig } from '../channels/types.js';
import type { AssetConfig } from './types.js';
import type { CallSlot, DriverCalls } from './driver-calls.js';
import { isThenable } from '../core/thenable.js';

/** What a read of the whole asset asks for: its channels and their single-flight key; its call while one runs. */
export interface ReadPlan extends CallSlot {
  channels: ChannelConfig[];
  key: string;
}

const keyOf = (channels: ChannelConfig[]) => channels.map((c) => c.name).join('\u0000');

export class SharedReads {
  /** Per asset configuration: its whole-asset read, worked out once. */
  private plans = new WeakMap<AssetConfig, ReadPlan>();
  /** Per asset configuration: the reads by name in flight, by their channels' key. */
  private inflight = new WeakMap<AssetConfig, Map<string, Promise<ChannelResult[]>>>();

  constructor(private readonly calls: DriverCalls) {}

  /**
   * Every enabled READ or READ_WRITE channel (none is refused), the list and its key made once per
   * configuration, and the same list handed to the driver each time (drivers may cache their plan
   * for it).
   */
  planOf(asset: AssetConfig): ReadPlan {
    let plan = this.plans.get(asset);
    if (!plan) {
      const readable = (c: ChannelConfig) => c.enabled && c.mode !== 'WRITE';
      // The asset's own list when every channel is read (no copy of 1,000 references per asset).
      const channels = asset.channels.every(readable) ? asset.channels : asset.channels.filter(readable);
      this.plans.set(asset, (plan = { channels, key: keyOf(channels) }));
    }
    return plan;
  }

  /** Reads `channels` of `asset`, joining the identical read in flight if there is one. */
  read(asset: AssetConfig, channels: ChannelConfig[], key = keyOf(channels)): ChannelResult[] | Promise<ChannelResult[]> {
    const plan = this.plans.get(asset);
    if (plan !== undefined && plan.key === key) {
      if (plan.pending) return plan.pending;
      // The same channels asked for by name just before the plan existed.
      const named = this.inflight.get(asset)?.get(key);
      if (named) return named;
      // The call empties plan.pending itself when it settles: no `then` per read for it.
      return this.calls.call(asset, (d) => d.read(channels), channels.length, plan);
    }
    let byKey = this.inflight.get(asset);
    if (!byKey) this.inflight.set(asset, (byKey = new Map()));
    const pending = byKey.get(key);
    if (pending) return pending;
    const p = this.calls.call(asset, (d) => d.read(channels), channels.length);
    if (!isThenable(p)) return p;
    byKey.set(key, p);
    const forget = () => {
      if (byKey!.get(key) === p) byKey!.delete(key);
    };
    p.then(forget, forget);
    return p;
  }
}
