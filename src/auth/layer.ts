// The authentication layer: the pipeline stages and the response filter of Kura's REST service (the
// daemon puts them in its HTTP stage list, src/daemon.ts), the providers, and the state they share
// (identities, sessions, throttle, BASIC cache).
//
//   allowedPorts (404 bodiless) → authenticate (providers by priority: built-in certificate 100,
//   BASIC 200, session 300 — src/auth/providers/ — then custom ones) → authorise (anonymous 403,
//   rewritten to 401 by the filter; authenticated without `rest.<role>` or `kura.admin` 403) →
//   handler → challenge filter (403 without principal → 401; WWW-Authenticate on 401/403 while BASIC
//   is on).

import type { IncomingHttpHeaders } from 'node:http';
import type { PeerCertificate } from 'node:tls';
import type { AuthSections, ConsoleConfig, RestConfig } from './config.js';
import type { Route } from '../http/server.js';
import { HttpError, addressPrefix, type ListenerInfo, type RequestContext } from '../http/context.js';
import type { Logger } from '../log.js';
import { BasicCache } from './basic-credentials.js';
import { IdentityStore, type Identity } from './identity-store.js';
import { HashBusyError } from './password-hash.js';
import { AuthProviderRegistry, type AuthProvider, type AuthRequest, type AuthResult, type IdentityView } from './provider.js';
import { SessionLimitError, SessionStore, type Session } from './session-store.js';
import { LoginThrottle, nameKey } from './throttle.js';
import { certificateProvider, commonName } from './providers/certificate.js';
import { basicProvider } from './providers/basic.js';
import { SESSION_BASE, SESSION_COOKIE, XSRF_HEADER, sessionProvider } from './providers/session.js';
import { isThenable } from '../core/thenable.js';

export { commonName, SESSION_BASE, SESSION_COOKIE, XSRF_HEADER };
export const BASIC_CHALLENGE = 'Basic realm="kura-rest-api"';

/** What the request's cookie pointed to, set by the authentication stage for the session API. */
export const SESSION_LOCAL = 'session';

export interface PasswordCheck {
  identity?: Identity;
  /** Refused without checking: too many recent failures for this name or address. */
  throttled: boolean;
}

/** A cookie value without its optional double quotes (RFC 6265 §4.1.1 cookie-value). */
const unquote = (v: string): string => (v.length >= 2 && v.startsWith('"') && v.endsWith('"') ? v.slice(1, -1) : v);

/** `Cookie` header values by name (first occurrence wins). */
export function parseCookies(header: string | undefined): Map<string, string> {
  const out = new Map<string, string>();
  if (!header) return out;
  for (const part of header.split(';')) {
    const i = part.indexOf('=');
    if (i <= 0) continue;
    const name = part.slice(0, i).trim();
    if (name && !out.has(name)) out.set(name, unquote(part.slice(i + 1).trim()));
  }
  return out;
}

/**
 * One cookie's value, as parseCookies(header).get(name) would give it, without splitting the header
 * or building the map: the session cookie is looked up on every request.
 */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header || name === '') return undefined;
  for (let start = 0; start < header.length; ) {
    let end = header.indexOf(';', start);
    if (end < 0) end = header.length;
    // The usual pair, `name=value` with no space around it, is matched where it stands, without
    // cutting the name out of the header to trim and compare it.
    const at = start + name.length;
    if (header.startsWith(name, start) && header.charCodeAt(at) === 61 /* '=' */ && at < end) {
      const v = header.slice(at + 1, end);
      return unquote(v.length === 0 || (tight(v.charCodeAt(0)) && tight(v.charCodeAt(v.length - 1))) ? v : v.trim());
    }
    const eq = header.indexOf('=', start);
    if (eq > start && eq < end && header.slice(start, eq).trim() === name) {
      return unquote(header.slice(eq + 1, end).trim());
    }
    start = end + 1;
  }
  return undefined;
}

