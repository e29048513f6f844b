// Whether the configured channels fit the heap bound the daemon runs with (the launcher sets
// --max-old-space-size=48; docs/installation.md "Footprint", many channels). Past the bound V8
// aborts with "JavaScript heap out of memory" and the supervisor restarts the daemon in a loop, so
// the log says beforehand what to change.

import { isPlainObject } from './schema.js';
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
 * What a change of the runtime configuration holds at its peak, for the configuration it makes: the
 * running configuration and the new one side by side, the runtime layer and its copy, the stored
 * text, the request. Measured through the launcher's 48 MB bound, adding per request an asset of
 * 8,000 simulator channels (3 entries each: the channel and its 2 properties), of 3,500 Modbus
 * channels (6 entries each), or with a 900 KB description: V8 aborted the daemon at about 48,000
 * and 28,000 channels (765 and 1,310 bytes per channel) and at about 7 MB of descriptions.
 */
export const CHANGE_CHANNEL_BYTES = 220;
/** Per entry of the configuration as written (an object property or an array element, anywhere). */
export const CHANGE_ENTRY_BYTES = 180;
/** Per character of text beyond the first LONG_TEXT of each string (a description, a banner). */
export const CHANGE_TEXT_FACTOR = 6;
const LONG_TEXT = 64;
/**
 * The share of the heap bound (oldSpaceBound()) a change may count on (the rest: sessions, MQTT, the
 * garbage collector's slack): 41 MB of the launcher's 48.
 */
export const CHANGE_SHARE = 0.85;

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

/** Heap bytes a change making a configuration of weight `w` needs at its peak. */
export const changeNeeds = (w: Weight): number => BASE_HEAP_BYTES + w.channels * CHANGE_CHANNEL_BYTES + w.entries * CHANGE_ENTRY_BYTES + w.text * CHANGE_TEXT_FACTOR;

/**
 * Why a change that makes a configuration of weight `next` must be refused under `heapLimit`
 * (oldSpaceBound()), or undefined. Past the bound V8 aborts the daemon in the middle of the change.
 * A change that does not make the configuration heavier than the one running (`now`) is never
 * refused: deleting assets must stay possible on a device already past the bound.
 */
export function changeRefusal(next: Weight, now: Weight, heapLimit: number): string | undefined {
  const needed = changeNeeds(next);
  const usable = heapLimit * CHANGE_SHARE;
  if (needed <= usable || needed <= changeNeeds(now)) return undefined;
  const suggest = boundFor(needed, CHANGE_SHARE);
  const text = next.text >= 1048576 ? `, ${(next.text / 1048576).toFixed(1)} MB of long texts` : '';
  return (
    `Configuration too large for this daemon's heap bound: its ${next.channels} channels (${next.entries} entries in all${text}) would need about ${mb(needed)} MB ` +
    `to change and run, ${mb(usable)} MB of the ${mb(heapLimit)} MB bound are usable; delete channels, assets or long texts first, or raise the heap bound ` +
    `(GATEWAYD_NODE_FLAGS=--max-old-space-size=${suggest}, docs/installation.md "Footprint")`
  );
}
