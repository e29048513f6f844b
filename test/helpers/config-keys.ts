// Every configuration key gatewayd has, enumerated from the definitions configuration/v2 publishes
// (src/configuration/model.ts: the section validators, the asset and channel definitions, the
// built-in driver factories' own readers), each with where it lives in the configuration file and
// the component and property configuration/v2 names it by. The tests of the time-valued keys
// (docs/configuration.md "Time-valued keys") take their table from here, so a key added later is
// covered without anyone editing a list.

import type { AttributeDef } from '../../src/drivers/driver.js';
import { DriverRegistry } from '../../src/drivers/registry.js';
import { builtinDrivers } from '../../src/drivers/builtin.js';
import { ASSET_FACTORY, DRIVER_FACTORY, SINGLETONS, factoryOcd, flattenAsset, ocdOf } from '../../src/configuration/model.js';

export interface ConfigKey {
  /** The key path, as check-config and the log print it. */
  path: string;
  /** configuration/v2's component pid and property id. */
  pid: string;
  prop: string;
  ad: AttributeDef;
  /** Sets the key to `value` in a configuration made by baseConfig(). */
  set(cfg: Record<string, any>, value: unknown): void;
}

/** A time-valued key, with its range in its own unit. */
export interface TimeKey extends ConfigKey {
  unit: 'ms' | 's';
  min: number;
  max: number;
}

/**
 * A valid driver instance and channel of each built-in factory. A built-in factory missing here
 * fails the enumeration: its keys must be covered too.
 */
const BASE: Record<string, { id: string; instance: Record<string, unknown>; channel: Record<string, unknown> }> = {
  simulator: { id: 'sim', instance: {}, channel: { type: 'READ', 'value.type': 'INTEGER', simulation: 'memory' } },
  modbus: { id: 'plc', instance: { 'access.type': 'TCP', 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': 1 }, channel: { type: 'READ', 'value.type': 'INTEGER', 'memory.address': 1 } },
  gpio: { id: 'io', instance: {}, channel: { type: 'READ', 'value.type': 'BOOLEAN', 'resource.name': '1', 'resource.direction': 'INPUT' } },
};

const assetOf = (factory: string) => `a_${factory}`;

function baseOf(factory: string) {
  const b = BASE[factory];
  if (!b) throw new Error(`no base configuration for the built-in driver factory ${factory}: add one to test/helpers/config-keys.ts`);
  return b;
}

/** One instance of every built-in driver factory, and one asset with one channel `c` on each. */
export function baseConfig(): Record<string, any> {
  const drivers: Record<string, unknown> = {};
  const assets: Record<string, unknown> = {};
  for (const f of builtinDrivers()) {
    const b = baseOf(f.name);
    drivers[b.id] = { factory: f.name, ...b.instance };
    assets[assetOf(f.name)] = { 'driver.pid': b.id, channels: { c: { ...b.channel } } };
  }
  return { drivers, assets };
}

/** Every key of every component, from the definitions. */
export function configKeys(): ConfigKey[] {
  const registry = new DriverRegistry(builtinDrivers());
  const raw = baseConfig();
  const out: ConfigKey[] = [];
  for (const s of SINGLETONS) {
    for (const ad of ocdOf({ pid: s.pid, props: {} }, raw, registry)!.ads) {
      const set = (cfg: Record<string, any>, v: unknown) => (s.section ? ((cfg[s.section] ??= {})[ad.id] = v) : (cfg[ad.id] = v));
      out.push({ path: s.section ? `${s.section}.${ad.id}` : ad.id, pid: s.pid, prop: ad.id, ad, set });
    }
  }
  builtinDrivers().forEach((f, i) => {
    const b = baseOf(f.name);
    for (const ad of factoryOcd(DRIVER_FACTORY + f.name, registry)!.ads) {
      out.push({ path: `drivers.${b.id}.${ad.id}`, pid: b.id, prop: ad.id, ad, set: (cfg, v) => (cfg.drivers[b.id][ad.id] = v) });
    }
    const pid = assetOf(f.name);
    for (const ad of ocdOf({ pid, factoryPid: ASSET_FACTORY, props: flattenAsset(raw.assets[pid]) }, raw, registry)!.ads) {
      const ch = /^c#\+?(.+)$/.exec(ad.id);
      if (ch) out.push({ path: `assets.${pid}.channels.c.${ch[1]}`, pid, prop: ad.id, ad, set: (cfg, v) => (cfg.assets[pid].channels.c[ch[1]] = v) });
      // The asset's own keys are the same for every driver: once.
      else if (i === 0) out.push({ path: `assets.${pid}.${ad.id}`, pid, prop: ad.id, ad, set: (cfg, v) => (cfg.assets[pid][ad.id] = v) });
    }
  });
  return out;
}

/** The keys declared time-valued (their definition has a unit), with their ranges. */
export function timeKeys(): TimeKey[] {
  return configKeys()
    .filter((k) => k.ad.unit !== undefined)
    .map((k) => ({ ...k, unit: k.ad.unit!, min: k.ad.min!, max: k.ad.max! }));
}

/** Names that say a key is measured in time, whatever its author declared. */
export const TIME_NAME = /interval|timeout|delay|deadline|backoff|keep-?alive|period|linger|ttl|expir|lifetime|duration|latency|wait|sleep/i;

/** `max` of a time key in milliseconds. */
export const maxMs = (k: TimeKey) => k.max * (k.unit === 's' ? 1000 : 1);

/**
 * The refusal every path gives for `got` (docs/configuration.md "Time-valued keys"): the range,
 * its unit, the maximum as a span in words, the value given.
 */
export function rangeRefusal(k: TimeKey, got: number): RegExp {
  return new RegExp(`must be between ${k.min} and ${k.max} ${k.unit} \\([0-9.]+ (ms|s|min|h|days)\\), got ${got}`);
}
