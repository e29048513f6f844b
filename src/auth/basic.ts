// HTTP BASIC (RFC 7617; Kura's BASIC provider, docs/rest-api.md "Authentication") and the
// verification cache that keeps scrypt off the per-request path: BASIC sends the password with
// every request, and a memory-hard hash per request would make the gateway trivially easy to
// overload.

import crypto from 'node:crypto';

export interface BasicCredentials {
  user: string;
  password: string;
}

/**
 * Parses `Authorization`: split on whitespace, the scheme must be exactly `Basic` (case-sensitive,
 * a Kura quirk: `basic` is ignored), the second token strict standard Base64 of UTF-8 `user:password`
 * (user before the first `:`). Anything else: undefined (the provider declines).
 */
// Stateless for whole inputs, so one decoder serves every request.
const UTF8 = new TextDecoder('utf-8', { fatal: true });

export function parseBasic(header: string | undefined): BasicCredentials | undefined {
  if (!header) return undefined;
  const parts = header.trim().split(/\s+/);
  if (parts.length !== 2 || parts[0] !== 'Basic') return undefined;
  const b64 = parts[1];
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(b64) || b64.length % 4 !== 0) return undefined;
  let text: string;
  try {
    text = UTF8.decode(Buffer.from(b64, 'base64'));
  } catch {
    return undefined;
  }
  const i = text.indexOf(':');
  if (i < 0) return undefined;
  return { user: text.slice(0, i), password: text.slice(i + 1) };
}

const MAX_ENTRIES = 256;
const ENTRY_TTL_MS = 10 * 60_000;

/**
 * Remembers credentials that verified, as HMAC-SHA256 under a key made at start-up (never written
 * anywhere): a memory dump shows neither the password nor a hash that could be attacked offline
 * without the key. An entry is bound to the identity's credentials stamp and is dropped when the
 * identity changes; entries also age out and the cache is bounded (least recently used dropped).
 */
export class BasicCache {
  private readonly key = crypto.randomBytes(32);
  private entries = new Map<string, { user: string; credentials: number; at: number }>();

  constructor(private readonly now: () => number = Date.now) {}

  private digest(c: BasicCredentials): string {
    return crypto.createHmac('sha256', this.key).update(c.user).update('\0').update(c.password).digest('base64');
  }

  /** True when these exact credentials verified before for the same credentials stamp. */
  has(c: BasicCredentials, credentials: number): boolean {
    const k = this.digest(c);
    const e = this.entries.get(k);
    if (!e) return false;
    if (e.user !== c.user || e.credentials !== credentials || this.now() - e.at > ENTRY_TTL_MS) {
      this.entries.delete(k);
      return false;
    }
    this.entries.delete(k);
    this.entries.set(k, e);
    return true;
  }

  remember(c: BasicCredentials, credentials: number): void {
    const k = this.digest(c);
    this.entries.delete(k);
    this.entries.set(k, { user: c.user, credentials, at: this.now() });
    while (this.entries.size > MAX_ENTRIES) this.entries.delete(this.entries.keys().next().value!);
  }

  forget(user: string): void {
    for (const [k, e] of this.entries) if (e.user === user) this.entries.delete(k);
  }

  clear(): void {
    this.entries.clear();
  }
}
