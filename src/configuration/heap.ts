// Whether the configured channels fit the heap bound the daemon runs with (the launcher sets
// --max-old-space-size=48; docs/installation.md "Footprint", many channels). Past the bound V8
// aborts with "JavaScript heap out of memory" and the supervisor restarts the daemon in a loop, so
// the log says beforehand what to change.

import { isPlainObject } from '../core/schema.js';
import { lazyBuiltin } from '../core/builtin.js';

const v8 = lazyBuiltin<typeof import('node:v8')>('node:v8');

/** Heap a configured channel keeps (configuration, driver form, telemetry state) plus its share of a poll, measured with Modbus. */
export const CHANNEL_HEAP_BYTES = 700;
/** The daemon's own heap with HTTP and MQTT running. */
export const BASE_HEAP_BYTES = 16 * 1024 * 1024;

const mb = (bytes: number): number => Math.round(bytes / 1048576);

/** The --max-old-space-size (MB, a multiple of 16) of which `needed` bytes are `share`. */
const boundFor = (needed: number, share: number): number => Math.ceil(needed / share / 1048576 / 16) * 16;

const OLD_SPACE_FLAG = /^--max[-_]old[-_]space[-_]size=(\d+)$/;

/** Node's flags as they take effect: NODE_OPTIONS first, then the command line's (later ones win). */
export const nodeFlags = (): string[] => [...nodeOptionsWords(process.env.NODE_OPTIONS ?? ''), ...process.execArgv];

/** NODE_OPTIONS as node splits it: words apart by white space, or in double quotes with `\` escapes. */
export function nodeOptionsWords(text: string): string[] {
  const words: string[] = [];
  for (const m of text.matchAll(/"((?:[^"\\]|\\.)*)"|[^\s"]+/g)) words.push(m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : m[0]);
  return words;
}

/**
 * The heap bound a configuration must fit, in bytes: the old generation's, where V8 aborts with
 * "Reached heap limit". That is the last `--max-old-space-size` among `flags`; without one, V8's
 * `heap_size_limit` (`heapSizeLimit`), which also counts the young generation (three times
 * `--max-semi-space-size`: 6 of the launcher's 54 MB).
 */
export function oldSpaceBound(heapSizeLimit: number, flags: readonly string[] = nodeFlags()): number {
  let bound = heapSizeLimit;
  for (const f of flags) {
    const m = OLD_SPACE_FLAG.exec(f);
    if (m) bound = Math.min(Number(m[1]) * 1048576, heapSizeLimit);
  }
  return bound;
}

/** oldSpaceBound() of this process (node:v8 is loaded at the first call, not at start-up). */
export const heapBound = (): number => oldSpaceBound(v8().getHeapStatistics().heap_size_limit);

/** The share of the bound the configured channels may take before the daemon warns. */
export const WARNING_SHARE = 0.64;

/**
 * A warning when `channels` need more than WARNING_SHARE of `heapLimit` (bytes, oldSpaceBound()):
 * above that garbage collection takes much of the CPU, and above the limit the daemon does not start.
 */
export function heapWarning(channels: number, heapLimit: number): { channels: number; heapLimitMB: number; neededMB: number; hint: string } | undefined {
  const needed = BASE_HEAP_BYTES + channels * CHANNEL_HEAP_BYTES;
  if (needed <= heapLimit * WARNING_SHARE) return undefined;
  const suggest = boundFor(needed, WARNING_SHARE);
  return {
    channels,
    heapLimitMB: mb(heapLimit),
    neededMB: mb(needed),
    hint: `raise the heap bound, e.g. GATEWAYD_NODE_FLAGS=--max-old-space-size=${suggest} (docs/installation.md "Footprint")`,
  };
}

