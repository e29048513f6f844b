// Cookie sessions (docs/rest-api.md "session/v1"; Kura's session provider): in memory, bounded,
// oldest idle evicted first.

import crypto from 'node:crypto';
import { v4 as uuidv4 } from 'uuid';

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
export const monotonicMs = (): number => Number(process.hrtime.bigint() / 1_000_000n);

export class SessionStore {
  // Map iteration order is insertion order; `touch` re-inserts, so the first entry is the least
  // recently active one — eviction and expiry sweeps start there.
  private sessions = new Map<string, Session>();

  constructor(
    public maxCount: number,
    /** Inactivity interval in seconds (rest.session.inactivity.interval); ≤ 0 disables expiry. */
    public inactivitySeconds: number,
    private readonly now: () => number = monotonicMs,
  ) {}

  get size(): number {
    return this.sessions.size;
  }

  create(user: string, credentials: number, locked: boolean): Session {
    this.sweep();
    while (this.sessions.size >= this.maxCount) {
      const oldest = this.sessions.keys().next().value;
      if (oldest === undefined) break;
      this.sessions.delete(oldest);
    }
    const s: Session = {
      id: crypto.randomBytes(16).toString('base64url'),
      user,
      // A random (v4) UUID, as Kura's UUID.randomUUID(). The bytes are passed in: uuid's default path
      // uses the global `crypto`, which Node 18 does not have.
      xsrfToken: uuidv4({ random: crypto.randomBytes(16) }),
      credentials,
      locked,
      lastActivity: this.now(),
    };
    this.sessions.set(s.id, s);
    return s;
  }

  get(id: string | undefined): Session | undefined {
    return id === undefined ? undefined : this.sessions.get(id);
  }

  /** Strictly greater than the interval (as Kura compares); the creating request is never expired. */
  expired(s: Session): boolean {
    return this.inactivitySeconds > 0 && this.now() - s.lastActivity > this.inactivitySeconds * 1000;
  }

  touch(s: Session): void {
    s.lastActivity = this.now();
    this.sessions.delete(s.id);
    this.sessions.set(s.id, s);
  }

  invalidate(s: Session | string): void {
    this.sessions.delete(typeof s === 'string' ? s : s.id);
  }

  invalidateUser(user: string): number {
    let n = 0;
    for (const s of this.sessions.values()) {
      if (s.user === user) {
        this.sessions.delete(s.id);
        n++;
      }
    }
    return n;
  }

  /** Drops expired sessions from the idle end; expiry itself is still checked lazily per request. */
  sweep(): void {
    for (const s of this.sessions.values()) {
      if (!this.expired(s)) break;
      this.sessions.delete(s.id);
    }
  }
}