/** A character String.prototype.trim keeps at the edge of a value: printable ASCII and Latin-1 except NBSP. */
const tight = (c: number): boolean => (c > 32 && c < 127) || (c > 160 && c < 256);

/**
 * A request made by a script (the field console's fetch calls), not by the user's navigation: its
 * 401 carries no Basic challenge, so the browser does not open its own login dialog over the page
 * (docs/console.md).
 */
function scripted(ctx: RequestContext): boolean {
  const mode = ctx.header('sec-fetch-mode');
  return (mode !== undefined && mode !== 'navigate') || ctx.header('x-requested-with')?.toLowerCase() === 'xmlhttprequest';
}

/** A provider in the running order; custom ones are bounded in time. */
interface Step {
  name: string;
  priority: number;
  provider: AuthProvider;
  custom: boolean;
}

export class AuthLayer {
  readonly sessions: SessionStore;
  readonly providers = new AuthProviderRegistry();
  readonly throttle: LoginThrottle;
  readonly basicCache = new BasicCache();
  rest: RestConfig;
  console: ConsoleConfig;
  private seeds: string;

  private readonly builtins: { certificate: AuthProvider; basic: AuthProvider; session: AuthProvider };

  private constructor(
    config: AuthSections,
    readonly identities: IdentityStore,
    readonly log: Logger,
  ) {
    this.rest = config.rest;
    this.console = config.console;
    this.seeds = JSON.stringify(config.identities);
    this.sessions = new SessionStore(config.rest['session.max.count'], config.rest['session.inactivity.interval'], undefined, config.rest['session.max.per.identity'], (name) =>
      this.identities.get(name)?.permissions.includes('kura.admin') === true,
    );
    this.throttle = new LoginThrottle(config.rest['login.throttle.max.delay']);
    this.builtins = {
      certificate: certificateProvider(),
      basic: basicProvider(this),
      session: sessionProvider({ sessions: this.sessions, identities }),
    };
    identities.onChange((name, kind) => {
      this.basicCache.forget(name);
      // A session dies with its identity's credentials (COMPATIBILITY.md "Sessions and authentication");
      // attribute changes (permissions, the change flag) are evaluated live and keep sessions, as in Kura.
      if (kind !== 'attributes') {
        const n = this.sessions.invalidateUser(name);
        if (n > 0) log.info('sessions ended: identity credentials changed', { identity: name, sessions: n });
      }
    });
  }

  /**
   * Opens the identity store (seeding it on first start, in the background: `ready`). The daemon
   * mounts the stages and awaits `ready` before its listeners accept.
   */
  static open(config: AuthSections, log: Logger): AuthLayer {
    const identities = IdentityStore.begin(config.dataDir, config.identities, log);
    const layer = new AuthLayer(config, identities, log);
    layer.ready = identities.ready.then(() => identities.warnIfNoAdminPassword());
    layer.ready.catch(() => {}); // reported where the daemon awaits it
    return layer;
  }

  /** Settles once the identity store holds its identities. */
  ready: Promise<void> = Promise.resolve();

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

  /** rest and console sections on SIGHUP; sessions are kept (docs/configuration.md "Reloading"). */
  async reconfigure(config: AuthSections): Promise<void> {
    if (JSON.stringify(config.identities) !== this.seeds) {
      // The section only seeds an empty dataDir (docs/configuration.md): say so rather than ignore an edit silently.
      this.log.warn('identities in the configuration only seed a new dataDir: use the identity API or gatewayd passwd', { file: config.file });
      this.seeds = JSON.stringify(config.identities);
    }
    this.rest = config.rest;
    this.console = config.console;
    this.sessions.maxCount = config.rest['session.max.count'];
    this.sessions.inactivitySeconds = config.rest['session.inactivity.interval'];
    this.sessions.maxPerIdentity = config.rest['session.max.per.identity'];
    this.throttle.maxDelayMs = config.rest['login.throttle.max.delay'];
    await this.identities.refresh();
  }

