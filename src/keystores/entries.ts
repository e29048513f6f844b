// Keystore entries as Kura's DTOs (docs/rest-api.md "keystores/v1"): KeystoreInfo, CertificateInfo
// for a trusted certificate, PrivateKeyInfo for a private key entry, as Kura's Gson writes them
// (absent fields left out). A private key entry also shows its leaf certificate's subject, issuer
// and validity, which Kura leaves out (COMPATIBILITY.md), so an operator sees what expires.
// Nothing here can reach a private key: an entry's DTO is made from its certificates only.

import type { Entry, KeystoreStore } from './store.js';
import type { ParsedCertificate } from './x509.js';

export interface KeystoreInfo {
  keystoreServicePid: string;
  type: string;
  size: number;
}

/** The `type` of every keystore: PEM files in dataDir (Kura's are PKCS12 or JKS files). */
export const KEYSTORE_TYPE = 'PEM';

export function keystoreInfos(store: KeystoreStore): KeystoreInfo[] {
  return store.names.map((name) => ({ keystoreServicePid: name, type: KEYSTORE_TYPE, size: store.keystore(name).size }));
}

function certificateFields(c: ParsedCertificate) {
  const f = c.facts;
  return {
    subjectDN: f.subjectDN,
    ...(f.subjectAN ? { subjectAN: f.subjectAN } : {}),
    issuer: f.issuer,
    startDate: f.startDate,
    expirationDate: f.expirationDate,
  };
}

export function entryInfo(keystore: string, alias: string, e: Entry, withCertificate: boolean): Record<string, unknown> {
  if (e.kind === 'trusted') {
    return {
      keystoreServicePid: keystore,
      alias,
      ...certificateFields(e.cert),
      algorithm: e.cert.facts.algorithm,
      size: e.cert.facts.size,
      ...(withCertificate ? { certificate: e.cert.pem } : {}),
      type: 'TRUSTED_CERTIFICATE',
    };
  }
  const leaf = e.chain[0];
  return {
    keystoreServicePid: keystore,
    alias,
    algorithm: leaf.facts.keyAlgorithm,
    size: leaf.facts.size,
    ...certificateFields(leaf),
    ...(withCertificate ? { certificateChain: e.chain.map((c) => c.pem) } : {}),
    type: 'PRIVATE_KEY',
  };
}

/** Every entry of every keystore, without certificates (Kura's `GET entries` without a filter). */
export function allEntries(store: KeystoreStore): Record<string, unknown>[] {
  return store.names.flatMap((name) => [...store.keystore(name)].map(([alias, e]) => entryInfo(name, alias, e, false)));
}

/** The entries of one keystore, with their certificates. */
export function keystoreEntries(store: KeystoreStore, keystore: unknown): Record<string, unknown>[] {
  const ks = store.keystore(keystore);
  return [...ks].map(([alias, e]) => entryInfo(keystore as string, alias, e, true));
}

/** The entries named `alias` in any keystore, with their certificates. */
export function entriesByAlias(store: KeystoreStore, alias: string): Record<string, unknown>[] {
  return store.names.flatMap((name) => {
    const e = store.keystore(name).get(alias);
    return e ? [entryInfo(name, alias, e, true)] : [];
  });
}
