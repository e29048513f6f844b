// Kura's keystores/v1 over REST and KEYS-V1 over MQTT (docs/rest-api.md "keystores/v1",
// docs/mqtt.md "KEYS-V1"): one set of handlers mounted twice, because the two front ends of Kura
// differ in small ways that Kapua and Kura's web UI rely on:
//   - REST reads the entry filters from the query, KEYS-V1 from the JSON body;
//   - REST answers a CSR as `{"signingRequest": …}`, KEYS-V1 as a bare JSON string (Kura's
//     KeystoreServiceRequestHandler serialises the PEM itself; Kapua reads both);
//   - REST errors are `{"message": …}` (JAX-RS), KEYS-V1's are a native handler's (response.code
//     and response.exception.message);
//   - REST answers a write with 204 (a void JAX-RS method), KEYS-V1 with 200.
// Changing an entry that the broker connection or a listener uses (docs/configuration.md
// "Certificates from a keystore") is reserved to kura.admin, as changing those keys is.

import { RequestError } from '../core/errors.js';
import { isPlainObject } from '../core/schema.js';
import { PayloadReply, permits, type CoreRequest, type CoreRoute, type Family, type Method } from '../core/family.js';
import type { KeystoreStore } from '../keystores/store.js';
import { allEntries, entriesByAlias, entryInfo, keystoreEntries, keystoreInfos } from '../keystores/entries.js';

export interface KeystoreDeps {
  store: KeystoreStore;
  /** The configuration key that uses this entry, if any (src/keystores/references.ts `usedBy`). */
  usedBy(keystore: string, alias: string): string | undefined;
}

// Kura's request format texts (KeystoreRestService), for a body that lacks a required field.
const FORMAT = {
  entry: 'Bad request, expected request format: {"keystoreServicePid": "MyKeystoreName", "alias": "MyAlias"}',
  certificate: 'Bad request, expected request format: {"keystoreServicePid": "MyKeystoreName", "alias": "MyAlias", "type": "TrustedCertificate", "certificate": "..."}',
  keypair: 'Bad request, expected request format: {"keystoreServicePid": "MyKeystoreName", "alias": "MyAlias", "algorithm": "RSA", "size": 2048, "signatureAlgorithm": "SHA256withRSA", "attributes": "CN=..."}',
  csr: 'Bad request, expected request format: {"keystoreServicePid": "MyKeystoreName", "alias": "MyAlias", "signatureAlgorithm": "...", "attributes": "..."}',
  chain: 'Bad request, expected request format: {"keystoreServicePid": "MyKeystoreName", "alias": "MyAlias", "certificateChain": ["..."]}',
};

type Body = Record<string, unknown>;

/** The JSON body, with Kapua's explicit nulls read as absent fields. */
async function bodyOf(req: CoreRequest, format: string, required: string[]): Promise<Body> {
  const b = await req.body();
  if (!isPlainObject(b)) throw new RequestError(400, format);
  const out: Body = {};
  for (const [k, v] of Object.entries(b)) if (v !== null) out[k] = v;
  for (const k of required) if (out[k] === undefined || out[k] === '') throw new RequestError(400, format);
  return out;
}

/** The filter of a listing: query parameters over REST, the optional body over MQTT. */
async function filterOf(req: CoreRequest): Promise<{ keystoreServicePid?: string; alias?: string }> {
  const pick = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);
  if (req.transport === 'rest') return { keystoreServicePid: pick(req.query?.('keystoreServicePid')), alias: pick(req.query?.('alias')) };
  const b = await req.body();
  if (b === undefined) return {};
  if (!isPlainObject(b)) throw new RequestError(400, FORMAT.entry);
  return { keystoreServicePid: pick(b.keystoreServicePid), alias: pick(b.alias) };
}

const written = (req: CoreRequest) => (req.transport === 'rest' ? new PayloadReply({ status: 204 }) : undefined);

