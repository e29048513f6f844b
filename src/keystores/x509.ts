// Reading X.509 certificates (RFC 5280) for the keystore DTOs. node:crypto's X509Certificate checks
// that OpenSSL accepts the certificate and gives validity, key and chain checks; the names, the
// signature algorithm and the subject alternative names are read from the DER here, because Kura
// shows them as Java does (RFC 2253 issuer, `getSubjectAlternativeNames` pairs) and Node's texts
// differ.

import type { KeyObject, X509Certificate } from 'node:crypto';
import { nodeCrypto } from '../core/builtin.js';
import { DerError, children, content, readDer, readOid, type Tlv } from './der.js';
import { decodeName, rfc2253, subjectText } from './dn.js';
import { PemError, parsePem, pemBlock } from './pem.js';

export class CertificateError extends Error {
  override readonly name = 'CertificateError';
}

/** Java's names for the signature algorithms (X509Certificate.getSigAlgName). */
const SIGNATURE_NAMES: Record<string, string> = {
  '1.2.840.113549.1.1.5': 'SHA1withRSA',
  '1.2.840.113549.1.1.11': 'SHA256withRSA',
  '1.2.840.113549.1.1.12': 'SHA384withRSA',
  '1.2.840.113549.1.1.13': 'SHA512withRSA',
  '1.2.840.113549.1.1.10': 'RSASSA-PSS',
  '1.2.840.10045.4.1': 'SHA1withECDSA',
  '1.2.840.10045.4.3.2': 'SHA256withECDSA',
  '1.2.840.10045.4.3.3': 'SHA384withECDSA',
  '1.2.840.10045.4.3.4': 'SHA512withECDSA',
  '1.3.101.112': 'Ed25519',
  '1.3.101.113': 'Ed448',
};

const CURVE_BITS: Record<string, number> = { prime256v1: 256, secp256k1: 256, secp384r1: 384, secp521r1: 521 };

/** What a keystore entry shows of one certificate. */
export interface CertificateFacts {
  subjectDN: string;
  /** Java's `[type, value]` pairs (RFC 5280 §4.2.1.6 GeneralName tag numbers); undefined without the extension. */
  subjectAN: [number, string][] | undefined;
  issuer: string;
  startDate: number;
  expirationDate: number;
  /** The signature algorithm, as Java names it. */
  algorithm: string;
  /** The public key's size in bits (RSA modulus, EC curve order), 0 for other keys (as Kura). */
  size: number;
  /** RSA or EC: the key's algorithm, as Java's Key.getAlgorithm names it. */
  keyAlgorithm: string;
  isCa: boolean;
}

export interface ParsedCertificate {
  der: Buffer;
  x509: X509Certificate;
  facts: CertificateFacts;
  /** PEM, as Kura writes it in a DTO (no final line break). */
  pem: string;
}

/** The size Kura reports for a public key. */
export function keySize(key: KeyObject): number {
  const d = key.asymmetricKeyDetails ?? {};
  if (key.asymmetricKeyType === 'rsa' || key.asymmetricKeyType === 'rsa-pss') return d.modulusLength ?? 0;
  if (key.asymmetricKeyType === 'ec') return CURVE_BITS[d.namedCurve ?? ''] ?? 0;
  return 0;
}

export function keyAlgorithm(key: KeyObject): string {
  const t = key.asymmetricKeyType ?? '';
  return t === 'rsa' || t === 'rsa-pss' ? 'RSA' : t === 'ec' ? 'EC' : t.toUpperCase();
}

/** Parses one DER certificate; a CertificateError says what is wrong with it. */
export function parseCertificate(der: Buffer): ParsedCertificate {
  let x509: X509Certificate;
  let cert: Tlv;
  try {
    cert = readDer(der);
  } catch (err) {
    throw new CertificateError(`not a DER certificate: ${(err as Error).message}`);
  }
  try {
    x509 = new (nodeCrypto().X509Certificate)(der);
  } catch {
    throw new CertificateError('not an X.509 certificate');
  }
  try {
    const [tbs, sigAlg] = children(der, cert);
    const fields = children(der, tbs);
    const at = fields[0]?.tag === 0xa0 ? 1 : 0;
    const [, , issuer, validity, subject] = fields.slice(at);
    if (!sigAlg || !issuer || !validity || !subject) throw new DerError('TBSCertificate is incomplete');
    const sigOid = readOid(content(der, children(der, sigAlg)[0]));
    const subjectRdns = decodeName(der, subject);
    const key = x509.publicKey;
    const facts: CertificateFacts = {
      subjectDN: subjectText(subjectRdns),
      subjectAN: subjectAltNames(der, fields.slice(at)),
      issuer: rfc2253(decodeName(der, issuer)),
      startDate: Date.parse(x509.validFrom),
      expirationDate: Date.parse(x509.validTo),
      algorithm: SIGNATURE_NAMES[sigOid] ?? sigOid,
      size: keySize(key),
      keyAlgorithm: keyAlgorithm(key),
      isCa: x509.ca,
    };
    return { der, x509, facts, pem: pemBlock('CERTIFICATE', der).trimEnd() };
  } catch (err) {
    throw new CertificateError(`malformed certificate: ${(err as Error).message}`);
  }
}

/** The SAN extension's names (RFC 5280 §4.2.1.6) as Java's [type, value] pairs. */
function subjectAltNames(der: Buffer, fields: Tlv[]): [number, string][] | undefined {
  const ext = fields.find((f) => f.tag === 0xa3);
  if (!ext) return undefined;
  const [list] = children(der, ext);
  for (const e of children(der, list)) {
    const parts = children(der, e);
    if (readOid(content(der, parts[0])) !== '2.5.29.17') continue;
    const value = parts[parts.length - 1];
    const names = readDer(content(der, value));
    const inner = content(der, value);
    const out: [number, string][] = [];
    for (const n of children(inner, names)) {
      const type = n.tag & 0x1f;
      const v = content(inner, n);
      if (type === 1 || type === 2 || type === 6) out.push([type, v.toString('latin1')]);
      else if (type === 7 && v.length === 4) out.push([7, [...v].join('.')]);
      else if (type === 7 && v.length === 16) out.push([7, [...Array(8).keys()].map((i) => v.readUInt16BE(i * 2).toString(16)).join(':')]);
      else if (type === 8) out.push([8, readOid(v)]);
      else if (type === 4) out.push([4, rfc2253(decodeName(inner, children(inner, n)[0]))]);
    }
    return out;
  }
  return undefined;
}

/** Bound on the certificates of one request or entry (a chain is rarely more than four). */
export const MAX_CHAIN = 10;

/** Parses PEM text holding only certificates (1 to MAX_CHAIN). */
export function parseCertificates(text: string, what = 'certificate'): ParsedCertificate[] {
  let blocks;
  try {
    blocks = parsePem(text, MAX_CHAIN);
  } catch (err) {
    throw new CertificateError(`${what}: ${err instanceof PemError ? err.message : 'not PEM'}`);
  }
  if (blocks.length === 0) throw new CertificateError(`${what}: no PEM "CERTIFICATE" block`);
  return blocks.map((b, i) => {
    if (b.label !== 'CERTIFICATE') throw new CertificateError(`${what}: a "${b.label}" block where a certificate was expected`);
    try {
      return parseCertificate(b.der);
    } catch (err) {
      throw new CertificateError(`${what}${blocks.length > 1 ? ` ${i + 1}` : ''}: ${(err as Error).message}`);
    }
  });
}
