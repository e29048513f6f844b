// The listener settings of the runtime layer (docs/configuration-v2.md "Listener settings"): a
// change is checked as far as it can be before it is stored (the address exists on the device, the
// keystore parses and its halves match, truststore and CRL parse, no port twice or held by another
// program), and what could not be foreseen (a port taken by the next start, a file changed since)
// makes the start fall back to the image file's listener settings instead of failing for ever.

import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { nodeCrypto } from '../core/builtin.js';
import type { Config } from './config.js';
import { isPlainObject, type Problem } from '../core/schema.js';
import { LISTENER_PORT_KEYS, validateHttp, type HttpConfig } from '../http/config.js';
import { openListeners, readCrl } from '../http/listen.js';
import type { HttpServer } from '../http/server.js';
import type { Logger } from '../log.js';
import { validateRest } from '../auth/config.js';
import type { Raw } from './model.js';
import type { ConfigStore, ListenerRefusal } from './store.js';
import { isKeystoreReference, type ReadTls } from '../core/keystore-reference.js';

/** The `http` keys that decide which listeners open, and with what. */
export const LISTENER_KEYS = [...LISTENER_PORT_KEYS, 'https.keystore.cert', 'https.keystore.key', 'https.truststore', 'https.truststore.crl', 'bind.address'] as const;

/** What the listeners are opened with, and `rest.allowed.ports`, which names some of them. */
export interface ListenerSettings {
  http: HttpConfig;
  allowedPorts: number[];
}

export const listenerSettingsOf = (c: Config): ListenerSettings => ({ http: c.http, allowedPorts: c.rest['allowed.ports'] });

/** The settings as one comparable text. */
export function listenerText(s: ListenerSettings): string {
  return JSON.stringify([...LISTENER_KEYS.map((k) => s.http[k]), s.allowedPorts]);
}

/** Configuration file key paths (`http.bind.address`, `rest.allowed.ports`) where `a` and `b` differ. */
export function listenerDifferences(a: ListenerSettings, b: ListenerSettings): string[] {
  const out: string[] = LISTENER_KEYS.filter((k) => JSON.stringify(a.http[k]) !== JSON.stringify(b.http[k])).map((k) => `http.${k}`);
  if (JSON.stringify(a.allowedPorts) !== JSON.stringify(b.allowedPorts)) out.push('rest.allowed.ports');
  return out;
}

/** The image file's own listener settings, validated and resolved as validateConfig does (paths relative to the file). */
export function imageListeners(image: Raw, file: string): ListenerSettings {
  const base = path.dirname(path.resolve(file));
  const http = validateHttp(image.http, 'http', []);
  for (const k of ['https.keystore.cert', 'https.keystore.key', 'https.truststore', 'https.truststore.crl'] as const) if (http[k] && !isKeystoreReference(http[k])) http[k] = path.resolve(base, http[k]);
  return { http, allowedPorts: validateRest(isPlainObject(image.rest) ? image.rest : {}, 'rest', [])['allowed.ports'] };
}

/** `c` with the listener keys and allowed ports of `from` (the rest of its http section stays). */
export function withListeners(c: Config, from: ListenerSettings): Config {
  const http = { ...c.http };
  for (const k of LISTENER_KEYS) (http as Record<string, unknown>)[k] = from.http[k];
  return { ...c, http, rest: { ...c.rest, 'allowed.ports': from.allowedPorts } };
}

/** What opening the listeners at start needs besides the server and the configuration. */
export interface ListenerStart {
  log: Logger;
  /** The image file's listener settings where the runtime layer changes them (ConfigurationService.listenerFallback). */
  fallback(): { settings: ListenerSettings; properties: string[] } | undefined;
  /** Where the refusal is recorded for check-config, and cleared by a start that opened as configured. */
  store: ConfigStore | undefined;
  /** Takes over the configuration with the image's listener settings, before they open. */
  adopt(config: Config): Promise<void>;
  /** Reads the TLS material: files, or keystore entries (docs/configuration.md "Certificates from a keystore"); default: files. */
  readTls?: ReadTls;
}

