// A real browser for the field console's tests: Debian's chromium (/usr/bin/chromium) driven by
// playwright-core, headless, with a fresh profile per launch and no background network traffic.
// `haveBrowser(t)` skips a test when chromium is missing (under CI=true: fails it).

import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { ROOT } from './daemon.js';

export const CHROMIUM = process.env.GATEWAYD_CHROMIUM ?? '/usr/bin/chromium';

interface T {
  teardown(fn: () => unknown): void;
  fail(msg: string): void;
  plan(n: number, comment?: string): void;
}

export function haveBrowser(t: T): boolean {
  if (fs.existsSync(CHROMIUM)) return true;
  if (process.env.CI === 'true') t.fail(`required test peer missing under CI: ${CHROMIUM} (apt-get install chromium)`);
  else t.plan(0, `skip: ${CHROMIUM} not installed`);
  return false;
}

/** One headless chromium for a test file; closed at teardown. */
export async function launchBrowser(t: T): Promise<Browser> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // Playwright gives each launch a new empty profile; these keep chromium off the network.
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    timeout: 60_000,
  });
  t.teardown(() => browser.close());
  return browser;
}

export interface Watched {
  context: BrowserContext;
  page: Page;
  /** Console errors, page errors and CSP violations seen so far. */
  problems: string[];
}

/** A new context (own cookies) and page; everything the page reports as an error is collected. */
export async function openPage(browser: Browser, viewport = { width: 1100, height: 800 }): Promise<Watched> {
  // The daemon's own self-signed certificate, as on a fresh device.
  const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport });
  context.setDefaultTimeout(20_000);
  const page = await context.newPage();
  const problems: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  await page.exposeFunction('__gwViolation', (v: string) => problems.push(`CSP violation: ${v}`));
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) => (window as any).__gwViolation(`${e.violatedDirective} ${e.blockedURI}`));
  });
  return { context, page, problems };
}

/** Saves a screenshot under docs/console/ when GATEWAYD_SCREENSHOTS=1 (how the docs' pictures are made). */
export async function screenshot(page: Page, name: string): Promise<void> {
  if (process.env.GATEWAYD_SCREENSHOTS !== '1') return;
  const dir = path.join(ROOT, 'docs', 'console');
  fs.mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: path.join(dir, `${name}.png`), fullPage: true });
}

/** The console's login form at `origin` (scheme, host and port), as a technician fills it. */
export async function logIn(page: Page, origin: string, user: string, password: string): Promise<void> {
  await page.goto(`${origin}/console/`);
  await page.getByLabel('User name').fill(user);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
}
