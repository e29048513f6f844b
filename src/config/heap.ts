// Whether the configured channels fit the heap bound the daemon runs with (the launcher sets
// --max-old-space-size=48; docs/installation.md "Footprint", many channels). Past the bound V8
// aborts with "JavaScript heap out of memory" and the supervisor restarts the daemon in a loop, so
// the log says beforehand what to change.

/** Heap a configured channel keeps (configuration, driver form, telemetry state) plus its share of a poll, measured with Modbus. */
export const CHANNEL_HEAP_BYTES = 700;
/** The daemon's own heap with HTTP and MQTT running. */
export const BASE_HEAP_BYTES = 16 * 1024 * 1024;

/**
 * A warning when `channels` need more than 60 % of `heapLimit` (bytes, v8's heap_size_limit): above
 * that garbage collection takes much of the CPU, and above the limit the daemon does not start.
 */
export function heapWarning(channels: number, heapLimit: number): { channels: number; heapLimitMB: number; neededMB: number; hint: string } | undefined {
  const needed = BASE_HEAP_BYTES + channels * CHANNEL_HEAP_BYTES;
  if (needed <= heapLimit * 0.6) return undefined;
  const mb = (x: number) => Math.round(x / 1048576);
  const suggest = Math.ceil((needed / 0.6 / 1048576) / 16) * 16;
  return {
    channels,
    heapLimitMB: mb(heapLimit),
    neededMB: mb(needed),
    hint: `raise the heap bound, e.g. GATEWAYD_NODE_FLAGS=--max-old-space-size=${suggest} (docs/installation.md "Footprint")`,
  };
}

/**
 * What a change of the runtime configuration holds at its peak, per channel of the configuration it
 * makes: the running configuration and the new one side by side, the runtime layer and its copy, the
 * request. Measured through the launcher's 48 MB bound, adding assets of 8,000 simulator channels
 * (2 properties each) or 3,500 Modbus channels (5 properties each) per request: V8 aborted the daemon
 * at about 48,000 and 28,000 channels, i.e. about 765 and 1,310 bytes per channel.
 */
export const CHANGE_CHANNEL_BYTES = 400;
export const CHANGE_PROPERTY_BYTES = 180;
/** The share of the heap bound a change may count on (the rest: sessions, MQTT, the garbage collector's slack). */
export const CHANGE_SHARE = 0.8;

/** Channels, and their properties, in a configuration as written (`assets.<pid>.channels.<name>.<key>`). */
export function channelWeight(raw: unknown): { channels: number; properties: number } {
  let channels = 0;
  let properties = 0;
  const assets = obj(obj(raw)?.assets);
  for (const pid in assets) {
    const chs = obj(obj(assets[pid])?.channels);
    for (const name in chs) {
      channels++;
      const ch = obj(chs[name]);
      for (const _ in ch) properties++;
    }
  }
  return { channels, properties };
}

const obj = (v: unknown): Record<string, unknown> | undefined => (v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined);

/**
 * Why a change that makes a configuration of `weight` must be refused under `heapLimit` (v8's
 * heap_size_limit), or undefined. Past the bound V8 aborts the daemon in the middle of the change.
 * A change that does not add channels (`channelsNow`: the configuration running) is never refused:
 * deleting assets must stay possible on a device already past the bound.
 */
export function changeRefusal(weight: { channels: number; properties: number }, channelsNow: number, heapLimit: number): string | undefined {
  if (weight.channels <= channelsNow) return undefined;
  const needed = BASE_HEAP_BYTES + weight.channels * CHANGE_CHANNEL_BYTES + weight.properties * CHANGE_PROPERTY_BYTES;
  const usable = heapLimit * CHANGE_SHARE;
  if (needed <= usable) return undefined;
  const mb = (x: number) => Math.round(x / 1048576);
  const suggest = Math.ceil(needed / CHANGE_SHARE / 1048576 / 16) * 16;
  return (
    `Configuration too large for this daemon's heap bound: its ${weight.channels} channels (${weight.properties} channel properties) would need about ${mb(needed)} MB ` +
    `to change and run, ${mb(usable)} MB of the ${mb(heapLimit)} MB bound are usable; delete channels or assets first, or raise the heap bound ` +
    `(GATEWAYD_NODE_FLAGS=--max-old-space-size=${suggest}, docs/installation.md "Footprint")`
  );
}