/**
 * Opens the listeners of `config`. When they cannot open (what the checks of a change could not
 * foresee: a port taken since, a file changed since) and the runtime layer changed the image's
 * listener settings, the image's are opened instead; the refusal, with the properties set aside, is
 * logged, recorded and returned (docs/configuration-v2.md "Listener settings").
 */
export async function openListenersInForce(server: HttpServer, config: Config, o: ListenerStart): Promise<ListenerRefusal | undefined> {
  try {
    await openListeners(server, config.http, config.dataDir, o.log, o.readTls);
    o.store?.clearListenerRefusal();
    return undefined;
  } catch (e) {
    const fallback = o.fallback();
    if (!fallback) throw e;
    const error = (e as Error).message;
    o.log.error("runtime listener settings refused: their listeners could not open; opening the image file's instead", { properties: fallback.properties.join(','), error });
    const image = withListeners(config, fallback.settings);
    await o.adopt(image);
    await openListeners(server, image.http, image.dataDir, o.log, o.readTls);
    const refusal = { at: Date.now(), properties: fallback.properties, error, settings: listenerText(listenerSettingsOf(config)) };
    await o.store?.writeListenerRefusal(refusal).catch((w) => o.log.warn('listener refusal not recorded', { error: (w as Error).message }));
    return refusal;
  }
}

const err = (p: Problem[], key: string, message: string): void => void p.push({ path: key, message, severity: 'error' });
const reason = (e: unknown) => (e as NodeJS.ErrnoException).code ?? (e as Error).message;

function isLoopback(addr: string): boolean {
  return addr === 'localhost' || addr === '::1' || (net.isIPv4(addr) && addr.startsWith('127.'));
}

/** The device's own addresses (as os.networkInterfaces writes them), without a zone index. */
const bare = (addr: string) => addr.replace(/%.*$/, '').toLowerCase();

function checkAddress(addr: string, p: Problem[]): void {
  if (addr === '0.0.0.0' || addr === '::' || isLoopback(addr)) return;
  const own = Object.values(os.networkInterfaces()).flatMap((list) => (list ?? []).map((a) => bare(a.address)));
  if (!own.includes(bare(addr))) err(p, 'http.bind.address', `${addr} is not an IP address of this device (${own.join(', ')}; 0.0.0.0 or :: for all, or a loopback address): no listener could open on it`);
}

const CERT_BLOCK = /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g;

/** Reads a file a listener will need; a missing one is tolerated where `tolerateMissing` (the image's own value). */
function readFor(key: string, file: string, p: Problem[], tolerateMissing: boolean): Buffer | undefined {
  try {
    return fs.readFileSync(file);
  } catch (e) {
    if (!(tolerateMissing && (e as NodeJS.ErrnoException).code === 'ENOENT')) err(p, key, `${file} cannot be read: ${reason(e)}`);
    return undefined;
  }
}

function checkKeystore(h: HttpConfig, p: Problem[]): void {
  const certFile = h['https.keystore.cert'];
  const keyFile = h['https.keystore.key'];
  if (!certFile || !keyFile) return; // the self-signed certificate of dataDir
  // A keystore entry (docs/configuration.md "Certificates from a keystore") is the store's to check.
  if (isKeystoreReference(certFile) || isKeystoreReference(keyFile)) return;
  const cert = readFor('http.https.keystore.cert', certFile, p, false);
  const key = readFor('http.https.keystore.key', keyFile, p, false);
  if (!cert || !key) return;
  const crypto = nodeCrypto();
  let x509: import('node:crypto').X509Certificate | undefined;
  let privateKey: import('node:crypto').KeyObject | undefined;
  try {
    x509 = new crypto.X509Certificate(cert);
  } catch (e) {
    err(p, 'http.https.keystore.cert', `${certFile} is not a PEM certificate (${(e as Error).message})`);
  }
  try {
    privateKey = crypto.createPrivateKey(key);
  } catch (e) {
    err(p, 'http.https.keystore.key', `${keyFile} is not an unencrypted PEM private key (${(e as Error).message})`);
  }
  if (x509 && privateKey && !x509.checkPrivateKey(privateKey)) err(p, 'http.https.keystore.key', `${keyFile} is not the private key of the certificate ${certFile}`);
}

