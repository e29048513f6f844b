// The payload of spBv1.0/STATE/<host id>, Sparkplug 3.0's primary host state (specification chapter
// "Topics and Messages", "Birth Certificate Payload (STATE)" and "Death Certificate Payload
// (STATE)"): UTF-8 JSON with `online` (boolean) and `timestamp` (UTC milliseconds since the epoch,
// the same in the host's birth as in the will it registered before). Not a Sparkplug B protobuf.
// Sparkplug 2.2's plain `ONLINE` / `OFFLINE` text on STATE/<host id> is refused with a message
// that says so: an edge node configured for a 3.0 host must not take a 2.2 host for it.

import { isUtf8 } from 'node:buffer';
import { SparkplugError } from './error.js';

export interface HostState {
  online: boolean;
  timestamp: number;
}

/** A STATE payload is two keys; this leaves room for whitespace and keys a host may add. */
const MAX_STATE_BYTES = 4096;

export function encodeHostState(s: HostState): Buffer {
  if (typeof s.online !== 'boolean' || !Number.isSafeInteger(s.timestamp) || s.timestamp < 0) {
    throw new SparkplugError('a host state is {online: boolean, timestamp: milliseconds since the epoch}');
  }
  return Buffer.from(JSON.stringify({ online: s.online, timestamp: s.timestamp }));
}

/** The host state a STATE message says; throws SparkplugError for anything but the 3.0 JSON form. */
export function decodeHostState(payload: Buffer): HostState {
  const bad = (why: string) => new SparkplugError(`STATE payload ${why}`);
  if (payload.length > MAX_STATE_BYTES) throw bad(`of ${payload.length} bytes is over the bound of ${MAX_STATE_BYTES}`);
  if (!isUtf8(payload)) throw bad('is not UTF-8 JSON');
  const text = payload.toString('utf8');
  if (/^\s*(ONLINE|OFFLINE)\s*$/.test(text)) throw bad(`${text.trim()} is Sparkplug 2.2's form, not 3.0's JSON {"online", "timestamp"}`);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw bad('is not JSON');
  }
  if (json === null || typeof json !== 'object' || Array.isArray(json)) throw bad('is not a JSON object');
  const { online, timestamp } = json as Record<string, unknown>;
  if (typeof online !== 'boolean') throw bad('has no boolean "online"');
  if (typeof timestamp !== 'number' || !Number.isSafeInteger(timestamp) || timestamp < 0) {
    throw bad('has no "timestamp" in milliseconds since the epoch');
  }
  return { online, timestamp };
}
