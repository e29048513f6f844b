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
