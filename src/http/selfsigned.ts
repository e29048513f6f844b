// A self-signed server certificate for a freshly provisioned device (docs/configuration.md "http"):
// HTTPS must work before an integrator installs a real keystore. Node cannot create certificates
// and the image may have no `openssl` binary, so the DER is assembled here (X.509 v3, ECDSA P-256
// with SHA-256).

import { nodeCrypto } from '../core/builtin.js';
import fs from 'node:fs';
import path from 'node:path';
import { writeFileAtomicSync } from '../store/atomic.js';

function len(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  while (n > 0) {
    bytes.unshift(n & 0xff);
    n >>= 8;
  }
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

function tlv(tag: number, ...content: Buffer[]): Buffer {
  const body = Buffer.concat(content);
  return Buffer.concat([Buffer.from([tag]), len(body.length), body]);
}

const seq = (...c: Buffer[]) => tlv(0x30, ...c);
const set = (...c: Buffer[]) => tlv(0x31, ...c);

function oid(dotted: string): Buffer {
  const parts = dotted.split('.').map(Number);
  const out = [parts[0] * 40 + parts[1]];
  for (const p of parts.slice(2)) {
    const enc = [p & 0x7f];
    let v = p >>> 7;
    while (v > 0) {
      enc.unshift(0x80 | (v & 0x7f));
      v >>>= 7;
    }
    out.push(...enc);
  }
  return tlv(0x06, Buffer.from(out));
}

function integer(buf: Buffer): Buffer {
  let b = buf;
  while (b.length > 1 && b[0] === 0 && b[1] < 0x80) b = b.subarray(1);
  if (b[0] >= 0x80) b = Buffer.concat([Buffer.from([0]), b]);
  return tlv(0x02, b);
}

function time(d: Date): Buffer {
  const iso = d.toISOString().replace(/[-:T]/g, '').slice(0, 14) + 'Z'; // YYYYMMDDHHMMSSZ
  return d.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(iso.slice(2))) : tlv(0x18, Buffer.from(iso));
}

function name(cn: string): Buffer {
  return seq(set(seq(oid('2.5.4.3'), tlv(0x0c, Buffer.from(cn, 'utf8')))));
}

export interface GeneratedCert {
  certPem: string;
  keyPem: string;
}

export function generateSelfSigned(commonName: string, days = 3650): GeneratedCert {
  const { privateKey, publicKey } = nodeCrypto().generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const sigAlg = seq(oid('1.2.840.10045.4.3.2'));
  const now = new Date(Date.now() - 60_000);
  const until = new Date(now.getTime() + days * 86_400_000);
  const san = seq(
    tlv(0x82, Buffer.from('localhost')),
    tlv(0x87, Buffer.from([127, 0, 0, 1])),
    tlv(0x87, Buffer.from('00000000000000000000000000000001', 'hex')),
  );
  const extensions = tlv(
    0xa3,
    seq(
      seq(oid('2.5.29.19'), tlv(0x01, Buffer.from([0xff])), tlv(0x04, seq())),
      seq(oid('2.5.29.17'), tlv(0x04, san)),
    ),
  );
  const tbs = seq(
    tlv(0xa0, integer(Buffer.from([2]))),
    integer(nodeCrypto().randomBytes(16)),
    sigAlg,
    name(commonName),
    seq(time(now), time(until)),
    name(commonName),
    publicKey.export({ type: 'spki', format: 'der' }) as Buffer,
    extensions,
  );
  const signature = nodeCrypto().sign('sha256', tbs, privateKey);
  const cert = seq(tbs, sigAlg, tlv(0x03, Buffer.from([0]), signature));
  const b64 = cert.toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '');
  return {
    certPem: `-----BEGIN CERTIFICATE-----\n${b64}\n-----END CERTIFICATE-----\n`,
    keyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
  };
}

/**
 * Returns the PEM pair in `<dataDir>/tls/`, generating it on first use. The key is written 0600
 * before the certificate, so a power cut never leaves a certificate without its key.
 */
export function ensureSelfSigned(dataDir: string): { cert: string; key: string; generated: boolean } {
  const dir = path.join(dataDir, 'tls');
  const certFile = path.join(dir, 'selfsigned-cert.pem');
  const keyFile = path.join(dir, 'selfsigned-key.pem');
  if (fs.existsSync(certFile) && fs.existsSync(keyFile)) {
    return { cert: fs.readFileSync(certFile, 'utf8'), key: fs.readFileSync(keyFile, 'utf8'), generated: false };
  }
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const g = generateSelfSigned('gatewayd');
  // Needed to start at all: may use the data partition's reserve (src/store/reserve.ts).
  writeFileAtomicSync(keyFile, g.keyPem, 0o600, { useReserve: true });
  writeFileAtomicSync(certFile, g.certPem, 0o644, { useReserve: true });
  return { cert: g.certPem, key: g.keyPem, generated: true };
}
