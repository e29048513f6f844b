// HTTP plumbing for the harness: keep-alive agents, a request with a hard deadline (a missing answer
// is a hang, not a slow success), session logins, and latency percentiles.

import http from 'node:http';

const MAX_KEEP = 16 << 20;

export function agent(maxSockets = 32, localAddress) {
  return new http.Agent({ keepAlive: true, maxSockets, localAddress });
}

/**
 * One request. Resolves `{status, headers, body}`; `{status: 0, error}` when the connection failed,
 * `{status: -1}` when no answer came within `timeoutMs` (a hang).
 */
export function send(port, req, ag, timeoutMs = 15_000) {
  return new Promise((resolve) => {
    let done = false;
    const finish = (r) => {
      if (!done) {
        done = true;
        clearTimeout(timer);
        resolve(r);
      }
    };
    let r;
    try {
      r = http.request({ host: '127.0.0.1', port, method: req.method, path: req.path, headers: req.headers, agent: ag, insecureHTTPParser: false }, (res) => {
        const chunks = [];
        let size = 0;
        res.on('data', (c) => {
          size += c.length;
          if (size <= MAX_KEEP) chunks.push(c);
        });
        res.on('end', () => finish({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString('utf8'), truncated: size > MAX_KEEP }));
        res.on('error', (err) => finish({ status: 0, error: err.message }));
      });
    } catch (err) {
      // The client library refused the request itself (e.g. an invalid header character).
      return resolve({ status: 0, error: `client refused: ${err.code ?? err.message}`, refused: true });
    }
    const timer = setTimeout(() => {
      finish({ status: -1, error: 'no answer (hang)' });
      r.destroy();
    }, timeoutMs);
    // `reused`: the request went out on a kept-alive socket (the server may have closed it meanwhile).
    r.on('error', (err) => finish({ status: 0, error: err.code ?? err.message, message: err.message, reused: r.reusedSocket }));
    if (req.stream) req.stream(r);
    else r.end(req.body);
  });
}

export function cookieOf(res) {
  for (const c of res.headers['set-cookie'] ?? []) {
    const m = /^JSESSIONID=([^;]*)/.exec(c);
    if (m) return m[1];
  }
  return undefined;
}

/** Logs in with a password and fetches the XSRF token: headers for later requests. */
export async function loginHeaders(port, user, password, ag) {
  const r = await send(port, { method: 'POST', path: '/services/session/v1/login/password', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username: user, password }) }, ag);
  const cookie = cookieOf(r);
  if (r.status !== 200 || !cookie) throw new Error(`login ${user}: ${r.status} ${r.body ?? r.error}`);
  const t = await send(port, { method: 'GET', path: '/services/session/v1/xsrfToken', headers: { cookie: `JSESSIONID=${cookie}` } }, ag);
  if (t.status !== 200) throw new Error(`xsrfToken: ${t.status}`);
  return { cookie: `JSESSIONID=${cookie}`, 'x-xsrf-token': JSON.parse(t.body).xsrfToken };
}

export function percentile(values, p) {
  if (values.length === 0) return NaN;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Deterministic PRNG (mulberry32): a failing case can be replayed from its seed. */
export function rng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const r = {
    next,
    int: (n) => Math.floor(next() * n),
    pick: (arr) => arr[Math.floor(next() * arr.length)],
    chance: (p) => next() < p,
    bytes: (n) => {
      const b = Buffer.alloc(n);
      for (let i = 0; i < n; i++) b[i] = Math.floor(next() * 256);
      return b;
    },
  };
  return r;
}
