// A very small validator for the JSON configuration: every value is checked at its key path,
// unknown keys are errors (docs/configuration.md: typos must not be silently ignored), absent keys
// take defaults.

import { TIMER_MAX_MS } from './timers.js';

/** A configuration problem: the key path (e.g. `drivers.plc.modbus.timeout`) and what is wrong. */
export interface Problem {
  path: string;
  message: string;
  severity?: 'error' | 'warning';
}

export type Validator<T> = ((raw: unknown, path: string, problems: Problem[]) => T) & { ad?: AdMeta; spec?: Spec };

/**
 * What a validator accepts, in the terms of a Kura attribute definition (type, bounds, options,
 * cardinality): configuration/v2 derives its component definitions from it (docs/configuration-v2.md).
 */
export interface AdMeta {
  type: string;
  min?: number;
  max?: number;
  options?: readonly string[];
  /** 0 for a scalar, else the largest array length (Kura's convention). */
  cardinality?: number;
  /** A time-valued key: the unit its integer counts (docs/configuration.md "Time-valued keys"). */
  unit?: TimeUnit;
}

const withAd = <T>(fn: Validator<T>, ad: AdMeta): Validator<T> => Object.assign(fn, { ad });

export function kind(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function problem(problems: Problem[], path: string, message: string): void {
  problems.push({ path, message, severity: 'error' });
}

/** Edit distance of two short strings (insertions, deletions, substitutions, adjacent swaps). */
function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const c = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + c);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}

/** An unknown key, with the closest known key when it looks like a typo of it ("did you mean"). */
export function unknownKey(problems: Problem[], path: string, key: string, known: readonly string[]): void {
  let best = '';
  let bestD = Math.max(3, Math.ceil(key.length / 3)) + 1;
  for (const k of known) {
    const dist = key.length > 64 ? bestD : distance(key.toLowerCase(), k.toLowerCase());
    if (dist < bestD) [best, bestD] = [k, dist];
  }
  problem(problems, path, best ? `unknown key; did you mean "${best}"?` : 'unknown key');
}

export function warning(problems: Problem[], path: string, message: string): void {
  problems.push({ path, message, severity: 'warning' });
}

export const str = (opts: { nonEmpty?: boolean; pattern?: RegExp; patternHint?: string } = {}): Validator<string> =>
  withAd((raw, path, p) => {
    if (typeof raw !== 'string') {
      problem(p, path, `expected a string, got ${kind(raw)}`);
      return '';
    }
    if (opts.nonEmpty && raw.trim() === '') problem(p, path, 'must not be empty');
    else if (opts.pattern && !opts.pattern.test(raw)) problem(p, path, opts.patternHint ?? `does not match ${opts.pattern}`);
    return raw;
  }, { type: 'STRING' });

export const bool: Validator<boolean> = withAd((raw, path, p) => {
  if (typeof raw !== 'boolean') {
    problem(p, path, `expected true or false, got ${kind(raw)}`);
    return false;
  }
  return raw;
}, { type: 'BOOLEAN' });

export const num = (opts: { min?: number; max?: number; int?: boolean } = {}): Validator<number> =>
  withAd((raw, path, p) => {
    if (typeof raw !== 'number' || !Number.isFinite(raw)) {
      problem(p, path, `expected a number, got ${kind(raw)}`);
      return opts.min ?? 0;
    }
    if (opts.int && !Number.isInteger(raw)) problem(p, path, `expected an integer, got ${raw}`);
    else if (opts.min !== undefined && raw < opts.min) problem(p, path, `must be at least ${opts.min}, got ${raw}`);
    else if (opts.max !== undefined && raw > opts.max) problem(p, path, `must be at most ${opts.max}, got ${raw}`);
    return raw;
  }, { type: opts.int ? ((opts.max ?? Infinity) < 2 ** 31 ? 'INTEGER' : 'LONG') : 'DOUBLE', min: opts.min, max: opts.max });

/** The units of time-valued keys, in milliseconds. */
export const TIME_UNITS = { ms: 1, s: 1000 } as const;
export type TimeUnit = keyof typeof TIME_UNITS;

/** A span in the largest unit that keeps it short: `24 h`, `10 min`, `24.9 days`. */
function spanText(ms: number): string {
  const [size, name] = ms >= 172_800_000 ? [86_400_000, 'days'] : ms >= 3_600_000 ? [3_600_000, 'h'] : ms >= 60_000 ? [60_000, 'min'] : ms >= 1000 ? [1000, 's'] : [1, 'ms'];
  return `${Number((ms / size).toFixed(1))} ${name}`;
}

/**
 * Why the integer `v` is outside the range `min..max` of a time-valued key, or undefined: the one
 * wording of every time-valued key, section key or driver property, naming the range and its unit.
 */
