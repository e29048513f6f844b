// Node built-ins that only some configurations use, loaded on first use instead of at start-up: each
// built-in loaded costs every boot its compile time, and an ES import of one also runs all of its
// lazy getters (docs/installation.md "Start-up time").

import { createRequire } from 'node:module';

const load = createRequire(import.meta.url);

/** A function returning the built-in `name`, loaded the first time it is called. */
export function lazyBuiltin<T>(name: string): () => T {
  let mod: T | undefined;
  return () => (mod ??= load(name) as T);
}
