// The device's keystores (docs/rest-api.md "keystores/v1"): named keystores in
// `<dataDir>/keystores/<name>/`, one PEM file per entry named by its alias. A trusted certificate
// entry is its certificate (0644); a private key entry is its PKCS#8 key followed by its
// certificate chain, leaf first, in one file (0600), so a power cut never separates a key from its
// certificate: every file is written whole with src/store/atomic.ts.
//
// Private keys stay here: no method returns one except `tlsIdentity`, which hands it to a TLS
// context in this process (src/keystores/tls-source.ts); the DTOs (src/keystores/entries.ts) carry certificates only, and no
// error text or log line carries key material.

import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { KeyObject } from 'node:crypto';
import { nodeCrypto } from '../core/builtin.js';
import { RequestError } from '../core/errors.js';
import type { Logger } from '../log.js';
import { cleanTempFiles, ensurePrivateDir, syncDir, writeFileAtomic } from '../store/atomic.js';
import { PemError, parsePem, pemBlock } from './pem.js';
import { DnError } from './dn.js';
import { CertificateError, MAX_CHAIN, parseCertificate, parseCertificates, type ParsedCertificate } from './x509.js';
import { SigningError, certificationRequest, generateKeyPair, selfSignedCertificate } from './signing.js';

/** Kura's two keystores: the web server's and the one its SslManagerService gives the broker connection. */
export const DEFAULT_KEYSTORES = ['HttpsKeystore', 'SSLKeystore'];
/** Entries per keystore. */
export const MAX_ENTRIES = 64;
/** PEM text of one entry, as given in a request or read from a file. */
export const MAX_ENTRY_TEXT = 64 * 1024;

const ALIAS = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export type Entry = { kind: 'trusted'; cert: ParsedCertificate } | { kind: 'private'; key: KeyObject; chain: ParsedCertificate[] };

/** What changed: listeners and the broker connection that use the entry reload it. */
export type EntryListener = (keystore: string, alias: string) => void;

const bad = (detail: string) => new RequestError(400, detail);

/** Request faults of the crypto modules become 400s carrying their message (never key material). */
function asRequestError(err: unknown): never {
  if (err instanceof CertificateError || err instanceof PemError || err instanceof DnError || err instanceof SigningError) throw bad(err.message);
  throw err;
}

export class KeystoreStore {
  private loaded: Map<string, Map<string, Entry>> | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private readonly listeners = new Set<EntryListener>();

  constructor(
    readonly dir: string,
    private readonly log: Logger,
    readonly names: readonly string[] = DEFAULT_KEYSTORES,
    /** Remove what interrupted writes left (the daemon); false to only read (`gatewayd check-config` beside a running daemon). */
    private readonly clean = true,
  ) {}

  /** The keystores and their entries, read from dataDir on first use. */
  private get stores(): Map<string, Map<string, Entry>> {
    if (this.loaded) return this.loaded;
    const all = new Map<string, Map<string, Entry>>();
    for (const name of this.names) {
      const entries = new Map<string, Entry>();
      const dir = path.join(this.dir, name);
      if (this.clean) cleanTempFiles(dir);
      let files: string[] = [];
      try {
        files = fs.readdirSync(dir).filter((f) => f.endsWith('.pem')).sort();
      } catch {
        // no folder yet: an empty keystore
      }
      for (const f of files) {
        const alias = f.slice(0, -4);
        if (!ALIAS.test(alias) || entries.size >= MAX_ENTRIES) {
          this.log.warn('keystore file ignored', { keystore: name, file: f, reason: entries.size >= MAX_ENTRIES ? `more than ${MAX_ENTRIES} entries` : 'not an alias' });
          continue;
        }
        try {
          const text = readBounded(path.join(dir, f));
          entries.set(alias, entryOfFile(text));
        } catch (err) {
          // The message names the fault, never the content (PemError, CertificateError, key errors).
          this.log.error('keystore entry unreadable: left out', { keystore: name, alias, error: err instanceof RequestError ? err.detail : (err as Error).message });
        }
      }
      all.set(name, entries);
    }
    return (this.loaded = all);
  }

