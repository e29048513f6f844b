// The persistent identity store (docs/configuration.md "identities"): `<dataDir>/identities.json`,
// written atomically, seeded from the `identities` section the first time (when the file does not
// exist), the truth after that. Changed through the session and identity APIs and `gatewayd
// passwd`.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { IDENTITY_NAME, type IdentitySeed } from './config.js';
import type { Logger } from '../log.js';
import { readJsonFile, writeFileAtomic, writeFileAtomicSync, type Versioned } from '../store/atomic.js';

/** Identities may use the data partition's reserve: it is kept for them (docs/installation.md "What dataDir holds"). */
const MAY_USE_RESERVE = { useReserve: true };
import { PasswordHasher, hashKind, needsRehash, type HashFlow } from './password-hash.js';

export const IDENTITY_FILE = 'identities.json';
export const IDENTITY_FORMAT_VERSION = 1;

export interface Identity {
  readonly name: string;
  /** Absent: password authentication is off (certificate-only identity, docs/configuration.md). */
  readonly passwordHash?: string;
  readonly permissions: readonly string[];
  readonly passwordChangeNeeded: boolean;
  /**
   * Stamp of the credentials, as Kura's credential hash in the session: it changes when the
   * password is set or removed and when the identity is re-created. In memory only — a restart
   * drops sessions anyway.
   */
  readonly credentials: number;
}

interface StoredIdentity {
  name: string;
  passwordHash?: string;
  permissions: string[];
  passwordChangeNeeded: boolean;
}

interface StoreFile extends Versioned {
  identities: StoredIdentity[];
}

export interface IdentityChanges {
  password?: string;
  /** false removes the password (certificate-only); true without password keeps the present one. */
  passwordAuthEnabled?: boolean;
  permissions?: string[];
  passwordChangeNeeded?: boolean;
}

export class IdentityError extends Error {
  constructor(
    readonly code: 'exists' | 'not-found' | 'invalid',
    message: string,
  ) {
    super(message);
  }
}

/** Why a change happened, for listeners: only 'credentials' and 'deleted' end sessions. */
export type ChangeKind = 'credentials' | 'deleted' | 'attributes';

export { IDENTITY_NAME };

/** The permission that passes every role; a device must keep at least one identity holding it. */
export const ADMIN_PERMISSION = 'kura.admin';

const admins = (m: Map<string, Identity>) => [...m.values()].filter((i) => i.permissions.includes(ADMIN_PERMISSION)).length;

function isStored(v: unknown): v is StoredIdentity {
  if (typeof v !== 'object' || v === null) return false;
  const o = v as Record<string, unknown>;
  return (
    typeof o.name === 'string' &&
    (o.passwordHash === undefined || typeof o.passwordHash === 'string') &&
    Array.isArray(o.permissions) &&
    o.permissions.every((p) => typeof p === 'string') &&
    typeof o.passwordChangeNeeded === 'boolean'
  );
}

export class IdentityStore {
  private identities = new Map<string, Identity>();
  private lastRefresh = 0;
  private listeners: ((name: string, kind: ChangeKind) => void)[] = [];
  private stamp = '';
  private nextCredentials = 1;
  private writing: Promise<void> = Promise.resolve();
  private pending = 0;

  private constructor(
    readonly file: string,
    readonly hasher: PasswordHasher,
    private readonly log: Logger,
  ) {}

  /**
   * Opens the store in `dataDir`, seeding it from `seeds` when the file does not exist yet.
   * A file that exists but cannot be understood stops the daemon: re-seeding would silently bring
   * back the factory passwords.
   */
  static async open(dataDir: string, seeds: Record<string, IdentitySeed>, log: Logger, hasher = new PasswordHasher()): Promise<IdentityStore> {
    const store = IdentityStore.begin(dataDir, seeds, log, hasher);
    await store.ready;
    return store;
  }

