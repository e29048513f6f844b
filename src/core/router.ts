// A small router in the manner of trouter/polka: routes are (method, pattern) pairs, patterns are
// split into segments once, `find()` is one indexed loop. It knows nothing of Kura: what a 404/405
// looks like is decided by whoever serves the match result.

export type Params = Record<string, string>;

// Objects with no inherited keys (a parameter named `constructor` or `__proto__` is only a key)
// that V8 keeps in fast mode: `Object.create(null)` makes a dictionary-mode object of a few hundred
// bytes, and requests make several.
function Bare(): void {}
Bare.prototype = Object.create(null);
export const bareObject = <T extends object>(): T => new (Bare as unknown as new () => T)();

/** The parameters of a route that has none: one shared, frozen object. */
export const NO_PARAMS: Params = Object.freeze(bareObject<Params>());

interface Route<H> {
  method: string;
  segments: string[]; // ':name' for a parameter
  /** The parameter name at each position (undefined for literals), sliced once. */
  paramNames: (string | undefined)[];
  hasParams: boolean;
  handler: H;
}

export type Match<H> =
  | { kind: 'found'; handler: H; params: Params }
  | { kind: 'method-not-allowed'; allowed: string[] }
  | { kind: 'not-found' };

function split(path: string): string[] {
  const parts = path.split('/');
  const out: string[] = [];
  for (const p of parts) if (p !== '') out.push(p);
  return out;
}

export class Router<H> {
  /**
   * Routes by segment count and first segments (`4 services/assets`): a lookup only looks at routes
   * that can match. Routes with a parameter among their first two segments are in every bucket of
   * their size (`anyPrefix`).
   */
  private buckets = new Map<string, Route<H>[]>();
  private anyPrefix = new Map<number, Route<H>[]>();
  /**
   * The last lookup and its answer: a client polling one resource asks for the same path again and
   * again. Answers are immutable (frozen parameters), so one can be handed out twice.
   */
  private last: { method: string; path: string; match: Match<H> } | undefined;

  add(method: string, pattern: string, handler: H): this {
    this.last = undefined;
    const segments = split(pattern);
    const route: Route<H> = {
      method: method.toUpperCase(),
      segments,
      paramNames: segments.map((s) => (s.startsWith(':') ? s.slice(1) : undefined)),
      hasParams: segments.some((s) => s.startsWith(':')),
      handler,
    };
    const head = segments.slice(0, 2);
    if (head.some((s) => s.startsWith(':'))) {
      let list = this.anyPrefix.get(segments.length);
      if (!list) this.anyPrefix.set(segments.length, (list = []));
      list.push(route);
      for (const [key, l] of this.buckets) if (key.startsWith(`${segments.length} `)) l.push(route);
    } else {
      const key = `${segments.length} ${head.join('/')}`;
      let list = this.buckets.get(key);
      if (!list) this.buckets.set(key, (list = [...(this.anyPrefix.get(segments.length) ?? [])]));
      list.push(route);
    }
    return this;
  }

  /**
   * Finds the route for `method` and the (already percent-decoded per segment) `path`.
   * Literal segments win over parameters at the same position (`/_read` before `/:pid`).
   */
  find(method: string, path: string): Match<H> {
    const last = this.last;
    if (last !== undefined && last.path === path && last.method === method) return last.match;
    const match = this.lookup(method, path);
    this.last = { method, path, match };
    return match;
  }

  private lookup(method: string, path: string): Match<H> {
    const segs = split(path);
    // As JAX-RS does: the most specific path template wins first (literal segments, leftmost
    // first), and only then is the method matched. So `DELETE /deploy/v2/_install` is 405 (the
    // `_install` resource has no DELETE), not "uninstall a package named _install".
    const head = segs.length > 1 ? `${segs[0]}/${segs[1]}` : segs.length === 1 ? segs[0] : '';
    const routes = this.buckets.get(`${segs.length} ${head}`) ?? this.anyPrefix.get(segs.length);
    if (!routes) return { kind: 'not-found' };
    let bestScore = -1;
    let exact: Route<H> | undefined;
    let allowed: string[] = [];
    for (let i = 0; i < routes.length; i++) {
      const r = routes[i];
      let score = 0;
      let j = 0;
      for (; j < segs.length; j++) {
        const s = r.segments[j];
        if (s.charCodeAt(0) === 58 /* ':' */) continue;
        if (s !== segs[j]) break;
        score += 1 << (segs.length - j);
      }
      if (j < segs.length || score < bestScore) continue;
      if (score > bestScore) {
        bestScore = score;
        exact = undefined;
        allowed = [];
      }
      if (r.method === method || (method === 'HEAD' && r.method === 'GET' && !exact)) exact = r;
      if (!allowed.includes(r.method)) allowed.push(r.method);
    }
    if (bestScore < 0) return { kind: 'not-found' };
    if (!exact) return { kind: 'method-not-allowed', allowed: Object.freeze(allowed) as string[] };
    if (!exact.hasParams) return { kind: 'found', handler: exact.handler, params: NO_PARAMS };
    const params = bareObject<Params>();
    for (let j = 0; j < segs.length; j++) {
      const name = exact.paramNames[j];
      if (name !== undefined) params[name] = segs[j];
    }
    return { kind: 'found', handler: exact.handler, params: Object.freeze(params) };
  }
}

/** Splits a raw request target into a decoded path segment list; undefined when undecodable. */
export function decodePath(rawUrl: string): string | undefined {
  const q = rawUrl.indexOf('?');
  const p = q >= 0 ? rawUrl.slice(0, q) : rawUrl;
  if (p.charCodeAt(0) !== 47 /* '/' */) return undefined;
  if (!p.includes('%')) return p;
  try {
    // Decode per segment so an encoded '/' (%2F) stays inside its segment.
    return p
      .split('/')
      .map((s) => (s.includes('%') ? decodeURIComponent(s).replace(/\//g, '\u2215') : s))
      .join('/');
  } catch {
    return undefined;
  }
}
