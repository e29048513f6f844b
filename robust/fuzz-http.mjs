// Part 1: bad input over HTTP. Generated requests (seeded, so any case can be replayed) — mutated
// methods and paths, hostile headers, cookies, XSRF tokens and credentials, JSON bodies (deep
// nesting, huge numbers, wrong types, invalid UTF-8, truncation), multipart uploads (no file part,
// wrong or missing boundary, truncated, endless), and raw malformed HTTP on its own sockets. Every
// answer must be a 4xx or a well-formed 2xx; a 5xx, a hang or a dead process is a failure.

import net from 'node:net';
import { startDaemon } from './lib/daemon.mjs';
import { agent, loginHeaders, rng, send, sleep } from './lib/http.mjs';

const FUZZER_PW = 'Fuzz-3r-secret!';

export function fuzzConfig(extra = {}) {
  return {
    // Default throttling: a flood of wrong passwords costs no scrypt once an address is throttled.
    rest: { 'login.throttle.max.delay': 5000 },
    identities: {
      fuzzer: { password: FUZZER_PW, permissions: ['kura.admin'], passwordChangeNeeded: false },
      admin: { password: 'Admin-pw-123', permissions: ['kura.admin'], passwordChangeNeeded: false },
      operator: { password: 'Operator-pw-1', permissions: ['rest.assets'], passwordChangeNeeded: true },
    },
    deploy: { 'marketplace.url': 'http://127.0.0.1:9', 'upload.max.bytes': 256 * 1024, 'download.timeout': 2000, 'file.allowed.dirs': ['/nonexistent-gw-robust'] },
    drivers: { sim: { factory: 'simulator' } },
    assets: {
      demo: {
        'driver.pid': 'sim',
        channels: {
          temperature: { type: 'READ', 'value.type': 'DOUBLE', simulation: 'sine', unit: 'C' },
          counter: { type: 'READ', 'value.type': 'LONG', simulation: 'counter' },
          setpoint: { type: 'READ_WRITE', 'value.type': 'INTEGER', simulation: 'memory' },
          label: { type: 'READ_WRITE', 'value.type': 'STRING', simulation: 'memory' },
          flag: { type: 'READ_WRITE', 'value.type': 'BOOLEAN', simulation: 'memory' },
          blob: { type: 'READ_WRITE', 'value.type': 'BYTE_ARRAY', simulation: 'memory' },
        },
      },
    },
    ...extra,
  };
}

