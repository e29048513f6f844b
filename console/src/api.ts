// The console's only way to the gateway: its public REST APIs, with the session cookie (HttpOnly,
// never visible here) and the XSRF token (kept in memory only, never in browser storage).
// Every call says it is a script (`X-Requested-With`), so a 401 never opens the browser's own
// login dialog; a 401 anywhere hands control back to the login view.

export class ApiError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

let token = '';
let onUnauthorized: (e: ApiError) => void = () => {};

export const setToken = (t: string): void => void (token = t);
export const setUnauthorizedHandler = (fn: (e: ApiError) => void): void => void (onUnauthorized = fn);

function headers(json: boolean): Record<string, string> {
  const h: Record<string, string> = { 'X-Requested-With': 'XMLHttpRequest' };
  if (token) h['X-XSRF-Token'] = token;
  if (json) h['Content-Type'] = 'application/json';
  return h;
}

function errorOf(status: number, text: string): ApiError {
  let msg = text;
  try {
    const j = JSON.parse(text);
    if (j && typeof j.message === 'string') msg = j.message;
    else if (j && typeof j.error === 'string') msg = j.error; // the drivers family's errors
  } catch {
    // text/plain error bodies (assets, deploy) are the message
  }
  return new ApiError(status, msg || (status === 403 ? 'Forbidden' : status === 404 ? 'Not found' : `HTTP ${status}`));
}

export interface CallOptions {
  /** A 401 is the caller's business (login forms), not a session end. */
  own401?: boolean;
}

export async function call<T = any>(method: string, path: string, body?: unknown, o: CallOptions = {}): Promise<T> {
  let r: Response;
  try {
    r = await fetch(path, {
      method,
      headers: headers(body !== undefined),
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body), // a string is JSON text already
      credentials: 'same-origin',
      cache: 'no-store',
    });
  } catch {
    throw new ApiError(0, 'The gateway cannot be reached. Check the network connection and try again.');
  }
  const text = await r.text();
  if (!r.ok) {
    const e = errorOf(r.status, text);
    if (r.status === 401 && !o.own401) onUnauthorized(e);
    throw e;
  }
  return (text ? parse(text) : undefined) as T;
}

/**
 * JSON where an integer beyond 2^53 (a LONG channel value) keeps its exact digits as a string,
 * in browsers that hand the reviver the source text; elsewhere it is the nearest double. Only a
 * text with a run of 16 digits can hold one (2^53 has 16): the others skip the reviver, which
 * makes parsing a large answer (an asset's definition, 2 MB for 500 channels) several times slower.
 */
const parse = (text: string): unknown =>
  /\d{16}/.test(text)
    ? JSON.parse(text, ((_k: string, v: unknown, ctx?: { source?: string }) => (typeof v === 'number' && !Number.isSafeInteger(v) && ctx?.source && /^-?\d+$/.test(ctx.source) ? ctx.source : v)) as never)
    : JSON.parse(text);

/** A call whose body and answer are text of their own type (the channels CSV): the answer's text. */
export async function callText(method: string, path: string, body?: string, contentType = 'text/csv'): Promise<string> {
  const h = headers(false);
  if (body !== undefined) h['Content-Type'] = contentType;
  let r: Response;
  try {
    r = await fetch(path, { method, headers: h, body, credentials: 'same-origin', cache: 'no-store' });
  } catch {
    throw new ApiError(0, 'The gateway cannot be reached. Check the network connection and try again.');
  }
  const text = await r.text();
  if (!r.ok) {
    const e = errorOf(r.status, text);
    if (r.status === 401) onUnauthorized(e);
    throw e;
  }
  return text;
}

export const get = <T = any>(path: string, o?: CallOptions) => call<T>('GET', path, undefined, o);
export const post = <T = any>(path: string, body?: unknown, o?: CallOptions) => call<T>('POST', path, body ?? {}, o);

/** A multipart upload with progress (fetch has no upload progress). */
export function upload(path: string, form: FormData, progress: (sent: number, total: number) => void): Promise<any> {
  return new Promise((resolve, reject) => {
    const x = new XMLHttpRequest();
    x.open('POST', path);
    for (const [k, v] of Object.entries(headers(false))) x.setRequestHeader(k, v);
    x.upload.onprogress = (e) => progress(e.loaded, e.total);
    x.onerror = () => reject(new ApiError(0, 'The upload was interrupted: the gateway cannot be reached.'));
    x.onload = () => {
      if (x.status >= 200 && x.status < 300) return resolve(x.responseText ? parse(x.responseText) : undefined);
      const e = errorOf(x.status, x.responseText);
      if (x.status === 401) onUnauthorized(e);
      reject(e);
    };
    x.send(form);
  });
}

export const S = '/services/session/v1';
export const A = '/services/assets';
export const D = '/services/deploy/v2';
export const I = '/services/identity/v1';
export const SYS = '/services/system/v1';
export const DRV = '/services/drivers';