/**
 * What configuration requests hold at their peak (docs/configuration-v2.md "How large a
 * configuration can grow"), measured as the smallest --max-old-space-size each request of a daemon
 * started with the launcher's other flags survived, for assets of 10,000 to 60,000 simulator
 * channels (3 entries each: the channel and its 2 properties) and Modbus channels (6 entries), and
 * for descriptions of 2 and 4 MB. Configurations are written and answered a piece at a time, so what
 * remains is the running configuration, the new one being made, and a snapshot read whole.
 */
/** The daemon's own heap around a configuration request (about 6 MB measured idle without channels). */
export const REQUEST_BASE_BYTES = 8 * 1024 * 1024;
/** Per channel of the configuration in force while a request runs (its configuration, driver form, telemetry state). */
export const RUNNING_CHANNEL_BYTES = 400;
/**
 * Making a new configuration (the image with the runtime layer on top, its validation, the new asset
 * runtime, the stored copy): per channel, per entry of the configuration as written (an object
 * property or an array element, anywhere), per character of long text (beyond the first LONG_TEXT of
 * each string, e.g. a description).
 */
export const CHANGE_CHANNEL_BYTES = 300;
export const CHANGE_ENTRY_BYTES = 35;
export const CHANGE_TEXT_FACTOR = 4;
/** A rollback: per channel of the snapshot, and per byte of its file (read and parsed whole, then made the configuration). */
export const ROLLBACK_CHANNEL_BYTES = 265;
export const ROLLBACK_BYTE_FACTOR = 5.5;
/** snapshots/byId: per byte of the snapshot's file (read and parsed whole; the answer is written in pieces). */
export const SNAPSHOT_READ_BYTE_FACTOR = 4;
/** A snapshot file holds about this many bytes per entry and per channel (its `<ch>#+name`), plus its long texts. */
export const SNAPSHOT_ENTRY_BYTES = 25;
const LONG_TEXT = 64;
/**
 * The share of the heap bound (oldSpaceBound()) a request may count on (the rest: sessions, MQTT,
 * polls, the channel history, the garbage collector's slack): 28 MB of the launcher's 48. Traced
 * with --trace-gc, a rollback estimated at 33 MB (16,000 Modbus channels) kept up to 45 MB live
 * after full collections, and V8 aborted such a daemon on a loaded machine; the share is set so
 * that the heaviest request the estimates allow keeps that margin.
 */
export const CHANGE_SHARE = 0.58;

/** What a configuration as written weighs for a change: its channels, its entries, its long texts. */
export interface Weight {
  channels: number;
  entries: number;
  /** Characters beyond the first LONG_TEXT of every string. */
  text: number;
}

/** Walks a configuration as written (no copy): channels are `assets.<pid>.channels.<name>`. */
export function weigh(raw: unknown): Weight {
  const w: Weight = { channels: 0, entries: 0, text: 0 };
  const assets = isPlainObject(raw) ? raw.assets : undefined;
  if (isPlainObject(assets)) {
    for (const a of Object.values(assets)) if (isPlainObject(a) && isPlainObject(a.channels)) w.channels += Object.keys(a.channels).length;
  }
  walk(raw, w, 0);
  return w;
}

function walk(v: unknown, w: Weight, depth: number): void {
  if (typeof v === 'string') {
    if (v.length > LONG_TEXT) w.text += v.length - LONG_TEXT;
  } else if (v !== null && typeof v === 'object' && depth < 64) {
    if (Array.isArray(v)) {
      w.entries += v.length;
      for (const x of v) walk(x, w, depth + 1);
    } else {
      for (const k in v) {
        w.entries++;
        if (k.length > LONG_TEXT) w.text += k.length - LONG_TEXT;
        walk((v as Record<string, unknown>)[k], w, depth + 1);
      }
    }
  }
}

/** Heap bytes a change from a configuration of weight `now` to one of weight `next` needs at its peak. */
export const changeNeeds = (next: Weight, now: Weight = next): number =>
  REQUEST_BASE_BYTES + now.channels * RUNNING_CHANNEL_BYTES + next.channels * CHANGE_CHANNEL_BYTES + next.entries * CHANGE_ENTRY_BYTES + next.text * CHANGE_TEXT_FACTOR;