  async stop(): Promise<void> {
    await this.identities.flush();
  }

  // ---- HTTP stages and filter (bound: the daemon hands them to HttpServer.use / .filter) -------

  /** Kura's allowed ports, before authentication: no WWW-Authenticate and no session touch. */
  readonly allowedPorts = (ctx: RequestContext): void => {
    const allowed = this.rest['allowed.ports'];
    if (allowed.length > 0 && !allowed.includes(ctx.listener.port)) throw new HttpError(404, 'Not found', true);
  };

  /**
   * Runs for every matched request: the first provider that yields a name wins, one that throws
   * counts as declining, nobody → anonymous (authorise decides). Synchronous providers (certificate,
   * session, BASIC with a cached verification) are run without awaiting: a request costs no
   * microtask hop unless a provider really is asynchronous.
   */
  readonly authenticate = (ctx: RequestContext): Promise<void> | void => {
    const req = new HttpAuthRequest(ctx, this);
    const session = this.sessions.get(req.cookie(SESSION_COOKIE));
    ctx.locals[SESSION_LOCAL] = session;
    // The cookie's value is then the session's own id string (the same text): the session provider's
    // lookup finds the key by identity instead of comparing the characters again.
    if (session) req.knownCookie(SESSION_COOKIE, session.id);
    return this.runSteps(ctx, req, this.steps(), 0);
  };

  /** Kura's `@RolesAllowed`: the route's role needs `rest.<role>` or `kura.admin`. */
  readonly authorise = (ctx: RequestContext, route: Route): void => {
    if (!route.role) return;
    if (!ctx.principal) throw new HttpError(403, 'Forbidden', true);
    if (!this.hasRole(ctx.principal.name, route.role)) {
      this.log.info('access denied: missing permission', { identity: ctx.principal.name, permission: `rest.${route.role}`, path: ctx.path });
      throw new HttpError(403, 'Forbidden', true);
    }
  };

  /** Kura's RestService response filter: a 403 without a principal is a 401; BASIC challenges (not a script's call). */
  readonly challenge = (ctx: RequestContext, status: number, headers: Record<string, string | string[]>): number => {
    if (status === 403 && !ctx.principal) status = 401;
    if ((status === 401 || status === 403) && this.basicEnabled && !scripted(ctx)) headers['www-authenticate'] = BASIC_CHALLENGE;
    return status;
  };

  private stepsCache: { rest: RestConfig; version: number; steps: Step[] } | undefined;

  /** The providers in the order they run; rebuilt only when the `rest` section or the custom providers change. */
  private steps(): Step[] {
    const c = this.stepsCache;
    if (c && c.rest === this.rest && c.version === this.providers.version) return c.steps;
    const steps: Step[] = [];
    const add = (provider: AuthProvider, custom: boolean) =>
      steps.push({ name: provider.name, priority: provider.priority ?? Number.MAX_SAFE_INTEGER, provider, custom });
    if (this.rest['auth.certificate.enabled'] && this.rest['auth.certificate.stateless.enabled']) add(this.builtins.certificate, false);
    if (this.basicEnabled) add(this.builtins.basic, false);
    if (this.sessionsEnabled) add(this.builtins.session, false);
    for (const p of this.providers.list()) add(p, true);
    // Stable: built-ins stay ahead of a custom provider of the same priority.
    steps.sort((a, b) => a.priority - b.priority);
    this.stepsCache = { rest: this.rest, version: this.providers.version, steps };
    return steps;
  }

