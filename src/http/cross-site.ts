// The HTTP pipeline's refusal of cross-site requests (docs/rest-api.md "Cross-site requests").
//
// A browser attaches what it holds for the device (cached BASIC credentials, a session cookie) to
// any request a page makes it send, whatever site that page came from: a form on another site can
// POST a multipart upload or an empty body to the device, and neither needs a JSON content type
// nor a script. Browsers say where such a request comes from, so the device can tell its own pages
// from another site's:
//
// - `Sec-Fetch-Site` (the W3C's Fetch Metadata Request Headers): `same-origin` (the device's own
//   page), `none` (the user typed the address or used a bookmark), `same-site` (another port or
//   another host of the same site) or `cross-site`;
// - `Origin` (RFC 6454 §7; the Fetch standard sends it with every request but GET and HEAD): the
//   page's scheme, host and port, or `null` for a page without one (a sandboxed frame, a `data:`
//   URL, a redirect across origins).
//
// A request that changes state (any method but the safe ones, RFC 9110 §9.2.1) and carries either
// mark of another origin is refused here with 403, before any authentication runs: no credentials
// are checked, no session is touched, no failed login is counted. A client that sends neither
// header (curl, a SCADA poller, Kura's own tools) is not a browser and is not affected.

import { HttpError, type RequestContext } from './context.js';

export const CROSS_SITE_REFUSED = 'Cross-site request refused';

/** The pipeline stage (src/daemon.ts puts it before authentication). */
export function refuseCrossSite(ctx: RequestContext): void {
  const method = ctx.method;
  if (method === 'GET' || method === 'HEAD' || method === 'OPTIONS') return;
  if (!markedCrossSite(ctx)) return;
  // The answer is the refusal itself: the response filters turn a 403 without a principal into a
  // 401 with a Basic challenge, which would make the browser ask its user for the password.
  ctx.unfiltered = true;
  throw new HttpError(403, CROSS_SITE_REFUSED);
}

/** Whether the browser says this request comes from a page of another origin than the device's own. */
export function markedCrossSite(ctx: RequestContext): boolean {
  const site = ctx.header('sec-fetch-site');
  // Only the two values that mean "this origin, or nobody's page" pass; an unknown value (or the
  // header sent twice, which Node joins) is treated as another site's.
  if (site !== undefined && site !== 'same-origin' && site !== 'none') return true;
  const origin = ctx.header('origin');
  return origin !== undefined && !sameOrigin(origin, ctx.header('host'), ctx.listener.secure);
}

/**
 * Whether `origin` (a serialised origin, RFC 6454 §6.2) is the origin the request was sent to: the
 * listener's scheme and the request's `Host` (RFC 9110 §7.2), host names compared without regard to
 * case and the scheme's default port written or not. `null` is never the device's own.
 */
export function sameOrigin(origin: string, host: string | undefined, secure: boolean): boolean {
  if (host === undefined || host === '') return false;
  const scheme = secure ? 'https://' : 'http://';
  if (origin.length <= scheme.length || origin.slice(0, scheme.length).toLowerCase() !== scheme) return false;
  return withoutDefaultPort(origin.slice(scheme.length).toLowerCase(), secure) === withoutDefaultPort(host.toLowerCase(), secure);
}

function withoutDefaultPort(authority: string, secure: boolean): string {
  const port = secure ? ':443' : ':80';
  return authority.endsWith(port) ? authority.slice(0, -port.length) : authority;
}