function checkTruststore(h: HttpConfig, image: HttpConfig, p: Problem[]): void {
  const file = h['https.truststore'];
  if (!file || isKeystoreReference(file)) return; // the client-auth ports stay closed, as for the image (a warning)
  const pem = readFor('http.https.truststore', file, p, file === image['https.truststore']);
  if (!pem) return;
  const blocks = pem.toString('latin1').match(CERT_BLOCK) ?? [];
  if (blocks.length === 0) return err(p, 'http.https.truststore', `${file} holds no PEM certificate`);
  for (const b of blocks) {
    try {
      new (nodeCrypto().X509Certificate)(b);
    } catch (e) {
      return err(p, 'http.https.truststore', `${file} holds a certificate that does not parse (${(e as Error).message})`);
    }
  }
}

function checkCrl(h: HttpConfig, image: HttpConfig, p: Problem[]): void {
  const file = h['https.truststore.crl'];
  if (!file) return;
  if (file === image['https.truststore.crl'] && !fs.existsSync(file)) return;
  try {
    readCrl(file);
  } catch (e) {
    err(p, 'http.https.truststore.crl', `${file} is not a usable PEM revocation list (${reason(e)})`);
  }
}

/**
 * What can be known now about whether `next` will open at the next start: the problems, as
 * configuration file key paths. Files the image itself names may be missing (a device provisioned
 * later, docs/configuration.md "`http`: listeners"); a file that is there must parse.
 */
export function listenerProblems(next: ListenerSettings, image: ListenerSettings): Problem[] {
  const p: Problem[] = [];
  const h = next.http;
  checkAddress(h['bind.address'], p);
  if (h['https.ports'].length + h['https.client.auth.ports'].length > 0) checkKeystore(h, p);
  if (h['https.client.auth.ports'].length > 0) {
    checkTruststore(h, image.http, p);
    checkCrl(h, image.http, p);
  }
  const listening = new Set(LISTENER_PORT_KEYS.flatMap((k) => h[k]));
  if (next.allowedPorts.length > 0 && !next.allowedPorts.some((x) => listening.has(x))) {
    err(p, 'rest.allowed.ports', `none of the ports ${next.allowedPorts.join(', ')} is a listener (${[...listening].join(', ') || 'none'}): the REST API would be unreachable`);
  }
  return p;
}

/** Tries to bind `port` on `host` and lets it go at once. */
function probe(port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen({ port, host, exclusive: true }, () => s.close(() => resolve()));
  });
}

/**
 * The ports of `h` that cannot be bound now (another program holds one, or this user may not bind
 * it); the daemon's own listeners (`ours`) are skipped: they are let go before the next start binds.
 */
export async function portProblems(h: HttpConfig, ours: ReadonlySet<number>): Promise<Problem[]> {
  const p: Problem[] = [];
  for (const key of LISTENER_PORT_KEYS) {
    for (const port of h[key]) {
      if (port === 0 || ours.has(port)) continue;
      try {
        await probe(port, h['bind.address']);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        const why = code === 'EADDRINUSE' ? 'is in use by another program' : code === 'EACCES' ? 'may not be bound by this user (a port below 1024 needs root or CAP_NET_BIND_SERVICE)' : `cannot be bound (${reason(e)})`;
        err(p, `http.${key}`, `port ${port} on ${h['bind.address']} ${why}`);
      }
    }
  }
  return p;
}

/**
 * check-config's view of the runtime layer's listener settings: what listenerProblems finds now,
 * and the last start's refusal while the stored settings are still the refused ones.
 */
export function runtimeListenerProblems(image: Raw, file: string, config: Config, store: ConfigStore): Problem[] {
  const img = imageListeners(image, file);
  const runtime = listenerSettingsOf(config);
  if (listenerDifferences(runtime, img).length === 0) return [];
  const fallback = "; gatewayd opens the image file's listener settings instead";
  const out = listenerProblems(runtime, img).map((p) => ({ ...p, message: `runtime configuration: ${p.message}${fallback}` }));
  const last = store.readListenerRefusal();
  if (last && last.settings === listenerText(runtime)) {
    const message = `runtime configuration: the start of ${new Date(last.at).toISOString()} could not open its listeners (${last.error})${fallback}`;
    out.push({ path: last.properties.join(', '), message, severity: 'error' });
  }
  return out;
}
