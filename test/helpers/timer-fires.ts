// Counts the timer callbacks that run while a test watches: how often the code under test wakes
// the process. setTimeout and setInterval are wrapped (the code calls them as globals) and put back
// by the test's teardown; `sleep` paces the test itself with the real setTimeout, uncounted.

const realSetTimeout = globalThis.setTimeout;
const realSetInterval = globalThis.setInterval;

export interface TimerWatch {
  /** Timer callbacks run since `watchTimers`. */
  fires(): number;
  sleep(ms: number): Promise<void>;
}

export function watchTimers(t: { teardown(fn: () => void): void }): TimerWatch {
  let fires = 0;
  const wrap = <F extends (fn: (...a: unknown[]) => void, ms?: number, ...rest: unknown[]) => unknown>(real: F) =>
    function (this: unknown, fn: (...a: unknown[]) => void, ms?: number, ...rest: unknown[]) {
      return real.call(this, (...a: unknown[]) => {
        fires++;
        fn(...a);
      }, ms, ...rest);
    };
  globalThis.setTimeout = wrap(realSetTimeout as never) as unknown as typeof setTimeout;
  globalThis.setInterval = wrap(realSetInterval as never) as unknown as typeof setInterval;
  t.teardown(() => {
    globalThis.setTimeout = realSetTimeout;
    globalThis.setInterval = realSetInterval;
  });
  return {
    fires: () => fires,
    sleep: (ms) => new Promise((r) => realSetTimeout(r, ms)),
  };
}
