// The listeners of an `http` section (docs/configuration.md "`http`: listeners"): which ports of
// which kind, the TLS material they need (the keystore files, else the self-signed certificate of
// dataDir), the truststore and revocation list of the client-certificate ports, the server's limits,
// and which changes of the section wait for a restart (docs/configuration.md "Reloading").

import fs from 'node:fs';
import type tls from 'node:tls';
import { lazyBuiltin, nodeCrypto } from '../core/builtin.js';
import type { Logger } from '../log.js';
import type { HttpConfig } from './config.js';
import { ensureSelfSigned } from './selfsigned.js';
import { DEFAULT_LIMITS, type HttpServer, type ListenSpec, type ServerLimits, type TlsMaterial } from './server.js';
import { KeystoreEntryMissing, isKeystoreReference, type ReadTls } from '../core/keystore-reference.js';

// Loaded when a revocation list is configured (docs/installation.md "Start-up time").
const tlsModule = lazyBuiltin<typeof tls>('node:tls');

/** The server's limits that the section sets; the others are the built-in ones. */
export function serverLimitsOf(h: HttpConfig): ServerLimits {
  return { ...DEFAULT_LIMITS, maxConnections: h['max.connections'], bodyTimeoutMs: h['body.timeout'], maxUnauthenticatedBodies: h['max.unauthenticated.bodies'] };
}

/**
 * Whether going from `before` to `after` waits for a restart: the listeners, their TLS material and
 * the server's limits are taken when the server is made and its listeners open; only the revocation
 * list is re-read while running (reloadCrl). The one rule for a reload and a configuration/v2 change.
 */
export function httpNeedsRestart(before: HttpConfig, after: HttpConfig): boolean {
  const fixed = (h: HttpConfig) => JSON.stringify({ ...h, 'https.truststore.crl': '' });
  return fixed(before) !== fixed(after);
}

/** The open listeners as the ready line names them: `http:8080,https:8443,client-auth:8444`. */
export function listenerSummary(server: HttpServer): string {
  return server
    .listeners()
    .map((l) => `${l.clientAuth ? 'client-auth' : l.secure ? 'https' : 'http'}:${l.port}`)
    .join(',');
}

/**
 * Opens every listener of `h`, all or none: an error names what failed (a port, a keystore file),
 * and no listener of this call stays open after it (HttpServer.listen).
 */
export async function openListeners(server: HttpServer, h: HttpConfig, dataDir: string, log: Logger, read: ReadTls = (f) => fs.readFileSync(f)): Promise<void> {
  const specs: ListenSpec[] = h['http.ports'].map((port) => ({ port, kind: 'http' as const }));
  const tlsPorts = h['https.ports'].length + h['https.client.auth.ports'].length;
  let material: TlsMaterial | undefined;
  if (tlsPorts > 0) {
    material = serverIdentity(h, dataDir, log, read);
    specs.push(...h['https.ports'].map((port) => ({ port, kind: 'https' as const })));
    const trust = h['https.client.auth.ports'].length > 0 ? clientAuthTrust(h, log, read, false) : undefined;
    if (trust) {
      Object.assign(material, trust);
      specs.push(...h['https.client.auth.ports'].map((port) => ({ port, kind: 'client-auth' as const })));
    }
  }
  await server.listen(specs, h['bind.address'], material);
}

/**
 * The truststore and revocation list of the client-auth ports; undefined when they stay closed
 * (logged unless `quiet`): the CRL is unusable (fail closed), or the truststore does not exist yet.
 */
function clientAuthTrust(h: HttpConfig, log: Logger, read: ReadTls, quiet: boolean): { ca: Buffer; crl?: Buffer } | undefined {
  const ports = h['https.client.auth.ports'].join(',');
  const ts = h['https.truststore'];
  const crl = h['https.truststore.crl'];
  let revoked: Buffer | undefined;
  try {
    revoked = crl ? readCrl(crl) : undefined;
  } catch (err) {
    // A revocation list that cannot be used must not let revoked certificates in: fail closed.
    log.error('client-auth ports not opened: CRL unusable', { ports, crl, error: (err as Error).message });
    return undefined;
  }
  const ca = readTruststore(ts, read);
  if (ca === undefined) {
    // A device may be provisioned incompletely (docs/configuration.md "`http`: listeners"): do not stop the daemon for it.
    if (!quiet) log.warn('client-auth ports not opened: truststore missing', { ports, truststore: ts });
    return undefined;
  }
  return revoked ? { ca, crl: revoked } : { ca };
}

/**
 * Opens the client-auth ports of `h` that stayed closed because their truststore, a keystore
 * reference, had no certificate yet, once it has one (a certificate added to that keystore:
 * src/keystores/tls-source.ts), with the certificate the other HTTPS listeners serve. False when
 * there is nothing to open or it is still missing; throws when a port cannot open.
 */
