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

/**
 * node:crypto, for sessions, BASIC, passwords, packages and certificates: none of them is needed to
 * reach the ready line of a later boot, and an ES import of node:crypto loads about twenty modules
 * (its lazy getters pull in WebCrypto).
 */
export const nodeCrypto = lazyBuiltin<typeof import('node:crypto')>('node:crypto');
