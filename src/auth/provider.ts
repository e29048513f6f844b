// Authentication providers and the registry of custom ones (Kura's AuthenticationProvider;
// docs/packages.md "Custom authentication providers").
//
// ## The custom provider contract
//
// A custom provider is a plain object, registered by a deployment package's extension with
// `api.registerAuthProvider(provider)` (src/plugins/api.ts) or in code with
// `AuthProviderRegistry.register`:
//
//     {
//       name: 'header-auth',                 // unique, shows in logs and as principal.via
//       priority: 50,                        // optional; lower runs earlier (Kura's @Priority).
//                                            //   Built-ins: certificate 100, BASIC 200, session 300.
//                                            //   Absent: after all built-ins.
//       async authenticate(req) { ... },     // → identity name, { name }, or undefined/null
//       onEnabled() {}, onDisabled() {},     // optional, called on register / unregister
//     }
//
// `authenticate` is called for every matched request (whatever its route's role) until a provider
// yields a principal; it receives an `AuthRequest` (below): method, decoded path, lower-cased
// headers (`headers`, or one by name with `header(name)`), client address, the listener (port, secure, clientAuth), the verified client certificate
// on client-auth ports, `cookie(name)`, and two helpers that use the identity store: `identity(name)` and
// `verifyPassword(name, password)` (scrypt-backed, throttled and cached like BASIC). The name it
// returns must be an identity of the store to pass any role check (docs/rest-api.md
// "Authentication"); a name that is not only reaches routes without a role. Returning nothing
// passes the request on to the next provider. A provider that throws or rejects is treated as
// returning nothing (logged at debug level). Providers must not write the response. They run on the
// event loop: do not block; a provider that has not answered after 5 s is treated as declining (and
// logged at debug level).
//
// Deviation from Kura (COMPATIBILITY.md): providers with equal priorities all run, in registration
// order (Kura keeps one per priority and silently ignores the other).

import type { IncomingHttpHeaders } from 'node:http';
import type { PeerCertificate } from 'node:tls';

export interface AuthRequest {
  readonly method: string;
  /** Decoded path, e.g. `/services/assets/demo`. */
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  /** One header by its lower-case name: `headers[name]` (its first element if that is an array), without building `headers`. */
  header(name: string): string | undefined;
  readonly remoteAddress: string;
  readonly listener: { readonly port: number; readonly secure: boolean; readonly clientAuth: boolean };
  peerCertificate(): PeerCertificate | undefined;
  /** A request cookie's value by name (first occurrence wins), undefined when absent. */
  cookie(name: string): string | undefined;
  identity(name: string): IdentityView | undefined;
  verifyPassword(name: string, password: string): Promise<boolean>;
}

export interface IdentityView {
  name: string;
  passwordAuthEnabled: boolean;
  passwordChangeNeeded: boolean;
  permissions: string[];
}

export type AuthResult = string | { name: string } | undefined | null;

/**
 * An authentication provider: the built-in ones (src/auth/providers/: certificate, basic, session)
 * and custom ones from packages implement the same interface.
 */
export interface AuthProvider {
  readonly name: string;
  readonly priority?: number;
  authenticate(req: AuthRequest): AuthResult | Promise<AuthResult>;
  onEnabled?(): void;
  onDisabled?(): void;
}

export type CustomAuthProvider = AuthProvider;

export const CERTIFICATE_PRIORITY = 100;
export const BASIC_PRIORITY = 200;
export const SESSION_PRIORITY = 300;

/** Checks that something handed over by a package is a usable provider; throws with the reason. */
export function asCustomProvider(p: unknown): CustomAuthProvider {
  const o = p as Record<string, unknown> | null;
  if (typeof o !== 'object' || o === null) throw new Error('an authentication provider must be an object');
  if (typeof o.name !== 'string' || o.name === '') throw new Error('an authentication provider needs a name');
  if (typeof o.authenticate !== 'function') throw new Error(`authentication provider ${o.name}: authenticate must be a function`);
  if (o.priority !== undefined && (typeof o.priority !== 'number' || !Number.isFinite(o.priority))) {
    throw new Error(`authentication provider ${o.name}: priority must be a number`);
  }
  for (const k of ['onEnabled', 'onDisabled']) {
    if (o[k] !== undefined && typeof o[k] !== 'function') throw new Error(`authentication provider ${o.name}: ${k} must be a function`);
  }
  return o as unknown as CustomAuthProvider;
}

/** The custom providers, in the order they run (priority, then registration). */
export class AuthProviderRegistry {
  private providers: { p: CustomAuthProvider; seq: number }[] = [];
  private seq = 0;
  /** Bumped on every change, so users can cache what they derive from the list. */
  version = 0;

  register(provider: unknown): void {
    const p = asCustomProvider(provider);
    if (this.providers.some((x) => x.p.name === p.name)) throw new Error(`an authentication provider named ${p.name} is already registered`);
    this.providers.push({ p, seq: this.seq++ });
    this.providers.sort((a, b) => (a.p.priority ?? Number.MAX_SAFE_INTEGER) - (b.p.priority ?? Number.MAX_SAFE_INTEGER) || a.seq - b.seq);
    this.version++;
    p.onEnabled?.();
  }

  unregister(provider: unknown): void {
    const i = this.providers.findIndex((x) => x.p === provider || x.p.name === (provider as { name?: unknown })?.name);
    if (i < 0) return;
    const [{ p }] = this.providers.splice(i, 1);
    this.version++;
    p.onDisabled?.();
  }

  list(): CustomAuthProvider[] {
    return this.providers.map((x) => x.p);
  }
}
