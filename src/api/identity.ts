// Identity API v1, `/services/identity/v1` (docs/rest-api.md "identity/v1"; Kura's
// IdentityRestService), a request-core family (src/core/family.ts) mounted on REST only: password
// requirements and defined permissions for anyone, identity management with role `identity` (the
// routes' own role: the family has more than one). Errors are `{message}`.

import { RequestError } from '../core/errors.js';
import type { CoreRequest, Family } from '../core/family.js';
import { ADMIN_PERMISSION, IdentityError, IDENTITY_NAME, type Identity, type IdentityChanges } from '../auth/identity-store.js';
import { passwordFailures, requirementsOf } from '../auth/password-policy.js';
import type { AuthLayer } from '../auth/layer.js';

const ROLE = 'identity';

/** The permissions this daemon checks; with those identities hold, the names an identity may get. */
export const KNOWN_PERMISSIONS = [ADMIN_PERMISSION, 'rest.assets', 'rest.cloudconnection', 'rest.configuration', 'rest.deploy', 'rest.identity', 'rest.inventory', 'rest.system'];

/**
 * Granted only by kura.admin: each reaches running code or who is trusted (a plug-in runs in the
 * daemon, docs/packages.md; configuration decides the broker, trust anchors and listeners;
 * identities decide everything else), so holding one is no licence to hand it on.
 */
export const ADMIN_GRANTED = [ADMIN_PERMISSION, 'rest.configuration', 'rest.deploy', 'rest.identity'];

const PERMISSION = /^[A-Za-z0-9_.-]{1,128}$/;

// Kura's IdentityDTO shape and key order.
function dto(i: Identity) {
  return { userName: i.name, passwordAuthEnabled: i.passwordHash !== undefined, passwordChangeNeeded: i.passwordChangeNeeded, permissions: [...i.permissions] };
}

const bad = (reason: string) => new RequestError(400, `Bad request. ${reason}`);

function object(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw bad('the body must be a JSON object');
  return body as Record<string, unknown>;
}

function userName(o: Record<string, unknown>): string {
  const n = o.userName;
  if (typeof n !== 'string' || n.trim() === '') throw bad('userName is required');
  return n;
}

/** The optional fields of a create/update body, type-checked. */
function changes(o: Record<string, unknown>): IdentityChanges {
  const c: IdentityChanges = {};
  if (o.password !== undefined && o.password !== null) {
    if (typeof o.password !== 'string' || o.password === '') throw bad('password must be a non-empty string');
    c.password = o.password;
  }
  for (const k of ['passwordAuthEnabled', 'passwordChangeNeeded'] as const) {
    if (o[k] !== undefined && o[k] !== null) {
      if (typeof o[k] !== 'boolean') throw bad(`${k} must be true or false`);
      c[k] = o[k] as boolean;
    }
  }
  if (o.permissions !== undefined && o.permissions !== null) {
    if (!Array.isArray(o.permissions) || !o.permissions.every((p) => typeof p === 'string' && PERMISSION.test(p))) {
      throw bad('permissions must be an array of permission names');
    }
    c.permissions = o.permissions as string[];
  }
  return c;
}