  private runSteps(ctx: RequestContext, req: AuthRequest, steps: Step[], from: number): Promise<void> | void {
    for (let i = from; i < steps.length; i++) {
      const step = steps[i];
      let r: AuthResult | Promise<AuthResult>;
      try {
        r = step.provider.authenticate(req);
        // A package's provider that never answers must not hold every request of the gateway with it.
        if (step.custom) r = withTimeout(r, CUSTOM_PROVIDER_TIMEOUT_MS, step.name);
      } catch (err) {
        this.providerFailed(step, err);
        continue;
      }
      if (isThenable(r)) {
        return r.then(
          (res) => {
            const name = nameOf(res);
            return name !== undefined ? this.found(ctx, step, name) : this.runSteps(ctx, req, steps, i + 1);
          },
          (err) => {
            this.providerFailed(step, err);
            return this.runSteps(ctx, req, steps, i + 1);
          },
        );
      }
      const name = nameOf(r);
      if (name !== undefined) return this.found(ctx, step, name);
    }
    this.sessionEnded(ctx);
  }

  private found(ctx: RequestContext, step: Step, name: string): void {
    ctx.principal = { name, via: step.name };
    this.sessionEnded(ctx);
  }

  /** The session provider may have ended the cookie's session (expired, credentials changed). */
  private sessionEnded(ctx: RequestContext): void {
    const s = ctx.locals[SESSION_LOCAL] as Session | undefined;
    if (s && this.sessions.get(s.id) !== s) ctx.locals[SESSION_LOCAL] = undefined;
  }

  private providerFailed(step: Step, err: unknown): void {
    this.log.debug('authentication provider failed', { provider: step.name, error: (err as Error)?.message ?? String(err) });
  }

  /** Kura's roles: `rest.<role>`, or `kura.admin` which passes every role; evaluated live (a permission edit applies at once). */
  hasRole(name: string, role: string): boolean {
    const id = this.identities.get(name);
    if (!id) return false;
    return id.permissions.includes('kura.admin') || id.permissions.includes(`rest.${role}`);
  }

  /** The identity named by the verified client certificate of this request, if any. */
  certificateIdentity(ctx: RequestContext): Identity | undefined {
    const cn = commonName(ctx.peerCertificate()?.subject);
    return cn === undefined ? undefined : this.identities.get(cn);
  }

  /**
   * The one password check of the daemon (login, BASIC, changePassword, custom providers): throttled
   * per name and address, constant-time, memory-hard; `cached` lets BASIC skip scrypt for
   * credentials that verified before. Checks of the same credentials at the same time share one
   * verification (a dashboard or poller opening its connections together): the others wait for its
   * answer instead of queueing hashes of their own, and a wrong guess sent many times at once counts
   * once.
   */
  async checkPassword(name: string, password: string, address: string, cached: boolean): Promise<PasswordCheck> {
    const wait = this.throttle.wait(name, address);
    if (wait > 0) {
      this.log.info('password attempt refused: throttled', { identity: name.slice(0, 64), address, retryInMs: wait });
      return { throttled: true };
    }
    this.identities.refreshIfChanged();
    const before = this.identities.get(name);
    const creds = { user: name, password };
    if (cached && before && this.basicCache.has(creds, before.credentials)) return { identity: before, throttled: false };
    // A name that cannot be an identity (too long, bad characters) fails without spending a hash.
    if (nameKey(name) !== name) {
      this.throttle.failed(name, address);
      this.log.info('password authentication failed: not an identity name', { identity: name.slice(0, 64), length: name.length, address });
      return { throttled: false };
    }
    // Shared only under the same credentials stamp: a check begun after a password change never
    // takes the answer about the old one.
    return this.basicCache.shared(creds, before?.credentials ?? 0, () => this.verify(name, password, address, before?.credentials));
  }

