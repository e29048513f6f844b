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

/** Password checks allowed to wait for a turn, in all and per client and name; beyond that one is refused. */
const MAX_WAITING = 32;
const MAX_WAITING_PER_FLOW = 4;

/** Thrown when too many password checks are already waiting (a flood): answered like a throttle. */
export class HashBusyError extends Error {
  constructor() {
    super('too many password checks in progress');
  }
}

/**
 * Whom a password check hashes for, for fair queueing. Nothing in it depends on whether the name is
 * an identity or has a password: a check's place in the queue, and whether it is refused, are then
 * the same for every name, so neither its time nor its answer tells which names exist
 * (docs/rest-api.md "Password checks").
 */
export interface HashFlow {
  /** The client's address prefix (addressPrefix in src/http/context.ts). */
  client: string;
  /** The name checked: one client's checks take turns by name. */
  name: string;
  /** The client's recent failed password checks (LoginThrottle): the fewest are served first and refused last. */
  failures: number;
}

interface Waiter {
  go(): void;
  fail(err: Error): void;
}

/** One client's waiting checks, by name in the order the names take turns. */
interface ClientQueue {
  client: string;
  failures: number;
  /** The turn at which this client was last served or first queued: the longest waiting goes first. */
  turn: number;
  size: number;
  byName: Map<string, Waiter[]>;
}

/**
 * Bounds the memory and CPU password hashing can take: at most `max` scrypt computations at once.
 *
 * The daemon's own hashing (seeding a new dataDir, re-hashing an old form, setting a password) waits
 * for a slot and is never refused. Password checks wait per client (address prefix): the client with
 * the fewest recent failures first, then the one that waited longest since its turn, and within a
 * client its names in turn. A wrong-password flood thus fails more, waits behind a client that knows
 * its password, and is the first refused: at most `MAX_WAITING_PER_FLOW` wait per client and name,
 * and when `maxWaiting` are waiting the newest check of the client with the most failures (then the
 * most waiting) is refused (HashBusyError). Own hashing and checks take turns.
 */
export class HashLimiter {
  private active = 0;
  private waiting = 0;
  private turns = 0;
  private clients = new Map<string, ClientQueue>();
  private own: (() => void)[] = [];
  private ownServedLast = false;
  computed = 0;

  constructor(
    private readonly max = MAX_CONCURRENT,
    private readonly maxWaiting = MAX_WAITING,
  ) {}

  /** Runs `fn` in a slot: a password check of `flow`, or without one the daemon's own hashing. */
  async run<T>(fn: () => Promise<T>, flow?: HashFlow): Promise<T> {
    // A slot freed by a finished hash is handed straight to the next waiter (active stays counted).
    if (this.active >= this.max) await (flow ? this.enqueue(flow) : new Promise<void>((go) => this.own.push(go)));
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
      let c = this.clients.get(flow.client);
      if (!c) this.clients.set(flow.client, (c = { client: flow.client, failures: 0, turn: this.turns++, size: 0, byName: new Map() }));
      c.failures = flow.failures;
      let q = c.byName.get(flow.name);
      if (!q) c.byName.set(flow.name, (q = []));
      if (q.length >= MAX_WAITING_PER_FLOW) return fail(new HashBusyError());
      q.push({ go, fail });
      c.size++;
      if (++this.waiting > this.maxWaiting) this.shed();
    });
  }

  /** Hands the freed slot on: own hashing and password checks alternate while both wait. */
  private next(): boolean {
    const c = this.nextClient();
    if (this.own.length > 0 && (!c || !this.ownServedLast)) {
      this.ownServedLast = true;
      this.own.shift()!();
      return true;
    }
    if (!c) return false;
    this.ownServedLast = false;
    const [name, q] = c.byName.entries().next().value!;
    // The name goes to the back of its client's turn, the client to the back of its standing.
    c.byName.delete(name);
    if (q.length > 1) c.byName.set(name, q);
    c.turn = this.turns++;
    this.take(c, q.shift()!);
    return true;
  }

  /** The client served next: the fewest failures, then the earliest turn. */
  private nextClient(): ClientQueue | undefined {
    let best: ClientQueue | undefined;
    for (const c of this.clients.values()) if (!best || c.failures < best.failures || (c.failures === best.failures && c.turn < best.turn)) best = c;
    return best;
  }

  private take(c: ClientQueue, w: Waiter, refuse = false): void {
    c.size--;
    this.waiting--;
    if (c.size === 0) this.clients.delete(c.client);
    if (refuse) w.fail(new HashBusyError());
    else w.go();
  }

  /** Refuses the newest check of the most waiting name of the client with the most failures, then the most waiting. */
  private shed(): void {
    let worst: ClientQueue | undefined;
    for (const c of this.clients.values()) {
      if (!worst || c.failures > worst.failures || (c.failures === worst.failures && (c.size > worst.size || (c.size === worst.size && c.turn > worst.turn)))) worst = c;
    }
    let longest: [string, Waiter[]] | undefined;
    for (const e of worst!.byName) if (!longest || e[1].length > longest[1].length) longest = e;
    const [name, q] = longest!;
    const w = q.pop()!;
    if (q.length === 0) worst!.byName.delete(name);
    this.take(worst!, w, true);
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
    if (hashKind(stored) === 'kura-sha256') {
      // Kura's SHA-256 costs next to nothing: one scrypt is spent all the same, so that a wrong
      // password for an identity migrated from Kura takes as long as for any other name.
      await this.dummyVerify(password, flow);
      return safeEqual(kuraSha256(password), stored);
    }
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
