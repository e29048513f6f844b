// Session API v1, `/services/session/v1` (docs/rest-api.md "session/v1"; Kura's SessionRestService).
// No route has a role: each endpoint does its own checks, in Kura's order. Errors are `{message}`.
// Not on the request core (src/core/family.ts): a session is an HTTP thing through and through. Its
// handlers set and expire cookies (`Set-Cookie`), read the session the authentication stage found
// for the request's cookie, the client's address (the login throttle) and the client certificate of
// the connection, none of which a transport-neutral request has, and there is no MQTT side.

import { jsonFamily, type HttpServer } from '../http/server.js';
import { HttpError, type RequestContext } from '../http/context.js';
import { readJson } from '../http/body.js';
import { IdentityError } from '../auth/identity-store.js';
import { requirementsOf, passwordFailures } from '../auth/password-policy.js';
import { SESSION_BASE, SESSION_LOCAL, parseCookies, type AuthLayer } from '../auth/layer.js';
import type { Session } from '../auth/session-store.js';

export const MSG = {
  loginFields: 'username and or password fields have not been provided',
  loginFailed: 'Authentication failed as username or password not matching',
  certFailed: 'Certificate authentication failed',
  notValid: 'Current session is not valid',
  changeFields: 'currentPassword or newPassword have not been provided',
  // Kura's spelling ("strenght"): messages are Kura's word for word, for Kura clients.
  weak: 'The new password does not satisfy password strenght requirements: ',
  samePassword: 'Password change failed as previous password equals new one',
} as const;