  /** One verification and what it teaches the throttle and the cache; `stamp`: the identity's credentials when the check began. */
  private async verify(name: string, password: string, address: string, stamp: number | undefined): Promise<PasswordCheck> {
    let identity: Identity | undefined;
    try {
      identity = await this.identities.verifyPassword(name, password, { client: addressPrefix(address), name, failures: this.throttle.failuresFrom(address) });
    } catch (err) {
      if (!(err instanceof HashBusyError)) throw err;
      this.throttle.refusedBusy(address);
      this.log.warn('password attempt refused: too many password checks in progress', { identity: name, address });
      return { throttled: true };
    }
    this.log.debug('password hash computed', { identity: name });
    if (!identity) {
      // Credentials changed during the check are no guess of this client's: not counted.
      if (this.identities.get(name)?.credentials === stamp) this.throttle.failed(name, address);
      this.log.info('password authentication failed', { identity: name, address });
      return { throttled: false };
    }
    this.throttle.succeeded(name);
    this.basicCache.remember({ user: name, password }, identity.credentials);
    return { identity, throttled: false };
  }

  /** Starts a session for `identity`, ending the one the request's cookie pointed to (no fixation). */
  createSession(ctx: RequestContext, identity: Identity, locked: boolean): { session: Session; cookie: string } {
    const old = ctx.locals[SESSION_LOCAL] as Session | undefined;
    if (old) this.sessions.invalidate(old);
    let session: Session;
    try {
      session = this.sessions.create(identity.name, identity.credentials, locked);
    } catch (err) {
      if (!(err instanceof SessionLimitError)) throw err;
      this.log.warn('login refused: the session store is full of administrator sessions', { identity: identity.name });
      throw new HttpError(503, 'Too many sessions: try again later');
    }
    ctx.locals[SESSION_LOCAL] = session;
    // SameSite=Strict always, Secure when the login came over HTTPS (COMPATIBILITY.md).
    const cookie = `${SESSION_COOKIE}=${session.id}; Path=/; HttpOnly; SameSite=Strict${ctx.listener.secure ? '; Secure' : ''}`;
    return { session, cookie };
  }

  view(id: Identity): IdentityView {
    return { name: id.name, passwordAuthEnabled: id.passwordHash !== undefined, passwordChangeNeeded: id.passwordChangeNeeded, permissions: [...id.permissions] };
  }
}

const CUSTOM_PROVIDER_TIMEOUT_MS = 5000;

/** The request as providers see it (the `AuthRequest` contract of provider.ts), built once per request. */
class HttpAuthRequest implements AuthRequest {
  private cookieName: string | undefined;
  private cookieFound: string | undefined;

  constructor(
    private readonly ctx: RequestContext,
    private readonly layer: AuthLayer,
  ) {}

  get method(): string {
    return this.ctx.method;
  }
  get path(): string {
    return this.ctx.path;
  }
  get headers(): IncomingHttpHeaders {
    return this.ctx.req.headers;
  }
  header(name: string): string | undefined {
    return this.ctx.header(name);
  }
  get remoteAddress(): string {
    return this.ctx.remoteAddress;
  }
  get listener(): ListenerInfo {
    return { ...this.ctx.listener };
  }
  peerCertificate(): PeerCertificate | undefined {
    return this.ctx.peerCertificate();
  }
  /** Sets what cookie(name) answers: a value equal to the one the request carries. */
  knownCookie(name: string, value: string): void {
    this.cookieName = name;
    this.cookieFound = value;
  }
  cookie(name: string): string | undefined {
    // The session cookie is asked for twice (the stage, then the session provider): found once.
    if (name !== this.cookieName) {
      this.cookieName = name;
      this.cookieFound = cookieValue(this.ctx.header('cookie'), name);
    }
    return this.cookieFound;
  }
  identity(name: string): IdentityView | undefined {
    const id = this.layer.identities.get(name);
    return id ? this.layer.view(id) : undefined;
  }
  async verifyPassword(name: string, password: string): Promise<boolean> {
    return (await this.layer.checkPassword(String(name), String(password), this.ctx.remoteAddress, true)).identity !== undefined;
  }
}


function withTimeout<T>(v: T | Promise<T>, ms: number, name: string): Promise<T> | T {
  if (!isThenable(v)) return v;
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
