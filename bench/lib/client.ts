// The benchmark's own HTTP(S) client: keep-alive requests, Kura session login (cookie + XSRF
// token, docs/rest-api.md "session/v1") and BASIC credentials.

import http from 'node:http';
import https from 'node:https';

export interface Target {
  port: number;
  tls?: boolean;
}

export interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

const agents = { http: new http.Agent({ keepAlive: true, maxSockets: 64 }), https: new https.Agent({ keepAlive: true, maxSockets: 64, rejectUnauthorized: false }) };

export function request(t: Target, path: string, opts: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Reply> {
  const mod = t.tls ? https : http;
  return new Promise((resolve, reject) => {
    const req = mod.request(
      { host: '127.0.0.1', port: t.port, path, method: opts.method ?? 'GET', headers: opts.headers, agent: t.tls ? agents.https : agents.http, servername: t.tls ? 'localhost' : undefined },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      },
    );
    req.setTimeout(30_000, () => req.destroy(new Error(`${path} timed out`)));
    req.on('error', reject);
    req.end(opts.body);
  });
}

export interface SessionAuth {
  cookie: string;
  xsrf: string;
}

/**
 * Logs in with a password and fetches the XSRF token. Undefined when the session API answers 404
 * (not wired into the daemon yet); throws on any other failure.
 */
export async function login(t: Target, username: string, password: string): Promise<SessionAuth | undefined> {
  const r = await request(t, '/services/session/v1/login/password', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username, password }),
  });
  if (r.status === 404) return undefined;
  if (r.status !== 200) throw new Error(`login as ${username}: HTTP ${r.status} ${r.body.toString().slice(0, 200)}`);
  const setCookie = ([] as string[]).concat(r.headers['set-cookie'] ?? []);
  const m = setCookie.map((c) => /^(JSESSIONID=[^;]*)/.exec(c)).find((x) => x);
  if (!m) throw new Error(`login as ${username}: no JSESSIONID cookie`);
  const cookie = m[1];
  const x = await request(t, '/services/session/v1/xsrfToken', { headers: { cookie } });
  if (x.status !== 200) throw new Error(`xsrfToken: HTTP ${x.status}`);
  const xsrf = JSON.parse(x.body.toString()).xsrfToken;
  if (typeof xsrf !== 'string') throw new Error('xsrfToken: no token in the answer');
  return { cookie, xsrf };
}

export function sessionHeaders(s: SessionAuth): Record<string, string> {
  return { Cookie: s.cookie, 'X-XSRF-Token': s.xsrf };
}

export function basicHeaders(user: string, pass: string): Record<string, string> {
  return { Authorization: `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}` };
}

/** Runs `total` requests with `concurrency` in flight; throws at the first non-200. */
export async function hammer(total: number, concurrency: number, one: (i: number) => Promise<Reply>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < total) {
      const i = next++;
      const r = await one(i);
      if (r.status !== 200) throw new Error(`request ${i}: HTTP ${r.status} ${r.body.toString().slice(0, 200)}`);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}
