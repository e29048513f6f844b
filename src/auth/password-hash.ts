// Password storage (COMPATIBILITY.md: salted scrypt instead of Kura's unsalted SHA-256).
//
// Stored form, PHC string style: `$scrypt$ln=14,r=8,p=1$<salt b64>$<key b64>`.
// Parameters: N = 2^14, r = 8, p = 1 — the scrypt paper's "interactive login" setting. It needs
// 128·N·r = 16 MiB per hash and ~50 ms on a desktop core, a few hundred ms on a Cortex-A7/A53 class
// device. OWASP's 2^17 (128 MiB) does not fit a gateway with 256–512 MiB of RAM shared with the field
// protocols; 16 MiB with at most MAX_CONCURRENT hashes in flight bounds the memory a login flood can
// take (see HashLimiter). The parameters are stored with each hash, so they can be raised later and
// old hashes still verify (and are re-hashed on the next successful login, like Kura's SHA-256 form).
//
// Kura's form, accepted for migration (docs/configuration.md "identities"): Base64(SHA-256(UTF-8 password)).

import { nodeCrypto } from '../core/builtin.js';

export const SCRYPT_LOG_N = 14;
export const SCRYPT_R = 8;
export const SCRYPT_P = 1;
const SALT_BYTES = 16;
const KEY_BYTES = 32;
/** Hashes allowed to run at once (each takes 16 MiB); more wait their turn. */
const MAX_CONCURRENT = 2;
// Refuse absurd parameters from a hand-written passwordHash (a 2^30 N would take the device down).
const MAX_LOG_N = 20;

export type HashKind = 'scrypt' | 'kura-sha256';

interface ScryptParams {
  logN: number;
  r: number;
  p: number;
  salt: Buffer;
  key: Buffer;
}

const PHC = /^\$scrypt\$ln=(\d{1,2}),r=(\d{1,2}),p=(\d{1,2})\$([A-Za-z0-9+/]+={0,2})\$([A-Za-z0-9+/]+={0,2})$/;
const KURA = /^[A-Za-z0-9+/]{43}=$/;

function parseScrypt(stored: string): ScryptParams | undefined {
  const m = PHC.exec(stored);
  if (!m) return undefined;
  const logN = Number(m[1]);
  const r = Number(m[2]);
  const p = Number(m[3]);
  if (logN < 1 || logN > MAX_LOG_N || r < 1 || p < 1 || r * p >= 1 << 30) return undefined;
  const salt = Buffer.from(m[4], 'base64');
  const key = Buffer.from(m[5], 'base64');
  if (salt.length < 8 || key.length < 16) return undefined;
  return { logN, r, p, salt, key };
}

/** What kind of stored hash this is; undefined when it is neither form (password login then fails). */
export function hashKind(stored: string): HashKind | undefined {
  if (parseScrypt(stored)) return 'scrypt';
  if (KURA.test(stored) && Buffer.from(stored, 'base64').length === 32) return 'kura-sha256';
  return undefined;
}

/** True when a stored hash should be replaced by a fresh one at the next successful login. */
export function needsRehash(stored: string): boolean {
  const p = parseScrypt(stored);
  return !p || p.logN !== SCRYPT_LOG_N || p.r !== SCRYPT_R || p.p !== SCRYPT_P;
}

/** Kura's stored form of a password (for tests and migration tooling). */
export function kuraSha256(password: string): string {
  return nodeCrypto().createHash('sha256').update(password, 'utf8').digest('base64');
}

/**
 * Constant-time equality of two strings compared by UTF-16 code unit, without the two buffers
 * safeEqual() makes (the XSRF token on every session request). No early exit at the first
 * difference; a length difference alone makes them unequal (length is not secret).
 */
export function safeEqualText(a: string, b: string): boolean {
  let d = a.length ^ b.length;
  // Past the end of a shorter `b`, charCodeAt is NaN and `x ^ NaN` is x: `d` is already non-zero then.
  for (let i = 0; i < a.length; i++) d |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return d === 0;
}

/** Constant-time equality of two byte strings (length is not secret: both sides are fixed-size). */
export function safeEqual(a: Buffer | string, b: Buffer | string): boolean {
  const x = typeof a === 'string' ? Buffer.from(a, 'utf8') : a;
  const y = typeof b === 'string' ? Buffer.from(b, 'utf8') : b;
  if (x.length !== y.length) {
    // Still spend a comparison so the early exit does not stand out.
    nodeCrypto().timingSafeEqual(x, x);
    return false;
  }
  return nodeCrypto().timingSafeEqual(x, y);
}

/** Hashes allowed to wait for a turn, in all and per flow; beyond that a password check is refused. */
const MAX_WAITING = 32;
const MAX_WAITING_PER_FLOW = 4;

/** Thrown when too many password checks are already waiting (a flood): answered like a throttle. */
export class HashBusyError extends Error {
  constructor() {
    super('too many password checks in progress');
  }
}

/**
 * Who a hash is computed for, for fair queueing: `group` is the identity name when it exists ('?' for
 * every unknown name, '' for the daemon's own hashing), `key` the client's address prefix.
 */
