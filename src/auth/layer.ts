// The authentication layer: the pipeline stages and response filters of kura/session-auth.md §1,
// the built-in providers (§6–8), and the state they share (identities, sessions, throttle, cache).
//
//   allowed ports (404 bodiless) → authentication (providers by priority: stateless certificate 100,
//   BASIC 200, session 300, custom ones) → role check (anonymous 403, rewritten to 401 by the
//   response filter; authenticated without `rest.<role>` or `kura.admin` 403) → handler →
//   filters (403 without principal → 401; WWW-Authenticate on 401/403 while BASIC is on).

import type { Config } from '../config/config.js';
import type { ConsoleConfig, RestConfig } from './config.js';
import type { HttpServer, Route } from '../http/server.js';
import { HttpError, type RequestContext } from '../http/context.js';
import type { Logger } from '../log.js';
import { BasicCache, parseBasic } from './basic.js';
import { IdentityStore, type Identity } from './identity-store.js';
import { HashBusyError, safeEqual } from './password-hash.js';
import {
  AuthProviderRegistry, BASIC_PRIORITY, CERTIFICATE_PRIORITY, SESSION_PRIORITY,
  type AuthRequest, type AuthResult, type IdentityView,
} from './provider.js';
import { SessionStore, type Session } from './session-store.js';
import { LoginThrottle } from './throttle.js';

export const SESSION_COOKIE = 'JSESSIONID';
export const XSRF_HEADER = 'x-xsrf-token';
export const BASIC_CHALLENGE = 'Basic realm="kura-rest-api"';
export const SESSION_BASE = '/services/session/v1';
const XSRF_PATH = `${SESSION_BASE}/xsrfToken`;
const CHANGE_PASSWORD_PATH = `${SESSION_BASE}/changePassword`;

/** What the request's cookie pointed to, set by the authentication stage for the session API. */
export const SESSION_LOCAL = 'session';

interface Step {
  name: string;
  priority: number;
  run(ctx: RequestContext): Promise<string | undefined> | string | undefined;
}

/**
 * BASIC's cached path looks for an external edit of the identity file (`gatewayd passwd`) at most
 * this often instead of on every request (a stat per request); logins always look.
 */
const BASIC_REFRESH_MS = 1000;

export interface PasswordCheck {
  identity?: Identity;
  /** Refused without checking: too many recent failures for this name or address. */
  throttled: boolean;
}

/** `Cookie` header values by name (first occurrence wins). */
export function parseCookies(header: string | undefined): Map<string, string> {
  const out = new Map<string, string>();
  if (!header) return out;
  for (const part of header.split(';')) {
    const i = part.indexOf('=');
    if (i <= 0) continue;
    const name = part.slice(0, i).trim();
    let value = part.slice(i + 1).trim();
    if (value.startsWith('"') && value.endsWith('"') && value.length >= 2) value = value.slice(1, -1);
    if (name && !out.has(name)) out.set(name, value);
  }
  return out;
}

/** The CN of a certificate subject (the first one when there are several), as Kura maps identities. */
export function commonName(subject: unknown): string | undefined {
  if (typeof subject !== 'object' || subject === null) return undefined;
  for (const [k, v] of Object.entries(subject as Record<string, unknown>)) {
    if (k.toUpperCase() !== 'CN') continue;
    const cn = Array.isArray(v) ? v[0] : v;
    return typeof cn === 'string' && cn !== '' ? cn : undefined;
  }
  return undefined;
}

/**
 * A request made by a script (the field console's fetch calls), not by the user's navigation: its
 * 401 carries no Basic challenge, so the browser does not open its own login dialog over the page
 * (docs/console.md).
 */
function scripted(ctx: RequestContext): boolean {
  const mode = ctx.header('sec-fetch-mode');
  return (mode !== undefined && mode !== 'navigate') || ctx.header('x-requested-with')?.toLowerCase() === 'xmlhttprequest';
}

/** Kura compares exemption paths on the decoded path; a trailing slash reaches the same route here. */
function normalPath(p: string): string {
  const s = p.replace(/\/{2,}/g, '/');
  return s.length > 1 && s.endsWith('/') ? s.slice(0, -1) : s;
}

export class AuthLayer {
  readonly sessions: SessionStore;
  readonly providers = new AuthProviderRegistry();
  readonly throttle: LoginThrottle;
  readonly basicCache = new BasicCache();
  rest: RestConfig;
  console: ConsoleConfig;
  private seeds: string;