  /**
   * `open` without waiting for the seeding: on a first boot the seeds' passwords are hashed (scrypt,
   * on libuv's thread pool) while the daemon goes on starting; `ready` settles once the seeded store
   * is on disk, and nothing may look identities up before that (the daemon awaits it before its
   * listeners open).
   */
  static begin(dataDir: string, seeds: Record<string, IdentitySeed>, log: Logger, hasher = new PasswordHasher()): IdentityStore {
    const store = new IdentityStore(path.join(dataDir, IDENTITY_FILE), hasher, log);
    if (!store.loadFromDisk()) {
      store.ready = store.seed(seeds);
      store.ready.catch(() => {}); // rejected readiness is reported where it is awaited
    }
    return store;
  }

  /** Settles once the store holds its identities (at once unless it is being seeded). */
  ready: Promise<void> = Promise.resolve();

  private async seed(seeds: Record<string, IdentitySeed>): Promise<void> {
    const entries = Object.entries(seeds);
    const hashes = await Promise.all(entries.map(([, seed]) => (seed.password !== undefined ? this.hasher.hash(seed.password) : seed.passwordHash)));
    const list: StoredIdentity[] = entries.map(([name, seed], i) => {
      const passwordHash = hashes[i];
      if (passwordHash !== undefined && hashKind(passwordHash) === undefined) {
        this.log.warn('identity seed has an unusable passwordHash: password login disabled for it', { identity: name });
      }
      return { name, passwordHash, permissions: [...seed.permissions], passwordChangeNeeded: seed.passwordChangeNeeded };
    });
    this.replaceAll(list, false);
    writeFileAtomicSync(this.file, this.serialise(), 0o600, MAY_USE_RESERVE);
    this.stamp = this.fileStamp();
    this.log.info('identity store seeded from the configuration', { identities: list.length, file: this.file });
  }

  /**
   * A device provisioned without a factory password (the production configuration) has no way in by
   * password until a technician runs `gatewayd passwd` on it: say so at start (docs/installation.md).
   */
  warnIfNoAdminPassword(): void {
    const list = this.list().filter((i) => i.permissions.includes(ADMIN_PERMISSION));
    if (list.length > 0 && list.every((i) => i.passwordHash === undefined)) {
      this.log.warn('no administrator has a password: password login stays off until one is set on the device with gatewayd passwd NAME', { identities: list.map((i) => i.name).join(',') });
    }
  }

  get(name: string): Identity | undefined {
    return this.identities.get(name);
  }

  list(): Identity[] {
    return [...this.identities.values()];
  }

  /** Called with the identity name whenever an identity changes. */
  onChange(fn: (name: string, kind: ChangeKind) => void): void {
    this.listeners.push(fn);
  }

  /**
   * Verifies a password. An unknown identity, one without a password and one with Kura's SHA-256
   * form cost the same hash as a wrong password, queued the same way (`flow`: whom the check is
   * for; without it, as the daemon's own hashing). A Kura SHA-256 (or weaker scrypt) hash is replaced
   * on success. A password changed while it was being checked does not verify: the answer would be
   * about credentials that no longer exist.
   */
  async verifyPassword(name: string, password: string, flow?: HashFlow): Promise<Identity | undefined> {
    const id = this.identities.get(name);
    if (!id || id.passwordHash === undefined || hashKind(id.passwordHash) === undefined) {
      await this.hasher.dummyVerify(password, flow);
      return undefined;
    }
    const stored = id.passwordHash;
    if (!(await this.hasher.verify(password, stored, flow))) return undefined;
    if (needsRehash(stored)) {
      try {
        const fresh = await this.hasher.hash(password);
        await this.mutate(() => {
          const cur = this.identities.get(name);
          // Only if nobody changed it meanwhile; the stamp stays, so sessions are kept.
          if (cur && cur.passwordHash === stored) this.identities.set(name, { ...cur, passwordHash: fresh });
          return [];
        });
        this.log.info('password hash upgraded to scrypt', { identity: name });
      } catch (err) {
        // The login itself succeeded; the upgrade is retried at the next one.
        this.log.warn('password hash upgrade failed', { identity: name, error: (err as Error).message });
      }
    }
    const now = this.identities.get(name);
    return now?.credentials === id.credentials ? now : undefined;
  }

