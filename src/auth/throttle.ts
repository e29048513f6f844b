// Brute-force throttling of password attempts (docs/configuration.md "rest", `rest.login.throttle.max.delay`).
//
// Each failed password attempt for an identity name, and from a client address, opens a window
// during which further password attempts for that name / from that address are refused without
// being checked (same 401 as a wrong password, and no scrypt spent). The window doubles with every
// failure after a few free ones, up to the configured maximum; once it has passed the correct
// password works again. Attempts refused inside a window do not count, so an attacker cannot push
// a legitimate user's lockout beyond the maximum. Certificates are never throttled (they do not go
// through here). A success clears the identity's record (not the address's: a valid account must
// not reset an address that is guessing other names).

import { monotonicMs } from './session-store.js';
import { IDENTITY_NAME } from './config.js';
import { addressPrefix } from '../http/context.js';

/** The first window after the free failures; each further failure doubles it, up to the bound. */
export const BASE_DELAY_MS = 250;
/** Failures allowed before any delay: a typo or two costs nothing. */
const FREE_PER_IDENTITY = 2;
// Many users may share one address (NAT); an address gets more free failures.
const FREE_PER_ADDRESS = 10;
/** Records forgotten after this long without a failure. */
const FORGET_MS = 15 * 60_000;
// Memory bound: at most MAX_RECORDS per table, each keyed by at most 64 characters (a name that cannot
// be an identity shares one record; an address is its prefix): about 2 × 10,000 × 200 B = 4 MB.
const MAX_RECORDS = 10_000;
const NOT_A_NAME = '\0';

/** The throttle's key for a name: itself, or one shared key for anything that cannot be an identity. */
export const nameKey = (name: string): string => (IDENTITY_NAME.test(name) ? name : NOT_A_NAME);

interface Attempts {
  failures: number;
  until: number;
  last: number;
}

export class LoginThrottle {
  private byName = new Map<string, Attempts>();
  private byAddress = new Map<string, Attempts>();

  constructor(
    /** ms; 0 disables throttling. */
    public maxDelayMs: number,
    private readonly now: () => number = monotonicMs,
  ) {}

  /** Milliseconds until an attempt for `name` from `address` may be checked (0: now). */
  wait(name: string, address: string): number {
    // Nothing has failed lately (every BASIC request asks): no key to work out.
    if (this.maxDelayMs <= 0 || (this.byName.size === 0 && this.byAddress.size === 0)) return 0;
    const t = this.now();
    const a = this.live(this.byName, nameKey(name), t);
    const b = this.live(this.byAddress, addressPrefix(address), t);
    return Math.max(0, (a?.until ?? 0) - t, (b?.until ?? 0) - t);
  }

  // Recorded with throttling off as well: the hash queue serves clients by their failures (HashLimiter).
  failed(name: string, address: string): void {
    const t = this.now();
    this.bump(this.byName, nameKey(name), t, FREE_PER_IDENTITY);
    this.bump(this.byAddress, addressPrefix(address), t, FREE_PER_ADDRESS);
  }

  /**
   * A check from `address` refused because the hash queue was full (a flood): it counts against the
   * address as a failure, so a flooding client soon waits behind the others and is throttled, but
   * not against the name, which the flood may only be trying to lock out.
   */
  refusedBusy(address: string): void {
    this.bump(this.byAddress, addressPrefix(address), this.now(), FREE_PER_ADDRESS);
  }

  /** Recent failed attempts from `address` (its prefix), including checks refused as busy; throttled ones do not count. */
  failuresFrom(address: string): number {
    return this.byAddress.size === 0 ? 0 : (this.live(this.byAddress, addressPrefix(address), this.now())?.failures ?? 0);
  }

  succeeded(name: string): void {
    this.byName.delete(name);
  }

  private live(m: Map<string, Attempts>, key: string, t: number): Attempts | undefined {
    const r = m.get(key);
    if (r && t - r.last > FORGET_MS) {
      m.delete(key);
      return undefined;
    }
    return r;
  }

  private bump(m: Map<string, Attempts>, key: string, t: number, free: number): void {
    const r = this.live(m, key, t) ?? { failures: 0, until: 0, last: t };
    r.failures++;
    r.last = t;
    const over = r.failures - free;
    if (over > 0) r.until = t + Math.min(this.maxDelayMs, BASE_DELAY_MS * 2 ** Math.min(over - 1, 20));
    m.delete(key);
    m.set(key, r);
    // Bounded: a flood of random names must not grow memory without limit.
    while (m.size > MAX_RECORDS) m.delete(m.keys().next().value!);
  }
}