  private constructor(
    config: Config,
    readonly identities: IdentityStore,
    readonly http: HttpServer,
    readonly log: Logger,
  ) {
    this.rest = config.rest;
    this.console = config.console;
    this.seeds = JSON.stringify(config.identities);
    this.sessions = new SessionStore(config.rest['session.max.count'], config.rest['session.inactivity.interval']);
    this.throttle = new LoginThrottle(config.rest['login.throttle.max.delay']);
    identities.onChange((name, kind) => {
      this.basicCache.forget(name);
      // A session dies with its identity's credentials (interface §3); attribute changes (permissions,
      // the change flag) are evaluated live and keep sessions (kura/session-auth.md §6.3).
      if (kind !== 'attributes') {
        const n = this.sessions.invalidateUser(name);
        if (n > 0) log.info('sessions ended: identity credentials changed', { identity: name, sessions: n });
      }
    });
  }

  /** Opens the identity store (seeding it on first start) and installs the stages and filters. */
  static async start(config: Config, http: HttpServer, log: Logger): Promise<AuthLayer> {
    const identities = await IdentityStore.open(config.dataDir, config.identities, log);
    identities.warnIfNoAdminPassword();
    const layer = new AuthLayer(config, identities, http, log);
    layer.install();
    return layer;
  }

  get name(): string {
    return 'auth';
  }

  get passwordEnabled(): boolean {
    return this.rest['auth.password.enabled'];
  }

  get basicEnabled(): boolean {
    return this.rest['auth.password.enabled'] && this.rest['auth.basic.enabled'];
  }

  get sessionsEnabled(): boolean {
    return this.rest['session.management.enabled'];
  }

  /** rest and console sections on SIGHUP; sessions are kept (contract §1). */
  async reconfigure(config: Config): Promise<void> {
    if (JSON.stringify(config.identities) !== this.seeds) {
      // Contract §2: the section only seeds an empty dataDir; say so rather than ignore an edit silently.
      this.log.warn('identities in the configuration only seed a new dataDir: use the identity API or gatewayd passwd', { file: config.file });
      this.seeds = JSON.stringify(config.identities);
    }
    this.rest = config.rest;
    this.console = config.console;
    this.sessions.maxCount = config.rest['session.max.count'];
    this.sessions.inactivitySeconds = config.rest['session.inactivity.interval'];
    this.throttle.maxDelayMs = config.rest['login.throttle.max.delay'];
    await this.identities.refresh();
  }

  async stop(): Promise<void> {
    await this.identities.flush();
  }

  private install(): void {
    const { stages, filters } = this.http;
    stages.push((ctx) => this.allowedPorts(ctx));
    stages.push((ctx) => this.authenticate(ctx));
    stages.push((ctx, route) => this.authorise(ctx, route));
    filters.push((ctx, status, headers) => {
      // Kura's RestService response filter: a 403 without a principal is a 401.
      if (status === 403 && !ctx.principal) status = 401;
      if ((status === 401 || status === 403) && this.basicEnabled && !scripted(ctx)) headers['www-authenticate'] = BASIC_CHALLENGE;
      return status;
    });
  }

  // §9: before authentication, so no WWW-Authenticate and no session touch.
  private allowedPorts(ctx: RequestContext): void {
    const allowed = this.rest['allowed.ports'];
    if (allowed.length > 0 && !allowed.includes(ctx.listener.port)) throw new HttpError(404, 'Not found', true);
  }

  private stepsCache: { rest: RestConfig; version: number; steps: Step[] } | undefined;

  /** The providers in the order they run; rebuilt only when the `rest` section or the custom providers change. */
  private steps(): Step[] {
    const c = this.stepsCache;
    if (c && c.rest === this.rest && c.version === this.providers.version) return c.steps;
    const steps = this.buildSteps();
    this.stepsCache = { rest: this.rest, version: this.providers.version, steps };
    return steps;
  }

  private buildSteps(): Step[] {
    const steps: Step[] = [];
    if (this.rest['auth.certificate.enabled'] && this.rest['auth.certificate.stateless.enabled']) {
      steps.push({ name: 'certificate', priority: CERTIFICATE_PRIORITY, run: (ctx) => this.byCertificate(ctx) });
    }
    if (this.basicEnabled) steps.push({ name: 'basic', priority: BASIC_PRIORITY, run: (ctx) => this.byBasic(ctx) });
    if (this.sessionsEnabled) steps.push({ name: 'session', priority: SESSION_PRIORITY, run: (ctx) => this.bySession(ctx) });
    const custom = this.providers.list();
    if (custom.length === 0) return steps;
    for (const p of custom) {
      steps.push({
        name: p.name,
        priority: p.priority ?? Number.MAX_SAFE_INTEGER,
        run: async (ctx) => nameOf(await withTimeout(p.authenticate(this.authRequest(ctx)), CUSTOM_PROVIDER_TIMEOUT_MS, p.name)),
      });
    }
    // Stable: built-ins stay ahead of a custom provider of the same priority.
    return steps.sort((a, b) => a.priority - b.priority);
  }

