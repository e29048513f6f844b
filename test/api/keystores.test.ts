// keystores/v1 over REST (docs/rest-api.md "keystores/v1"), through the real daemon and real
// openssl: a key pair made on the device, its CSR verified and signed by an openssl CA, the chain
// installed and checked by `openssl verify`, a CA certificate added, Kura's DTO shapes, entries
// kept across a restart, hostile input refused with clear messages, a limited role refused, and
// the private key in no reply and no log line.

import t from 'tap';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startDaemon, type Response } from '../helpers/daemon.js';
import { haveOpenssl, makePki } from '../helpers/certs.js';

const opensslSkip = haveOpenssl() || process.env.CI === 'true' ? {} : { skip: 'openssl not installed' };
const basic = (u: string, p: string) => ({ authorization: `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}` });
const ADMIN = basic('admin', 'Adm1n-Secret!');
const KS = basic('ks', 'Keyst0re-Secret!');
const VIEWER = basic('viewer', 'V1ewer-Secret!');
const BASE = '/services/keystores/v1';

const config = {
  rest: { 'auth.basic.enabled': true, 'login.throttle.max.delay': 0 },
  identities: {
    admin: { password: 'Adm1n-Secret!', passwordChangeNeeded: false, permissions: ['kura.admin'] },
    ks: { password: 'Keyst0re-Secret!', passwordChangeNeeded: false, permissions: ['rest.keystores'] },
    viewer: { password: 'V1ewer-Secret!', passwordChangeNeeded: false, permissions: ['rest.assets'] },
  },
};

function sign(pki: ReturnType<typeof makePki>, csrPem: string, name: string): string {
  const csr = path.join(pki.dir, `${name}.csr`);
  const out = path.join(pki.dir, `${name}.pem`);
  fs.writeFileSync(csr, csrPem);
  execFileSync('openssl', ['x509', '-req', '-in', csr, '-CA', pki.caCert, '-CAkey', pki.caKey, '-CAcreateserial', '-out', out, '-days', '30'], { stdio: 'ignore' });
  return fs.readFileSync(out, 'utf8');
}

