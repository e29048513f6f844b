// Logged-in clients for tests: `login(d, user, password)` opens a session (login/password, then
// xsrfToken) and returns a client that sends the cookie and `X-XSRF-Token` on every request;
// `basic(d, user, password)` sends BASIC credentials instead; `certificateLogin` logs in with a
// client certificate on a client-auth port. `Browser` is the cookie jar underneath, for tests that
// need to control each step (no token, stale cookie, ...).
//
//     const c = await login(d, 'operator', 'secret123');
//     const r = await c.request('/services/assets/demo/_read');

import type { Daemon, RequestOptions, Response } from './daemon.js';

export interface Client {
  request(path: string, opts?: RequestOptions): Promise<Response>;
}

/** A cookie jar bound to a daemon; `defaults` (port, tls, cert, key, ca) apply to every request. */
export class Browser implements Client {
  readonly cookies = new Map<string, string>();
  headers: Record<string, string> = {};

  constructor(
    readonly d: Daemon,
    readonly defaults: RequestOptions = {},
  ) {}

  async request(path: string, opts: RequestOptions = {}): Promise<Response> {
    const headers: Record<string, string> = { accept: 'application/json', ...this.headers, ...opts.headers };
    if (this.cookies.size > 0 && headers.cookie === undefined) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const r = await this.d.request(path, { ...this.defaults, ...opts, headers });
    const set = r.headers['set-cookie'] ?? [];
    for (const c of set) {
      const [pair, ...attrs] = c.split(';');
      const i = pair.indexOf('=');
      const name = pair.slice(0, i).trim();
      const value = pair.slice(i + 1).trim();
      if (attrs.some((a) => /^\s*max-age=0\s*$/i.test(a))) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return r;
  }

  get sessionId(): string | undefined {
    return this.cookies.get('JSESSIONID');
  }

  loginPassword(username: string, password: string): Promise<Response> {
    return this.request('/services/session/v1/login/password', { method: 'POST', body: { username, password } });
  }

  /** Fetches the XSRF token and sends it on every later request (as Kura's RestTransport does). */
  async fetchToken(): Promise<string> {
    const r = await this.request('/services/session/v1/xsrfToken');
    if (r.status !== 200) throw new Error(`xsrfToken answered ${r.status} ${r.body}`);
    const token = r.json().xsrfToken as string;
    this.headers['x-xsrf-token'] = token;
    return token;
  }
}

/** Logs in with a password and fetches the XSRF token; throws when either step fails. */
export async function login(d: Daemon, user: string, password: string, defaults: RequestOptions = {}): Promise<Browser> {
  const b = new Browser(d, defaults);
  const r = await b.loginPassword(user, password);
  if (r.status !== 200) throw new Error(`login as ${user} answered ${r.status} ${r.body}`);
  await b.fetchToken();
  return b;
}

/** Logs in with a client certificate on a client-auth port and fetches the XSRF token. */
export async function certificateLogin(d: Daemon, cert: { cert: string; key: string }, port = d.ports.clientAuth[0]): Promise<Browser> {
  const b = new Browser(d, { port, tls: true, cert: cert.cert, key: cert.key });
  const r = await b.request('/services/session/v1/login/certificate', { method: 'POST' });
  if (r.status !== 200) throw new Error(`certificate login answered ${r.status} ${r.body}`);
  await b.fetchToken();
  return b;
}

/** A client that sends BASIC credentials on every request (no session, no token). */
export function basic(d: Daemon, user: string, password: string, defaults: RequestOptions = {}): Client {
  const auth = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
  return {
    request: (path, opts = {}) => d.request(path, { ...defaults, ...opts, headers: { authorization: auth, ...opts.headers } }),
  };
}
