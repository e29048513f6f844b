// The `http` section (docs/configuration.md): listeners, certificates, bind address; and the checks
// that concern only it.

import fs from 'node:fs';
import { arrayOf, duration, num, port, problem, section, str, warning, type Problem } from '../core/schema.js';

export interface HttpConfig {
  'http.ports': number[];
  'https.ports': number[];
  'https.client.auth.ports': number[];
  'https.keystore.cert': string;
  'https.keystore.key': string;
  'https.truststore': string;
  /** Certificate revocation lists (PEM) for client-auth ports; re-read on reload. */
  'https.truststore.crl': string;
  'bind.address': string;
  /** Hardening limits (docs/configuration.md): open connections, body deadline (ms), anonymous body reads. */
  'max.connections': number;
  'body.timeout': number;
  'max.unauthenticated.bodies': number;
}

const ports = arrayOf(port, { unique: true });

/** The keys that list listener ports, one kind of listener each. */
export const LISTENER_PORT_KEYS = ['http.ports', 'https.ports', 'https.client.auth.ports'] as const;

export const validateHttp = section<HttpConfig>({
  'http.ports': [ports, [8080]],
  'https.ports': [ports, []],
  'https.client.auth.ports': [ports, []],
  'https.keystore.cert': [str(), ''],
  'https.keystore.key': [str(), ''],
  'https.truststore': [str(), ''],
  'https.truststore.crl': [str(), ''],
  'bind.address': [str({ nonEmpty: true }), '0.0.0.0'],
  'max.connections': [num({ int: true, min: 1, max: 65_535 }), 512],
  'body.timeout': [duration('ms', 100, 300_000), 20_000],
  'max.unauthenticated.bodies': [num({ int: true, min: 1, max: 1024 }), 8],
});

/** Ports used twice, keystore halves, missing files (warnings: a device may be provisioned later). */
export function checkHttp(h: HttpConfig, p: Problem[]): void {
  const all = [...h['http.ports'], ...h['https.ports'], ...h['https.client.auth.ports']];
  const seen = new Map<number, string>();
  // Named by the list where the port comes again, so that a runtime change's answer names the property.
  for (const key of LISTENER_PORT_KEYS) {
    for (const x of h[key]) {
      const first = seen.get(x);
      if (x !== 0 && first !== undefined && first !== key) problem(p, `http.${key}`, `port ${x} is configured for more than one listener (also in ${first})`);
      seen.set(x, first ?? key);
    }
  }
  if (all.length === 0) warning(p, 'http', 'no listener configured: the REST API is unreachable');
  if ((h['https.keystore.cert'] === '') !== (h['https.keystore.key'] === '')) {
    problem(p, `http.${h['https.keystore.cert'] === '' ? 'https.keystore.cert' : 'https.keystore.key'}`, 'https.keystore.cert and https.keystore.key must be given together');
  }
  const needTls = h['https.ports'].length + h['https.client.auth.ports'].length > 0;
  for (const k of ['https.keystore.cert', 'https.keystore.key'] as const) {
    if (needTls && h[k] !== '' && !h[k].startsWith('keystore:') && !fs.existsSync(h[k])) warning(p, `http.${k}`, `file not found: ${h[k]}`);
  }
  if (h['https.client.auth.ports'].length > 0) {
    if (h['https.truststore'] === '') warning(p, 'http.https.truststore', 'not set: client-auth ports will not be opened');
    else if (!h['https.truststore'].startsWith('keystore:') && !fs.existsSync(h['https.truststore'])) warning(p, 'http.https.truststore', `file not found: ${h['https.truststore']}: client-auth ports will not be opened`);
    const crl = h['https.truststore.crl'];
    if (crl !== '' && !fs.existsSync(crl)) warning(p, 'http.https.truststore.crl', `file not found: ${crl}: client-auth ports will not be opened`);
  }
}
