// HTTP BASIC (RFC 7617; Kura's BASIC provider, docs/rest-api.md "Authentication") and the
// verification cache that keeps scrypt off the per-request path: BASIC sends the password with
// every request, and a memory-hard hash per request would make the gateway trivially easy to
// overload.

import { nodeCrypto } from '../core/builtin.js';

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
 * One-shot SHA-256 where Node has it (20.12 and later): a BASIC request's cache lookup then costs a
 * fraction of an HMAC object's set-up. Older Nodes use HMAC-SHA256.
 */
type OneShotHash = (algorithm: string, data: string, encoding: 'base64') => string;

function newKey(): { key: Buffer; text: string; hash: OneShotHash | undefined } {
  const key = nodeCrypto().randomBytes(32);
  return { key, text: key.toString('base64'), hash: (nodeCrypto() as { hash?: OneShotHash }).hash };
}

interface Entry {
  user: string;
  credentials: number;
  at: number;
}

/**
 * Remembers credentials that verified, as a SHA-256 digest keyed with 256 random bits made at
 * first use and never written anywhere (the key prepended; HMAC-SHA256 on Nodes without a one-shot
 * hash): a memory dump shows neither the password nor a hash that could be attacked offline
 * without the key, and the digests never leave the process. An entry is bound to the identity's
 * credentials stamp and is dropped when the identity changes; entries also age out and the cache
 * is bounded (least recently used dropped).
 */
export class BasicCache {
  /** The digests' key, made on first use with node:crypto (not loaded at start-up: src/core/builtin.ts). */
  private keyed: { key: Buffer; text: string; hash: OneShotHash | undefined } | undefined;
  /** By digest of `user \0 password`. */
  private entries = new Map<string, Entry>();
  /**
   * By digest of the exact Authorization header that verified: a BASIC client sends the same header
   * every time, and a hit needs neither Base64 nor UTF-8 decoding.
   */
  private headers = new Map<string, Entry>();

  /** Checks under way, by digest of `stamp \0 user \0 password`; each entry leaves when its check settles. */
  private running = new Map<string, Promise<unknown>>();

  constructor(private readonly now: () => number = Date.now) {}

  private digest(text: string): string {
    const k = (this.keyed ??= newKey());
    if (k.hash) return k.hash('sha256', k.text + text, 'base64');
    return nodeCrypto().createHmac('sha256', k.key).update(text).digest('base64');
  }

  private hit(m: Map<string, Entry>, k: string, user?: string, credentials?: number): Entry | undefined {
    const e = m.get(k);
    if (!e) return undefined;
    if ((user !== undefined && e.user !== user) || (credentials !== undefined && e.credentials !== credentials) || this.now() - e.at > ENTRY_TTL_MS) {
      m.delete(k);
      return undefined;
    }
    m.delete(k);
    m.set(k, e);
    return e;
  }

  private put(m: Map<string, Entry>, k: string, user: string, credentials: number): void {
    m.delete(k);
    m.set(k, { user, credentials, at: this.now() });
    while (m.size > MAX_ENTRIES) m.delete(m.keys().next().value!);
  }

  /** True when these exact credentials verified before for the same credentials stamp. */
  has(c: BasicCredentials, credentials: number): boolean {
    return this.hit(this.entries, this.digest(`${c.user}\0${c.password}`), c.user, credentials) !== undefined;
  }

  remember(c: BasicCredentials, credentials: number): void {
    this.put(this.entries, this.digest(`${c.user}\0${c.password}`), c.user, credentials);
  }

  /**
   * The identity and credentials stamp this exact Authorization header verified for (within the
   * entry's lifetime); the caller compares the stamp with the identity's current one.
   */
  header(value: string): { readonly user: string; readonly credentials: number } | undefined {
    return this.hit(this.headers, this.digest(value));
  }

  rememberHeader(value: string, user: string, credentials: number): void {
    this.put(this.headers, this.digest(value), user, credentials);
  }

  /**
   * The check of these exact credentials already under way for the same credentials stamp, or the
   * one `check` starts: parallel requests with the same credentials share one verification.
   */
  shared<T>(c: BasicCredentials, credentials: number, check: () => Promise<T>): Promise<T> {
    const k = this.digest(`${credentials}\0${c.user}\0${c.password}`);
    const under = this.running.get(k);
    if (under) return under as Promise<T>;
    const p = check().finally(() => this.running.delete(k));
    this.running.set(k, p);
    return p;
  }

  forget(user: string): void {
    for (const m of [this.entries, this.headers]) for (const [k, e] of m) if (e.user === user) m.delete(k);
  }

  clear(): void {
    this.entries.clear();
    this.headers.clear();
  }
}