const S = '/services/session/v1';
const ROUTES = [
  ['POST', `${S}/login/password`, 'login'],
  ['POST', `${S}/login/certificate`, 'none'],
  ['GET', `${S}/xsrfToken`, 'none'],
  ['POST', `${S}/logout`, 'none'],
  ['POST', `${S}/changePassword`, 'change'],
  ['GET', `${S}/currentIdentity`, 'none'],
  ['GET', `${S}/authenticationInfo`, 'none'],
  ['GET', '/services/identity/v1/passwordRequirements', 'none'],
  ['GET', '/services/identity/v1/definedPermissions', 'none'],
  ['GET', '/services/identity/v1/identities', 'none'],
  ['POST', '/services/identity/v1/identities/byName', 'identity'],
  ['POST', '/services/identity/v1/identities', 'identity'],
  ['PUT', '/services/identity/v1/identities', 'identity'],
  ['DELETE', '/services/identity/v1/identities', 'identity'],
  ['GET', '/services/deploy/v2/', 'none'],
  ['GET', '/services/deploy/v2/_jobs', 'none'],
  ['POST', '/services/deploy/v2/_install', 'url'],
  ['POST', '/services/deploy/v2/_upload', 'multipart'],
  ['DELETE', '/services/deploy/v2/{name}', 'none'],
  ['PUT', '/services/deploy/v2/_packageDescriptor', 'url'],
  ['GET', '/services/assets', 'none'],
  ['GET', '/services/assets/{pid}', 'none'],
  ['GET', '/services/assets/{pid}/_read', 'none'],
  ['POST', '/services/assets/{pid}/_read', 'read'],
  ['POST', '/services/assets/{pid}/_write', 'write'],
  ['GET', '/services/inventory/v1/inventory', 'none'],
  ['GET', '/services/inventory/v1/bundles', 'none'],
  ['GET', '/services/inventory/v1/systemPackages', 'none'],
  ['POST', '/services/inventory/v1/bundles/_start', 'bundle'],
  ['POST', '/services/inventory/v1/bundles/_stop', 'bundle'],
];
const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'HEAD', 'OPTIONS', 'TRACE', 'PROPFIND', 'MKCOL', 'SEARCH', 'PURGE'];
const NAMES = ['admin', 'operator', 'nobody', 'demo', 'temperature', 'setpoint', 'label', 'flag', 'blob', 'counter', '', ' ', '..', '../..', '%00', '\u0000', 'a'.repeat(300), 'é', '😀', '\ud800', '__proto__', 'constructor', 'toString'];
const TYPES = ['INTEGER', 'LONG', 'FLOAT', 'DOUBLE', 'BOOLEAN', 'STRING', 'BYTE_ARRAY', 'integer', 'VOID', '', 42];
const NUMBERS = ['0', '-0', '1e400', '-1e400', '1e-400', '123456789012345678901234567890', '9007199254740993', '-9223372036854775809', '18446744073709551616', '2147483648', '-2147483649', '3.4028236e38', '0.1e1', '1E+2', '00', '-', '1.', '.5', 'NaN', 'Infinity', '0x10'];

/** Random JSON-ish text: mostly valid JSON of the wrong shape, sometimes not JSON at all. */
function randomValue(r, depth = 0) {
  const k = r.int(depth > 3 ? 6 : 10);
  switch (k) {
    case 0: return r.pick(NUMBERS);
    case 1: return JSON.stringify(r.pick(NAMES));
    case 2: return r.pick(['true', 'false', 'null']);
    case 3: return JSON.stringify(r.pick(TYPES));
    case 4: return JSON.stringify(String.fromCharCode(...Array.from({ length: r.int(40) }, () => r.int(0xffff))));
    case 5: return `"${'\\u' + r.pick(['d800', 'dfff', '0000', '001f', 'zzzz', '12'])}"`;
    case 6: return `[${Array.from({ length: r.int(4) }, () => randomValue(r, depth + 1)).join(',')}]`;
    default: {
      const keys = ['name', 'channels', 'type', 'value', 'url', 'username', 'password', 'userName', 'permissions', 'currentPassword', 'newPassword', 'passwordAuthEnabled', 'passwordChangeNeeded', '__proto__', 'constructor', ''];
      return `{${Array.from({ length: r.int(5) }, () => `${JSON.stringify(r.pick(keys))}:${randomValue(r, depth + 1)}`).join(',')}}`;
    }
  }
}

/** A plausible body for a route, before mutation. */
function exampleBody(r, kind) {
  switch (kind) {
    case 'login': return { username: r.pick(['fuzzer', 'admin', 'operator', 'nobody']), password: r.pick(['wrong', '', 'x'.repeat(2000), 'Admin-pw-12']) };
    case 'change': return { currentPassword: r.pick(['wrong', '', null]), newPassword: r.pick(['short', 'Long-enough-pw-1', '', 7]) };
    case 'identity': return { userName: r.pick(NAMES), password: r.pick(['weak', 'Str0ng-pw-long!', '', null]), permissions: r.pick([['rest.assets'], ['kura.admin'], [], ['bad perm'], 'rest.assets']), passwordAuthEnabled: r.pick([true, false, 'yes']), passwordChangeNeeded: r.pick([true, false, 1]) };
    case 'url': return { url: r.pick(['', 'http://127.0.0.1:9/x.dp', 'file:/etc/passwd', 'file:/nonexistent-gw-robust/../etc/shadow', 'ftp://x', 'javascript:alert(1)', 'https://marketplace.eclipse.org/content/x', 'http://[::1', '\u0000', 42]) };
    case 'bundle': return { name: r.pick(['org.eclipse.kura.gatewayd', ...NAMES, 7, null]), version: r.pick([undefined, '0.1.0', '', 1, null]) };
    case 'read': return { channels: Array.from({ length: r.int(4) }, () => r.pick(NAMES)) };
    case 'write': return { channels: Array.from({ length: r.int(4) }, () => ({ name: r.pick(NAMES), type: r.pick(TYPES), value: r.pick([10, '10', 'x', true, null, 1e308, '1e400', 'AAEC', [], {}, -1, 2147483648]) })) };
    default: return r.chance(0.5) ? {} : [];
  }
}

