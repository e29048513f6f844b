// Request bounds of ASSET-V1 (src/core/limits.ts): a body may name at most MAX_ELEMENTS_PER_REQUEST
// assets and MAX_CHANNELS_PER_REQUEST channels in total (an element without a channel list counts
// every channel of its asset), so a 512 KB body listing one asset thousands of times is a 400, not
// thousands of reads.

import { LimitError } from '../../core/errors.js';
import { MAX_CHANNELS_PER_REQUEST, MAX_ELEMENTS_PER_REQUEST, tooManyChannels } from '../../core/limits.js';

export function checkElements(n: number): void {
  if (n > MAX_ELEMENTS_PER_REQUEST) throw new LimitError(400, `Too many elements in one request: ${n}, the limit is ${MAX_ELEMENTS_PER_REQUEST}`);
}

export function checkChannels(n: number): void {
  if (n > MAX_CHANNELS_PER_REQUEST) throw new LimitError(400, tooManyChannels(n));
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