  onChange(fn: EntryListener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** The keystore `name`'s entries; 404 for an unknown keystore. */
  keystore(name: unknown): Map<string, Entry> {
    const ks = typeof name === 'string' ? this.stores.get(name) : undefined;
    if (!ks) throw new RequestError(404, `keystore ${JSON.stringify(String(name).slice(0, 64))} not found: the keystores are ${this.names.join(', ')}`);
    return ks;
  }

  /** One entry; 404 when the keystore or the alias is unknown. */
  entry(keystore: unknown, alias: unknown): Entry {
    const e = typeof alias === 'string' ? this.keystore(keystore).get(alias) : undefined;
    if (!e) throw new RequestError(404, `entry ${JSON.stringify(String(alias).slice(0, 64))} not found in keystore ${String(keystore)}`);
    return e;
  }

  /** Adds (or replaces) a trusted certificate entry from PEM text holding one certificate. */
  addTrustedCertificate(keystore: unknown, alias: unknown, pemText: unknown): Promise<void> {
    return this.change(keystore, alias, async (ks, a) => {
      const text = boundedText(pemText, 'certificate');
      const certs = catching(() => parseCertificates(text, 'certificate'));
      if (certs.length !== 1) throw bad(`certificate: ${certs.length} certificates given, a trusted certificate entry holds one`);
      return { kind: 'trusted', cert: certs[0] };
    });
  }

  /** Generates a key pair with Kura's self-signed certificate (signatureAlgorithm, attributes = subject DN). */
  createKeyPair(keystore: unknown, alias: unknown, req: { algorithm: unknown; size: unknown; signatureAlgorithm: unknown; attributes: unknown }): Promise<void> {
    return this.change(keystore, alias, async () => {
      if (typeof req.attributes !== 'string') throw bad('attributes: the subject distinguished name is required (e.g. "CN=device-1, O=Example, C=IT")');
      const keys = await generateKeyPair(req).catch(asRequestError);
      const der = catching(() => selfSignedCertificate(keys, req.signatureAlgorithm, req.attributes as string));
      return { kind: 'private', key: keys.privateKey, chain: [parseCertificate(der)] };
    });
  }

  /** A PKCS#10 request signed by the entry's key, for the subject `attributes`. */
  certificationRequest(keystore: unknown, alias: unknown, signatureAlgorithm: unknown, attributes: unknown): string {
    const e = this.entry(keystore, alias);
    if (e.kind !== 'private') throw bad(`entry ${String(alias)} is a trusted certificate: a certification request needs a private key entry`);
    if (typeof attributes !== 'string') throw bad('attributes: the subject distinguished name is required');
    return catching(() => certificationRequest({ privateKey: e.key, publicKey: e.chain[0].x509.publicKey }, signatureAlgorithm, attributes));
  }

  /**
   * Replaces a private key entry's certificate chain (what a CA answered to its request). The leaf
   * must certify the entry's key and each certificate must be issued by the next one, so a chain
   * that TLS peers would refuse is refused here, with the reason.
   */
  replaceCertificateChain(keystore: unknown, alias: unknown, chain: unknown): Promise<void> {
    return this.change(keystore, alias, async (ks, a) => {
      const existing = ks.get(a);
      if (!existing) throw new RequestError(404, `entry ${JSON.stringify(a)} not found in keystore ${String(keystore)}`);
      if (existing.kind !== 'private') throw bad(`entry ${a} is a trusted certificate: only a private key entry has a certificate chain`);
      const texts = Array.isArray(chain) ? chain : [chain];
      if (texts.length === 0 || texts.length > MAX_CHAIN || texts.some((t) => typeof t !== 'string')) throw bad(`certificateChain: 1 to ${MAX_CHAIN} PEM certificates are required`);
      const certs = catching(() => parseCertificates(boundedText(texts.join('\n'), 'certificateChain'), 'certificateChain'));
      if (certs.length > MAX_CHAIN) throw bad(`certificateChain: more than ${MAX_CHAIN} certificates`);
      if (!certs[0].x509.checkPrivateKey(existing.key)) throw bad(`certificateChain: the first certificate (${certs[0].facts.subjectDN}) does not certify the key of entry ${a}`);
      for (let i = 0; i + 1 < certs.length; i++) {
        if (!certs[i].x509.checkIssued(certs[i + 1].x509) || !certs[i].x509.verify(certs[i + 1].x509.publicKey)) {
          throw bad(`certificateChain: certificate ${i + 2} (${certs[i + 1].facts.subjectDN}) did not issue certificate ${i + 1} (${certs[i].facts.subjectDN})`);
        }
      }
      return { kind: 'private', key: existing.key, chain: certs };
    });
  }

  deleteEntry(keystore: unknown, alias: unknown): Promise<void> {
    return this.serial(async () => {
      const ks = this.keystore(keystore);
      this.entry(keystore, alias);
      const name = keystore as string;
      const a = alias as string;
      const file = path.join(this.dir, name, `${a}.pem`);
      await fsp.rm(file, { force: true });
      await syncDir(path.dirname(file)).catch(() => {});
      ks.delete(a);
      this.log.info('keystore entry deleted', { keystore: name, alias: a });
      this.changed(name, a);
    });
  }

  /** A private key entry as a TLS identity for this process's listeners and broker connection. */
  tlsIdentity(keystore: string, alias: string): { key: string; cert: string } {
    const e = this.entry(keystore, alias);
    if (e.kind !== 'private') throw new Error(`keystore entry ${keystore}/${alias} is a trusted certificate, not a private key entry`);
    return { key: e.key.export({ type: 'pkcs8', format: 'pem' }) as string, cert: e.chain.map((c) => c.pem).join('\n') + '\n' };
  }

  /** The certificates of a keystore's trusted certificate entries (or of one entry), PEM, as a TLS trust list. */
  trustedCertificates(keystore: string, alias?: string): string {
    const ks = this.keystore(keystore);
    const entries = alias === undefined ? [...ks.values()] : [this.entry(keystore, alias)];
    return entries.flatMap((e) => (e.kind === 'trusted' ? [e.cert.pem] : alias === undefined ? [] : e.chain.map((c) => c.pem))).join('\n') + '\n';
  }

  /** Runs mutations one at a time, in order. */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private change(keystore: unknown, alias: unknown, make: (ks: Map<string, Entry>, alias: string) => Promise<Entry>): Promise<void> {
    return this.serial(async () => {
      const ks = this.keystore(keystore);
      if (typeof alias !== 'string' || !ALIAS.test(alias)) throw bad(`alias ${JSON.stringify(String(alias).slice(0, 70))} is not allowed: 1 to 64 letters, digits, '.', '_' or '-', starting with a letter or digit`);
      const name = keystore as string;
      const entry = await make(ks, alias);
      if (!ks.has(alias) && ks.size >= MAX_ENTRIES) throw bad(`keystore ${name} holds ${MAX_ENTRIES} entries, the most it may: delete one first`);
      const dir = path.join(this.dir, name);
      ensurePrivateDir(this.dir);
      ensurePrivateDir(dir);
      await writeFileAtomic(path.join(dir, `${alias}.pem`), fileOfEntry(entry), entry.kind === 'private' ? 0o600 : 0o644);
      ks.set(alias, entry);
      this.log.info('keystore entry written', { keystore: name, alias, type: entry.kind === 'private' ? 'PRIVATE_KEY' : 'TRUSTED_CERTIFICATE' });
      this.changed(name, alias);
    });
  }

  private changed(keystore: string, alias: string): void {
    for (const fn of this.listeners) {
      try {
        fn(keystore, alias);
      } catch (err) {
        this.log.error('keystore change listener failed', { keystore, alias, error: (err as Error).message });
      }
    }
  }
}

function catching<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    return asRequestError(err);
  }
}

