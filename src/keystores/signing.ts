// What the device signs with its keys: key pairs (RSA, EC) with the self-signed certificate Kura
// gives a new key pair, and PKCS#10 certification requests (RFC 2986). Node has no writer for
// either, so the DER is assembled here (src/keystores/der.ts) and signed with node:crypto.

import type { KeyObject } from 'node:crypto';
import { nodeCrypto } from '../core/builtin.js';
import { bitString, explicit, nullValue, oid, sequence, smallInteger, time, tlv, unsignedInteger } from './der.js';
import { dnFromText } from './dn.js';
import { pemBlock } from './pem.js';

export class SigningError extends Error {
  override readonly name = 'SigningError';
}

interface SignatureAlgorithm {
  oid: string;
  hash: string;
  key: 'rsa' | 'ec';
}

/** The signature algorithms offered, by Java's names (RFC 4055 §5, RFC 5758 §3.2). */
const SIGNATURE_ALGORITHMS: Record<string, SignatureAlgorithm> = {
  SHA256withRSA: { oid: '1.2.840.113549.1.1.11', hash: 'sha256', key: 'rsa' },
  SHA384withRSA: { oid: '1.2.840.113549.1.1.12', hash: 'sha384', key: 'rsa' },
  SHA512withRSA: { oid: '1.2.840.113549.1.1.13', hash: 'sha512', key: 'rsa' },
  SHA256withECDSA: { oid: '1.2.840.10045.4.3.2', hash: 'sha256', key: 'ec' },
  SHA384withECDSA: { oid: '1.2.840.10045.4.3.3', hash: 'sha384', key: 'ec' },
  SHA512withECDSA: { oid: '1.2.840.10045.4.3.4', hash: 'sha512', key: 'ec' },
};
export const SIGNATURE_ALGORITHM_NAMES = Object.keys(SIGNATURE_ALGORITHMS);

/** Key sizes a new key pair may have: RSA below 2048 bits is no longer safe (NIST SP 800-131A). */
export const RSA_SIZES = [2048, 3072, 4096];
const EC_CURVES: Record<number, string> = { 256: 'prime256v1', 384: 'secp384r1', 521: 'secp521r1' };
export const EC_SIZES = Object.keys(EC_CURVES).map(Number);

/** The algorithm for `name`, checked against the key that signs. */
function signatureAlgorithm(name: unknown, key: KeyObject): SignatureAlgorithm {
  const alg = typeof name === 'string' ? SIGNATURE_ALGORITHMS[name] : undefined;
  if (!alg) throw new SigningError(`unsupported signature algorithm "${String(name).slice(0, 40)}": use one of ${SIGNATURE_ALGORITHM_NAMES.join(', ')}`);
  const type = key.asymmetricKeyType === 'rsa' ? 'rsa' : key.asymmetricKeyType === 'ec' ? 'ec' : undefined;
  if (type !== alg.key) throw new SigningError(`signature algorithm ${String(name)} needs an ${alg.key.toUpperCase()} key, the entry's key is ${(key.asymmetricKeyType ?? '?').toUpperCase()}`);
  return alg;
}

// RFC 4055 §5: the RSA algorithms carry NULL parameters; RFC 5758 §3.2: ECDSA's carry none.
const algorithmIdentifier = (a: SignatureAlgorithm): Buffer => (a.key === 'rsa' ? sequence(oid(a.oid), nullValue()) : sequence(oid(a.oid)));

/** The signed structure (certificate or request): SEQUENCE { toBeSigned, algorithm, BIT STRING signature }. */
function signed(toBeSigned: Buffer, alg: SignatureAlgorithm, key: KeyObject): Buffer {
  const signature = nodeCrypto().sign(alg.hash, toBeSigned, key);
  return sequence(toBeSigned, algorithmIdentifier(alg), bitString(signature));
}

export interface KeyPairRequest {
  algorithm: unknown;
  size: unknown;
}

/** A new key pair (Kura's algorithm names RSA and EC); generated on the thread pool. */
export async function generateKeyPair(req: KeyPairRequest): Promise<{ privateKey: KeyObject; publicKey: KeyObject }> {
  const crypto = nodeCrypto();
  const algorithm = typeof req.algorithm === 'string' ? req.algorithm.toUpperCase() : '';
  const size = req.size;
  if (algorithm === 'RSA') {
    if (!RSA_SIZES.includes(size as number)) throw new SigningError(`RSA key size ${String(size)} is not supported: use one of ${RSA_SIZES.join(', ')}`);
    return new Promise((resolve, reject) => crypto.generateKeyPair('rsa', { modulusLength: size as number }, (err, publicKey, privateKey) => (err ? reject(err) : resolve({ publicKey, privateKey }))));
  }
  if (algorithm === 'EC') {
    const namedCurve = EC_CURVES[size as number];
    if (!namedCurve) throw new SigningError(`EC key size ${String(size)} is not supported: use one of ${EC_SIZES.join(', ')}`);
    return new Promise((resolve, reject) => crypto.generateKeyPair('ec', { namedCurve }, (err, publicKey, privateKey) => (err ? reject(err) : resolve({ publicKey, privateKey }))));
  }
  throw new SigningError(`unsupported key algorithm "${String(req.algorithm).slice(0, 20)}": use RSA or EC`);
}

const spki = (publicKey: KeyObject): Buffer => publicKey.export({ type: 'spki', format: 'der' }) as Buffer;

/** Validity of a new key pair's certificate, as Kura: one year from now. */
const SELF_SIGNED_DAYS = 365;

/**
 * The self-signed certificate Kura gives a new key pair (X.509 v3, subject and issuer the given
 * DN, one year, a random positive serial of 16 octets as RFC 5280 §4.1.2.2 allows), DER.
 */
export function selfSignedCertificate(keys: { privateKey: KeyObject; publicKey: KeyObject }, signatureAlgorithmName: unknown, dnText: string, now = Date.now()): Buffer {
  const alg = signatureAlgorithm(signatureAlgorithmName, keys.privateKey);
  const name = dnFromText(dnText);
  const serial = nodeCrypto().randomBytes(16);
  serial[0] &= 0x7f;
  serial[0] |= 0x01;
  const notBefore = new Date(Math.floor(now / 1000) * 1000);
  const notAfter = new Date(notBefore.getTime() + SELF_SIGNED_DAYS * 86_400_000);
  const tbs = sequence(explicit(0, smallInteger(2)), unsignedInteger(serial), algorithmIdentifier(alg), name, sequence(time(notBefore), time(notAfter)), name, spki(keys.publicKey));
  return signed(tbs, alg, keys.privateKey);
}

/** A PKCS#10 certification request (RFC 2986 §4) for the key pair, PEM (`CERTIFICATE REQUEST`). */
export function certificationRequest(keys: { privateKey: KeyObject; publicKey: KeyObject }, signatureAlgorithmName: unknown, dnText: string): string {
  const alg = signatureAlgorithm(signatureAlgorithmName, keys.privateKey);
  // version 0, subject, subjectPKInfo, attributes [0] IMPLICIT SET OF Attribute (none).
  const info = sequence(smallInteger(0), dnFromText(dnText), spki(keys.publicKey), tlv(0xa0));
  return pemBlock('CERTIFICATE REQUEST', signed(info, alg, keys.privateKey));
}