  // §1.3: runs for every matched request; the first provider that yields a name wins, a provider
  // that throws counts as declining, nobody → anonymous (the role check decides).
  private authenticate(ctx: RequestContext): Promise<void> | void {
    const id = parseCookies(ctx.header('cookie')).get(SESSION_COOKIE);
    ctx.locals[SESSION_LOCAL] = this.sessions.get(id);
    return this.runSteps(ctx, this.steps(), 0);
  }

  // Synchronous providers (certificate, session, usually BASIC with a cached verification) are run
  // without awaiting: a request costs no microtask hop unless a provider really is asynchronous.
  private runSteps(ctx: RequestContext, steps: Step[], from: number): Promise<void> | void {
    for (let i = from; i < steps.length; i++) {
      const step = steps[i];
      let r: Promise<string | undefined> | string | undefined;
      try {
        r = step.run(ctx);
      } catch (err) {
        this.providerFailed(step, err);
        continue;
      }
      if (r !== undefined && typeof r !== 'string') {
        return r.then(
          (name) => (name !== undefined ? this.found(ctx, step, name) : this.runSteps(ctx, steps, i + 1)),
          (err) => {
            this.providerFailed(step, err);
            return this.runSteps(ctx, steps, i + 1);
          },
        );
      }
      if (r !== undefined) return this.found(ctx, step, r);
    }
  }

  private found(ctx: RequestContext, step: Step, name: string): void {
    ctx.principal = { name, via: step.name };
  }

  private providerFailed(step: Step, err: unknown): void {
    this.log.debug('authentication provider failed', { provider: step.name, error: (err as Error)?.message ?? String(err) });
  }

  private authorise(ctx: RequestContext, route: Route): void {
    if (!route.role) return;
    if (!ctx.principal) throw new HttpError(403, 'Forbidden', true);
    if (!this.hasRole(ctx.principal.name, route.role)) {
      this.log.info('access denied: missing permission', { identity: ctx.principal.name, permission: `rest.${route.role}`, path: ctx.path });
      throw new HttpError(403, 'Forbidden', true);
    }
  }

  /** §10: `rest.<role>`, or `kura.admin` which passes every role; evaluated live (D17). */
  hasRole(name: string, role: string): boolean {
    const id = this.identities.get(name);
    if (!id) return false;
    return id.permissions.includes('kura.admin') || id.permissions.includes(`rest.${role}`);
  }

  // §8: stateless client certificate, only on client-auth ports (the TLS layer verified the chain).
  private byCertificate(ctx: RequestContext): string | undefined {
    if (!ctx.listener.clientAuth) return undefined;
    const cn = commonName(ctx.peerCertificate()?.subject);
    return cn !== undefined && this.identities.get(cn) ? cn : undefined;
  }

  /** The identity named by the verified client certificate of this request, if any. */
  certificateIdentity(ctx: RequestContext): Identity | undefined {
    const cn = commonName(ctx.peerCertificate()?.subject);
    return cn === undefined ? undefined : this.identities.get(cn);
  }

  // §7: refused for an identity that must change its password.
  private byBasic(ctx: RequestContext): Promise<string | undefined> | string | undefined {
    const header = ctx.header('authorization');
    if (header === undefined) return undefined;
    const creds = parseBasic(header);
    if (!creds) return undefined;
    const id = this.identities.get(creds.user);
    if (id?.passwordChangeNeeded) return undefined;
    // Fast path, synchronous: credentials that verified before (the common case for BASIC clients).
    if (this.throttle.wait(creds.user, ctx.remoteAddress) === 0) {
      this.identities.refreshIfChanged(BASIC_REFRESH_MS);
      const known = this.identities.get(creds.user);
      if (known && !known.passwordChangeNeeded && this.basicCache.has(creds, known.credentials)) return known.name;
    }
    return this.checkPassword(creds.user, creds.password, ctx.remoteAddress, true).then((r) =>
      !r.identity || r.identity.passwordChangeNeeded ? undefined : r.identity.name,
    );
  }

