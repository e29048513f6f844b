// The `drivers` and `assets` sections: driver instances (each checked by its factory), and the
// generic Kura asset/channel properties here, driver-specific channel properties checked by the
// driver factory the asset's `driver.pid` names.

import type { Problem } from '../core/schema.js';
import type { DriverRegistry } from '../drivers/registry.js';
import { any, bool, duration, isPlainObject, kind, mapOf, num, oneOf, problem, setOwn, str, join, unknownKey, warning, type Spec } from '../core/schema.js';
import { CHANNEL_MODES, SPEC, SPEC_OF, VALUE_TYPES, type ChannelConfig } from '../channels/types.js';
import { type AssetConfig } from './types.js';

export interface DriverInstanceConfig {
  id: string;
  factory: string;
  props: Record<string, unknown>;
}

/** The `drivers` section; a factory not built in is a warning (a package may provide it). */
export function validateDrivers(raw: unknown, p: Problem[], registry: DriverRegistry): Record<string, DriverInstanceConfig> {
  const out: Record<string, DriverInstanceConfig> = {};
  const all = mapOf<unknown>(any)(raw, 'drivers', p);
  for (const [id, v] of Object.entries(all)) {
    const path = `drivers.${id}`;
    if (!isPlainObject(v)) {
      problem(p, path, `expected an object, got ${kind(v)}`);
      continue;
    }
    const { factory, ...props } = v;
    if (typeof factory !== 'string' || factory === '') {
      problem(p, `${path}.factory`, factory === undefined ? 'missing' : `expected a string, got ${kind(factory)}`);
      continue;
    }
    const f = registry.get(factory);
    if (!f) {
      // A factory may come from a deployment package installed later (or already, in dataDir).
      warning(p, `${path}.factory`, `no driver factory "${factory}" is built in; it must be provided by an installed deployment package`);
    } else {
      for (const key of Object.keys(props)) if (!f.instanceKeys.includes(key)) unknownKey(p, `${path}.${key}`, key, f.instanceKeys);
      p.push(...f.validateInstance(props, path));
    }
    setOwn(out, id, { id, factory, props });
  }
  return out;
}

