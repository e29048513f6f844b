// Test PKI generated with openssl: a CA, a server certificate for 127.0.0.1/localhost, and client
// certificates whose CN is an identity name. Nothing here is committed; each run makes its own.

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';

export interface Pki {
  dir: string;
  caCert: string;
  caKey: string;
  serverCert: string;
  serverKey: string;
  /** Creates (once) a client certificate with this CN signed by the CA (or by `otherCa`). */
  client(cn: string, opts?: { untrusted?: boolean }): { cert: string; key: string };
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

function makeCa(dir: string, name: string): { cert: string; key: string } {
  const key = path.join(dir, `${name}.key`);
  const cert = path.join(dir, `${name}.pem`);
  openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', cert, '-days', '2', '-subj', `/CN=${name}`], dir);
  return { cert, key };
}

function sign(dir: string, ca: { cert: string; key: string }, name: string, cn: string, ext: string): { cert: string; key: string } {
  const key = path.join(dir, `${name}.key`);
  const csr = path.join(dir, `${name}.csr`);
  const cert = path.join(dir, `${name}.pem`);
  const extFile = path.join(dir, `${name}.ext`);
  fs.writeFileSync(extFile, ext);
  openssl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', csr, '-subj', `/CN=${cn}`], dir);
  openssl(['x509', '-req', '-in', csr, '-CA', ca.cert, '-CAkey', ca.key, '-CAcreateserial', '-out', cert, '-days', '2', '-extfile', extFile], dir);
  return { cert, key };
}

export function makePki(dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-pki-'))): Pki {
  const ca = makeCa(dir, 'ca');
  const server = sign(dir, ca, 'server', 'localhost', 'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1\nextendedKeyUsage=serverAuth\n');
  let other: { cert: string; key: string } | undefined;
  const clients = new Map<string, { cert: string; key: string }>();
  return {
    dir,
    caCert: ca.cert,
    caKey: ca.key,
    serverCert: server.cert,
    serverKey: server.key,
    client(cn, opts = {}) {
      const k = `${opts.untrusted ? 'x-' : ''}${cn}`;
      let c = clients.get(k);
      if (!c) {
        const signer = opts.untrusted ? (other ??= makeCa(dir, 'other-ca')) : ca;
        c = sign(dir, signer, `client-${k.replace(/[^A-Za-z0-9_.-]/g, '_')}`, cn, 'extendedKeyUsage=clientAuth\n');
        clients.set(k, c);
      }
      return c;
    },
  };
}

export function haveOpenssl(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * Writes a CRL signed by the test CA that revokes the given client certificates (PEM files) to
 * `file`, with openssl's `ca` command and a throwaway database in the PKI folder.
 */
export function writeCrl(pki: Pki, revoked: string[], file: string): void {
  const db = fs.mkdtempSync(path.join(pki.dir, 'crl-db-'));
  const cnf = path.join(db, 'ca.cnf');
  fs.writeFileSync(path.join(db, 'index.txt'), '');
  fs.writeFileSync(path.join(db, 'crlnumber'), '01\n');
  fs.writeFileSync(cnf, `[ca]\ndefault_ca = test\n[test]\ndatabase = ${db}/index.txt\ncrlnumber = ${db}/crlnumber\ndefault_md = sha256\ndefault_crl_days = 2\n`);
  const ca = ['-config', cnf, '-keyfile', pki.caKey, '-cert', pki.caCert];
  for (const cert of revoked) openssl(['ca', ...ca, '-revoke', cert], db);
  openssl(['ca', ...ca, '-gencrl', '-out', file], db);
}

/** Whether a client-auth listener completes a handshake with this client certificate. */
export function clientHandshake(port: number, c: { cert: string; key: string }): Promise<boolean> {
  return new Promise((resolve) => {
    const s = tls.connect({ host: '127.0.0.1', port, servername: 'localhost', cert: fs.readFileSync(c.cert), key: fs.readFileSync(c.key), rejectUnauthorized: false });
    // TLS 1.3 reports the server's refusal of a client certificate after the handshake, on the first read.
    s.once('secureConnect', () => s.write('GET / HTTP/1.1\r\nHost: localhost\r\n\r\n'));
    s.once('data', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
    s.once('close', () => resolve(false));
  });
}