/** What a snapshot weighs for reading it: its file's bytes and its channels. */
export interface SnapshotSize {
  bytes: number;
  channels: number;
}

/** Heap bytes reading a snapshot of `snap` (a rollback to it, or snapshots/byId) needs while `now` runs. */
export const snapshotNeeds = (snap: SnapshotSize, now: Weight, rollback: boolean): number =>
  REQUEST_BASE_BYTES +
  now.channels * RUNNING_CHANNEL_BYTES +
  (rollback ? snap.channels * ROLLBACK_CHANNEL_BYTES + snap.bytes * ROLLBACK_BYTE_FACTOR : snap.bytes * SNAPSHOT_READ_BYTE_FACTOR);

/** The snapshot a configuration of weight `w` makes (written a piece at a time: its size does not matter for writing it). */
export const snapshotOf = (w: Weight): SnapshotSize => ({ bytes: (w.entries + w.channels) * SNAPSHOT_ENTRY_BYTES + w.text, channels: w.channels });

/**
 * The most any configuration request needs while a configuration of weight `w` is in force: a change
 * of it, or a rollback to its snapshot (the heaviest).
 */
export const servingNeeds = (w: Weight): number => Math.max(changeNeeds(w), snapshotNeeds(snapshotOf(w), w, true));

const tooLarge = (needed: number, heapLimit: number, what: string, verb: string, todo: string): string =>
  `${what} would need about ${mb(needed)} MB to ${verb}, ${mb(heapLimit * CHANGE_SHARE)} MB of the ${mb(heapLimit)} MB bound are usable; ${todo}raise the heap bound ` +
  `(GATEWAYD_NODE_FLAGS=--max-old-space-size=${boundFor(needed, CHANGE_SHARE)}, docs/installation.md "Footprint")`;

/**
 * Why a change from a configuration of weight `now` to one of weight `next` must be refused under
 * `heapLimit` (oldSpaceBound()), or undefined; past the bound V8 would abort the daemon in the middle
 * of it. Refused: a change that would not fit itself, and one that makes the configuration heavier
 * to serve than any request can (a rollback to its snapshot included). A change that makes it no
 * heavier is taken whenever it fits itself, so that a device already past the bound (through its
 * configuration file) can still have assets deleted.
 */
export function changeRefusal(next: Weight, now: Weight, heapLimit: number): string | undefined {
  const usable = heapLimit * CHANGE_SHARE;
  const own = changeNeeds(next, now);
  const serving = servingNeeds(next);
  const needed = own > usable ? own : serving > usable && serving > servingNeeds(now) ? serving : undefined;
  if (needed === undefined) return undefined;
  const text = next.text >= 1048576 ? `, ${(next.text / 1048576).toFixed(1)} MB of long texts` : '';
  return `Configuration too large for this daemon's heap bound: ${tooLarge(Math.max(own, serving), heapLimit, `its ${next.channels} channels (${next.entries} entries in all${text})`, 'change and run', 'delete channels, assets or long texts first, or ')}`;
}

/** Why snapshot `id` of `snap` cannot be read (rollback or snapshots/byId) while `now` runs under `heapLimit`, or undefined. */
export function snapshotRefusal(id: number, snap: SnapshotSize, now: Weight, rollback: boolean, heapLimit: number): string | undefined {
  const needed = snapshotNeeds(snap, now, rollback);
  if (needed <= heapLimit * CHANGE_SHARE) return undefined;
  return `Snapshot too large for this daemon's heap bound: ${tooLarge(needed, heapLimit, `snapshot ${id} (${(snap.bytes / 1048576).toFixed(1)} MB, ${snap.channels} channels)`, rollback ? 'restore' : 'read', '')}`;
}