/** Gson escapes these inside strings; reproduced so banner text is byte-identical to Kura's. */
export function gsonJson(value: unknown): string {
  return JSON.stringify(value).replace(/[<>&='\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

// Java's String.trim() strips every char <= U+0020 (not Unicode spaces).
const javaBlank = (s: string): boolean => s.replace(/^[\u0000-\u0020]+|[\u0000-\u0020]+$/g, '') === '';

/**
 * A field Gson would bind to a Java String: strings as they are, numbers and booleans as their text
 * (Gson is lenient there); anything else or blank → undefined (Kura's null/blank checks → 400).
 */
function field(body: unknown, key: string): string | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const v = (body as Record<string, unknown>)[key];
  const s = typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : undefined;
  return s === undefined || javaBlank(s) ? undefined : s;
}

const notFound = () => new HttpError(404, 'Not found', true);

export function mountSessionApi(server: HttpServer, auth: AuthLayer): void {
  const family = jsonFamily('session');
  const route = (method: string, path: string, h: (ctx: RequestContext) => Promise<void> | void) => server.route(method, `${SESSION_BASE}${path}`, family, h);
  const session = (ctx: RequestContext) => ctx.locals[SESSION_LOCAL] as Session | undefined;
  const gateSessions = () => {
    if (!auth.sessionsEnabled) throw notFound();
  };

  route('POST', '/login/password', async (ctx) => {
    if (!auth.sessionsEnabled || !auth.passwordEnabled) throw notFound();
    // Malformed or missing JSON is a 400 naming the problem (Kura: 500; COMPATIBILITY.md).
    const body = await readJson(ctx, { limit: 16 * 1024 });
    const username = field(body, 'username');
    const password = field(body, 'password');
    if (username === undefined || password === undefined) throw new HttpError(400, MSG.loginFields);
    const r = await auth.checkPassword(username, password, ctx.remoteAddress, false);
    // Unknown name, wrong password, no password, throttled: one message (no enumeration).
    if (!r.identity) throw new HttpError(401, MSG.loginFailed);
    const locked = r.identity.passwordChangeNeeded;
    const { cookie } = auth.createSession(ctx, r.identity, locked);
    auth.log.info('session created', { identity: r.identity.name, via: 'password', locked, address: ctx.remoteAddress });
    ctx.json(200, { passwordChangeNeeded: r.identity.passwordChangeNeeded }, { 'set-cookie': cookie });
  });

  route('POST', '/login/certificate', async (ctx) => {
    // The stateless flag is not required here (as in Kura's SessionRestService).
    if (!auth.sessionsEnabled || !auth.rest['auth.certificate.enabled']) throw notFound();
    ctx.req.resume(); // body ignored
    const identity = auth.certificateIdentity(ctx);
    if (!identity) throw new HttpError(401, MSG.certFailed);
    // A certificate session is never locked; the flag is only reported (as in Kura).
    const { cookie } = auth.createSession(ctx, identity, false);
    auth.log.info('session created', { identity: identity.name, via: 'certificate', address: ctx.remoteAddress });
    ctx.json(200, { passwordChangeNeeded: identity.passwordChangeNeeded }, { 'set-cookie': cookie });
  });

  route('GET', '/xsrfToken', (ctx) => {
    gateSessions();
    const s = session(ctx);
    if (!s || !ctx.principal) throw new HttpError(401, MSG.notValid);
    ctx.json(200, { xsrfToken: s.xsrfToken });
  });

  route('POST', '/logout', (ctx) => {
    gateSessions();
    ctx.req.resume();
    if (!ctx.principal) throw new HttpError(401, MSG.notValid);
    const s = session(ctx);
    if (!s) return ctx.empty(204);
    auth.sessions.invalidate(s);
    auth.log.info('session ended: logout', { identity: s.user });
    // Every cookie the request carried is expired, not only JSESSIONID (as Kura's logout does).
    const expired = [...parseCookies(ctx.header('cookie')).keys()].map((n) => `${n}=; Path=/; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT`);
    ctx.empty(204, expired.length > 0 ? { 'set-cookie': expired } : {});
  });

  // Not gated by session management (as in Kura); the body is validated before authentication.
  route('POST', '/changePassword', async (ctx) => {
    const body = await readJson(ctx, { limit: 16 * 1024 });
    const current = field(body, 'currentPassword');
    const next = field(body, 'newPassword');
    if (current === undefined || next === undefined) throw new HttpError(400, MSG.changeFields);
    if (!ctx.principal) throw new HttpError(401, MSG.notValid);
    const name = ctx.principal.name;
    const r = await auth.checkPassword(name, current, ctx.remoteAddress, false);
    // A wrong current password leaves the session alone (as in Kura).
    if (!r.identity) throw new HttpError(401, MSG.loginFailed);
    const failures = passwordFailures(next, requirementsOf(auth.console));
    if (failures.length > 0) throw new HttpError(400, MSG.weak + failures[0]);
    if (current === next) throw new HttpError(400, MSG.samePassword);
    try {
      await auth.identities.setPassword(name, next, true);
    } catch (err) {
      if (err instanceof IdentityError) throw new HttpError(401, MSG.notValid);
      throw err;
    }
    // Changing the credentials ends every session of the identity, this one included: a new login
    // is required (docs/rest-api.md "session/v1"; Kura gets there on the next request through the
    // credential hash).
    auth.log.info('password changed', { identity: name, via: ctx.principal.via });
    ctx.empty(204);
  });

  route('GET', '/currentIdentity', (ctx) => {
    gateSessions();
    if (!ctx.principal) throw new HttpError(401, MSG.notValid);
    const id = auth.identities.get(ctx.principal.name);
    // Explicit permissions only, in the configured order (COMPATIBILITY.md); no kura.admin expansion.
    ctx.json(200, { name: ctx.principal.name, passwordChangeNeeded: id?.passwordChangeNeeded ?? false, permissions: id ? [...id.permissions] : [] });
  });

  // Anonymous and never gated (as in Kura). Ports: the client-auth listeners actually open, sorted.
  route('GET', '/authenticationInfo', (ctx) => {
    const info: Record<string, unknown> = { passwordAuthenticationEnabled: auth.passwordEnabled };
    const ports = server.listeners().filter((l) => l.clientAuth).map((l) => l.port).sort((a, b) => a - b);
    const cert = auth.rest['auth.certificate.enabled'] && ports.length > 0;
    info.certificateAuthenticationEnabled = cert;
    if (cert) info.certificateAuthenticationPorts = ports;
    if (auth.console['access.banner.enabled']) info.message = auth.console['access.banner.content'];
    ctx.rawJson(200, gsonJson(info));
  });
}
