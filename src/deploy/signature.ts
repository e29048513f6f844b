// Optional package signatures (gatewayd's own format; Kura has none over REST).
//
// When `deploy.trust.anchors` lists public keys, a package must carry `META-INF/GATEWAYD.SIG`: the
// base64 signature, by the private key of one anchor, over this text (UTF-8, `\n` line ends):
//
//     gatewayd-dp-signature-v1
//     <sha256 hex>  <path>          one line per file entry (not folders, not GATEWAYD.SIG itself),
//     ...                           sorted by the bytes of the path: the format of `sha256sum`
//
// Ed25519/Ed448 keys sign the text directly; EC and RSA keys sign its SHA-256. With openssl:
//
//     (echo gatewayd-dp-signature-v1; cd pkg && find . -type f ! -path ./META-INF/GATEWAYD.SIG \
//        | sed 's|^\./||' | LC_ALL=C sort | xargs -d '\n' sha256sum) > signed.txt
//     openssl pkeyutl -sign -inkey ed25519.pem -rawin -in signed.txt | base64 -w0 > pkg/META-INF/GATEWAYD.SIG
//
// Every file is covered, the manifest included, so nothing can be added, removed or changed.

import type { KeyObject } from 'node:crypto';
import { nodeCrypto } from '../core/builtin.js';
import fs from 'node:fs';
import type { ArchiveCheck } from './store.js';
import type { DeployConfig } from './config.js';
import { PackageError } from './store.js';

export const SIGNATURE_PATH = 'META-INF/GATEWAYD.SIG';
const HEADER = 'gatewayd-dp-signature-v1\n';

/** The signed text for a package's files, given their SHA-256 digests (hex). */
export function signedTextOfDigests(files: { name: string; sha256: string }[]): Buffer {
  const lines = files
    .filter((f) => !f.name.endsWith('/') && f.name !== SIGNATURE_PATH)
    .sort((a, b) => Buffer.compare(Buffer.from(a.name), Buffer.from(b.name)))
    .map((f) => `${f.sha256}  ${f.name}\n`);
  return Buffer.from(HEADER + lines.join(''), 'utf8');
}

/** The signed text for a package's files. */
export function signedText(files: { name: string; data: Buffer }[]): Buffer {
  return signedTextOfDigests(files.map((f) => ({ name: f.name, sha256: nodeCrypto().createHash('sha256').update(f.data).digest('hex') })));
}

function digestFor(key: KeyObject): string | null {
  const t = key.asymmetricKeyType;
  return t === 'ed25519' || t === 'ed448' ? null : 'sha256';
}

/** Loads the anchors (PEM text or the path of a PEM file); unreadable ones are reported. */
export function loadTrustAnchors(anchors: string[]): { keys: KeyObject[]; errors: string[] } {
  const keys: KeyObject[] = [];
  const errors: string[] = [];
  anchors.forEach((a, i) => {
    try {
      const pem = a.startsWith('-----BEGIN ') ? a : fs.readFileSync(a, 'utf8');
      keys.push(nodeCrypto().createPublicKey(pem));
    } catch (err) {
      errors.push(`deploy.trust.anchors[${i}]: ${(err as Error).message}`);
    }
  });
  return { keys, errors };
}

/**
 * `deploy.unsigned.allowed: false` without trust anchors: no signature can be verified, so every
 * package is refused, and the message says which key to set (docs/installation.md).
 */
export const refuseUnsigned: ArchiveCheck = async () => {
  throw new PackageError('unsigned packages are refused (deploy.unsigned.allowed is false) and deploy.trust.anchors has no key to verify a signature with');
};

/**
 * The check a `deploy` section asks for: signatures by its trust anchors, else every package refused
 * when `unsigned.allowed` is false, else none. Anchor files are read at each check, so a replaced
 * file counts from the next install on.
 */
export function archiveCheckOf(config: Pick<DeployConfig, 'trust.anchors' | 'unsigned.allowed'>): ArchiveCheck | undefined {
  const anchors = config['trust.anchors'];
  if (anchors.length > 0) return (zip, manifest) => signatureCheck(anchors)(zip, manifest);
  return config['unsigned.allowed'] ? undefined : refuseUnsigned;
}

/** A store check refusing packages without a valid signature by one of `anchors`. */
export function signatureCheck(anchors: string[]): ArchiveCheck {
  const { keys, errors } = loadTrustAnchors(anchors);
  return async (zip) => {
    // Fail closed: a configured but unreadable anchor must not turn the check off.
    if (errors.length > 0) throw new PackageError(`trust anchors unusable: ${errors.join('; ')}`);
    const sigEntry = zip.get(SIGNATURE_PATH);
    if (!sigEntry) throw new PackageError(`package is not signed (${SIGNATURE_PATH} is missing) and deploy.trust.anchors is set`);
    const sig = Buffer.from((await zip.read(sigEntry)).toString('ascii').trim(), 'base64');
    const files: { name: string; sha256: string }[] = [];
    for (const e of zip.entries) {
      if (e.isDirectory || e.name === SIGNATURE_PATH) continue;
      const hash = nodeCrypto().createHash('sha256');
      for await (const chunk of zip.chunks(e)) hash.update(chunk);
      files.push({ name: e.name, sha256: hash.digest('hex') });
    }
    const text = signedTextOfDigests(files);
    const ok = keys.some((k) => {
      try {
        return nodeCrypto().verify(digestFor(k), text, k, sig);
      } catch {
        return false;
      }
    });
    if (!ok) throw new PackageError('package signature does not verify with any key of deploy.trust.anchors');
    return { signed: true };
  };
}