export async function openWaitingClientAuth(server: Pick<HttpServer, 'listen' | 'listeners'>, h: HttpConfig, dataDir: string, log: Logger, read: ReadTls): Promise<boolean> {
  const ports = h['https.client.auth.ports'];
  if (ports.length === 0 || !isKeystoreReference(h['https.truststore']) || server.listeners().some((l) => l.clientAuth)) return false;
  const trust = clientAuthTrust(h, log, read, true);
  if (!trust) return false;
  const identity = serverIdentity(h, dataDir, log, read);
  await server.listen(ports.map((port) => ({ port, kind: 'client-auth' as const })), h['bind.address'], { cert: identity.cert, key: identity.key, ...trust });
  log.info('client-auth ports opened: their truststore has a certificate now', { ports: ports.join(','), truststore: h['https.truststore'] });
  return true;
}

/** The client-auth truststore; undefined when its file or keystore entries do not exist (yet). */
function readTruststore(ts: string, read: ReadTls): Buffer | undefined {
  if (!ts || (!isKeystoreReference(ts) && !fs.existsSync(ts))) return undefined;
  try {
    return read(ts, 'ca');
  } catch (err) {
    if (err instanceof KeystoreEntryMissing) return undefined;
    throw err;
  }
}

/**
 * The HTTPS listeners' certificate and key: the keystore files or entry, else the self-signed
 * certificate of dataDir, also while a named keystore entry does not exist yet (it takes over when
 * it is made: src/keystores/tls-source.ts).
 */
export function serverIdentity(h: HttpConfig, dataDir: string, log: Logger, read: ReadTls = (f) => fs.readFileSync(f)): TlsMaterial {
  if (h['https.keystore.cert'] && h['https.keystore.key']) {
    try {
      const material = { cert: readNamed(h, 'https.keystore.cert', read), key: readNamed(h, 'https.keystore.key', read) };
      keystoreContext(material);
      return material;
    } catch (err) {
      if (!(err instanceof KeystoreEntryMissing)) throw err;
      log.warn('https keystore entry missing: serving the self-signed certificate until it is made', { error: err.message });
    }
  }
  const ss = ensureSelfSigned(dataDir);
  if (ss.generated) log.warn('no keystore configured: generated a self-signed certificate', { dir: dataDir });
  // What a technician compares with the browser's certificate view (docs/installation.md).
  log.always('self-signed certificate', { sha256: new (nodeCrypto().X509Certificate)(ss.cert).fingerprint256 });
  return { cert: ss.cert, key: ss.key };
}

function readNamed(h: HttpConfig, key: 'https.keystore.cert' | 'https.keystore.key', read: ReadTls): Buffer {
  try {
    return read(h[key], key === 'https.keystore.cert' ? 'cert' : 'key');
  } catch (err) {
    const text = `http.${key} ${h[key]}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`;
    throw err instanceof KeystoreEntryMissing ? new KeystoreEntryMissing(text) : new Error(text);
  }
}

/** The keystore files as TLS takes them; the error names the keys (a half that is not PEM, or not a pair). */
function keystoreContext(m: TlsMaterial): void {
  try {
    tlsModule().createSecureContext({ cert: m.cert, key: m.key, ca: [] });
  } catch (err) {
    throw new Error(`http.https.keystore.cert and http.https.keystore.key unusable: ${(err as Error).message}`);
  }
}

/** Reads a PEM revocation list file and checks that TLS accepts it (throws with the reason). */
export function readCrl(file: string): Buffer {
  const crl = fs.readFileSync(file);
  if (!crl.includes('-----BEGIN X509 CRL-----')) throw new Error('no PEM X509 CRL in the file');
  // An empty trust store: Node's built-in roots are not needed to check the list (docs/installation.md "Start-up time").
  tlsModule().createSecureContext({ crl, ca: [] });
  return crl;
}

/**
 * Re-reads the revocation list of the client-certificate listeners (an operator revokes a
 * certificate by replacing the file and reloading); one that cannot be used keeps `inForce`, the
 * one in force, and says so. Returns the path in force afterwards.
 */
export function reloadCrl(server: HttpServer, file: string, inForce: string, log: Logger): string {
  if (!server.listeners().some((l) => l.clientAuth)) return file;
  try {
    server.setCrl(file ? readCrl(file) : undefined);
    log.info('certificate revocation list loaded', { crl: file || '(none)' });
    return file;
  } catch (err) {
    log.error('CRL not reloaded: keeping the previous one', { crl: file, error: (err as Error).message });
    return inForce;
  }
}