export function durationRange(v: number, unit: TimeUnit, min: number, max: number): string | undefined {
  return v < min || v > max ? `must be between ${min} and ${max} ${unit} (${spanText(max * TIME_UNITS[unit])}), got ${v}` : undefined;
}

/**
 * A time-valued key: an integer count of `unit` within `min..max`. The maximum is one a timer
 * honours (at most 2^31 − 1 ms once converted; src/core/timers.ts); a larger one is a programming
 * error, refused when the validator is made.
 */
export const duration = (unit: TimeUnit, min: number, max: number): Validator<number> => {
  if (!(Number.isInteger(max) && max * TIME_UNITS[unit] <= TIMER_MAX_MS && min <= max)) throw new RangeError(`duration maximum ${max} ${unit} exceeds what a timer honours`);
  const integer = num({ int: true });
  return withAd((raw, path, p) => {
    const before = p.length;
    const v = integer(raw, path, p);
    const why = p.length === before ? durationRange(v, unit, min, max) : undefined;
    if (why === undefined) return v;
    problem(p, path, why);
    return min;
  }, { type: 'INTEGER', min, max, unit });
};

export const port: Validator<number> = num({ int: true, min: 0, max: 65535 });

export const oneOf = <T extends string>(values: readonly T[]): Validator<T> =>
  withAd((raw, path, p) => {
    if (typeof raw !== 'string' || !(values as readonly string[]).includes(raw)) {
      problem(p, path, `expected one of ${values.join(', ')}, got ${JSON.stringify(raw)}`);
      return values[0];
    }
    return raw as T;
  }, { type: 'STRING', options: values });

export const arrayOf = <T>(item: Validator<T>, opts: { unique?: boolean } = {}): Validator<T[]> =>
  withAd((raw, path, p) => {
    if (!Array.isArray(raw)) {
      problem(p, path, `expected an array, got ${kind(raw)}`);
      return [];
    }
    const out = raw.map((v, i) => item(v, `${path}[${i}]`, p));
    if (opts.unique && new Set(out).size !== out.length) problem(p, path, 'contains duplicates');
    return out;
  }, { ...(item.ad ?? { type: 'STRING' }), cardinality: 1000 });

/** Any JSON value (checked elsewhere). */
export const any: Validator<unknown> = (raw) => raw;

export type Spec = Record<string, [Validator<unknown>, unknown]>;

/**
 * Validates an object against `spec` (key → [validator, default]); unknown keys are problems.
 * Returns the object with defaults filled in, keys in spec order.
 */
export function section<T>(spec: Spec): Validator<T> {
  const fn: Validator<T> = (raw, path, p) => {
    const out: Record<string, unknown> = {};
    if (raw === undefined) raw = {};
    if (!isPlainObject(raw)) {
      problem(p, path, `expected an object, got ${kind(raw)}`);
      raw = {};
    }
    const obj = raw as Record<string, unknown>;
    for (const key of Object.keys(obj)) {
      if (!Object.prototype.hasOwnProperty.call(spec, key)) unknownKey(p, join(path, key), key, Object.keys(spec));
    }
    for (const [key, [validate, dflt]] of Object.entries(spec)) {
      const v = obj[key];
      out[key] = v === undefined ? structuredClone(dflt) : validate(v, join(path, key), p);
    }
    return out as T;
  };
  return Object.assign(fn, { spec });
}

/** An object whose keys are user-chosen names (asset pids, driver ids, identities). */
export function mapOf<T>(item: (raw: unknown, path: string, p: Problem[], key: string) => T, keyRule?: (key: string) => string | undefined): Validator<Record<string, T>> {
  return (raw, path, p) => {
    const out: Record<string, T> = {};
    if (!isPlainObject(raw)) {
      problem(p, path, `expected an object, got ${kind(raw)}`);
      return out;
    }
    for (const [key, v] of Object.entries(raw)) {
      const bad = keyRule?.(key);
      if (bad) problem(p, join(path, key), bad);
      setOwn(out, key, item(v, join(path, key), p, key));
    }
    return out;
  };
}

/**
 * Stores a user-chosen key as an own property: a plain assignment of `__proto__` (a legal JSON key)
 * would replace the object's prototype instead. Any other key is assigned when the object inherits
 * from Object.prototype or nothing, whose only inherited accessor is `__proto__`: the same own,
 * enumerable, writable property, at half the cost of defineProperty (a 1,000-channel asset is
 * 10,000 keys each time it is flattened or layered).
 */
export function setOwn<T>(obj: Record<string, T>, key: string, value: T): void {
  if (key !== '__proto__') {
    const proto: unknown = Object.getPrototypeOf(obj);
    if (proto === Object.prototype || proto === null) {
      obj[key] = value;
      return;
    }
  }
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}

export function join(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}
