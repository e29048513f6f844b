// The keystore's leaf crypto (docs/rest-api.md "keystores/v1"), against real openssl: requests
// openssl verifies and reads back with the subject we wrote, self-signed certificates openssl
// accepts, certificates openssl makes read with the DTO fields Kura shows (RFC 2253 issuer, SANs as
// Java's pairs), and hostile PEM and DER (truncated, wrong lengths, deep nesting, huge, seeded
// mutations) refused with a clear error and nothing else thrown.

import t from 'tap';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DerError, MAX_DEPTH, readDer, sequence, tlv } from '../../src/keystores/der.js';
import { DnError, dnFromText, parseDn } from '../../src/keystores/dn.js';
import { PemError, parsePem, pemBlock } from '../../src/keystores/pem.js';
import { CertificateError, parseCertificate, parseCertificates } from '../../src/keystores/x509.js';
import { SigningError, certificationRequest, generateKeyPair, selfSignedCertificate } from '../../src/keystores/signing.js';
import { haveOpenssl } from '../helpers/certs.js';

const opensslSkip = haveOpenssl() || process.env.CI === 'true' ? {} : { skip: 'openssl not installed' };
const openssl = (args: string[], input?: string) => execFileSync('openssl', args, { input, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-ks-codec-'));
t.teardown(() => fs.rmSync(tmp, { recursive: true, force: true }));

t.test('CSRs verify in openssl with the subject written, for every algorithm offered', opensslSkip, async (t) => {
  const cases = [
    ['RSA', 2048, 'SHA256withRSA', 'sha256WithRSAEncryption'],
    ['RSA', 2048, 'SHA512withRSA', 'sha512WithRSAEncryption'],
    ['EC', 256, 'SHA256withECDSA', 'ecdsa-with-SHA256'],
    ['EC', 384, 'SHA384withECDSA', 'ecdsa-with-SHA384'],
    ['EC', 521, 'SHA512withECDSA', 'ecdsa-with-SHA512'],
  ] as const;
  for (const [algorithm, size, sig, opensslName] of cases) {
    const keys = await generateKeyPair({ algorithm, size });
    const csr = certificationRequest(keys, sig, 'CN=device-1\\, line 2, OU=Field+OU=North, O=Exämple, C=IT, DC=example, EMAILADDRESS=ops@example.com');
    t.match(csr, /^-----BEGIN CERTIFICATE REQUEST-----\n/);
    const out = openssl(['req', '-verify', '-noout', '-text', '-nameopt', 'RFC2253,-esc_msb'], csr);
    t.match(out, `Signature Algorithm: ${opensslName}`, `${sig}: algorithm`);
    // RFC 2253 text is most specific first, as Kura's text is written; openssl reverses
    // the members of a multi-valued RDN too (DER keeps them sorted: Field, North).
    t.match(out, 'Subject: CN=device-1\\, line 2,OU=North+OU=Field,O=Exämple,C=IT,DC=example,emailAddress=ops@example.com', `${sig}: subject`);
    t.match(out, `Public-Key: (${size} bit)`, `${sig}: key`);

    // The self-signed certificate of a new key pair: openssl verifies it against itself.
    const der = selfSignedCertificate(keys, sig, 'CN=device-1, O=Example, C=IT');
    const file = path.join(tmp, `${sig}.pem`);
    fs.writeFileSync(file, pemBlock('CERTIFICATE', der));
    t.match(openssl(['verify', '-CAfile', file, file]), ': OK');
    const text = openssl(['x509', '-in', file, '-noout', '-text', '-nameopt', 'RFC2253']);
    t.match(text, 'Version: 3 (0x2)');
    t.match(text, 'Subject: CN=device-1,O=Example,C=IT');
    const p = parseCertificate(der);
    t.equal(p.facts.algorithm, sig);
    t.equal(p.facts.size, size);
    t.equal(p.facts.keyAlgorithm, algorithm);
    t.equal(p.facts.subjectDN, 'CN=device-1, O=Example, C=IT');
    t.equal(p.facts.issuer, 'CN=device-1,O=Example,C=IT');
    // One year, as Kura's generateCertificateChain.
    t.equal(p.facts.expirationDate - p.facts.startDate, 365 * 86_400_000);
  }
});

t.test('certificates openssl makes read as Kura shows them', opensslSkip, async (t) => {
  const key = path.join(tmp, 'o.key');
  const crt = path.join(tmp, 'o.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', crt, '-days', '30', '-subj', '/C=DE/O=Acme, Inc./CN=broker.example', '-addext', 'subjectAltName=DNS:broker.example,IP:10.0.0.1,email:a@b.c', '-addext', 'basicConstraints=critical,CA:TRUE'], { stdio: 'ignore' });
  const [c] = parseCertificates(fs.readFileSync(crt, 'utf8'));
  t.same(c.facts.subjectAN, [[2, 'broker.example'], [7, '10.0.0.1'], [1, 'a@b.c']]);
  t.equal(c.facts.issuer, 'CN=broker.example,O=Acme\\, Inc.,C=DE');
  t.equal(c.facts.subjectDN, 'CN=broker.example, O="Acme, Inc.", C=DE');
  t.equal(c.facts.algorithm, 'SHA256withRSA');
  t.equal(c.facts.isCa, true);
  t.equal(c.facts.expirationDate, Date.parse(openssl(['x509', '-in', crt, '-noout', '-enddate']).split('=')[1]));
  t.equal(c.pem, fs.readFileSync(crt, 'utf8').trim(), 'PEM written back as it came, without the final line break (Kura)');
});

t.test('DN text: escapes, quotes, keywords and refusals', async (t) => {
  t.same(parseDn('CN="a, b", O=x\\+y ,C=IT'), [[{ oid: '2.5.4.3', value: 'a, b' }], [{ oid: '2.5.4.10', value: 'x+y' }], [{ oid: '2.5.4.6', value: 'IT' }]]);
  t.same(parseDn('cn=\\C3\\A9t\\C3\\A9'), [[{ oid: '2.5.4.3', value: 'été' }]], 'hex escapes are UTF-8 octets');
  t.same(parseDn('2.5.4.3=x;OID.2.5.4.10=y'), [[{ oid: '2.5.4.3', value: 'x' }], [{ oid: '2.5.4.10', value: 'y' }]]);
  for (const [bad, msg] of [
    ['', /empty/],
    ['CN', /keyword=value/],
    ['XX=1', /unknown attribute keyword "XX"/],
    ['CN=', /empty value/],
    ['C=Italy', /two-letter/],
    ['CN="open', /unterminated/],
    ['CN=a\\q', /bad escape/],
    ['CN=#0403', /not supported/],
    ['CN=' + 'x'.repeat(300), /longer than 256/],
    ['CN=a,'.repeat(300), /longer than 1024/],
    [Array.from({ length: 40 }, (_, i) => `OU=${i}`).join(','), /more than 32/],
    ['EMAILADDRESS=é@x', /ASCII/],
  ] as const) {
    t.throws(() => dnFromText(bad), msg, `refused: ${bad.slice(0, 30)}`);
    t.throws(() => dnFromText(bad), DnError);
  }
});

t.test('signing refusals name what is wrong', async (t) => {
  const ec = await generateKeyPair({ algorithm: 'EC', size: 256 });
  t.throws(() => certificationRequest(ec, 'SHA256withRSA', 'CN=x'), /needs an RSA key, the entry's key is EC/);
  t.throws(() => certificationRequest(ec, 'MD5withRSA', 'CN=x'), /unsupported signature algorithm "MD5withRSA": use one of SHA256withRSA/);
  await t.rejects(generateKeyPair({ algorithm: 'RSA', size: 1024 }), /RSA key size 1024 is not supported: use one of 2048, 3072, 4096/);
  await t.rejects(generateKeyPair({ algorithm: 'RSA', size: 4097 }), SigningError);
  await t.rejects(generateKeyPair({ algorithm: 'EC', size: 255 }), /EC key size 255 is not supported: use one of 256, 384, 521/);
  await t.rejects(generateKeyPair({ algorithm: 'DSA', size: 2048 }), /use RSA or EC/);
});

t.test('hostile PEM', async (t) => {
  const good = pemBlock('CERTIFICATE', Buffer.from([0x30, 0]));
  t.equal(parsePem(`explanatory text\n${good}trailer`).length, 1, 'text outside blocks is allowed (RFC 7468 §2)');
  for (const [text, msg] of [
    [good.replace('-----END CERTIFICATE-----', ''), /no END line/],
    [good.replace('END CERTIFICATE', 'END PRIVATE KEY'), /ends with "PRIVATE KEY"/],
    [good.replace('MAA=', 'M!A='), /not Base64/],
    [good.replace('MAA=', 'MAA'), /malformed Base64/],
    [good.replace('MAA=', 'Proc-Type: 4,ENCRYPTED\nMAA='), /unexpected text inside/],
    [good.repeat(17), /more than 16 PEM blocks/],
    ['-----BEGIN lower-----\nMAA=\n-----END lower-----\n', /unexpected PEM boundary/],
  ] as const) {
    t.throws(() => parsePem(text), msg);
    t.throws(() => parsePem(text), PemError);
  }
  t.throws(() => parseCertificates(pemBlock('PRIVATE KEY', Buffer.from([0x30, 0]))), /a "PRIVATE KEY" block where a certificate was expected/);
  t.throws(() => parseCertificates('no pem here'), /no PEM "CERTIFICATE" block/);
  t.throws(() => parseCertificates(good), CertificateError);
});

t.test('hostile DER: truncated, wrong lengths, deep nesting, huge', async (t) => {
  const cases: [Buffer, RegExp][] = [
    [Buffer.from([0x30]), /truncated element/],
    [Buffer.from([0x30, 0x05, 0x02, 0x01]), /runs past the end/],
    [Buffer.from([0x30, 0x80, 0, 0]), /indefinite length/],
    [Buffer.from([0x30, 0x85, 1, 1, 1, 1, 1]), /length of 5 octets/],
    [Buffer.from([0x30, 0x81, 0x05, 0, 0, 0, 0, 0]), /non-minimal length/],
    [Buffer.from([0x30, 0x82, 0xff]), /truncated length/],
    [Buffer.from([0x1f, 0x01, 0]), /high tag number/],
    [Buffer.from([0x30, 0x00, 0x00]), /1 bytes after the end/],
    [Buffer.from([0x30, 0x84, 0x7f, 0xff, 0xff, 0xff]), /runs past the end/],
  ];
  for (const [der, msg] of cases) t.throws(() => readDer(der), msg, der.toString('hex'));
  let deep = tlv(0x04);
  for (let i = 0; i < MAX_DEPTH + 2; i++) deep = sequence(deep);
  t.throws(() => readDer(deep), /nesting deeper than 32/);
  // 100,000 levels: refused by the length checks and the depth bound, not by the stack.
  let huge = Buffer.alloc(0);
  const levels = 100_000;
  const parts: Buffer[] = [];
  for (let i = 0; i < levels; i++) parts.push(Buffer.from([0x30, 0x84, 0, 0, 0, 0]));
  huge = Buffer.concat(parts);
  t.throws(() => readDer(huge), DerError);
  t.throws(() => parseCertificate(Buffer.alloc(2 * 1024 * 1024, 0x30)), CertificateError, 'two megabytes of garbage');
});

t.test('seeded fuzz: mutated certificates are parsed or refused with CertificateError, nothing else', opensslSkip, async (t) => {
  const keys = await generateKeyPair({ algorithm: 'EC', size: 256 });
  const base = selfSignedCertificate(keys, 'SHA256withECDSA', 'CN=fuzz, O=Example, C=IT');
  let seed = 0x5eed;
  const rnd = (n: number) => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed % n;
  };
  let refused = 0;
  let parsed = 0;
  for (let i = 0; i < 3000; i++) {
    const b = Buffer.from(base);
    const kind = rnd(3);
    if (kind === 0) for (let k = 0; k < 1 + rnd(4); k++) b[rnd(b.length)] = rnd(256);
    const input = kind === 1 ? b.subarray(0, rnd(b.length)) : kind === 2 ? Buffer.concat([b.subarray(0, rnd(b.length)), Buffer.from([rnd(256), rnd(256)]), b.subarray(rnd(b.length))]) : b;
    try {
      const c = parseCertificate(input);
      t.type(c.facts.subjectDN, 'string');
      parsed++;
    } catch (err) {
      if (!(err instanceof CertificateError)) t.fail(`mutation ${i}: ${(err as Error).constructor.name}: ${(err as Error).message}`);
      refused++;
    }
  }
  t.ok(refused > 1000, `refused ${refused}, parsed ${parsed}`);
});