// Asset names travel in URL paths, MQTT topic levels and log lines: no separators, wildcards,
// spaces or control characters.
export const NAME_RULE = /^[^/#+*?,\s\u0000-\u001f\u007f]{1,255}$/;
const NAME_HINT = 'asset names are 1-255 characters without spaces, / # + * ? , or control characters';
// Kura's channel name rule (its asset configuration): no `#`, `/`, `+`, `,` or space. Kura silently
// ignores a key with a bad name; we report it (docs/configuration.md: nothing in the file is
// silently ignored). Other whitespace and control characters are refused too: they cannot be told
// apart in a log line.
export const CHANNEL_NAME_RULE = /^[^/#+,\s\u0000-\u001f\u007f]{1,255}$/;
const CHANNEL_NAME_HINT = 'channel names are 1-255 characters without spaces, # / + , or control characters';

const GENERIC_CHANNEL_KEYS = ['enabled', 'type', 'value.type', 'scale', 'offset', 'unit', 'deadband'];

/**
 * The asset's time-valued keys (ms, at most a day: docs/configuration.md "Time-valued keys"), with
 * their defaults; configuration/v2's asset definition takes its bounds from here.
 */
export const ASSET_TIMES = {
  'poll.interval': [duration('ms', 0, 86_400_000), 0],
  'publish.max.interval': [duration('ms', 0, 86_400_000), 0],
} satisfies Spec;
const time = (a: Record<string, unknown>, key: keyof typeof ASSET_TIMES, path: string, p: Problem[]): number =>
  a[key] === undefined ? ASSET_TIMES[key][1] : ASSET_TIMES[key][0](a[key], join(path, key), p);
const ASSET_KEYS = ['driver.pid', 'asset.desc', 'poll.interval', 'publish.max.interval', 'channels'];

function validateChannel(
  raw: unknown,
  path: string,
  p: Problem[],
  name: string,
  driver: DriverInstanceConfig | undefined,
  registry: DriverRegistry,
  strings: Map<string, string>,
): ChannelConfig | undefined {
  if (!isPlainObject(raw)) {
    problem(p, path, `expected an object, got ${kind(raw)}`);
    return undefined;
  }
  if (!CHANNEL_NAME_RULE.test(name)) problem(p, path, CHANNEL_NAME_HINT);
  const factory = driver ? registry.get(driver.factory) : undefined;
  const driverProps: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(raw)) {
    if (GENERIC_CHANNEL_KEYS.includes(k)) continue;
    if (factory && !factory.channelKeys.includes(k)) unknownKey(p, join(path, k), k, [...GENERIC_CHANNEL_KEYS, ...factory.channelKeys]);
    // The same text in many channels (e.g. "HOLDING_REGISTERS") is kept once: JSON.parse makes a
    // string per occurrence for all but short values.
    driverProps[k] = typeof v === 'string' ? intern(strings, v) : v;
  }
  const at = (k: string) => join(path, k);
  // Kura drops a channel without `+type` or `+value.type` from every listing (its BaseAsset). We do
  // the same, and say so, rather than guess a mode or a type.
  const missing = ['type', 'value.type'].filter((k) => raw[k] === undefined);
  if (missing.length > 0) {
    warning(p, path, `missing ${missing.join(' and ')}: the channel is left out, as Kura does`);
    return undefined;
  }
  // A bad value.type or type is reported once: the driver's checks, which depend on both, are then
  // skipped instead of adding errors about a type nobody wrote (docs/configuration.md).
  const before = p.length;
  const valueType = oneOf(VALUE_TYPES)(raw['value.type'], at('value.type'), p);
  const mode = oneOf(CHANNEL_MODES)(raw.type, at('type'), p);
  const typesOk = p.length === before;
  const ch: ChannelConfig = {
    name,
    enabled: raw.enabled === undefined ? true : bool(raw.enabled, at('enabled'), p),
    mode,
    valueType,
    scale: raw.scale === undefined ? 1 : num()(raw.scale, at('scale'), p),
    offset: raw.offset === undefined ? 0 : num()(raw.offset, at('offset'), p),
    deadband: raw.deadband === undefined ? 0 : num({ min: 0 })(raw.deadband, at('deadband'), p),
    driverProps,
    // Slots for the driver's parsed spec (channelSpecs): in the object (16 bytes), not added later.
    [SPEC_OF]: undefined,
    [SPEC]: undefined,
  };
  // No `unit` in descriptions and records when none is configured (docs/configuration.md); an
  // explicit "" is configured (Kura's descriptor shows "unit":"").
  if (raw.unit !== undefined) ch.unit = intern(strings, str()(raw.unit, at('unit'), p));
  if (factory && typesOk) p.push(...factory.validateChannel(driverProps, valueType, path, driver!.props, ch.mode));
  return ch;
}

function intern(strings: Map<string, string>, v: string): string {
  const known = strings.get(v);
  if (known !== undefined) return known;
  strings.set(v, v);
  return v;
}

export function validateAssets(
  raw: unknown,
  path: string,
  p: Problem[],
  drivers: Record<string, DriverInstanceConfig>,
  registry: DriverRegistry,
): AssetConfig[] {
  const out: AssetConfig[] = [];
  if (!isPlainObject(raw)) {
    problem(p, path, `expected an object, got ${kind(raw)}`);
    return out;
  }
  const strings = new Map<string, string>();
  for (const [pid, a] of Object.entries(raw)) {
    const ap = join(path, pid);
    if (!NAME_RULE.test(pid)) problem(p, ap, NAME_HINT);
    if (!isPlainObject(a)) {
      problem(p, ap, `expected an object, got ${kind(a)}`);
      continue;
    }
    for (const k of Object.keys(a)) if (!ASSET_KEYS.includes(k)) unknownKey(p, join(ap, k), k, ASSET_KEYS);
    const driverPid = str({ nonEmpty: true })(a['driver.pid'], join(ap, 'driver.pid'), p);
    const driver = drivers[driverPid];
    if (a['driver.pid'] !== undefined && driverPid !== '' && !driver) problem(p, join(ap, 'driver.pid'), `no driver instance "${driverPid}" in drivers`);
    const channels: ChannelConfig[] = [];
    const rawChannels = a.channels === undefined ? {} : a.channels;
    if (!isPlainObject(rawChannels)) problem(p, join(ap, 'channels'), `expected an object, got ${kind(rawChannels)}`);
    else {
      for (const [name, c] of Object.entries(rawChannels)) {
        const ch = validateChannel(c, join(join(ap, 'channels'), name), p, name, driver, registry, strings);
        if (ch) channels.push(ch);
      }
    }
    out.push({
      pid,
      driverPid,
      description: a['asset.desc'] === undefined ? '' : str()(a['asset.desc'], join(ap, 'asset.desc'), p),
      pollInterval: time(a, 'poll.interval', ap, p),
      publishMaxInterval: time(a, 'publish.max.interval', ap, p),
      channels,
    });
  }
  return out;
}
