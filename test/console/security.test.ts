// The field console's security in a real browser: the Content-Security-Policy is enforced (no
// console errors in a whole visit, no inline script, an injected inline script is refused), a
// session that expires returns to the login view with a message, and the browser never opens its
// own Basic login dialog (the console's 401s carry no challenge).

import t from 'tap';
import fs from 'node:fs';
import { startDaemon } from '../helpers/daemon.js';
import { haveBrowser, launchBrowser, openPage, logIn } from '../helpers/browser.js';
import { haveOpenssl, makePki } from '../helpers/certs.js';

const users = {
  admin: { password: 'Admin-pass1', permissions: ['kura.admin'], passwordChangeNeeded: false },
};

async function login(page: import('playwright-core').Page, origin: string, user: string, password: string) {
  await logIn(page, `${origin}`, user, password);
}

t.test('field console security', async (t) => {
  if (!haveBrowser(t)) return;
  const browser = await launchBrowser(t);

  await t.test('CSP: a whole visit without a console error, no inline script, inline script refused', async (t) => {
    const d = await startDaemon(t, { identities: users }, { http: 0, https: 1 });
    const origin = `https://127.0.0.1:${d.ports.https[0]}`;
    const { page, problems, context } = await openPage(browser);
    t.teardown(() => context.close());
    const challenged: string[] = [];
    page.on('response', (r) => {
      if (r.headers()['www-authenticate']) challenged.push(r.url());
    });
    await login(page, origin, 'admin', 'Admin-pass1');
    await page.getByRole('heading', { name: 'Status', level: 1 }).waitFor();
    await page.getByRole('heading', { name: 'MQTT' }).waitFor();
    for (const [link, heading] of [['Assets', 'Assets'], ['Packages', 'Packages'], ['Identities', 'Identities']]) {
      await page.getByRole('link', { name: link }).click();
      await page.getByRole('heading', { name: heading, level: 1 }).waitFor();
    }
    await page.getByRole('cell', { name: 'admin (you)' }).or(page.getByRole('rowheader', { name: 'admin (you)' })).waitFor();
    t.equal(await page.locator('script:not([src])').count(), 0, 'no inline script element');
    t.equal(await page.evaluate(() => [...document.querySelectorAll('*')].filter((e) => [...e.attributes].some((a) => a.name.startsWith('on'))).length), 0, 'no inline event handler attribute');
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByText('You have logged out.').waitFor();
    t.same(problems, [], 'no console errors, page errors or CSP violations in the whole visit');
    t.same(challenged, [], 'no answer carried a Basic challenge');

    // The policy is enforced: an inline script is refused and reported.
    await page.evaluate(() => {
      const s = document.createElement('script');
      s.textContent = 'window.__inlineRan = true';
      document.body.appendChild(s);
    });
    await page.waitForFunction(() => true);
    t.equal(await page.evaluate(() => (window as any).__inlineRan), undefined, 'inline script did not run');
    await t.resolves(new Promise<void>((resolve) => {
      const check = () => (problems.some((p) => /CSP violation: script-src/.test(p)) ? resolve() : setTimeout(check, 50));
      check();
    }), 'the violation was reported');

    // A 401 outside the console's own calls (a navigation) still gets Kura's challenge.
    // Headless chromium has no dialog to show: it fails the navigation on the challenge instead.
    await t.rejects(page.goto(`${origin}/services/assets`), /ERR_INVALID_AUTH_CREDENTIALS/, 'a navigation to the REST API is challenged');
  });

  await t.test('certificate login: the password page points to the certificate port, where the browser logs in with its certificate', { skip: haveOpenssl() ? false : 'openssl not installed' }, async (t) => {
    const pki = makePki();
    t.teardown(() => fs.rmSync(pki.dir, { recursive: true, force: true }));
    const d = await startDaemon(t, { identities: users, http: { 'https.truststore': pki.caCert } }, { http: 0, https: 1, clientAuth: 1 });
    const certOrigin = `https://127.0.0.1:${d.ports.clientAuth[0]}`;
    const admin = pki.client('admin');
    const context = await browser.newContext({ ignoreHTTPSErrors: true, clientCertificates: [{ origin: certOrigin, certPath: admin.cert, keyPath: admin.key }] });
    t.teardown(() => context.close());
    const page = await context.newPage();
    await page.goto(`https://127.0.0.1:${d.ports.https[0]}/console/`);
    await page.getByRole('link', { name: `${certOrigin}/console/` }).click();
    await page.getByRole('button', { name: 'Log in with my certificate' }).click();
    await page.getByRole('heading', { name: 'Status', level: 1 }).waitFor();
    t.match(await page.locator('header').innerText(), /Logged in as\s+admin/, 'logged in as the certificate\'s CN');
  });

  await t.test('keyboard only: log in, skip to the content, reach every view, log out', async (t) => {
    const d = await startDaemon(t, { identities: users }, { http: 0, https: 1 });
    const { page, context } = await openPage(browser);
    t.teardown(() => context.close());
    await page.goto(`https://127.0.0.1:${d.ports.https[0]}/console/`);
    await page.getByLabel('User name').waitFor();
    t.equal(await page.evaluate(() => document.activeElement?.getAttribute('name')), 'username', 'the user name field has the focus');
    await page.keyboard.type('admin');
    await page.keyboard.press('Tab');
    await page.keyboard.type('Admin-pass1');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Status', level: 1 }).waitFor();
    await page.keyboard.press('Tab');
    t.equal(await page.evaluate(() => document.activeElement?.textContent), 'Skip to content', 'the first stop is the skip link');
    // Tab through the navigation: every view is a link reachable in order, Enter opens it.
    const links = await page.getByRole('navigation', { name: 'Views' }).getByRole('link').allInnerTexts();
    const seen: string[] = [];
    for (let i = 0; i < 20 && seen.length < links.length; i++) {
      await page.keyboard.press('Tab');
      const el = await page.evaluate(() => ({ tag: document.activeElement?.tagName, text: document.activeElement?.textContent ?? '', nav: !!document.activeElement?.closest('nav') }));
      if (el.nav && el.tag === 'A') seen.push(el.text);
    }
    t.same(seen, links, `every view reached by Tab, in order: ${seen.join(', ')}`);
    t.ok(seen.includes('Identities'));
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: seen.at(-1)!, level: 1 }).waitFor();
    t.pass(`Enter opened ${seen.at(-1)}`);
    await page.getByRole('button', { name: 'Log out' }).focus();
    await page.keyboard.press('Enter');
    await page.getByText('You have logged out.').waitFor();
  });

  await t.test('session management switched off: the login says so', async (t) => {
    const d = await startDaemon(t, { identities: users, rest: { 'session.management.enabled': false } }, { http: 0, https: 1 });
    const { page, context } = await openPage(browser);
    t.teardown(() => context.close());
    await login(page, `https://127.0.0.1:${d.ports.https[0]}`, 'admin', 'Admin-pass1');
    await page.getByRole('alert').filter({ hasText: 'Session login is switched off' }).waitFor();
    t.pass('explained');
  });

  await t.test('an expired session returns to the login view with a message', async (t) => {
    const d = await startDaemon(t, { identities: users, rest: { 'session.inactivity.interval': 1 } }, { http: 0, https: 1 });
    const origin = `https://127.0.0.1:${d.ports.https[0]}`;
    const { page, context } = await openPage(browser);
    t.teardown(() => context.close());
    await login(page, origin, 'admin', 'Admin-pass1');
    await page.getByRole('heading', { name: 'Identities', level: 1 }).or(page.getByRole('heading', { name: 'Status', level: 1 })).waitFor();
    // The status view refreshes every 5 s: its next call finds the session expired.
    await page.getByText('Your session has ended').waitFor({ timeout: 30_000 });
    t.equal(await page.getByRole('button', { name: 'Log in' }).count(), 1, 'back at the login form');
    t.notOk(await page.getByRole('navigation', { name: 'Views' }).isVisible(), 'no view left behind');
    await login(page, origin, 'admin', 'Admin-pass1');
    await page.getByRole('heading', { name: 'Status', level: 1 }).waitFor();
    t.pass('logging in again works');
  });
});