export function identityFamily(auth: AuthLayer): Family {
  const body = async (req: CoreRequest) => {
    const v = await req.body({ limit: 64 * 1024 });
    if (v === undefined) throw new RequestError(400, 'Request body is missing');
    return object(v);
  };
  const notFound = () => new RequestError(404, 'Identity does not exist');
  const defined = () => {
    const all = new Set(KNOWN_PERMISSIONS);
    for (const i of auth.identities.list()) for (const p of i.permissions) all.add(p);
    return [...all];
  };
  // Unknown names are refused (a typo would silently grant nothing). An identity without kura.admin
  // grants only permissions it holds and none of ADMIN_GRANTED, never changes its own permissions,
  // and changes or deletes only identities that hold nothing it lacks (setting another identity's
  // password and logging in as it would be a grant too): no chain of identity edits gains a
  // permission (docs/rest-api.md "identity/v1").
  const authoriseChange = (req: CoreRequest, action: 'changing' | 'deleting', c: IdentityChanges, target?: Identity) => {
    const valid = defined();
    const unknown = (c.permissions ?? []).filter((p) => !valid.includes(p));
    if (unknown.length > 0) throw bad(`unknown permission ${unknown.join(', ')}; valid permissions: ${valid.join(', ')}`);
    const held = req.identity?.permissions ?? [];
    if (held.includes(ADMIN_PERMISSION)) return;
    const had = target?.permissions ?? [];
    for (const p of c.permissions ?? []) {
      if (had.includes(p)) continue;
      if (ADMIN_GRANTED.includes(p)) throw new RequestError(403, `granting ${p} needs ${ADMIN_PERMISSION}`);
      if (!held.includes(p)) throw new RequestError(403, `granting ${p} needs ${p}`);
    }
    const beyond = had.find((p) => !held.includes(p));
    if (beyond !== undefined) throw new RequestError(403, `${action} an identity with ${beyond} needs ${beyond}`);
    const same = (a: readonly string[], b: readonly string[]) => a.every((p) => b.includes(p)) && b.every((p) => a.includes(p));
    if (target && target.name === req.identity?.name && c.permissions && !same(c.permissions, had)) {
      throw new RequestError(403, `changing its own permissions needs ${ADMIN_PERMISSION}`);
    }
  };
  const checkStrength = (c: IdentityChanges) => {
    if (c.password === undefined || c.passwordAuthEnabled === false) return;
    // All rules are checked here, one generic message (Kura's spelling).
    if (passwordFailures(c.password, requirementsOf(auth.console)).length > 0) throw bad('password strenght requirements not satisfied');
  };
  const mapErrors = (err: unknown): never => {
    if (err instanceof IdentityError) {
      if (err.code === 'not-found') throw notFound();
      throw bad(err.message);
    }
    throw err;
  };

  return {
    name: 'identity/v1',
    rest: '/services/identity/v1',
    errors: 'json',
    routes: [
      { method: 'GET', path: 'passwordRequirements', handler: () => requirementsOf(auth.console) },
      { method: 'GET', path: 'definedPermissions', handler: () => ({ permissions: defined() }) },
      { method: 'GET', path: 'identities', role: ROLE, handler: () => ({ userConfig: auth.identities.list().map(dto) }) },
      {
        method: 'POST',
        path: 'identities/byName',
        role: ROLE,
        handler: async (req) => {
          const id = auth.identities.get(userName(await body(req)));
          if (!id) throw notFound();
          return dto(id);
        },
      },
      {
        method: 'POST',
        path: 'identities',
        role: ROLE,
        handler: async (req) => {
          const o = await body(req);
          const name = userName(o);
          if (!IDENTITY_NAME.test(name)) throw bad('identity names are 1-64 characters of A-Z a-z 0-9 _ . @ -');
          const c = changes(o);
          if (c.passwordAuthEnabled === true && c.password === undefined) throw bad('passwordAuthEnabled needs a password');
          if (auth.identities.get(name)) throw bad(`Identity ${name} already exists`);
          authoriseChange(req, 'changing', c);
          checkStrength(c);
          await auth.identities.create(name, c).catch(mapErrors);
          auth.log.info('identity created', { identity: name, by: req.identity?.name });
        },
      },
      {
        method: 'PUT',
        path: 'identities',
        role: ROLE,
        handler: async (req) => {
          const o = await body(req);
          const name = userName(o);
          const c = changes(o);
          const cur = auth.identities.get(name);
          if (!cur) throw notFound();
          if (c.passwordAuthEnabled === true && c.password === undefined && cur.passwordHash === undefined) throw bad('passwordAuthEnabled needs a password');
          authoriseChange(req, 'changing', c, cur);
          checkStrength(c);
          await auth.identities.update(name, c).catch(mapErrors);
          auth.log.info('identity updated', { identity: name, by: req.identity?.name });
        },
      },
      {
        method: 'DEL',
        path: 'identities',
        role: ROLE,
        handler: async (req) => {
          const name = userName(await body(req));
          const cur = auth.identities.get(name);
          if (!cur) throw notFound();
          if (name === req.identity?.name) throw bad('an identity cannot delete itself');
          authoriseChange(req, 'deleting', {}, cur);
          await auth.identities.delete(name).catch(mapErrors);
          auth.log.info('identity deleted', { identity: name, by: req.identity?.name });
        },
      },
    ],
  };
}