function handlers(d: KeystoreDeps) {
  const { store } = d;
  /** An entry in use by a listener or the broker connection is changed by kura.admin only. */
  const mayChange = (req: CoreRequest, keystore: unknown, alias: unknown) => {
    if (typeof keystore !== 'string' || typeof alias !== 'string') return;
    const key = d.usedBy(keystore, alias);
    if (key !== undefined && !permits(req.identity?.permissions ?? [], undefined)) {
      throw new RequestError(403, `Only kura.admin may change keystore entry ${keystore}/${alias}: it is used by ${key}`);
    }
  };
  return {
    keystores: () => keystoreInfos(store),
    entries: async (req: CoreRequest) => {
      const f = await filterOf(req);
      if (f.keystoreServicePid !== undefined) return keystoreEntries(store, f.keystoreServicePid);
      if (f.alias !== undefined) return entriesByAlias(store, f.alias);
      return allEntries(store);
    },
    entry: async (req: CoreRequest) => {
      const f = await filterOf(req);
      if (f.keystoreServicePid === undefined || f.alias === undefined) throw new RequestError(400, FORMAT.entry);
      return entryInfo(f.keystoreServicePid, f.alias, store.entry(f.keystoreServicePid, f.alias), true);
    },
    csr: async (req: CoreRequest) => {
      const b = await bodyOf(req, FORMAT.csr, ['keystoreServicePid', 'alias', 'signatureAlgorithm', 'attributes']);
      const pem = store.certificationRequest(b.keystoreServicePid, b.alias, b.signatureAlgorithm, b.attributes);
      return req.transport === 'rest' ? { signingRequest: pem } : pem;
    },
    certificate: async (req: CoreRequest) => {
      const b = await bodyOf(req, FORMAT.certificate, ['keystoreServicePid', 'alias', 'certificate']);
      mayChange(req, b.keystoreServicePid, b.alias);
      await store.addTrustedCertificate(b.keystoreServicePid, b.alias, b.certificate);
      return written(req);
    },
    keypair: async (req: CoreRequest) => {
      const b = await bodyOf(req, FORMAT.keypair, ['keystoreServicePid', 'alias', 'algorithm', 'size', 'signatureAlgorithm', 'attributes']);
      mayChange(req, b.keystoreServicePid, b.alias);
      await store.createKeyPair(b.keystoreServicePid, b.alias, { algorithm: b.algorithm, size: b.size, signatureAlgorithm: b.signatureAlgorithm, attributes: b.attributes });
      return written(req);
    },
    chain: async (req: CoreRequest) => {
      const b = await bodyOf(req, FORMAT.chain, ['keystoreServicePid', 'alias', 'certificateChain']);
      // Keys are made on the device and never travel (docs/rest-api.md "keystores/v1").
      if (b.privateKey !== undefined) throw new RequestError(400, 'privateKey: importing a private key is not supported: create a key pair on the device (entries/keypair), send its CSR to the CA, and install the chain the CA returns');
      mayChange(req, b.keystoreServicePid, b.alias);
      await store.replaceCertificateChain(b.keystoreServicePid, b.alias, b.certificateChain);
      return written(req);
    },
    remove: async (req: CoreRequest) => {
      const b = await bodyOf(req, FORMAT.entry, ['keystoreServicePid', 'alias']);
      mayChange(req, b.keystoreServicePid, b.alias);
      await store.deleteEntry(b.keystoreServicePid, b.alias);
      return written(req);
    },
  };
}

function routes(d: KeystoreDeps, prefix: string): CoreRoute[] {
  const h = handlers(d);
  const at = (p: string) => [prefix, p].filter(Boolean).join('/');
  const r = (method: Method, path: string, handler: CoreRoute['handler']): CoreRoute => ({ method, path: at(path), handler });
  return [
    r('GET', '', h.keystores),
    r('GET', 'entries', h.entries),
    r('GET', 'entries/entry', h.entry),
    r('POST', 'entries/csr', h.csr),
    r('POST', 'entries/certificate', h.certificate),
    r('POST', 'entries/keypair', h.keypair),
    // Kura's keystores/v2 resource for installing a CA's answer (certificateChain only).
    r('POST', 'entries/privatekey', h.chain),
    r('DEL', 'entries', h.remove),
  ];
}

/** REST /services/keystores/v1 (role keystores). */
export const keystoresRestFamily = (d: KeystoreDeps): Family => ({
  name: 'keystores/v1',
  rest: '/services/keystores/v1',
  role: 'keystores',
  errors: 'json',
  routes: routes(d, ''),
});

/** MQTT KEYS-V1: the same resources below `keystores` (Kapua's keystore tab and job steps). */
export const keystoresMqttFamily = (d: KeystoreDeps): Family => ({
  name: 'KEYS-V1',
  appId: 'KEYS-V1',
  role: 'keystores',
  errors: 'native',
  routes: routes(d, 'keystores'),
  // Kura's handler answers any other resource with BAD_REQUEST.
  noMatch: () => new RequestError(400, 'Bad request. Resource not found'),
});
