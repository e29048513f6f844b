// HTTP BASIC (Kura's priority 200 provider, refused for an identity that must change its password).
// Credentials that verified before are answered from the verification cache without a hash, and
// synchronously: a BASIC client costs no scrypt and no microtask hop per request; the exact header
// that verified is found without decoding it.

import { parseBasic, type BasicCache } from '../basic-credentials.js';
import type { IdentityStore } from '../identity-store.js';
import type { LoginThrottle } from '../throttle.js';
import type { AuthProvider, AuthRequest } from '../provider.js';
import { BASIC_PRIORITY } from '../provider.js';

/** What BASIC needs from the authentication layer. */
export interface BasicDeps {
  identities: IdentityStore;
  throttle: LoginThrottle;
  basicCache: BasicCache;
  /** The layer's one password check (throttled, cached, memory-hard). */
  checkPassword(name: string, password: string, address: string, cached: boolean): Promise<{ identity?: { name: string; passwordChangeNeeded: boolean; credentials: number } }>;
}

/**
 * An edit of the identity file by `gatewayd passwd` is looked for at most this often on the cached
 * path (a stat per request otherwise); password checks always look.
 */
const REFRESH_MS = 1000;

export function basicProvider(deps: BasicDeps): AuthProvider {
  /**
   * The identity `user` names when a request of it may be answered from the verification cache:
   * not throttled, the identity file's edits looked for, no password change pending.
   */
  const cacheable = (user: string, address: string) => {
    if (deps.throttle.wait(user, address) !== 0) return undefined;
    deps.identities.refreshIfChanged(REFRESH_MS);
    const known = deps.identities.get(user);
    return known && !known.passwordChangeNeeded ? known : undefined;
  };
  return {
    name: 'basic',
    priority: BASIC_PRIORITY,
    authenticate(req: AuthRequest) {
      const header = req.header('authorization');
      if (header === undefined) return undefined;
      // The header this client sent before and that verified (the usual case): one keyed digest,
      // no decoding. Anything else (throttled, a changed identity) takes the full path below.
      const seen = deps.basicCache.header(header);
      const again = seen && cacheable(seen.user, req.remoteAddress);
      if (again && again.credentials === seen.credentials) return again.name;
      const creds = parseBasic(header);
      if (!creds) return undefined;
      // An identity that must change its password is declined only after its password was checked
      // like any other: declining at once would tell that the name exists (docs/rest-api.md
      // "Password checks").
      const known = cacheable(creds.user, req.remoteAddress);
      if (known && deps.basicCache.has(creds, known.credentials)) {
        deps.basicCache.rememberHeader(header, known.name, known.credentials);
        return known.name;
      }
      return deps.checkPassword(creds.user, creds.password, req.remoteAddress, true).then((r) => {
        if (!r.identity || r.identity.passwordChangeNeeded) return undefined;
        deps.basicCache.rememberHeader(header, r.identity.name, r.identity.credentials);
        return r.identity.name;
      });
    },
  };
}
