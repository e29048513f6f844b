// The channel element of EXEC/read and EXEC/write replies (reference §3.2):
//   success {"name","timestamp","value":"<text>","type"[,"unit"]}, failure {"name","timestamp","error"}.

import type { ChannelRecord } from '../../assets/types.js';
import { DRIVER_NOT_ATTACHED } from '../../assets/service.js';
import { valueText } from './value-text.js';

export interface ChannelEntry {
  name: string;
  timestamp: number;
  value?: string;
  type?: string;
  unit?: string;
  error?: string;
}

/** Kura's message for a missing driver, as an ASSET-V1 requester sees it (KuraException text). */
export function kuraErrorText(msg: string | undefined): string {
  if (!msg) return 'Unknown error';
  return msg === DRIVER_NOT_ATTACHED ? `Configuration Error: ${DRIVER_NOT_ATTACHED}` : msg;
}

/** Timestamps are never 0: Kura substitutes the current time. */
export function stamp(ts: number | undefined): number {
  return ts && ts > 0 ? ts : Date.now();
}

export function readEntry(r: ChannelRecord): ChannelEntry {
  if (r.status === 'SUCCESS' && r.value !== undefined) {
    const e: ChannelEntry = { name: r.name, timestamp: stamp(r.timestamp), value: valueText(r.value), type: r.value.type };
    // `unit` only when non-blank.
    if (r.unit !== undefined && r.unit.trim() !== '') e.unit = r.unit;
    return e;
  }
  return { name: r.name, timestamp: stamp(r.timestamp), error: kuraErrorText(r.error) };
}

export function errorEntry(name: string, message: string | undefined): ChannelEntry {
  return { name, timestamp: Date.now(), error: kuraErrorText(message) };
}
