// Configuration keys that name a keystore entry instead of a file (docs/configuration.md
// "Certificates from a keystore"): `keystore:<keystore>/<alias>` for a private key entry (its chain
// for a `…cert` key, its key for a `…key` key) or a trusted certificate; `keystore:<keystore>`
// for every trusted certificate of a keystore (a CA or trust list key).

export const KEYSTORE_SCHEME = 'keystore:';

export interface KeystoreReference {
  keystore: string;
  /** Undefined: every trusted certificate of the keystore. */
  alias: string | undefined;
}

/** The entry a configuration value names; undefined for a file path. */
export function parseKeystoreReference(value: string): KeystoreReference | undefined {
  if (!value.startsWith(KEYSTORE_SCHEME)) return undefined;
  const rest = value.slice(KEYSTORE_SCHEME.length);
  const slash = rest.indexOf('/');
  return slash < 0 ? { keystore: rest, alias: undefined } : { keystore: rest.slice(0, slash), alias: rest.slice(slash + 1) };
}

/** The keys that may name a keystore entry, by section. */
export const REFERENCE_KEYS = {
  http: ['https.keystore.cert', 'https.keystore.key', 'https.truststore'],
  mqtt: ['tls.ca', 'tls.cert', 'tls.key'],
} as const;

export interface ReferenceUse {
  /** The configuration key, e.g. `mqtt.tls.cert`. */
  key: string;
  ref: KeystoreReference;
}

/**
 * Every keystore reference of a configuration's http and mqtt sections; with `connections`, those of
 * each connection (keys `mqtt.connections.<name>.tls.…`, or `mqtt.tls.…` for the object form).
 */
export function keystoreUses(cfg: { http: object; mqtt: object; connections?: readonly { keyPath: string; config: object }[] }): ReferenceUse[] {
  const out: ReferenceUse[] = [];
  const sections: [string, object, readonly string[]][] = [['http', cfg.http, REFERENCE_KEYS.http]];
  if (cfg.connections) for (const c of cfg.connections) sections.push([c.keyPath, c.config, REFERENCE_KEYS.mqtt]);
  else sections.push(['mqtt', cfg.mqtt, REFERENCE_KEYS.mqtt]);
  for (const [at, section, keys] of sections) {
    for (const k of keys) {
      const v = (section as Record<string, unknown>)[k];
      const ref = typeof v === 'string' ? parseKeystoreReference(v) : undefined;
      if (ref) out.push({ key: `${at}.${k}`, ref });
    }
  }
  return out;
}

/** The first key using entry `alias` of `keystore` (a whole-keystore reference uses each of its entries). */
export function usedBy(uses: readonly ReferenceUse[], keystore: string, alias: string): string | undefined {
  return uses.find((u) => u.ref.keystore === keystore && (u.ref.alias === undefined || u.ref.alias === alias))?.key;
}

/** Which half of a TLS identity a key asks for: a chain, a private key, or a trust list. */
export type TlsPart = 'cert' | 'key' | 'ca';

/** Reads a TLS key's value: a file's content, or the keystore entry it names. */
export type ReadTls = (value: string, part: TlsPart) => Buffer;

/**
 * A key names a keystore entry that does not exist (yet): a device provisioned with references
 * before its entries are made (docs/installation.md "Provisioning a fleet's certificates").
 */
export class KeystoreEntryMissing extends Error {
  override readonly name = 'KeystoreEntryMissing';
}

export const isKeystoreReference = (value: string): boolean => value.startsWith(KEYSTORE_SCHEME);