  // §6.1, in Kura's order.
  private bySession(ctx: RequestContext): string | undefined {
    const s = ctx.locals[SESSION_LOCAL] as Session | undefined;
    if (!s) return undefined;
    const path = normalPath(ctx.path);
    const xsrfPath = path === XSRF_PATH;
    if (!xsrfPath) {
      // A missing or wrong token neither authenticates nor refreshes nor ends the session (§4).
      const token = ctx.header(XSRF_HEADER);
      if (token === undefined || !safeEqual(token, s.xsrfToken)) return undefined;
    }
    if (this.sessions.expired(s)) {
      this.sessions.invalidate(s);
      ctx.locals[SESSION_LOCAL] = undefined;
      return undefined;
    }
    if (s.locked && !xsrfPath && path !== CHANGE_PASSWORD_PATH) return undefined;
    const id = this.identities.get(s.user);
    if (!id || id.credentials !== s.credentials) {
      this.sessions.invalidate(s);
      ctx.locals[SESSION_LOCAL] = undefined;
      return undefined;
    }
    this.sessions.touch(s);
    return s.user;
  }

  /**
   * The one password check of the daemon (login, BASIC, changePassword, custom providers): throttled
   * per name and address, constant-time, memory-hard; `cached` lets BASIC skip scrypt for
   * credentials that verified before.
   */
  async checkPassword(name: string, password: string, address: string, cached: boolean): Promise<PasswordCheck> {
    const wait = this.throttle.wait(name, address);
    if (wait > 0) {
      this.log.info('password attempt refused: throttled', { identity: name, address, retryInMs: wait });
      return { throttled: true };
    }
    this.identities.refreshIfChanged();
    const before = this.identities.get(name);
    const creds = { user: name, password };
    if (cached && before && this.basicCache.has(creds, before.credentials)) return { identity: before, throttled: false };
    let identity: Identity | undefined;
    try {
      identity = await this.identities.verifyPassword(name, password);
    } catch (err) {
      if (!(err instanceof HashBusyError)) throw err;
      this.log.warn('password attempt refused: too many password checks in progress', { identity: name, address });
      return { throttled: true };
    }
    this.log.debug('password hash computed', { identity: name });
    if (!identity) {
      this.throttle.failed(name, address);
      this.log.info('password authentication failed', { identity: name, address });
      return { throttled: false };
    }
    this.throttle.succeeded(name);
    if (cached) this.basicCache.remember(creds, identity.credentials);
    return { identity, throttled: false };
  }

  /** Starts a session for `identity`, ending the one the request's cookie pointed to (no fixation). */
  createSession(ctx: RequestContext, identity: Identity, locked: boolean): { session: Session; cookie: string } {
    const old = ctx.locals[SESSION_LOCAL] as Session | undefined;
    if (old) this.sessions.invalidate(old);
    const session = this.sessions.create(identity.name, identity.credentials, locked);
    ctx.locals[SESSION_LOCAL] = session;
    // Contract §4: SameSite=Strict always, Secure when the login came over HTTPS.
    const cookie = `${SESSION_COOKIE}=${session.id}; Path=/; HttpOnly; SameSite=Strict${ctx.listener.secure ? '; Secure' : ''}`;
    return { session, cookie };
  }

  view(id: Identity): IdentityView {
    return { name: id.name, passwordAuthEnabled: id.passwordHash !== undefined, passwordChangeNeeded: id.passwordChangeNeeded, permissions: [...id.permissions] };
  }

  private authRequest(ctx: RequestContext): AuthRequest {
    return {
      method: ctx.method,
      path: ctx.path,
      headers: ctx.req.headers,
      remoteAddress: ctx.remoteAddress,
      listener: { ...ctx.listener },
      peerCertificate: () => ctx.peerCertificate(),
      identity: (name) => {
        const id = this.identities.get(name);
        return id ? this.view(id) : undefined;
      },
      verifyPassword: async (name, password) => (await this.checkPassword(String(name), String(password), ctx.remoteAddress, true)).identity !== undefined,
    };
  }
}

// A package's provider that never answers must not hold every request of the gateway with it.
const CUSTOM_PROVIDER_TIMEOUT_MS = 5000;

function withTimeout<T>(v: T | Promise<T>, ms: number, name: string): Promise<T> | T {
  if (v === null || typeof v !== 'object' || typeof (v as { then?: unknown }).then !== 'function') return v;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`provider ${name} did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([Promise.resolve(v), late]).finally(() => clearTimeout(timer));
}

function nameOf(r: AuthResult): string | undefined {
  if (typeof r === 'string') return r === '' ? undefined : r;
  if (r && typeof r === 'object' && typeof r.name === 'string' && r.name !== '') return r.name;
  return undefined;
}