t.test('keystores/v1: key pair, CSR, chain from a CA, trusted certificate, delete', opensslSkip, async (t) => {
  const pki = makePki();
  t.teardown(() => fs.rmSync(pki.dir, { recursive: true, force: true }));
  const d = await startDaemon(t, config);
  const replies: Response[] = [];
  const call = async (method: string, p: string, body?: object | string, who = KS) => {
    const r = await d.request(`${BASE}${p}`, { method, headers: { ...who, ...(typeof body === 'string' ? { 'content-type': 'application/json' } : {}) }, body });
    replies.push(r);
    return r;
  };

  let r = await call('GET', '');
  t.equal(r.status, 200);
  t.same(r.json(), [
    { keystoreServicePid: 'HttpsKeystore', type: 'PEM', size: 0 },
    { keystoreServicePid: 'SSLKeystore', type: 'PEM', size: 0 },
  ]);

  // A key pair (Kapua's "Keystore Keypair Create" body), made on the device.
  r = await call('POST', '/entries/keypair', { keystoreServicePid: 'SSLKeystore', alias: 'device', algorithm: 'EC', size: 256, signatureAlgorithm: 'SHA256withECDSA', attributes: 'CN=gw-17, O=Example, C=IT' });
  t.equal(r.status, 204, r.body);
  const file = path.join(d.dataDir, 'keystores', 'SSLKeystore', 'device.pem');
  t.equal(fs.statSync(file).mode & 0o777, 0o600, 'the key file is 0600');
  const keyB64 = fs.readFileSync(file, 'utf8').split('-----END PRIVATE KEY-----')[0].split('\n').filter((l) => /^[A-Za-z0-9+/=]{20,}$/.test(l));
  t.ok(keyB64.length > 0);

  r = await call('GET', '/entries/entry?keystoreServicePid=SSLKeystore&alias=device');
  t.equal(r.status, 200);
  const e = r.json();
  t.match(e, { keystoreServicePid: 'SSLKeystore', alias: 'device', type: 'PRIVATE_KEY', algorithm: 'EC', size: 256, subjectDN: 'CN=gw-17, O=Example, C=IT', issuer: 'CN=gw-17,O=Example,C=IT' });
  t.equal(e.certificateChain.length, 1);
  t.equal(e.expirationDate - e.startDate, 365 * 86_400_000);

  // Its CSR, verified by openssl, signed by the openssl CA.
  r = await call('POST', '/entries/csr', { keystoreServicePid: 'SSLKeystore', alias: 'device', signatureAlgorithm: 'SHA256withECDSA', attributes: 'CN=gw-17, OU=Field, O=Example, C=IT' });
  t.equal(r.status, 200, r.body);
  const csr = r.json().signingRequest as string;
  t.match(execFileSync('openssl', ['req', '-verify', '-noout', '-subject', '-nameopt', 'RFC2253'], { input: csr, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] }), 'subject=CN=gw-17,OU=Field,O=Example,C=IT');
  const leaf = sign(pki, csr, 'device');
  const ca = fs.readFileSync(pki.caCert, 'utf8');

  // A chain whose leaf is another key's, and a chain out of order: refused, the entry unchanged.
  const other = sign(pki, fs.readFileSync(path.join(pki.dir, 'server.csr'), 'utf8'), 'other');
  r = await call('POST', '/entries/privatekey', { keystoreServicePid: 'SSLKeystore', alias: 'device', certificateChain: [other, ca] });
  t.equal(r.status, 400);
  t.match(r.json().message, /the first certificate \(CN=localhost\) does not certify the key of entry device/);
  r = await call('POST', '/entries/privatekey', { keystoreServicePid: 'SSLKeystore', alias: 'device', certificateChain: [leaf, leaf] });
  t.equal(r.status, 400);
  t.match(r.json().message, /certificate 2 \(CN=gw-17, OU=Field, O=Example, C=IT\) did not issue certificate 1/);
  r = await call('POST', '/entries/privatekey', { keystoreServicePid: 'SSLKeystore', alias: 'device', certificateChain: [leaf, ca], privateKey: '-----BEGIN PRIVATE KEY-----\nMAA=\n-----END PRIVATE KEY-----' });
  t.equal(r.status, 400);
  t.match(r.json().message, /importing a private key is not supported/);

  r = await call('POST', '/entries/privatekey', { keystoreServicePid: 'SSLKeystore', alias: 'device', certificateChain: [leaf, ca] });
  t.equal(r.status, 204, r.body);
  r = await call('GET', '/entries/entry?keystoreServicePid=SSLKeystore&alias=device');
  const installed = r.json();
  t.equal(installed.issuer, 'CN=ca');
  t.equal(installed.certificateChain.length, 2);
  const chainFile = path.join(pki.dir, 'chain-back.pem');
  fs.writeFileSync(chainFile, installed.certificateChain[0] + '\n');
  t.match(execFileSync('openssl', ['verify', '-CAfile', pki.caCert, chainFile], { encoding: 'utf8' }), ': OK', 'openssl verifies the installed leaf against the CA');

  // The CA as a trusted certificate entry (Kapua's "Keystore Certificate Create").
  r = await call('POST', '/entries/certificate', { keystoreServicePid: 'SSLKeystore', alias: 'fleet-ca', certificate: ca });
  t.equal(r.status, 204, r.body);
  t.equal(fs.statSync(path.join(d.dataDir, 'keystores', 'SSLKeystore', 'fleet-ca.pem')).mode & 0o777, 0o644);
  r = await call('GET', '/entries?keystoreServicePid=SSLKeystore');
  const list = r.json();
  t.same(list.map((x: any) => [x.alias, x.type]).sort(), [['device', 'PRIVATE_KEY'], ['fleet-ca', 'TRUSTED_CERTIFICATE']]);
  const caEntry = list.find((x: any) => x.alias === 'fleet-ca');
  t.match(caEntry, { subjectDN: 'CN=ca', issuer: 'CN=ca', algorithm: 'SHA256withECDSA', size: 256 });
  t.equal(caEntry.certificate, ca.trim());
  r = await call('GET', '/entries');
  t.ok(r.json().every((x: any) => x.certificate === undefined && x.certificateChain === undefined), 'the whole list carries no certificates (Kura)');
  r = await call('GET', '/entries?alias=fleet-ca');
  t.same(r.json().map((x: any) => x.keystoreServicePid), ['SSLKeystore']);
  r = await call('GET', '');
  t.same(r.json().map((x: any) => x.size), [0, 2]);

  // Hostile and incomplete input: clear 4xx answers, nothing written.
  const refusals: [string, string, object | string, number, RegExp][] = [
    ['POST', '/entries/certificate', { keystoreServicePid: 'SSLKeystore', alias: 'x', certificate: 'garbage' }, 400, /no PEM "CERTIFICATE" block/],
    ['POST', '/entries/certificate', { keystoreServicePid: 'SSLKeystore', alias: 'x', certificate: '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----' }, 400, /certificate: not a DER certificate/],
    ['POST', '/entries/certificate', { keystoreServicePid: 'SSLKeystore', alias: 'x', certificate: ca + ca }, 400, /2 certificates given/],
    ['POST', '/entries/certificate', { keystoreServicePid: 'SSLKeystore', alias: '../etc', certificate: ca }, 400, /alias "\.\.\/etc" is not allowed/],
    ['POST', '/entries/certificate', { keystoreServicePid: 'NoSuch', alias: 'x', certificate: ca }, 404, /keystore "NoSuch" not found/],
    ['POST', '/entries/certificate', { keystoreServicePid: 'SSLKeystore', alias: 'x' }, 400, /expected request format/],
    ['POST', '/entries/certificate', { keystoreServicePid: 'SSLKeystore', alias: 'x', certificate: 'A'.repeat(70_000) }, 400, /longer than 65536 characters/],
    ['POST', '/entries/certificate', '{"keystoreServicePid": "SSLKeystore",', 400, /./],
    ['POST', '/entries/keypair', { keystoreServicePid: 'SSLKeystore', alias: 'k', algorithm: 'RSA', size: 1024, signatureAlgorithm: 'SHA256withRSA', attributes: 'CN=x' }, 400, /RSA key size 1024 is not supported/],
    ['POST', '/entries/keypair', { keystoreServicePid: 'SSLKeystore', alias: 'k', algorithm: 'EC', size: 256, signatureAlgorithm: 'SHA256withRSA', attributes: 'CN=x' }, 400, /needs an RSA key/],
    ['POST', '/entries/keypair', { keystoreServicePid: 'SSLKeystore', alias: 'k', algorithm: 'EC', size: 256, signatureAlgorithm: 'SHA256withECDSA', attributes: 'CN' }, 400, /expected keyword=value/],
    ['POST', '/entries/csr', { keystoreServicePid: 'SSLKeystore', alias: 'fleet-ca', signatureAlgorithm: 'SHA256withECDSA', attributes: 'CN=x' }, 400, /needs a private key entry/],
    ['POST', '/entries/csr', { keystoreServicePid: 'SSLKeystore', alias: 'nope', signatureAlgorithm: 'SHA256withECDSA', attributes: 'CN=x' }, 404, /entry "nope" not found/],
    ['GET', '/entries/entry?keystoreServicePid=SSLKeystore', undefined as never, 400, /expected request format/],
    ['GET', '/entries?keystoreServicePid=Other', undefined as never, 404, /not found/],
  ];
  for (const [method, p, body, status, msg] of refusals) {
    r = await call(method, p, body);
    t.equal(r.status, status, `${method} ${p} ${JSON.stringify(body)?.slice(0, 60)}`);
    t.match(r.json().message, msg);
  }
  r = await d.request(`${BASE}/entries/certificate`, { method: 'POST', headers: { ...KS, 'content-type': 'application/json' }, body: Buffer.alloc(3 * 1024 * 1024, 0x20) });
  t.equal(r.status, 413, 'a body past the bound');
  t.same(fs.readdirSync(path.join(d.dataDir, 'keystores', 'SSLKeystore')).sort(), ['device.pem', 'fleet-ca.pem'], 'nothing else written');

  // A role without rest.keystores is refused everywhere, reading or writing.
  for (const [method, p, body] of [['GET', ''], ['GET', '/entries'], ['POST', '/entries/csr', { keystoreServicePid: 'SSLKeystore', alias: 'device', signatureAlgorithm: 'SHA256withECDSA', attributes: 'CN=x' }], ['DELETE', '/entries', { keystoreServicePid: 'SSLKeystore', alias: 'device' }]] as const) {
    r = await call(method, p, body as object | undefined, VIEWER);
    t.equal(r.status, 403, `viewer ${method} ${p}`);
  }
  r = await d.request(`${BASE}/entries`);
  t.equal(r.status, 401, 'anonymous');
  // A page on another origin, with the administrator's credentials: refused before anything happens.
  r = await d.request(`${BASE}/entries`, { method: 'DELETE', headers: { ...ADMIN, origin: 'https://evil.example', 'content-type': 'application/json' }, body: JSON.stringify({ keystoreServicePid: 'SSLKeystore', alias: 'fleet-ca' }) });
  t.equal(r.status, 403);
  t.equal(r.json().message, 'Cross-site request refused');
  t.ok(fs.existsSync(path.join(d.dataDir, 'keystores', 'SSLKeystore', 'fleet-ca.pem')), 'nothing deleted');

  // Survives a restart; then delete.
  await d.stop();
  const d2 = await startDaemon(t, config, { dir: d.dir });
  t.teardown(() => d2.stop());
  r = await d2.request(`${BASE}/entries/entry?keystoreServicePid=SSLKeystore&alias=device`, { headers: ADMIN });
  replies.push(r);
  t.same(r.json(), installed, 'the entry is the same after a restart');
  r = await d2.request(`${BASE}/entries`, { method: 'DELETE', headers: ADMIN, body: { keystoreServicePid: 'SSLKeystore', alias: 'device' } });
  t.equal(r.status, 204);
  t.notOk(fs.existsSync(file), 'the file is gone');
  r = await d2.request(`${BASE}/entries/entry?keystoreServicePid=SSLKeystore&alias=device`, { headers: ADMIN });
  t.equal(r.status, 404);
  r = await d2.request(`${BASE}/entries`, { method: 'DELETE', headers: ADMIN, body: { keystoreServicePid: 'SSLKeystore', alias: 'device' } });
  t.equal(r.status, 404, 'deleting it again');

  // The private key is in no reply and no log line.
  const seen = [...replies.map((x) => x.body), ...d.logs, ...d2.logs].join('\n');
  t.notMatch(seen, /PRIVATE KEY/);
  for (const line of keyB64) t.notOk(seen.includes(line), 'no line of the key');
  t.match(d.logs.join('\n'), /msg="keystore entry written" component=keystores keystore=SSLKeystore alias=device type=PRIVATE_KEY/);
});

