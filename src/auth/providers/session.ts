// Cookie sessions (Kura's priority 300 provider), checked in Kura's order: the XSRF token on every
// request but `xsrfToken`, expiry, the lock of a session that must change its password, the
// identity's credentials unchanged since login. A session that fails expiry or credentials is ended.

import { safeEqualText } from '../password-hash.js';
import type { IdentityStore } from '../identity-store.js';
import type { SessionStore } from '../session-store.js';
import type { AuthProvider, AuthRequest } from '../provider.js';
import { SESSION_PRIORITY } from '../provider.js';

export const SESSION_COOKIE = 'JSESSIONID';
export const XSRF_HEADER = 'x-xsrf-token';
export const SESSION_BASE = '/services/session/v1';
const XSRF_PATH = `${SESSION_BASE}/xsrfToken`;
const CHANGE_PASSWORD_PATH = `${SESSION_BASE}/changePassword`;

/** Kura compares exemption paths on the decoded path; a trailing slash reaches the same route here. */
function normalPath(p: string): string {
  // Most paths have nothing to normalise: no regular expression for them.
  if (!p.includes('//') && (p.length <= 1 || p.charCodeAt(p.length - 1) !== 47 /* '/' */)) return p;
  const s = p.replace(/\/{2,}/g, '/');
  return s.length > 1 && s.endsWith('/') ? s.slice(0, -1) : s;
}

export function sessionProvider(deps: { sessions: SessionStore; identities: IdentityStore }): AuthProvider {
  const { sessions, identities } = deps;
  return {
    name: 'session',
    priority: SESSION_PRIORITY,
    authenticate(req: AuthRequest) {
      const s = sessions.get(req.cookie(SESSION_COOKIE));
      if (!s) return undefined;
      const path = normalPath(req.path);
      const xsrfPath = path === XSRF_PATH;
      if (!xsrfPath) {
        // A missing or wrong token neither authenticates nor refreshes nor ends the session.
        const token = req.header(XSRF_HEADER);
        if (typeof token !== 'string' || !safeEqualText(token, s.xsrfToken)) return undefined;
      }
      // One clock reading for the expiry check and the refresh.
      const now = sessions.now();
      if (sessions.expired(s, now)) {
        sessions.invalidate(s);
        return undefined;
      }
      if (s.locked && !xsrfPath && path !== CHANGE_PASSWORD_PATH) return undefined;
      const id = identities.get(s.user);
      if (!id || id.credentials !== s.credentials) {
        sessions.invalidate(s);
        return undefined;
      }
      sessions.touch(s, now);
      return s.user;
    },
  };
}
