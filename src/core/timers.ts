// Delays that a timer honours. Node keeps a timer's delay as a signed 32-bit count of milliseconds:
// a longer delay (or one below 1) is set to 1 ms, and a longer one also prints a
// TimeoutOverflowWarning (Node.js documentation, Timers, `setTimeout`). A poll interval of
// 99999999999 ms would then poll as fast as the device answers. Configuration keys measured in time
// have maxima below this bound (docs/configuration.md "Time-valued keys"); these helpers keep every
// other value that reaches a timer (a computed back-off, a plug-in's delay) safe as well.

/** The longest delay a Node timer honours: 2^31 − 1 ms, about 24.8 days. */
export const TIMER_MAX_MS = 2_147_483_647;

/**
 * `ms` as a delay a timer honours: 0 for a negative or non-numeric value, at most TIMER_MAX_MS. For
 * callers that look at their own deadline when the timer fires, so firing before a longer delay
 * only costs one more wake.
 */
export function timerDelay(ms: number): number {
  return ms > 0 ? (ms < TIMER_MAX_MS ? ms : TIMER_MAX_MS) : 0;
}

/**
 * A timer for any delay, for callers that cannot check a deadline themselves (a plug-in's
 * `api.setTimeout`): a delay beyond the bound is waited for in hops of at most `hopMs`, so it fires
 * when asked, not after 1 ms; an infinite one never fires. A delay within the bound is one plain
 * timer, as Node sets it. `keep` receives each hop's timer (to clear it, to unref it); `repeat`
 * waits the whole delay again after every call, as setInterval does.
 */
export function hopTimer(fn: () => void, ms: number, repeat: boolean, keep: (timer: NodeJS.Timeout) => void, hopMs = TIMER_MAX_MS): void {
  const arm = (left: number) => {
    const hop = left < hopMs ? left : hopMs;
    keep(
      setTimeout(() => {
        if (left > hop) return arm(left - hop);
        if (repeat) arm(ms);
        fn();
      }, hop),
    );
  };
  arm(ms);
}
