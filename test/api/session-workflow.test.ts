// The session workflow of docs/rest-api.md "session/v1" with curl over HTTPS (login, token, resource, password
// change, re-login, logout) and with a client certificate, exactly as a user would type it.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startDaemon } from '../helpers/daemon.js';
import { haveOpenssl, makePki } from '../helpers/certs.js';

function haveCurl(): boolean {
  try {
    execFileSync('curl', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const missing = !haveCurl() ? 'curl missing' : !haveOpenssl() ? 'openssl missing' : '';
if (missing && process.env.CI === 'true') t.fail(`${missing} (required under CI)`);

t.test('the session workflow with curl', { skip: missing || false }, async (t) => {
  const pki = makePki();
  t.teardown(() => fs.rmSync(pki.dir, { recursive: true, force: true }));
  const d = await startDaemon(t, {
    http: { 'https.keystore.cert': pki.serverCert, 'https.keystore.key': pki.serverKey, 'https.truststore': pki.caCert },
    identities: {
      operator: { password: 'factory1', permissions: ['rest.assets'], passwordChangeNeeded: true },
      device: { permissions: ['rest.assets'] },
    },
  }, { http: 0, https: 1, clientAuth: 1 });
  const jar = path.join(d.dir, 'cookies.txt');
  const base = `https://localhost:${d.ports.https[0]}/services`;
  // Runs curl; returns the status code and body.
  const curl = (args: string[]) => {
    const out = execFileSync('curl', ['-s', '--cacert', pki.caCert, '-b', jar, '-c', jar, '-w', '\n%{http_code}', ...args], { encoding: 'utf8' });
    const i = out.lastIndexOf('\n');
    return { body: out.slice(0, i), status: Number(out.slice(i + 1)) };
  };
  const token = () => JSON.parse(curl([`${base}/session/v1/xsrfToken`]).body).xsrfToken as string;

  // 1. no session yet
  t.equal(curl([`${base}/session/v1/xsrfToken`]).status, 401);
  // 2. login: the identity must change its password
  const l = curl(['-H', 'Content-Type: application/json', '-d', '{"username":"operator","password":"factory1"}', `${base}/session/v1/login/password`]);
  t.equal(l.status, 200);
  t.same(JSON.parse(l.body), { passwordChangeNeeded: true });
  t.match(fs.readFileSync(jar, 'utf8'), /#HttpOnly_localhost\tFALSE\t\/\tTRUE\t0\tJSESSIONID\t/, 'HttpOnly, Secure session cookie in the jar');
  // password update workflow
  let tok = token();
  t.equal(curl(['-H', `X-XSRF-Token: ${tok}`, `${base}/assets`]).status, 401, 'locked until the password is changed');
  const c = curl(['-H', `X-XSRF-Token: ${tok}`, '-H', 'Content-Type: application/json', '-d', '{"currentPassword":"factory1","newPassword":"s3cret-pass"}', `${base}/session/v1/changePassword`]);
  t.equal(c.status, 204);
  // then the login workflow again
  t.equal(curl([`${base}/session/v1/xsrfToken`]).status, 401, 'a new login is required');
  const l2 = curl(['-H', 'Content-Type: application/json', '-d', '{"username":"operator","password":"s3cret-pass"}', `${base}/session/v1/login/password`]);
  t.same(JSON.parse(l2.body), { passwordChangeNeeded: false });
  tok = token();
  // 4. resources with the token
  const a = curl(['-H', `X-XSRF-Token: ${tok}`, `${base}/assets`]);
  t.equal(a.status, 200);
  t.ok(Array.isArray(JSON.parse(a.body)));
  t.equal(curl([`${base}/assets`]).status, 401, 'without the token');
  t.equal(curl(['-H', `X-XSRF-Token: ${tok}`, '-X', 'POST', `${base}/session/v1/logout`]).status, 204);
  t.equal(curl(['-H', `X-XSRF-Token: ${tok}`, `${base}/assets`]).status, 401, 'logged out');

  // With a client certificate: stateless, and a certificate session.
  const cert = pki.client('device');
  const cbase = `https://localhost:${d.ports.clientAuth[0]}/services`;
  const withCert = ['--cert', cert.cert, '--key', cert.key];
  t.equal(curl([...withCert, `${cbase}/assets`]).status, 200, 'stateless certificate');
  fs.rmSync(jar, { force: true });
  t.equal(curl([...withCert, '-X', 'POST', `${cbase}/session/v1/login/certificate`]).status, 200);
  const ctok = JSON.parse(curl([...withCert, `${cbase}/session/v1/xsrfToken`]).body).xsrfToken;
  t.equal(curl(['-H', `X-XSRF-Token: ${ctok}`, `${base}/assets`]).status, 200, 'the certificate session works on the HTTPS port');
  t.equal(curl(['-H', `X-XSRF-Token: ${ctok}`, `${base}/session/v1/currentIdentity`]).body, '{"name":"device","passwordChangeNeeded":false,"permissions":["rest.assets"]}');
});