/** Mutations of JSON text at the byte level. */
function mutateJson(r, text) {
  const b = Buffer.from(text, 'utf8');
  switch (r.int(12)) {
    case 0: return b.subarray(0, r.int(b.length + 1)); // truncated
    case 1: {
      const i = r.int(b.length + 1);
      return Buffer.concat([b.subarray(0, i), r.bytes(1 + r.int(4)), b.subarray(i)]); // random (often invalid UTF-8) bytes
    }
    case 2: return Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), b]); // BOM
    case 3: return Buffer.from(text.replace(/"/g, "'")); // Kura's lenient quotes
    case 4: {
      const n = r.chance(0.1) ? r.pick([100_000, 500_000]) : r.pick([100, 1000, 10_000]);
      return Buffer.from('['.repeat(n) + ']'.repeat(r.chance(0.5) ? n : r.int(n))); // deep nesting
    }
    case 5: {
      const n = r.pick([100, 1000, 50_000]);
      return Buffer.from('{"a":'.repeat(n) + '1' + '}'.repeat(n));
    }
    case 6: return Buffer.from(text + r.pick([' x', '}', ',', '\u0000', '/*c*/', ' ']));
    case 7: return Buffer.from(r.pick(['', ' ', '\n', 'null', '[]', '{}', '""', '0', 'true', '[null]', '{"channels":null}']));
    case 8: return Buffer.from(randomValue(r));
    case 9: return Buffer.concat([b, Buffer.from([0xc3]), Buffer.from([0xff, 0xfe])]);
    case 10: return Buffer.from(`{"channels":[${Array.from({ length: r.chance(0.1) ? 20_000 : 1000 }, (_, i) => `"c${i}"`).join(',')}]}`);
    default: return b;
  }
}

// Lone surrogates cannot be percent-encoded as UTF-8: send the bytes Java would (CESU-8-like).
const enc = (s) => {
  try {
    return encodeURIComponent(s);
  } catch {
    return '%ED%A0%80';
  }
};

