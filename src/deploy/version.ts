// OSGi versions (Core spec 3.2.5): `major[.minor[.micro[.qualifier]]]`, numbers are non-negative
// ints, the qualifier is `[A-Za-z0-9_-]+`. `Version.toString()` always prints three numbers, so
// `1` lists as `1.0.0` (Kura's package list and descriptor versions come from it).

export interface OsgiVersion {
  major: number;
  minor: number;
  micro: number;
  qualifier: string;
}

const VERSION = /^(\d+)(?:\.(\d+)(?:\.(\d+)(?:\.([A-Za-z0-9_-]+))?)?)?$/;
const INT_MAX = 2147483647;

/** Parses like OSGi `Version.parseVersion` (surrounding blanks allowed); `undefined` if invalid. */
export function parseVersion(text: string): OsgiVersion | undefined {
  const m = VERSION.exec(text.trim());
  if (!m) return undefined;
  const nums = [m[1], m[2], m[3]].map((s) => (s === undefined ? 0 : Number(s)));
  if (nums.some((n) => n > INT_MAX)) return undefined;
  return { major: nums[0]!, minor: nums[1]!, micro: nums[2]!, qualifier: m[4] ?? '' };
}

export function formatVersion(v: OsgiVersion): string {
  const base = `${v.major}.${v.minor}.${v.micro}`;
  return v.qualifier ? `${base}.${v.qualifier}` : base;
}

/** `Version.toString()` of the parsed text, or `undefined` when it is not a version. */
export function normaliseVersion(text: string): string | undefined {
  const v = parseVersion(text);
  return v && formatVersion(v);
}

/** OSGi ordering: numbers numerically, then the qualifier by plain string comparison. */
export function compareVersions(a: OsgiVersion, b: OsgiVersion): number {
  return a.major - b.major || a.minor - b.minor || a.micro - b.micro ||
    (a.qualifier < b.qualifier ? -1 : a.qualifier > b.qualifier ? 1 : 0);
}
