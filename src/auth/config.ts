// The sections the authentication layer owns (docs/configuration.md): `rest` (providers, sessions,
// throttling), `console` (password rules, login banner) and `identities` (the seed of a new dataDir).

import { arrayOf, bool, duration, mapOf, num, problem, section, str, type Validator } from '../core/schema.js';

/** Identity names: what Kura's identity service accepts. */
export const IDENTITY_NAME = /^[A-Za-z0-9_.@-]{1,64}$/;

export interface RestConfig {
  'allowed.ports': number[];
  'auth.password.enabled': boolean;
  'auth.certificate.enabled': boolean;
  'session.management.enabled': boolean;
  'session.inactivity.interval': number;
  'auth.basic.enabled': boolean;
  'auth.certificate.stateless.enabled': boolean;
  'login.throttle.max.delay': number;
  /** Bound of the session store (oldest idle sessions evicted first). Extension. */
  'session.max.count': number;
  /** Sessions per identity; beyond it the identity's own least recently used one goes. Extension. */
  'session.max.per.identity': number;
}

export interface ConsoleConfig {
  /** Serve the field console at /console/ (docs/console.md). */
  'console.enabled': boolean;
  'access.banner.enabled': boolean;
  'access.banner.content': string;
  'new.password.min.length': number;
  'new.password.require.digits': boolean;
  'new.password.require.special.characters': boolean;
  'new.password.require.both.cases': boolean;
}

export interface IdentitySeed {
  password?: string;
  passwordHash?: string;
  permissions: string[];
  passwordChangeNeeded: boolean;
}

/**
 * What the authentication layer is configured with (src/auth/layer.ts): its own sections, the
 * dataDir its identity store lives in and, for log lines, the file they came from. The whole
 * configuration fits it; the layer needs nothing else of it.
 */
export interface AuthSections {
  dataDir: string;
  rest: RestConfig;
  console: ConsoleConfig;
  identities: Record<string, IdentitySeed>;
  file?: string;
}

const ports = arrayOf(num({ int: true, min: 0, max: 65535 }), { unique: true });

export const validateRest = section<RestConfig>({
  'allowed.ports': [ports, []],
  'auth.password.enabled': [bool, true],
  'auth.certificate.enabled': [bool, true],
  'session.management.enabled': [bool, true],
  // Seconds (Kura's unit); at most 7 days: an abandoned session must not stay valid for weeks.
  'session.inactivity.interval': [duration('s', 1, 604_800), 900],
  'auth.basic.enabled': [bool, true],
  'auth.certificate.stateless.enabled': [bool, true],
  'login.throttle.max.delay': [duration('ms', 0, 600_000), 5000],
  'session.max.count': [num({ int: true, min: 1 }), 10_000],
  'session.max.per.identity': [num({ int: true, min: 1 }), 32],
});

export const validateConsole = section<ConsoleConfig>({
  'console.enabled': [bool, true],
  'access.banner.enabled': [bool, false],
  'access.banner.content': [str(), ''],
  'new.password.min.length': [num({ int: true, min: 0, max: 1024 }), 8],
  'new.password.require.digits': [bool, false],
  'new.password.require.special.characters': [bool, false],
  'new.password.require.both.cases': [bool, false],
});

const permission = str({ pattern: /^(kura\.admin|rest\.[A-Za-z0-9_.-]+|[A-Za-z0-9_.-]+)$/, patternHint: 'not a permission name' });

const validateIdentity = section<IdentitySeed>({
  password: [str(), undefined],
  passwordHash: [str({ nonEmpty: true }), undefined],
  permissions: [arrayOf(permission, { unique: true }), []],
  passwordChangeNeeded: [bool, false],
});


export const validateIdentities: Validator<Record<string, IdentitySeed>> = mapOf<IdentitySeed>(
  (raw, path, p) => {
    const id = validateIdentity(raw, path, p);
    if (id.password !== undefined && id.passwordHash !== undefined) problem(p, path, 'give either password or passwordHash, not both');
    return id;
  },
  (key) => (IDENTITY_NAME.test(key) ? undefined : 'identity names are 1-64 characters of A-Z a-z 0-9 _ . @ -'),
);

