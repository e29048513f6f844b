// Driver properties: the one validator every driver's config.ts uses. A driver parses its instance
// and channel properties with a PropReader into a typed spec plus the problems found, one per bad
// key, each with its key path (`drivers.plc.modbus.timeout`). The same parse serves the factory's
// validateInstance/validateChannel (the problems) and create()/read()/write() (the spec), so what
// the configuration check accepts is exactly what the driver runs with. Readers never throw, whatever
// the input: a bad value is reported and replaced by the key's default.

import { SPEC, SPEC_OF, type ChannelConfig } from '../channels/types.js';
import type { AttributeDef, Problem } from './driver.js';
import { durationRange, TIME_UNITS, type TimeUnit } from '../core/schema.js';
import { TIMER_MAX_MS } from '../core/timers.js';

/**
 * While `ads` is set, every key a reader reads is recorded with its type, default, bounds and
 * options: configuration/v2 derives a built-in factory's property definitions from its own
 * validator this way (docs/configuration-v2.md).
 */
export const recorder: { ads?: AttributeDef[] } = {};
const rec = (id: string, type: AttributeDef['type'], d?: unknown, x: Partial<AttributeDef> = {}) => recorder.ads?.push({ id, type, default: d, ...x });

export type Parsed<T> = { value: T; problems: Problem[] };

export class PropReader {
  readonly problems: Problem[] = [];
  constructor(private readonly props: Record<string, unknown>, private readonly path: string) {}

  has(key: string): boolean {
    return this.props[key] !== undefined;
  }

  raw(key: string): unknown {
    rec(key, 'STRING');
    return this.props[key];
  }

  problem(key: string, message: string, severity: 'error' | 'warning' = 'error'): void {
    this.problems.push({ path: key ? `${this.path}.${key}` : this.path, message, severity });
  }

  int(key: string, def: number, min: number, max: number): number {
    rec(key, 'INTEGER', def, { min, max });
    const v = this.props[key];
    if (v === undefined) return def;
    if (typeof v !== 'number' || !Number.isInteger(v)) {
      this.problem(key, `must be an integer, got ${JSON.stringify(v)}`);
      return def;
    }
    if (v < min || v > max) {
      this.problem(key, `${v} is out of range (${min}..${max})`);
      return def;
    }
    return v;
  }

  /**
   * A time-valued key: an integer count of `unit` within `min..max`, worded as every time-valued
   * key is (docs/configuration.md "Time-valued keys"); `max` must be one a timer honours.
   */
  duration(key: string, def: number, unit: TimeUnit, min: number, max: number): number {
    if (max * TIME_UNITS[unit] > TIMER_MAX_MS) throw new RangeError(`${key}: maximum ${max} ${unit} exceeds what a timer honours`);
    rec(key, 'INTEGER', def, { min, max, unit });
    const v = this.props[key];
    if (v === undefined) return def;
    if (typeof v !== 'number' || !Number.isInteger(v)) {
      this.problem(key, `must be an integer, got ${JSON.stringify(v)}`);
      return def;
    }
    const why = durationRange(v, unit, min, max);
    if (why === undefined) return v;
    this.problem(key, why);
    return def;
  }

  bool(key: string, def: boolean): boolean {
    rec(key, 'BOOLEAN', def);
    const v = this.props[key];
    if (v === undefined) return def;
    if (typeof v !== 'boolean') {
      this.problem(key, `must be true or false, got ${JSON.stringify(v)}`);
      return def;
    }
    return v;
  }

  str(key: string, def: string): string {
    rec(key, 'STRING', def);
    const v = this.props[key];
    if (v === undefined) return def;
    if (typeof v !== 'string') {
      this.problem(key, `must be a string, got ${JSON.stringify(v)}`);
      return def;
    }
    return v;
  }

  /** One of `values`; `anyCase` accepts `holding_registers` for `HOLDING_REGISTERS` (Kura's Modbus driver does). */
  enumOf<T extends string>(key: string, values: readonly T[], def: T, anyCase = false): T {
    rec(key, 'STRING', def, { options: values });
    const v = this.props[key];
    if (v === undefined) return def;
    const found = typeof v === 'string' ? values.find((x) => x === (anyCase ? v.toUpperCase() : v)) : undefined;
    if (!found) {
      this.problem(key, `unknown value ${JSON.stringify(v)} (expected one of ${values.join(', ')})`);
      return def;
    }
    return found;
  }

  /** A plain object (e.g. a name → number map), or `{}` with a problem. */
  object(key: string): Record<string, unknown> {
    rec(key, 'STRING', undefined, { json: true });
    const v = this.props[key];
    if (v === undefined) return {};
    if (typeof v !== 'object' || v === null || Array.isArray(v)) {
      this.problem(key, `must be an object, got ${JSON.stringify(v)}`);
      return {};
    }
    return v as Record<string, unknown>;
  }
}

export function hasErrors(problems: Problem[]): boolean {
  return problems.some((p) => p.severity !== 'warning');
}

/** `assets.pump.channels.speed` → `speed` (channel names may contain dots). */
export function channelName(path: string): string {
  const at = path.lastIndexOf('channels.');
  return at >= 0 ? path.slice(at + 'channels.'.length) : path.slice(path.lastIndexOf('.') + 1);
}

/** Why a channel has no spec: its keys and what is wrong with them. */
export class SpecError {
  constructor(readonly error: string) {}
}

/** A channel's spec, or a {@link SpecError}. */
export type ChannelSpec<T> = T | SpecError;

/**
 * A driver's channel specs, parsed once per channel object (polling passes the same objects every
 * cycle). A channel whose properties have errors gets a SpecError: its keys and what is wrong, so
 * the read or write of that channel fails alone with a message naming the key to fix. The spec is
 * kept on the channel object (symbol keys, not in its JSON, marked with whose it is): no map entry
 * or wrapper per channel.
 */
export function channelSpecs<T>(parse: (ch: ChannelConfig, path: string) => Parsed<T>): (ch: ChannelConfig) => ChannelSpec<T> {
  const mine = {};
  // Channels whose slot another driver instance took (e.g. one made before a reload): the spec's
  // identity must stay the same for this driver (a driver may keep state on it).
  let others: WeakMap<ChannelConfig, ChannelSpec<T>> | undefined;
  return (ch) => {
    if (ch[SPEC_OF] === mine) return ch[SPEC] as ChannelSpec<T>;
    let s = others?.get(ch);
    if (s !== undefined) return s;
    const prefix = `channels.${ch.name}`;
    const { value, problems } = parse(ch, prefix);
    s = hasErrors(problems)
      ? new SpecError(problems.filter((p) => p.severity !== 'warning').map((p) => `${p.path.slice(prefix.length + 1)}: ${p.message}`).join('; '))
      : value;
    if (ch[SPEC_OF] === undefined) {
      ch[SPEC_OF] = mine;
      ch[SPEC] = s;
    } else (others ??= new WeakMap()).set(ch, s);
    return s;
  };
}
