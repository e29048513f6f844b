// Cookie sessions (docs/rest-api.md "session/v1"; Kura's session provider): in memory, bounded in all
// and per identity; the least recently used session of the identity holding the most is evicted first
// (docs/configuration.md, rest section).

import { nodeCrypto } from '../core/builtin.js';
import { v4 as uuidv4 } from 'uuid';
import { monotonicNow } from '../core/clock.js';

export interface Session {
  /** The JSESSIONID value: 128 bits from the CSPRNG, base64url. */
  readonly id: string;
  readonly user: string;
  /** Random UUID v4, stable for the session's life (Kura's XSRF token). */
  readonly xsrfToken: string;
  /** Credentials stamp at login; a different one later ends the session (as Kura's credential hash). */
  readonly credentials: number;
  /** Created by login/password for an identity that must change its password (a locked session). */
  locked: boolean;
  /** Monotonic milliseconds of the last successful session authentication. */
  lastActivity: number;
}

/** Monotonic clock in milliseconds (wall-clock jumps must not expire or revive sessions). */
export const monotonicMs = (): number => Math.floor(monotonicNow());

/** Thrown when the store is full of sessions that may not be evicted for this login. */
export class SessionLimitError extends Error {}

export class SessionStore {
  // Map iteration order is insertion order; `touch` re-inserts, so the first entry is the least
  // recently active one — eviction and expiry sweeps start there.
  private sessions = new Map<string, Session>();
  /**
   * The id inserted last (the most recently active session), when known: touching it again leaves
   * the order as it is, so it is not re-inserted (a delete and a set per request made V8 shrink and
   * regrow the map's table).
   */
  private newest: string | undefined;
  /** Sessions per identity. */
  private counts = new Map<string, number>();

  constructor(
    public maxCount: number,
    /** Inactivity interval in seconds (rest.session.inactivity.interval); ≤ 0 disables expiry. */
    public inactivitySeconds: number,
    /** The store's clock (monotonic milliseconds): expired() and touch() take one reading from it. */
    readonly now: () => number = monotonicMs,
    /** rest.session.max.per.identity: beyond it an identity's own least recently used session goes. */
    public maxPerIdentity = Infinity,
    /** Administrators' sessions are never evicted for another identity's logins. */
    private readonly isAdmin: (user: string) => boolean = () => false,
  ) {}

  get size(): number {
    return this.sessions.size;
  }

  /**
   * Evicts for a new session of `user`: its own least recently used one beyond `maxPerIdentity`; when
   * the store is full, the least recently used session of the identity holding the most (never another
   * identity's administrator session: SessionLimitError when only those are left).
   */
  create(user: string, credentials: number, locked: boolean): Session {
    this.sweep();
    while ((this.counts.get(user) ?? 0) >= Math.max(1, this.maxPerIdentity) && this.evict(user));
    while (this.sessions.size >= this.maxCount) {
      let victim: string | undefined;
      let most = 0;
      for (const [u, n] of this.counts) if (n > most && (u === user || !this.isAdmin(u))) (victim = u), (most = n);
      if (victim === undefined || !this.evict(victim)) throw new SessionLimitError('too many sessions');
    }
    const s: Session = {
      id: nodeCrypto().randomBytes(16).toString('base64url'),
      user,
      // A random (v4) UUID, as Kura's UUID.randomUUID(). The bytes are passed in: uuid's default path
      // uses the global `crypto`, which Node 18 does not have.
      xsrfToken: uuidv4({ random: nodeCrypto().randomBytes(16) }),
      credentials,
      locked,
      lastActivity: this.now(),
    };
    this.sessions.set(s.id, s);
    this.newest = s.id;
    this.counts.set(user, (this.counts.get(user) ?? 0) + 1);
    return s;
  }

  private evict(user: string): boolean {
    for (const s of this.sessions.values()) if (s.user === user) return this.invalidate(s), true;
    return false;
  }

  get(id: string | undefined): Session | undefined {
    return id === undefined ? undefined : this.sessions.get(id);
  }

  /** Strictly greater than the interval (as Kura compares); the creating request is never expired. */
  expired(s: Session, now = this.now()): boolean {
    return this.inactivitySeconds > 0 && now - s.lastActivity > this.inactivitySeconds * 1000;
  }

  touch(s: Session, now = this.now()): void {
    s.lastActivity = now;
    if (s.id === this.newest) return;
    this.sessions.delete(s.id);
    this.sessions.set(s.id, s);
    this.newest = s.id;
  }

  invalidate(s: Session | string): void {
    const found = this.sessions.get(typeof s === 'string' ? s : s.id);
    if (!found || !this.sessions.delete(found.id)) return;
    if (found.id === this.newest) this.newest = undefined;
    const n = this.counts.get(found.user)! - 1;
    if (n > 0) this.counts.set(found.user, n);
    else this.counts.delete(found.user);
  }

  invalidateUser(user: string): number {
    let n = 0;
    for (const s of this.sessions.values()) {
      if (s.user === user) {
        this.invalidate(s);
        n++;
      }
    }
    return n;
  }

  /** Drops expired sessions from the idle end; expiry itself is still checked lazily per request. */
  sweep(): void {
    for (const s of this.sessions.values()) {
      if (!this.expired(s)) break;
      this.invalidate(s);
    }
  }
}