function mutatePath(r, p) {
  const pid = r.pick(['demo', 'nope', '..', '%2e%2e', 'demo%2F..', '%00', '%zz', 'a'.repeat(r.pick([10, 3000])), '%E2%80%AE', '😀', '%ff%fe', 'demo;jsessionid=x', '']);
  let s = p.replace('{pid}', pid).replace('{name}', r.pick(NAMES.map(enc).concat(['%', '%2', '..%2F..', '_install', '_upload'])));
  switch (r.int(10)) {
    case 0: return s + '/';
    case 1: return s.replace(/\//g, '//');
    case 2: return s + '?' + r.pick(['a=1', 'x=%zz', '%%%', 'a'.repeat(4000), '']);
    case 3: return s + '#frag';
    case 4: return s.toUpperCase();
    case 5: return s.replace('/services', r.pick(['/services/..', '/./services', '/%73ervices', '/services%2F', '/SERVICES']));
    case 6: return s + '/' + enc(r.pick(NAMES));
    case 7: return s + r.pick(['/_read/_read', '/..', '/.', '%20', '%09']);
    default: return s;
  }
}

const CTYPES = ['application/json', 'application/json; charset=utf-8', 'application/json; charset=latin1', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data', 'application/problem+json', 'APPLICATION/JSON', 'application/json;;;', '', '*/*', 'application/json; boundary=x'];

function hostileHeaders(r, auth, headers) {
  const h = { ...headers };
  switch (r.int(9)) {
    case 0: h.cookie = `JSESSIONID=${r.pick(['', 'x', '"quoted"', 'a'.repeat(5000), auth.cookie.slice(11) + 'x', '%00'])}`; break;
    case 1: h.cookie = `${auth.cookie}; ${Array.from({ length: r.int(200) }, (_, i) => `c${i}=${i}`).join('; ')}`; break;
    case 2: h['x-xsrf-token'] = r.pick(['', 'x', auth['x-xsrf-token'].toUpperCase(), 'a'.repeat(8000), '00000000-0000-0000-0000-000000000000']); h.cookie = auth.cookie; break;
    case 3: h.authorization = r.pick(['Basic', 'Basic ', 'Basic !!!', `Basic ${Buffer.from('fuzzer').toString('base64')}`, `Basic ${Buffer.from('fuzzer:wrong').toString('base64')}`, `Basic ${Buffer.from(':').toString('base64')}`, 'Bearer x', 'basic ' + Buffer.from(`fuzzer:${FUZZER_PW}`).toString('base64'), `Basic ${'A'.repeat(12000)}`, `Basic ${Buffer.from('\u0000:\u0000').toString('base64')}`]); break;
    case 4: h['content-type'] = r.pick(CTYPES); break;
    case 5: h['content-length'] = r.pick(['abc', '-1', '99999999999999999999']); break;
    case 6: h['x-forwarded-for'] = r.pick(['1.2.3.4', '::1, 10.0.0.1', 'x'.repeat(3000)]); h.host = r.pick(['evil', '', 'a'.repeat(300)]); break;
    case 7: h['transfer-encoding'] = r.pick(['gzip', 'identity', 'chunked, gzip']); break;
    default: h['x-' + 'a'.repeat(r.int(50))] = r.pick(['1', 'é', '\t']); break;
  }
  return h;
}

function multipartBody(r) {
  const boundary = `gw${r.int(1e9)}`;
  const file = r.chance(0.5) ? r.bytes(r.int(3000)) : Buffer.from('PK\u0003\u0004' + 'x'.repeat(r.int(100)));
  const part = (name, filename, data) => Buffer.concat([Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"${filename !== undefined ? `; filename="${filename}"` : ''}\r\nContent-Type: application/octet-stream\r\n\r\n`), data, Buffer.from('\r\n')]);
  const end = Buffer.from(`--${boundary}--\r\n`);
  const ct = `multipart/form-data; boundary=${boundary}`;
  switch (r.int(8)) {
    case 0: return { ct, body: Buffer.concat([part('file', 'p.dp', file), end]) }; // well-formed: 200, the job fails later
    case 1: return { ct, body: Buffer.concat([part('other', undefined, Buffer.from('x')), end]) }; // no file part
    case 2: return { ct: 'multipart/form-data', body: Buffer.concat([part('file', 'p.dp', file), end]) }; // no boundary
    case 3: return { ct: `multipart/form-data; boundary=zz${boundary}`, body: Buffer.concat([part('file', 'p.dp', file), end]) };
    case 4: return { ct, body: part('file', 'p.dp', file).subarray(0, r.int(200)) }; // truncated
    case 5: return { ct, endless: true, boundary }; // a part that never ends: streamed past the upload limit
    case 6: return { ct, body: Buffer.concat([...Array.from({ length: 60 }, (_, i) => part(`f${i}`, undefined, Buffer.from('v'))), part('file', '../../../etc/passwd', file), end]) };
    default: return { ct, body: Buffer.concat([Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="x\r\n`), r.bytes(200), end]) };
  }
}

/** Raw HTTP, written on its own socket: malformed request lines, smuggling attempts, pipelining. */
export function rawCase(r, auth) {
  const valid = `GET /services/assets HTTP/1.1\r\nHost: x\r\nCookie: ${auth.cookie}\r\nX-XSRF-Token: ${auth['x-xsrf-token']}\r\n\r\n`;
  switch (r.int(12)) {
    case 0: return r.bytes(1 + r.int(300));
    case 1: return Buffer.from(`${r.pick(['GET', 'get', 'G ET', 'GET\t', 'FOO'])} ${r.pick(['/services/assets', '*', 'http://evil/services/assets', '', '/ /'])} ${r.pick(['HTTP/1.1', 'HTTP/1.0', 'HTTP/9.9', 'HTTP/1', 'http/1.1', ''])}\r\nHost: x\r\n\r\n`);
    case 2: return Buffer.from(`POST /services/session/v1/login/password HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 10\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`);
    case 3: return Buffer.from(`POST /services/session/v1/login/password HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n${r.pick(['zz', 'fffffffffffffffff', '-1', '5;x=y'])}\r\n{"a":1}\r\n0\r\n\r\n`);
    case 4: return Buffer.from(`GET /services/assets HTTP/1.1\r\nHost: x\r\nX-Folded: a\r\n b\r\n\r\n`);
    case 5: return Buffer.from(`GET /services/assets HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\nNul: a\u0000b\r\n\r\n`);
    case 6: return Buffer.from(valid + valid + `GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n`); // pipelined
    case 7: return Buffer.from(`POST /services/assets/demo/_read HTTP/1.1\r\nHost: x\r\nCookie: ${auth.cookie}\r\nX-XSRF-Token: ${auth['x-xsrf-token']}\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{"channels":`); // shorter than declared, then EOF
    case 8: return Buffer.from(`GET /services/assets HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`); // 431
    case 9: return Buffer.from(`GET /services/assets HTTP/1.1\r\n${Array.from({ length: 3000 }, (_, i) => `H${i}: v`).join('\r\n')}\r\n\r\n`);
    case 10: return Buffer.from(`GET /services/assets HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab`);
    default: return Buffer.from(`GET /${'%'.repeat(r.int(100))} HTTP/1.1\r\nHost: x\r\n\r\n`);
  }
}

export function rawSend(port, bytes, timeoutMs = 15_000) {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port });
    const chunks = [];
    let settled = false;
    const done = (r) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      s.destroy();
      resolve(r);
    };
    const timer = setTimeout(() => done({ statuses: statusesOf(chunks), hang: true }), timeoutMs);
    s.on('data', (c) => chunks.push(c));
    s.on('error', () => done({ statuses: statusesOf(chunks), reset: true }));
    s.on('close', () => done({ statuses: statusesOf(chunks) }));
    s.on('connect', () => s.end(bytes));
  });
}

