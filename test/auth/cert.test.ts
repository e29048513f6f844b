// Client certificates and allowed ports (Kura RestServiceTest 13, 14, 18, 19, 32, 34, 36;
// docs/rest-api.md "Authentication", docs/configuration.md "`rest`: authentication and sessions"), with a CA, server and client certificates made by openssl for the test.
import t from 'tap';
import fs from 'node:fs';
import { startDaemon, type Daemon } from '../helpers/daemon.js';
import { Browser, certificateLogin } from '../helpers/session-client.js';
import { haveOpenssl, makePki, type Pki } from '../helpers/certs.js';

const S = '/services/session/v1';
const ASSETS = '/services/assets';

if (!haveOpenssl()) {
  if (process.env.CI === 'true') t.fail('openssl is required under CI');
  else t.test('client certificates', { skip: 'openssl missing' }, async () => {});
} else {
  const pki: Pki = makePki();
  t.teardown(() => fs.rmSync(pki.dir, { recursive: true, force: true }));
  const tls = { 'https.keystore.cert': pki.serverCert, 'https.keystore.key': pki.serverKey, 'https.truststore': pki.caCert };
  const identities = {
    foo: { permissions: ['rest.assets'] }, // certificate-only, as Kura's test identity
    flagged: { password: 'bar', permissions: ['rest.assets'], passwordChangeNeeded: true },
    noperm: { permissions: [] },
  };
  // Kura's setup: allowed.ports = [8080, 9999] (plain and client-auth); here one more HTTPS port is
  // configured but not allowed.
  const start = (t: Parameters<typeof startDaemon>[0], rest: Record<string, unknown> = {}) =>
    startDaemon(t, (p) => ({ http: { ...tls }, rest: { 'allowed.ports': [p.http[0], p.clientAuth[0]], ...rest }, identities }), { http: 1, https: 1, clientAuth: 1 });
  const on = (d: Daemon, cn: string, opts: { untrusted?: boolean } = {}) => {
    const c = pki.client(cn, opts);
    return { port: d.ports.clientAuth[0], tls: true, cert: c.cert, key: c.key, ca: pki.caCert };
  };

  t.test('defaults: stateless certificates on', async (t) => {
    const d = await start(t);

    t.test('13: a certificate whose CN is an identity authenticates a resource request', async (t) => {
      t.equal((await d.request(ASSETS, on(d, 'foo'))).status, 200);
    });

    t.test('14: an unknown CN is anonymous: 401', async (t) => {
      t.equal((await d.request(ASSETS, on(d, 'doesNotExist'))).status, 401);
    });

    t.test('known CN without the permission: 403', async (t) => {
      t.equal((await d.request(ASSETS, on(d, 'noperm'))).status, 403);
    });

    t.test('a certificate from another CA fails the handshake', async (t) => {
      await t.rejects(d.request(ASSETS, on(d, 'foo', { untrusted: true })));
    });

    t.test('no certificate on a client-auth port: handshake refused', async (t) => {
      await t.rejects(d.request(ASSETS, { port: d.ports.clientAuth[0], tls: true, ca: pki.caCert }));
    });

    t.test('18: login/certificate opens a session', async (t) => {
      const b = new Browser(d, on(d, 'foo'));
      const r = await b.request(`${S}/login/certificate`, { method: 'POST' });
      t.equal(r.status, 200);
      t.equal(r.body, '{"passwordChangeNeeded":false}');
      t.ok(b.sessionId);
      t.match(r.headers['set-cookie']![0], /; HttpOnly; SameSite=Strict; Secure$/);
    });

    t.test('19: login/certificate with an unknown CN: 401, no cookie', async (t) => {
      const b = new Browser(d, on(d, 'bar'));
      const r = await b.request(`${S}/login/certificate`, { method: 'POST' });
      t.equal(r.status, 401);
      t.same(r.json(), { message: 'Certificate authentication failed' });
      t.equal(b.sessionId, undefined);
    });

    t.test('login/certificate over plain HTTP: 401', async (t) => {
      const r = await d.request(`${S}/login/certificate`, { method: 'POST' });
      t.equal(r.status, 401);
      t.same(r.json(), { message: 'Certificate authentication failed' });
    });

    t.test('32: the password-change flag does not restrict certificate sessions', async (t) => {
      const b = new Browser(d, on(d, 'flagged'));
      const r = await b.request(`${S}/login/certificate`, { method: 'POST' });
      t.equal(r.body, '{"passwordChangeNeeded":true}', 'reported, informational');
      await b.fetchToken();
      t.equal((await b.request(ASSETS)).status, 200);
    });

    t.test('a certificate session cookie works on the plain port too (cookies are port-agnostic)', async (t) => {
      const b = await certificateLogin(d, pki.client('foo'));
      const r = await d.request(ASSETS, { headers: { cookie: `JSESSIONID=${b.sessionId}`, 'x-xsrf-token': b.headers['x-xsrf-token'] } });
      t.equal(r.status, 200);
    });

    t.test('a port outside allowed.ports answers 404 without a challenge, for every path', async (t) => {
      const https = { port: d.ports.https[0], tls: true, ca: pki.caCert };
      for (const p of [ASSETS, `${S}/authenticationInfo`, '/services/identity/v1/passwordRequirements']) {
        const r = await d.request(p, https);
        t.equal(r.status, 404, p);
        t.equal(r.headers['www-authenticate'], undefined);
        t.equal(r.body, '');
      }
      t.equal((await d.request(`${S}/authenticationInfo`)).status, 200, 'allowed port');
    });

    t.test('authenticationInfo lists the client-auth ports', async (t) => {
      const r = await d.request(`${S}/authenticationInfo`);
      t.equal(r.body, `{"passwordAuthenticationEnabled":true,"certificateAuthenticationEnabled":true,"certificateAuthenticationPorts":[${d.ports.clientAuth[0]}]}`);
    });
  });

  t.test('34/36: stateless certificates off; certificate sessions still work', async (t) => {
    const d = await start(t, { 'auth.certificate.stateless.enabled': false });
    t.equal((await d.request(ASSETS, on(d, 'foo'))).status, 401, '34');
    const b = await certificateLogin(d, pki.client('flagged'));
    t.equal((await b.request(ASSETS)).status, 200, '36: cert session of a flagged identity');
  });

  t.test('certificate auth off: login/certificate 404, no ports reported, stateless off too', async (t) => {
    const d = await start(t, { 'auth.certificate.enabled': false });
    t.equal((await d.request(`${S}/login/certificate`, { ...on(d, 'foo'), method: 'POST' })).status, 404);
    t.equal((await d.request(ASSETS, on(d, 'foo'))).status, 401, 'stateless needs certificate auth');
    t.equal((await d.request(`${S}/authenticationInfo`)).body, '{"passwordAuthenticationEnabled":true,"certificateAuthenticationEnabled":false}');
  });

  t.test('several client-auth ports are reported sorted', async (t) => {
    const d = await startDaemon(t, { http: { ...tls } }, { http: 1, clientAuth: 2 });
    const r = (await d.request(`${S}/authenticationInfo`)).json();
    t.same(r.certificateAuthenticationPorts, [...d.ports.clientAuth].sort((a, b) => a - b));
  });
}