export interface HashFlow {
  group: string;
  key: string;
}
const OWN: HashFlow = { group: '', key: '' };

interface Waiter {
  go(): void;
  fail(err: Error): void;
}

/**
 * Bounds the memory and CPU password hashing can take: at most `max` scrypt computations at once.
 * Waiting checks are served round-robin over groups (each known identity, all unknown names), and
 * within a group over address prefixes: a wrong-password flood from many addresses, or against
 * made-up names, cannot starve a known identity's check from another address. At most
 * `MAX_WAITING_PER_FLOW` wait per flow; when `maxWaiting` are waiting, the newest waiter of the largest
 * flow of the largest group is refused (HashBusyError).
 */
export class HashLimiter {
  private active = 0;
  private waiting = 0;
  // Insertion order is the round-robin order: a served group (and flow) moves to the back.
  private groups = new Map<string, Map<string, Waiter[]>>();
  computed = 0;

  constructor(
    private readonly max = MAX_CONCURRENT,
    private readonly maxWaiting = MAX_WAITING,
  ) {}

  async run<T>(fn: () => Promise<T>, flow: HashFlow = OWN): Promise<T> {
    // A slot freed by a finished hash is handed straight to the next waiter (active stays counted).
    if (this.active >= this.max) await this.enqueue(flow);
    else this.active++;
    try {
      this.computed++;
      return await fn();
    } finally {
      if (!this.next()) this.active--;
    }
  }

  private enqueue(flow: HashFlow): Promise<void> {
    return new Promise((go, fail) => {
      let g = this.groups.get(flow.group);
      if (!g) this.groups.set(flow.group, (g = new Map()));
      let q = g.get(flow.key);
      if (!q) g.set(flow.key, (q = []));
      if (q.length >= MAX_WAITING_PER_FLOW) return fail(new HashBusyError());
      q.push({ go, fail });
      if (++this.waiting > this.maxWaiting) this.shed();
    });
  }

  /** Starts the oldest waiter of the first flow of the first group, and moves both to the back. */
  private next(): boolean {
    for (const [gk, g] of this.groups) {
      for (const [fk, q] of g) {
        this.waiting--;
        const w = q.shift()!;
        g.delete(fk);
        if (q.length > 0) g.set(fk, q);
        this.groups.delete(gk);
        if (g.size > 0) this.groups.set(gk, g);
        w.go();
        return true;
      }
    }
    return false;
  }

  /** Refuses the newest waiter of the largest flow of the largest group. */
  private shed(): void {
    let big: [string, Map<string, Waiter[]>, number] | undefined;
    for (const [gk, g] of this.groups) {
      let n = 0;
      for (const q of g.values()) n += q.length;
      if (!big || n > big[2]) big = [gk, g, n];
    }
    const [gk, g] = big!;
    let flow: [string, Waiter[]] | undefined;
    for (const [fk, q] of g) if (!flow || q.length > flow[1].length) flow = [fk, q];
    const [fk, q] = flow!;
    this.waiting--;
    q.pop()!.fail(new HashBusyError());
    if (q.length === 0) g.delete(fk);
    if (g.size === 0) this.groups.delete(gk);
  }
}

function scrypt(password: string, salt: Buffer, logN: number, r: number, p: number, len: number): Promise<Buffer> {
  const N = 2 ** logN;
  return new Promise((resolve, reject) => {
    nodeCrypto().scrypt(password.normalize('NFC'), salt, len, { N, r, p, maxmem: 256 * N * r + 1024 * 1024 }, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

export class PasswordHasher {
  private dummy: string | undefined;

  constructor(readonly limiter = new HashLimiter()) {}

  async hash(password: string): Promise<string> {
    const salt = nodeCrypto().randomBytes(SALT_BYTES);
    const key = await this.limiter.run(() => scrypt(password, salt, SCRYPT_LOG_N, SCRYPT_R, SCRYPT_P, KEY_BYTES));
    return `$scrypt$ln=${SCRYPT_LOG_N},r=${SCRYPT_R},p=${SCRYPT_P}$${salt.toString('base64')}$${key.toString('base64')}`;
  }

  /** Verifies `password` against a stored hash of either form; an unusable hash never matches. */
  async verify(password: string, stored: string, flow?: HashFlow): Promise<boolean> {
    const s = parseScrypt(stored);
    if (s) {
      const key = await this.limiter.run(() => scrypt(password, s.salt, s.logN, s.r, s.p, s.key.length), flow);
      return safeEqual(key, s.key);
    }
    if (hashKind(stored) === 'kura-sha256') return safeEqual(kuraSha256(password), stored);
    return false;
  }

  /**
   * Spends the time of one verification for a name that has no usable password, so that an unknown
   * identity cannot be told from a wrong password by the response time.
   */
  async dummyVerify(password: string, flow?: HashFlow): Promise<void> {
    this.dummy ??= `$scrypt$ln=${SCRYPT_LOG_N},r=${SCRYPT_R},p=${SCRYPT_P}$${nodeCrypto().randomBytes(SALT_BYTES).toString('base64')}$${nodeCrypto().randomBytes(KEY_BYTES).toString('base64')}`;
    await this.verify(password, this.dummy, flow);
  }
}
