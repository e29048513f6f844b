// The console's Certificates view (docs/console.md "Views") in Debian's chromium against the real
// daemon: every keystore entry with subject, issuer and expiry, an entry expiring within 30 days
// and an expired one marked; an administrator adds a CA certificate (a bad one is refused with the
// API's message) and makes a CSR that openssl verifies; an identity with rest.keystores only sees
// the list without the forms, one without it does not get the view. No CSP violation, no error.

import t from 'tap';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startDaemon } from '../helpers/daemon.js';
import { haveBrowser, launchBrowser, openPage, screenshot, logIn } from '../helpers/browser.js';
import { haveOpenssl, makePki } from '../helpers/certs.js';
import { generateKeyPair, selfSignedCertificate } from '../../src/keystores/signing.js';
import { pemBlock } from '../../src/keystores/pem.js';

t.test('certificates view', async (t) => {
  if (!haveBrowser(t)) return;
  if (!haveOpenssl() && process.env.CI !== 'true') return t.plan(0, 'skip: openssl not installed');
  const pki = makePki();
  t.teardown(() => fs.rmSync(pki.dir, { recursive: true, force: true }));
  const mk = (name: string, args: string[]) => {
    const crt = path.join(pki.dir, `${name}.pem`);
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', path.join(pki.dir, `${name}.key`), '-out', crt, ...args], { stdio: 'ignore' });
    return fs.readFileSync(crt, 'utf8');
  };
  const soon = mk('soon', ['-days', '10', '-subj', '/O=Example/CN=Soon CA']);
  // A certificate that expired in 2021 (this openssl cannot backdate one): made by the device's own code.
  const oldKeys = await generateKeyPair({ algorithm: 'EC', size: 256 });
  const old = pemBlock('CERTIFICATE', selfSignedCertificate(oldKeys, 'SHA256withECDSA', 'CN=Old CA', Date.parse('2020-01-01T00:00:00Z')));
  const d = await startDaemon(t, {
    identities: {
      admin: { password: 'Admin-pass1', permissions: ['kura.admin'] },
      keeper: { password: 'Keeper-pass1', permissions: ['rest.keystores'] },
      tech: { password: 'Tech-pass1', permissions: ['rest.assets'] },
    },
    rest: { 'login.throttle.max.delay': 0, 'auth.basic.enabled': true },
  }, { https: 1 });
  const ADMIN = { authorization: `Basic ${Buffer.from('admin:Admin-pass1').toString('base64')}` };
  const seed = async (p: string, body: object) => t.equal((await d.request(`/services/keystores/v1${p}`, { method: 'POST', headers: ADMIN, body })).status, 204);
  await seed('/entries/certificate', { keystoreServicePid: 'SSLKeystore', alias: 'soon-ca', certificate: soon });
  await seed('/entries/certificate', { keystoreServicePid: 'SSLKeystore', alias: 'old-ca', certificate: old });
  await seed('/entries/keypair', { keystoreServicePid: 'HttpsKeystore', alias: 'localhost', algorithm: 'EC', size: 256, signatureAlgorithm: 'SHA256withECDSA', attributes: 'CN=gw-console, O=Example' });

  const browser = await launchBrowser(t);
  const origin = `https://127.0.0.1:${d.ports.https[0]}`;
  const session = async (user: string, password: string, link = 'Certificates') => {
    const w = await openPage(browser);
    await logIn(w.page, `${origin}`, user, password);
    await w.page.getByRole('link', { name: link }).waitFor();
    return w;
  };

  const { page, problems } = await session('admin', 'Admin-pass1');
  await page.getByRole('link', { name: 'Certificates' }).click();
  await page.getByRole('heading', { name: 'Certificates', exact: true }).waitFor();
  const row = (alias: string) => page.locator('tr', { has: page.getByRole('rowheader', { name: alias, exact: true }) });
  await row('localhost').waitFor();
  t.match(await row('localhost').innerText(), /HttpsKeystore[\s\S]*key pair[\s\S]*CN=gw-console, O=Example[\s\S]*CN=gw-console,O=Example[\s\S]*EC 256/, 'a key pair: subject, issuer, key');
  t.notOk(await row('localhost').locator('td.expiring, td.expired').count(), 'a year away: not marked');
  t.match(await row('soon-ca').locator('td.expiring').innerText(), /expires in (9|10) days/, 'expiring within 30 days: marked');
  t.match(await row('soon-ca').innerText(), /CN=Soon CA, O=Example[\s\S]*CN=Soon CA,O=Example/);
  t.match(await row('old-ca').locator('td.expired').innerText(), /expired/, 'expired: marked');
  await screenshot(page, 'certificates');

  // Add a CA certificate: a bad one is refused with the API's message, a good one listed.
  const ca = page.locator('form', { has: page.getByRole('heading', { name: 'Add a CA certificate' }) });
  await ca.getByLabel('Keystore').selectOption('SSLKeystore');
  await ca.getByLabel('Alias').fill('fleet-ca');
  await ca.getByLabel('Certificate (PEM)').fill('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----');
  await ca.getByRole('button', { name: 'Add certificate' }).click();
  await ca.getByText(/Not added: certificate: not a DER certificate/).waitFor();
  t.pass('a bad certificate refused with the reason');
  await ca.getByLabel('Certificate (PEM)').fill(fs.readFileSync(pki.caCert, 'utf8'));
  await ca.getByRole('button', { name: 'Add certificate' }).click();
  await row('fleet-ca').waitFor();
  t.match(await row('fleet-ca').innerText(), /SSLKeystore[\s\S]*trusted certificate[\s\S]*CN=ca/);
  t.match(await page.getByRole('status').first().innerText(), /CA certificate fleet-ca added to SSLKeystore/);

  // Make a CSR: the subject is prefilled from the entry, the algorithms fit its key.
  const csr = page.locator('form', { has: page.getByRole('heading', { name: 'Make a certification request' }) });
  t.same(await csr.getByLabel('Signature algorithm').locator('option').allInnerTexts(), ['SHA256withECDSA', 'SHA384withECDSA', 'SHA512withECDSA']);
  t.equal(await csr.getByLabel('Subject').inputValue(), 'CN=gw-console, O=Example');
  await csr.getByLabel('Subject').fill('CN=gw-console.example.com, OU=Field, O=Example');
  await csr.getByRole('button', { name: 'Make request' }).click();
  const out = csr.getByLabel('Certification request (PEM)');
  await out.waitFor();
  const pem = await out.inputValue();
  t.match(pem, /^-----BEGIN CERTIFICATE REQUEST-----/);
  t.match(execFileSync('openssl', ['req', '-verify', '-noout', '-subject', '-nameopt', 'RFC2253'], { input: pem, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] }), 'subject=CN=gw-console.example.com,OU=Field,O=Example', 'openssl verifies the request');
  // The bad certificate's 400 is the one error the browser reports.
  t.same(problems.filter((p) => !/status of 400/.test(p)), [], 'no other console error, no CSP violation');
  t.equal(problems.length, 1, problems.join('; '));

  // rest.keystores only: the list, no forms.
  const keeper = await session('keeper', 'Keeper-pass1');
  await keeper.page.getByRole('link', { name: 'Certificates' }).click();
  await keeper.page.getByRole('rowheader', { name: 'fleet-ca', exact: true }).waitFor();
  t.equal(await keeper.page.getByRole('heading', { name: 'Add a CA certificate' }).count(), 0, 'no forms without kura.admin');
  t.equal(await keeper.page.getByRole('heading', { name: 'Make a certification request' }).count(), 0);

  // Without rest.keystores: no Certificates link, and the view's address shows the 403.
  const tech = await session('tech', 'Tech-pass1', 'Assets');
  t.equal(await tech.page.getByRole('link', { name: 'Certificates' }).count(), 0, 'not in the navigation');
  await tech.page.goto(`${origin}/console/#/certificates`);
  await tech.page.getByRole('alert').filter({ hasText: 'rest.keystores' }).waitFor();
  t.pass('the view by its address: access denied naming rest.keystores');
});