function boundedText(v: unknown, what: string): string {
  if (typeof v !== 'string' || v.trim() === '') throw bad(`${what}: PEM text is required`);
  if (v.length > MAX_ENTRY_TEXT) throw bad(`${what}: longer than ${MAX_ENTRY_TEXT} characters`);
  return v;
}

function readBounded(file: string): string {
  const st = fs.statSync(file);
  if (st.size > MAX_ENTRY_TEXT) throw new Error(`file larger than ${MAX_ENTRY_TEXT} bytes`);
  return fs.readFileSync(file, 'utf8');
}

function fileOfEntry(e: Entry): string {
  if (e.kind === 'trusted') return e.cert.pem + '\n';
  return (e.key.export({ type: 'pkcs8', format: 'pem' }) as string) + e.chain.map((c) => c.pem + '\n').join('');
}

function entryOfFile(text: string): Entry {
  const blocks = parsePem(text, MAX_CHAIN + 1);
  const keys = blocks.filter((b) => b.label === 'PRIVATE KEY');
  const certs = blocks.filter((b) => b.label === 'CERTIFICATE').map((b) => parseCertificate(b.der));
  if (keys.length + certs.length !== blocks.length || certs.length === 0 || keys.length > 1) throw new Error('not a keystore entry file (a PKCS#8 key and its certificates, or one certificate)');
  if (keys.length === 0) {
    if (certs.length !== 1) throw new Error('a trusted certificate file holds one certificate');
    return { kind: 'trusted', cert: certs[0] };
  }
  let key: KeyObject;
  try {
    key = nodeCrypto().createPrivateKey({ key: pemBlock('PRIVATE KEY', keys[0].der), format: 'pem' });
  } catch {
    throw new Error('the private key cannot be read');
  }
  return { kind: 'private', key, chain: certs };
}
