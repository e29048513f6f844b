// The monotonic clock of the hot paths (session expiry, call deadlines, Modbus timeouts).
//
// In Node 20 `performance` is a lazy accessor on globalThis: every `performance.now()` calls its
// getter first, also in optimised code, which costs about as much again as the clock reading.
// The object is fetched once, on the first reading, rather than imported from node:perf_hooks,
// which would load that module at start-up, where nothing reads the clock yet
// (docs/installation.md "Start-up time").

let perf: { now(): number } | undefined;

/** Milliseconds from an arbitrary origin, never going back: `performance.now()`. */
export const monotonicNow = (): number => (perf ??= performance).now();
