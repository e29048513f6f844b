// Whether a value that may be an answer or the promise of one is the promise: a call site checks
// with this and awaits only what needs it (each `then` is a microtask more per request).

/** A thenable as Promises/A+ and `await` define it: an object or function with a `then` method. */
export function isThenable<T>(v: T | PromiseLike<T>): v is PromiseLike<T> {
  return (typeof v === 'object' || typeof v === 'function') && v !== null && typeof (v as { then?: unknown }).then === 'function';
}