  async setPassword(name: string, password: string, clearChangeFlag: boolean): Promise<void> {
    const hash = await this.hasher.hash(password);
    await this.mutate(() => {
      const cur = this.identities.get(name);
      if (!cur) throw new IdentityError('not-found', 'Identity does not exist');
      this.identities.set(name, {
        ...cur,
        passwordHash: hash,
        passwordChangeNeeded: clearChangeFlag ? false : cur.passwordChangeNeeded,
        credentials: this.nextCredentials++,
      });
      return [[name, 'credentials']];
    });
  }

  async create(name: string, c: IdentityChanges): Promise<void> {
    if (!IDENTITY_NAME.test(name)) throw new IdentityError('invalid', 'identity names are 1-64 characters of A-Z a-z 0-9 _ . @ -');
    const hash = c.password !== undefined && c.passwordAuthEnabled !== false ? await this.hasher.hash(c.password) : undefined;
    await this.mutate(() => {
      if (this.identities.has(name)) throw new IdentityError('exists', `Identity ${name} already exists`);
      this.identities.set(name, {
        name,
        passwordHash: hash,
        permissions: [...new Set(c.permissions ?? [])],
        passwordChangeNeeded: c.passwordChangeNeeded ?? false,
        credentials: this.nextCredentials++,
      });
      return [[name, 'credentials']];
    });
  }

  async update(name: string, c: IdentityChanges): Promise<void> {
    const hash = c.password !== undefined && c.passwordAuthEnabled !== false ? await this.hasher.hash(c.password) : undefined;
    await this.mutate(() => {
      const cur = this.identities.get(name);
      if (!cur) throw new IdentityError('not-found', 'Identity does not exist');
      let passwordHash = cur.passwordHash;
      if (c.passwordAuthEnabled === false) passwordHash = undefined;
      else if (hash !== undefined) passwordHash = hash;
      const credentialsChanged = passwordHash !== cur.passwordHash;
      this.identities.set(name, {
        name,
        passwordHash,
        permissions: c.permissions ? [...new Set(c.permissions)] : cur.permissions,
        passwordChangeNeeded: c.passwordChangeNeeded ?? cur.passwordChangeNeeded,
        credentials: credentialsChanged ? this.nextCredentials++ : cur.credentials,
      });
      return [[name, credentialsChanged ? 'credentials' : 'attributes']];
    });
  }

  async delete(name: string): Promise<void> {
    await this.mutate(() => {
      if (!this.identities.delete(name)) throw new IdentityError('not-found', 'Identity does not exist');
      return [[name, 'deleted']];
    });
  }

  /** Re-reads the file when something else (`gatewayd passwd`) changed it; called on SIGHUP. */
  refresh(): Promise<void> {
    return this.mutate(() => []);
  }

  /**
   * The same, synchronously, before a password check (one stat): a password set with `gatewayd
   * passwd` on a running device works at once. Skipped while a write of ours is in flight.
   */
  refreshIfChanged(notMoreOftenThanMs = 0): void {
    if (this.pending !== 0) return;
    const now = Date.now();
    if (notMoreOftenThanMs > 0 && now - this.lastRefresh < notMoreOftenThanMs) return;
    this.lastRefresh = now;
    this.safeSync();
  }

  private safeSync(): void {
    try {
      this.syncFromDisk();
    } catch (err) {
      // Keep serving from memory; the next write replaces the bad file.
      this.log.error('identity store on disk is unusable; keeping the identities in memory', { error: (err as Error).message });
      this.stamp = this.fileStamp();
    }
  }

  /** Waits for pending writes (shutdown). */
  flush(): Promise<void> {
    return this.writing;
  }