t.test('keystores/v1 bounds under parallel clients: 64 entries, 64-character aliases, 10-certificate chains', opensslSkip, async (t) => {
  const pki = makePki();
  t.teardown(() => fs.rmSync(pki.dir, { recursive: true, force: true }));
  const d = await startDaemon(t, config);
  const ca = fs.readFileSync(pki.caCert, 'utf8');
  const add = (alias: string, who = KS) => d.request(`${BASE}/entries/certificate`, { method: 'POST', headers: who, body: { keystoreServicePid: 'HttpsKeystore', alias, certificate: ca } });

  // The longest alias, and one past it.
  t.equal((await add('a'.repeat(64))).status, 204, '64 characters');
  const long = await add('a'.repeat(65));
  t.equal(long.status, 400, '65 characters');
  t.match(long.json().message, /1 to 64 letters/);

  // 63 more from two identities at once, some aliases sent twice (a replacement, not a new entry).
  const aliases = Array.from({ length: 63 }, (_, i) => `ca-${i}`);
  const results = await Promise.all([...aliases, 'ca-1', 'ca-2', 'ca-3'].map((a, i) => add(a, i % 2 ? KS : ADMIN)));
  t.same([...new Set(results.map((r) => r.status))], [204], 'every write answered 204');
  const info = (await d.request(BASE, { headers: KS })).json();
  t.same(info.find((k: any) => k.keystoreServicePid === 'HttpsKeystore'), { keystoreServicePid: 'HttpsKeystore', type: 'PEM', size: 64 }, 'the most a keystore holds');
  const past = await add('one-too-many');
  t.equal(past.status, 400);
  t.equal(past.json().message, 'keystore HttpsKeystore holds 64 entries, the most it may: delete one first');
  t.equal((await add('ca-5')).status, 204, 'replacing an entry of a full keystore is allowed');
  t.equal(fs.readdirSync(path.join(d.dataDir, 'keystores', 'HttpsKeystore')).filter((f) => f.endsWith('.pem')).length, 64, '64 files, no temporary file left');
  t.equal(fs.readdirSync(path.join(d.dataDir, 'keystores', 'HttpsKeystore')).length, 64);

  // Chains: 10 certificates is the bound, 11 is refused before anything is checked.
  let r = await d.request(`${BASE}/entries/keypair`, { method: 'POST', headers: KS, body: { keystoreServicePid: 'SSLKeystore', alias: 'k', algorithm: 'EC', size: 256, signatureAlgorithm: 'SHA256withECDSA', attributes: 'CN=k' } });
  t.equal(r.status, 204);
  r = await d.request(`${BASE}/entries/privatekey`, { method: 'POST', headers: KS, body: { keystoreServicePid: 'SSLKeystore', alias: 'k', certificateChain: Array(11).fill(ca) } });
  t.equal(r.status, 400);
  t.match(r.json().message, /1 to 10 PEM certificates are required/);
  r = await d.request(`${BASE}/entries/privatekey`, { method: 'POST', headers: KS, body: { keystoreServicePid: 'SSLKeystore', alias: 'k', certificateChain: Array(10).fill(ca) } });
  t.equal(r.status, 400);
  t.match(r.json().message, /does not certify the key of entry k/, '10 are read, then checked');

  // Parallel key pair generation on one alias: one entry, whose certificate is one of them.
  const gen = await Promise.all(['CN=one', 'CN=two', 'CN=three'].map((dn) => d.request(`${BASE}/entries/keypair`, { method: 'POST', headers: KS, body: { keystoreServicePid: 'SSLKeystore', alias: 'k', algorithm: 'EC', size: 256, signatureAlgorithm: 'SHA256withECDSA', attributes: dn } })));
  t.same(gen.map((x) => x.status), [204, 204, 204]);
  const e = (await d.request(`${BASE}/entries/entry?keystoreServicePid=SSLKeystore&alias=k`, { headers: KS })).json();
  t.ok(['CN=one', 'CN=two', 'CN=three'].includes(e.subjectDN), e.subjectDN);
  const text = fs.readFileSync(path.join(d.dataDir, 'keystores', 'SSLKeystore', 'k.pem'), 'utf8');
  t.equal(text.match(/BEGIN PRIVATE KEY/g)?.length, 1, 'one key in the file');
  t.match(execFileSync('openssl', ['x509', '-noout', '-subject', '-nameopt', 'RFC2253'], { input: text, encoding: 'utf8' }), `subject=${e.subjectDN.replace(', ', ',')}`);
  t.match(execFileSync('openssl', ['pkey', '-noout', '-text'], { input: text, encoding: 'utf8' }), /Private-Key: \(256 bit/, 'openssl reads the key file');
});

