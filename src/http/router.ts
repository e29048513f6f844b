// A small router in the manner of trouter/polka: routes are (method, pattern) pairs, patterns are
// split into segments once, `find()` is one indexed loop. It knows nothing of Kura: what a 404/405
// looks like is decided by whoever serves the match result.

export type Params = Record<string, string>;

interface Route<H> {
  method: string;
  segments: string[]; // ':name' for a parameter
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
  private routes: Route<H>[] = [];

  add(method: string, pattern: string, handler: H): this {
    this.routes.push({ method: method.toUpperCase(), segments: split(pattern), handler });
    return this;
  }

  /**
   * Finds the route for `method` and the (already percent-decoded per segment) `path`.
   * Literal segments win over parameters at the same position (`/_read` before `/:pid`).
   */
  find(method: string, path: string): Match<H> {
    const segs = split(path);
    // As JAX-RS does: the most specific path template wins first (literal segments, leftmost
    // first), and only then is the method matched. So `DELETE /deploy/v2/_install` is 405 (the
    // `_install` resource has no DELETE), not "uninstall a package named _install".
    let bestScore = -1;
    let candidates: { route: Route<H>; params: Params }[] = [];
    for (let i = 0; i < this.routes.length; i++) {
      const r = this.routes[i];
      if (r.segments.length !== segs.length) continue;
      let score = 0;
      let ok = true;
      const params: Params = Object.create(null);
      for (let j = 0; j < segs.length; j++) {
        const s = r.segments[j];
        if (s.charCodeAt(0) === 58 /* ':' */) {
          params[s.slice(1)] = segs[j];
        } else if (s === segs[j]) {
          score += 1 << (segs.length - j);
        } else {
          ok = false;
          break;
        }
      }
      if (!ok || score < bestScore) continue;
      if (score > bestScore) {
        bestScore = score;
        candidates = [];
      }
      candidates.push({ route: r, params });
    }
    if (candidates.length === 0) return { kind: 'not-found' };
    const exact = candidates.find((c) => c.route.method === method) ?? (method === 'HEAD' ? candidates.find((c) => c.route.method === 'GET') : undefined);
    if (exact) return { kind: 'found', handler: exact.route.handler, params: exact.params };
    return { kind: 'method-not-allowed', allowed: [...new Set(candidates.map((c) => c.route.method))] };
  }
}

/** Splits a raw request target into a decoded path segment list; undefined when undecodable. */
export function decodePath(rawUrl: string): string | undefined {
  const q = rawUrl.indexOf('?');
  const p = q >= 0 ? rawUrl.slice(0, q) : rawUrl;
  if (p.charCodeAt(0) !== 47 /* '/' */) return undefined;
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