  // Mutations are serialised: each one first picks up external edits of the file, then applies its
  // change in memory, then writes the whole file atomically before the next one starts.
  private mutate(change: () => [string, ChangeKind][]): Promise<void> {
    const run = async () => {
      this.pending++;
      try {
        await apply();
      } finally {
        this.pending--;
      }
    };
    const apply = async () => {
      this.safeSync();
      const backup = new Map(this.identities);
      const changed = change();
      // Checked here, inside the serialised mutation, so two concurrent requests cannot each remove
      // one of the last two administrators (docs/rest-api.md, identity/v1).
      if (admins(this.identities) === 0 && admins(backup) > 0) {
        this.identities = backup;
        throw new IdentityError('invalid', `this would leave the device without an administrator (an identity with ${ADMIN_PERMISSION})`);
      }
      if (changed.length === 0 && this.identities.size === backup.size && [...backup].every(([k, v]) => this.identities.get(k) === v)) return;
      try {
        await writeFileAtomic(this.file, this.serialise(), 0o600, MAY_USE_RESERVE);
        this.stamp = this.fileStamp();
      } catch (err) {
        this.identities = backup;
        throw err;
      }
      for (const [name, kind] of changed) this.emit(name, kind);
    };
    const p = this.writing.then(run, run);
    this.writing = p.catch(() => {});
    return p;
  }

  private emit(name: string, kind: ChangeKind): void {
    for (const fn of this.listeners) fn(name, kind);
  }

  private syncFromDisk(): void {
    if (this.fileStamp() === this.stamp) return;
    const before = new Map(this.identities);
    if (!this.loadFromDisk()) return;
    this.log.info('identity store changed on disk: reloaded', { file: this.file });
    for (const [name, old] of before) {
      const now = this.identities.get(name);
      if (!now) this.emit(name, 'deleted');
      else if (now.credentials !== old.credentials) this.emit(name, 'credentials');
    }
  }

  /** Loads the file; false when it does not exist. Throws when it exists but is unusable. */
  private loadFromDisk(): boolean {
    let data: StoreFile | undefined;
    try {
      data = readJsonFile<StoreFile>(this.file);
    } catch (err) {
      // A store written by root (an old `gatewayd passwd`) makes every start fail: say how to repair.
      const fix = (err as NodeJS.ErrnoException).code === 'EACCES' ? `; give the dataDir back to this user: chown -R ${os.userInfo().username} ${path.dirname(this.file)}` : '';
      throw new Error(`identity store ${this.file} is unreadable: ${(err as Error).message}${fix}`);
    }
    if (data === undefined) return false;
    if (typeof data !== 'object' || data === null || data.formatVersion !== IDENTITY_FORMAT_VERSION || !Array.isArray(data.identities) || !data.identities.every(isStored)) {
      throw new Error(`identity store ${this.file} has an unknown format (expected formatVersion ${IDENTITY_FORMAT_VERSION})`);
    }
    this.replaceAll(data.identities, true);
    this.stamp = this.fileStamp();
    return true;
  }

  private replaceAll(list: StoredIdentity[], keepStamps: boolean): void {
    const next = new Map<string, Identity>();
    for (const s of list) {
      const old = this.identities.get(s.name);
      const same = keepStamps && old !== undefined && old.passwordHash === s.passwordHash;
      next.set(s.name, {
        name: s.name,
        passwordHash: s.passwordHash,
        permissions: [...s.permissions],
        passwordChangeNeeded: s.passwordChangeNeeded,
        credentials: same ? old.credentials : this.nextCredentials++,
      });
    }
    this.identities = next;
  }

  private serialise(): string {
    const file: StoreFile = {
      formatVersion: IDENTITY_FORMAT_VERSION,
      identities: this.list().map((i) => ({ name: i.name, passwordHash: i.passwordHash, permissions: [...i.permissions], passwordChangeNeeded: i.passwordChangeNeeded })),
    };
    return JSON.stringify(file, null, 1) + '\n';
  }

  private fileStamp(): string {
    try {
      const s = fs.statSync(this.file);
      return `${s.ino}:${s.size}:${s.mtimeMs}`;
    } catch {
      return '';
    }
  }
}