function statusesOf(chunks) {
  const text = Buffer.concat(chunks).toString('latin1');
  return [...text.matchAll(/HTTP\/1\.[01] (\d{3}) /g)].map((m) => Number(m[1]));
}

/** Is this 2xx well-formed for what was asked? */
function check2xx(res) {
  if (res.status === 204) return res.body === '' ? undefined : 'a 204 with a body';
  const ct = String(res.headers['content-type'] ?? '');
  if (ct.startsWith('application/json') && res.body !== '' && !res.truncated) {
    try {
      JSON.parse(res.body);
    } catch {
      return 'a 2xx whose JSON body does not parse';
    }
  }
  if (res.headers['cache-control'] !== 'no-store') return 'a 2xx without Cache-Control: no-store';
  return undefined;
}

/**
 * Runs `count` generated cases with `concurrency` workers. Returns the table row plus details of the
 * first failures (seed and request) so each can be replayed.
 */
export async function runFuzz({ count = 100_000, concurrency = 48, seed = 9 } = {}) {
  // Secrets the run sends (passwords, cookies, tokens): none may appear in any log line.
  const secrets = new Set([FUZZER_PW, 'Admin-pw-123', 'Operator-pw-1', Buffer.from(`fuzzer:${FUZZER_PW}`).toString('base64')]);
  const leaks = [];
  const d = await startDaemon(fuzzConfig(), {
    onLine: (line) => {
      for (const sec of secrets) if (line.includes(sec) && leaks.length < 5) leaks.push(`${sec.slice(0, 6)}… in ${line.slice(0, 200)}`);
    },
  });
  const port = d.port;
  const ag = agent(concurrency);
  // Control requests get their own connections: a fuzzed request may legitimately get its socket
  // closed by the daemon (a refused body is not read), and a reused socket then resets.
  const ctlAgent = agent(4, '127.0.0.2'); // its own address: not throttled by the fuzz's wrong passwords
  const remember = (a) => {
    secrets.add(a.cookie.slice('JSESSIONID='.length));
    secrets.add(a['x-xsrf-token']);
    return a;
  };
  let auth = remember(await loginHeaders(port, 'fuzzer', FUZZER_PW, ctlAgent));
  const basicAuth = `Basic ${Buffer.from(`fuzzer:${FUZZER_PW}`).toString('base64')}`;
  // Warm up before the first RSS figure (JIT, pools).
  for (let i = 0; i < 200; i++) await send(port, { method: 'GET', path: '/services/assets/demo/_read', headers: auth }, ag);
  const rssBefore = d.rss();
  let rssPeak = rssBefore;
  const stats = { cases: 0, ok2xx: 0, c4xx: 0, c5xx: 0, hangs: 0, resets: 0, bad2xx: 0, redirects: 0, other: 0, raw: 0, refusedByClient: 0, keepAliveRetries: 0, replayed: 0 };
  const failures = [];
  const statusCounts = new Map();
  let next = 0;
  const started = Date.now();

  const record = (kind, caseSeed, desc, detail) => {
    if (failures.length < 20 || (kind !== "control" && failures.filter((f) => f.kind === kind).length < 5)) failures.push({ kind, seed: caseSeed, request: desc.slice(0, 300), detail: String(detail).slice(0, 300) });
  };

  async function one(i) {
    const caseSeed = seed * 1_000_003 + i;
    const r = rng(caseSeed);
    const roll = r.next();
    if (roll < 0.08) {
      stats.raw++;
      const bytes = rawCase(r, auth);
      const res = await rawSend(port, bytes);
      for (const st of res.statuses) statusCounts.set(st, (statusCounts.get(st) ?? 0) + 1);
      if (res.hang) {
        stats.hangs++;
        record('hang', caseSeed, `raw ${JSON.stringify(bytes.subarray(0, 200).toString('latin1'))}`, 'no close within 15 s');
      } else if (res.statuses.some((s) => s >= 500)) {
        stats.c5xx++;
        record('5xx', caseSeed, `raw ${JSON.stringify(bytes.subarray(0, 200).toString('latin1'))}`, res.statuses.join(','));
      } else if (res.reset) stats.resets++;
      // 302 is the console's redirect of `/` to `/console/`, an expected answer.
      else if (res.statuses.some((s) => s < 200 || (s >= 300 && s < 400 && s !== 302))) stats.other++;
      return;
    }
    const [method0, path0, kind] = r.pick(ROUTES);
    let method = method0;
    let path = path0.replace('{pid}', 'demo').replace('{name}', 'nothing');
    let headers = {};
    let body;
    let stream;
    // Authentication: a valid session, BASIC, or none; then hostile headers on top.
    const authRoll = r.next();
    if (authRoll < 0.55) Object.assign(headers, auth);
    else if (authRoll < 0.75) headers.authorization = basicAuth;
    if (kind === 'multipart' && roll < 0.2) {
      const m = multipartBody(r);
      headers['content-type'] = m.ct;
      if (m.endless) {
        const chunk = Buffer.concat([Buffer.from(`--${m.boundary}\r\nContent-Disposition: form-data; name="file"; filename="e.dp"\r\n\r\n`), Buffer.alloc(32 * 1024, 0x41)]);
        stream = (req) => {
          let sent = 0;
          const pump = () => {
            while (sent < 400 * 1024) {
              sent += 32 * 1024;
              if (!req.write(sent === 32 * 1024 ? chunk : Buffer.alloc(32 * 1024, 0x41))) return req.once('drain', pump);
            }
            req.end();
          };
          req.on('error', () => {});
          pump();
        };
      } else body = m.body;
    } else if (roll < 0.55 && kind !== 'none') {
      const text = JSON.stringify(exampleBody(r, kind));
      body = r.chance(0.85) ? mutateJson(r, text) : Buffer.from(text);
      headers['content-type'] = r.chance(0.85) ? 'application/json' : r.pick(CTYPES);
    } else if (roll < 0.75) {
      method = r.chance(0.3) ? r.pick(METHODS) : method;
      path = mutatePath(r, path0);
    } else if (roll < 0.92) {
      headers = hostileHeaders(r, auth, headers);
      if (method !== 'GET' && kind !== 'none' && kind !== 'multipart') {
        body = Buffer.from(JSON.stringify(exampleBody(r, kind)));
        headers['content-type'] ??= 'application/json';
      }
    } else {
      // Control requests: a correct one must get its exact, correct 2xx.
      const ctl = r.int(3);
      const req =
        ctl === 0 ? { method: 'GET', path: '/services/assets', headers: auth }
        : ctl === 1 ? { method: 'POST', path: '/services/assets/demo/_write', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ channels: [{ name: 'setpoint', type: 'INTEGER', value: i % 1000 }] }) }
        : { method: 'GET', path: `${S}/authenticationInfo`, headers: {} };
      let res = await send(port, req, ctlAgent);
      if (res.status === 0) {
        // A kept-alive socket closed without an answer: the keep-alive race every HTTP client knows
        // (the daemon's keepAliveTimeout closed it as we sent, under load). Browsers retry once on a
        // fresh connection; so do we, and count it. Only a failure on a fresh socket is a failure.
        stats.keepAliveRetries++;
        res = await send(port, req, false);
      }
      stats.cases++;
      if (res.status === 401 && ctl < 2) {
        // The fuzz may have logged this session out (POST logout with the valid cookie): log in again.
        auth = await loginHeaders(port, 'fuzzer', FUZZER_PW, ctlAgent).then(remember, () => auth);
        stats.c4xx++;
        return;
      }
      statusCounts.set(res.status, (statusCounts.get(res.status) ?? 0) + 1);
      const ok = res.status === 200 && (ctl !== 0 || res.body.includes('"demo"')) && (ctl !== 1 || res.body.includes(`"value":${i % 1000}`)) && (ctl !== 2 || res.body.includes('passwordAuthenticationEnabled'));
      if (ok) stats.ok2xx++;
      else {
        stats.bad2xx++;
        record("control", caseSeed, `${req.method} ${req.path}`, `${res.status} ${res.body?.slice(0, 200) ?? res.error}`);
      }
      return;
    }
    // A declared length shorter than the body (the rest reads as the next request). Longer ones only
    // on raw sockets that then close: on a kept-alive socket the daemon rightly waits for the rest.
    if (body && body.length > 0 && r.chance(0.05)) headers['content-length'] = String(body.length - 1);
    let res = await send(port, { method, path, headers, body, stream }, ag);
    if (res.status === 0 && !stream) {
      // No answer read: the socket may have been closed by an earlier case on the same kept-alive
      // connection. Replay on a fresh connection so a 5xx cannot hide behind a reset.
      stats.replayed++;
      res = await send(port, { method, path, headers, body }, false);
    }
    if (res.refused) {
      stats.refusedByClient++;
      return;
    }
    stats.cases++;
    statusCounts.set(res.status, (statusCounts.get(res.status) ?? 0) + 1);
    const desc = `${method} ${path} ${JSON.stringify(headers).slice(0, 200)} body=${body ? JSON.stringify(body.subarray(0, 120).toString('latin1')) : stream ? '(endless multipart)' : '-'}`;
    if (res.status === -1) {
      stats.hangs++;
      record('hang', caseSeed, desc, res.error);
    } else if (res.status === 0) stats.resets++;
    else if (res.status >= 500) {
      stats.c5xx++;
      record('5xx', caseSeed, desc, `${res.status} ${res.body}`);
    } else if (res.status >= 400) stats.c4xx++;
    else if (res.status >= 200 && res.status < 300) {
      const bad = method === 'HEAD' ? undefined : check2xx(res);
      if (bad) {
        stats.bad2xx++;
        record('bad 2xx', caseSeed, desc, `${bad}: ${res.status} ${res.body.slice(0, 200)}`);
      } else stats.ok2xx++;
    } else if (res.status === 302 && res.headers.location === '/console/') {
      stats.redirects++; // the console's redirect of `/`
    } else {
      stats.other++;
      record('unexpected status', caseSeed, desc, res.status);
    }
  }

  let lastReport = Date.now();
  async function worker() {
    // Cases the client library refuses to send (invalid header bytes) are replaced by new ones.
    while (next < count + stats.refusedByClient) {
      const i = next++;
      await one(i);
      if (!d.alive()) {
        record('crash', seed * 1_000_003 + i, 'process died after this case', d.errors.at(-1));
        await d.ensureUp();
        auth = remember(await loginHeaders(port, 'fuzzer', FUZZER_PW, ctlAgent));
      }
      if (i % 2000 === 0) rssPeak = Math.max(rssPeak, d.rss());
      if (Date.now() - lastReport > 15_000) {
        lastReport = Date.now();
        process.stderr.write(`  fuzz: ${next}/${count} cases, ${((next / (Date.now() - started)) * 1000).toFixed(0)}/s, rss ${(d.rss() / 1048576).toFixed(1)} MB\n`);
      }
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker));
  const seconds = (Date.now() - started) / 1000;
  await sleep(500);
  const alive = d.alive();
  const rssAfter = d.rss();
  const internalErrors = d.errors.filter((l) => /request failed/.test(l));
  ag.destroy();
  ctlAgent.destroy();
  await d.stop();
  for (const l of leaks) record('secret in a log line', '-', 'log scan', l);
  const failed = stats.c5xx + stats.hangs + stats.bad2xx + stats.other + d.crashes + leaks.length;
  return {
    row: {
      part: '1 bad input over HTTP',
      cases: stats.cases + stats.raw,
      failures: failed,
      http5xx: stats.c5xx,
      crashes: d.crashes,
      lostBytes: 0,
      rssBefore,
      rssAfter,
      rssPeak,
    },
    notes: [
      `${stats.cases} HTTP requests + ${stats.raw} raw-socket cases in ${seconds.toFixed(0)} s (${((stats.cases + stats.raw) / seconds).toFixed(0)}/s, ${concurrency} in flight, seed ${seed})`,
      `answers: ${stats.ok2xx} correct 2xx, ${stats.c4xx} 4xx, ${stats.c5xx} 5xx, ${stats.hangs} hangs, ${stats.resets} closed without an answer even on a fresh connection (the daemon answers early and does not read a refused body; ${stats.replayed} replays), ${stats.bad2xx} wrong 2xx, ${stats.redirects} redirects to the console, ${stats.other} other; client-side refusals not sent: ${stats.refusedByClient}; control requests closed unanswered on a kept-alive socket and answered on a fresh one: ${stats.keepAliveRetries}`,
      `status counts: ${[...statusCounts].sort((a, b) => a[0] - b[0]).map(([s, n]) => `${s}:${n}`).join(' ')}`,
      `daemon ${alive ? 'alive' : 'DEAD'} at the end; 'request failed' log lines: ${internalErrors.length}; log lines with one of the ${secrets.size} secrets sent (passwords, cookies, tokens): ${leaks.length}`,
    ],
    failures,
    internalErrors: internalErrors.slice(0, 5),
  };
}
