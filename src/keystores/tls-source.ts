// TLS material from the keystores for the HTTPS listeners and the broker connection
// (docs/configuration.md "Certificates from a keystore"): a reader for the keys that may name an
// entry instead of a file, and the rotation that follows a change of such an entry without a
// restart — HTTPS serves the new certificate to new connections, the broker connection
// reconnects with its new identity (docs/mqtt.md "Rotating the device certificate").

import fs from 'node:fs';
import type { Logger } from '../log.js';
import type { HttpConfig } from '../http/config.js';
import { openWaitingClientAuth, serverIdentity } from '../http/listen.js';
import type { HttpServer } from '../http/server.js';
import type { KeystoreStore } from './store.js';
import { KeystoreEntryMissing, isKeystoreReference, keystoreUses, parseKeystoreReference, type ReadTls, type TlsPart } from '../core/keystore-reference.js';
import type { Problem } from '../core/schema.js';

/** Reads a TLS key's value: a file, or the keystore entry a `keystore:` value names. */
export function keystoreTlsReader(store: KeystoreStore): ReadTls {
  return (value, part) => {
    const ref = parseKeystoreReference(value);
    if (!ref) return fs.readFileSync(value);
    if (!store.names.includes(ref.keystore)) throw new Error(`keystore "${ref.keystore}" does not exist: the keystores are ${store.names.join(', ')}`);
    if (ref.alias === undefined) {
      if (part !== 'ca') throw new Error(`${value} names a whole keystore: a certificate or key needs keystore:<keystore>/<alias>`);
      const pem = store.trustedCertificates(ref.keystore);
      if (pem.trim() === '') throw new KeystoreEntryMissing(`keystore ${ref.keystore} has no trusted certificate`);
      return Buffer.from(pem);
    }
    const entry = store.keystore(ref.keystore).get(ref.alias);
    if (!entry) throw new KeystoreEntryMissing(`keystore entry ${ref.keystore}/${ref.alias} does not exist`);
    if (part === 'ca') return Buffer.from(store.trustedCertificates(ref.keystore, ref.alias));
    if (entry.kind !== 'private') throw new Error(`keystore entry ${ref.keystore}/${ref.alias} is a trusted certificate: a ${part === 'cert' ? 'certificate chain' : 'key'} needs a private key entry`);
    const id = store.tlsIdentity(ref.keystore, ref.alias);
    return Buffer.from(part === 'cert' ? id.cert : id.key);
  };
}

export interface TlsUsers {
  store: KeystoreStore;
  read: ReadTls;
  /** The configuration in force (its http and mqtt sections, dataDir). */
  config(): { http: HttpConfig; mqtt: { enabled: boolean }; connections?: readonly { keyPath: string; config: object }[]; dataDir: string };
  http: Pick<HttpServer, 'setTlsIdentity' | 'listeners' | 'listen'>;
  /** `keys`: the configuration keys naming the entry (`mqtt.tls.cert`, `mqtt.connections.<name>.tls.cert`): the connections to reconnect. */
  mqtt: { reconnect(reason: string, keys: string[]): Promise<void> };
  log: Logger;
}

/** Applies every change of an entry in use to its users; returns the function that stops it. */
export function rotateOnKeystoreChange(u: TlsUsers): () => void {
  /** An opening of client-auth ports in progress: one at a time. */
  let opening: Promise<unknown> = Promise.resolve();
  return u.store.onChange((keystore, alias) => {
    const cfg = u.config();
    const entry = `${keystore}/${alias}`;
    const users = keystoreUses(cfg).filter((x) => x.ref.keystore === keystore && (x.ref.alias === undefined || x.ref.alias === alias));
    if (users.some((x) => x.key.startsWith('http.')) && u.http.listeners().some((l) => l.secure)) {
      try {
        const identity = serverIdentity(cfg.http, cfg.dataDir, u.log, u.read);
        const ts = cfg.http['https.truststore'];
        const ca = isKeystoreReference(ts) && u.http.listeners().some((l) => l.clientAuth) ? u.read(ts, 'ca') : undefined;
        u.http.setTlsIdentity({ cert: identity.cert, key: identity.key, ca });
        u.log.info('https certificate reloaded', { entry });
      } catch (err) {
        // The listeners keep what they serve; the message names the key and entry, never key material.
        u.log.error('https certificate not reloaded: keeping the one in use', { entry, error: (err as Error).message });
      }
    }
    // Client-auth ports that stayed closed for want of a certificate in their truststore's keystore open now.
    if (users.some((x) => x.key === 'http.https.truststore')) {
      opening = opening.then(() =>
        openWaitingClientAuth(u.http, cfg.http, cfg.dataDir, u.log, u.read).catch((err) => u.log.error('client-auth ports not opened', { entry, error: (err as Error).message })),
      );
    }
    const mqttKeys = users.filter((x) => x.key.startsWith('mqtt.')).map((x) => x.key);
    if ((cfg.connections !== undefined || cfg.mqtt.enabled) && mqttKeys.length > 0) {
      u.mqtt.reconnect(`keystore entry ${entry} changed`, mqttKeys).catch((err) => u.log.error('mqtt reconnection failed', { entry, error: (err as Error).message }));
    }
  });
}

/**
 * `gatewayd check-config`'s word on the keys of `cfg` that name a keystore entry (docs/configuration.md
 * "Certificates from a keystore"): a warning per key whose keystore, entry or trusted certificates
 * are not in `store`, or whose entry is of the wrong kind, naming both. Warnings, as for a file not
 * there yet: a device may be provisioned with references before its entries are made.
 */
export function keystoreReferenceProblems(store: KeystoreStore, cfg: { http: object; mqtt: object }): Problem[] {
  const read = keystoreTlsReader(store);
  const problems: Problem[] = [];
  for (const use of keystoreUses(cfg)) {
    const section = use.key.slice(0, use.key.indexOf('.')) as 'http' | 'mqtt';
    const value = (cfg[section] as Record<string, string>)[use.key.slice(section.length + 1)];
    const part: TlsPart = use.key.endsWith('cert') ? 'cert' : use.key.endsWith('key') ? 'key' : 'ca';
    try {
      read(value, part);
    } catch (err) {
      // What the daemon does meanwhile (docs/configuration.md "Certificates from a keystore").
      const meanwhile = use.key === 'http.https.truststore' ? 'the client-certificate HTTPS ports stay closed' : section === 'http' ? "HTTPS serves dataDir's self-signed certificate" : 'the broker connection does not connect';
      const missing = err instanceof KeystoreEntryMissing ? `: ${meanwhile} until it is made` : '';
      problems.push({ path: use.key, severity: 'warning', message: `${value}: ${(err as Error).message}${missing} (keystores in ${store.dir})` });
    }
  }
  return problems;
}
