// The HTTP core in-process over real sockets: routing, error policy, body limits, TLS listeners with
// and without client certificates, slow clients, graceful close.

import t from 'tap';
import fs from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import https from 'node:https';
import { HttpServer, jsonFamily, textFamily, DEFAULT_LIMITS } from '../../src/http/server.js';
import { HttpError } from '../../src/http/context.js';
import { readJson } from '../../src/http/body.js';
import { Router } from '../../src/core/router.js';
import { createLogger } from '../../src/log.js';
import { makePki, haveOpenssl } from '../helpers/certs.js';
import { request } from '../helpers/daemon.js';

const logs: string[] = [];
const log = createLogger('debug', (l) => logs.push(l));

t.test('router: params, literal before parameter, 404 and 405', async (t) => {
  const r = new Router<string>();
  r.add('GET', '/services/assets/:pid', 'asset').add('GET', '/services/assets/:pid/_read', 'read').add('POST', '/services/assets/:pid/_read', 'post-read');
  r.add('DELETE', '/services/deploy/v2/:name', 'delete').add('POST', '/services/deploy/v2/_install', 'install');
  t.same(r.find('GET', '/services/assets/pump'), { kind: 'found', handler: 'asset', params: { pid: 'pump' } });
  t.same(r.find('POST', '/services/assets/pump/_read'), { kind: 'found', handler: 'post-read', params: { pid: 'pump' } });
  t.same(r.find('HEAD', '/services/assets/pump'), { kind: 'found', handler: 'asset', params: { pid: 'pump' } });
  t.same(r.find('POST', '/services/deploy/v2/_install'), { kind: 'found', handler: 'install', params: {} });
  t.same(r.find('DELETE', '/services/deploy/v2/_install'), { kind: 'method-not-allowed', allowed: ['POST'] }, 'a literal resource is not shadowed by a parameter');
  t.same(r.find('DELETE', '/services/deploy/v2/mypkg'), { kind: 'found', handler: 'delete', params: { name: 'mypkg' } });
  t.same(r.find('PUT', '/services/assets/pump/_read'), { kind: 'method-not-allowed', allowed: ['GET', 'POST'] });
  t.same(r.find('GET', '/services/nothing'), { kind: 'not-found' });
  t.same(r.find('GET', '/services/assets/pump/_read/extra'), { kind: 'not-found' });
});

/** A test PKI and the listeners' material from it, removed after the test; undefined (and the test planned empty) without openssl, which CI must have. */
function testPki(t: any) {
  if (!haveOpenssl()) {
    if (process.env.CI === 'true') throw new Error('openssl missing under CI');
    t.plan(0, 'openssl not installed');
    return undefined;
  }
  const pki = makePki();
  t.teardown(() => fs.rmSync(pki.dir, { recursive: true, force: true }));
  return { pki, material: { cert: fs.readFileSync(pki.serverCert), key: fs.readFileSync(pki.serverKey), ca: fs.readFileSync(pki.caCert) } };
}

async function startServer(t: any, specs: { port: number; kind: 'http' | 'https' | 'client-auth' }[], material?: any, limits = DEFAULT_LIMITS) {
  const server = new HttpServer(log, limits);
  const json = jsonFamily('json');
  const text = textFamily('text');
  server.route('POST', '/echo', json, async (ctx) => ctx.json(200, await readJson(ctx, { limit: 1024 })));
  server.route('POST', '/text/echo', text, async (ctx) => ctx.json(200, await readJson(ctx, { limit: 64 })));
  server.route('GET', '/boom', json, () => {
    throw new Error('secret internal detail /etc/passwd at line 3');
  });
  server.route('GET', '/full', json, () => {
    throw Object.assign(new Error("ENOSPC: no space left on device, write '/var/lib/gatewayd/identities.json'"), { code: 'ENOSPC' });
  });
  server.route('GET', '/teapot', text, () => {
    throw new HttpError(418, 'short and stout');
  });
  server.route('GET', '/whoami', json, (ctx) => ctx.json(200, { secure: ctx.listener.secure, cn: ctx.peerCertificate()?.subject?.CN ?? null }));
  server.route('GET', '/slow', json, async (ctx) => {
    await new Promise((r) => setTimeout(r, 400));
    ctx.json(200, { done: true });
  });
  server.route('GET', '/hang', json, () => new Promise<void>(() => {}));
  await server.listen(specs, '127.0.0.1', material);
  t.teardown(() => server.close(0));
  const ports = { http: [] as number[], https: [] as number[], clientAuth: [] as number[] };
  for (const l of server.listeners()) (l.clientAuth ? ports.clientAuth : l.secure ? ports.https : ports.http).push(l.port);
  return { server, ports };
}

t.test('error policy per family, 404/405 bodiless, no stack trace', async (t) => {
  const { ports } = await startServer(t, [{ port: 0, kind: 'http' }]);
  const nf = await request(ports, '/nope');
  t.equal(nf.status, 404);
  t.equal(nf.body, '');
  const na = await request(ports, '/echo', { method: 'GET' });
  t.equal(na.status, 405);
  t.equal(na.headers.allow, 'POST');
  const boom = await request(ports, '/boom');
  t.equal(boom.status, 500);
  t.same(boom.json(), { message: 'An internal error occurred' });
  t.notMatch(boom.body, /secret|passwd|at line/);
  t.ok(logs.some((l) => /msg="request failed"/.test(l)), 'logged once for the operator');
  const full = await request(ports, '/full');
  t.equal(full.status, 507, 'a full disk is a clear 507, not an anonymous 500');
  t.same(full.json(), { message: 'Insufficient storage: the change could not be saved (no space left on the device)' });
  t.notMatch(full.body, /identities\.json/, 'no file path reaches the client');
  const tea = await request(ports, '/teapot');
  t.equal(tea.status, 418);
  t.equal(tea.body, 'short and stout');
  t.match(tea.headers['content-type'], /^text\/plain/);
  t.equal(tea.headers['cache-control'], 'no-store');
  t.equal(tea.headers['x-content-type-options'], 'nosniff');
});

t.test('JSON bodies: 415, 413, 400 for malformed, empty and invalid UTF-8', async (t) => {
  const { ports } = await startServer(t, [{ port: 0, kind: 'http' }]);
  const ok = await request(ports, '/echo', { method: 'POST', body: { a: [1, 2] } });
  t.equal(ok.status, 200);
  t.same(ok.json(), { a: [1, 2] });
  const wrongType = await request(ports, '/echo', { method: 'POST', body: '{}', headers: { 'content-type': 'text/xml' } });
  t.equal(wrongType.status, 415);
  t.match(wrongType.json().message, /expected application\/json/);
  // A form post from another site carries no JSON type: refused before the body is read.
  const noType = await request(ports, '/echo', { method: 'POST', body: '{"a":1}' });
  t.equal(noType.status, 415, 'a missing Content-Type is 415');
  t.same(noType.json(), { message: 'Content-Type application/json is required' });
  const form = await request(ports, '/echo', { method: 'POST', body: '{"a":1}', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
  t.equal(form.status, 415, "curl -d's form type is 415");
  const none = await request(ports, '/echo', { method: 'POST' });
  t.same([none.status, none.json()], [400, { message: 'Request body is missing' }], 'no body at all needs no type');
  const big = await request(ports, '/echo', { method: 'POST', body: JSON.stringify({ x: 'a'.repeat(2000) }), headers: { 'content-type': 'application/json' } });
  t.equal(big.status, 413);
  const chunkedBig = await new Promise<number>((resolve, reject) => {
    const s = net.connect(ports.http[0], '127.0.0.1', () => {
      s.write('POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n');
      for (let i = 0; i < 20; i++) s.write(`64\r\n${'a'.repeat(100)}\r\n`);
    });
    let data = '';
    s.on('data', (d) => (data += d));
    s.on('close', () => resolve(Number(data.split(' ')[1])));
    s.on('error', reject);
  });
  t.equal(chunkedBig, 413, 'a chunked body past the limit is refused too');
  const malformed = await request(ports, '/echo', { method: 'POST', body: "{'single': 'quotes'}", headers: { 'content-type': 'application/json' } });
  t.equal(malformed.status, 400);
  t.match(malformed.json().message, /^Malformed JSON/);
  const empty = await request(ports, '/echo', { method: 'POST', body: '', headers: { 'content-type': 'application/json' } });
  t.equal(empty.status, 400);
  t.same(empty.json(), { message: 'Request body is missing' });
  const utf8 = await request(ports, '/echo', { method: 'POST', body: Buffer.from([0x22, 0xff, 0xfe, 0x22]), headers: { 'content-type': 'application/json' } });
  t.equal(utf8.status, 400);
  t.same(utf8.json(), { message: 'Request body is not valid UTF-8' });
  const deep = await request(ports, '/echo', { method: 'POST', body: '['.repeat(500) + ']'.repeat(500), headers: { 'content-type': 'application/json' } });
  t.equal(deep.status, 200, 'deep nesting within the size limit is fine');
  const textErr = await request(ports, '/text/echo', { method: 'POST', body: '{"x":', headers: { 'content-type': 'application/json' } });
  t.equal(textErr.status, 400);
  t.match(textErr.body, /^Malformed JSON/, 'text family answers text/plain');
  const after = await request(ports, '/echo', { method: 'POST', body: { still: 'serving' } });
  t.same(after.json(), { still: 'serving' });
});

t.test('answers are sent byte-exact with their UTF-8 length, ASCII or not', async (t) => {
  const { ports } = await startServer(t, [{ port: 0, kind: 'http' }]);
  // ASCII text is written as Latin-1 (the same bytes), any other text as UTF-8: both must arrive as sent.
  for (const value of ['plain ascii', 'Température 21 °C', 'ÿ\u0080 latin-1 range only', 'emoji 😀 and ✓', 'lone \ud800 surrogate']) {
    const res = await request(ports, '/echo', { method: 'POST', body: { value } });
    t.equal(res.status, 200);
    const expected = JSON.stringify({ value });
    t.equal(res.body, Buffer.from(expected, 'utf8').toString('utf8'), `${JSON.stringify(value)} arrives as sent`);
    t.equal(Number(res.headers['content-length']), Buffer.byteLength(expected, 'utf8'), `${JSON.stringify(value)}: Content-Length is its UTF-8 length`);
  }
});

t.test("a route's reply writes the value its handler's promise gives, after synchronous and asynchronous stages; a reply that throws is the family's 500", async (t) => {
  for (const asyncStage of [false, true]) {
    const server = new HttpServer(log, DEFAULT_LIMITS);
    const json = jsonFamily('json');
    // An asynchronous stage (a BASIC client's first password check) takes the server's other path.
    if (asyncStage) server.use(() => new Promise<void>((r) => setImmediate(r)));
    const replies: unknown[] = [];
    const reply = (ctx: any, value: unknown) => {
      replies.push(value);
      if (value === 'bad') throw new Error('secret reply failure');
      ctx.json(200, { value });
    };
    server.route('GET', '/later', json, () => new Promise((r) => setImmediate(() => r('answer'))), undefined, reply);
    server.route('GET', '/bad', json, () => Promise.resolve('bad'), undefined, reply);
    server.route('GET', '/none', json, () => Promise.resolve(), undefined);
    await server.listen([{ port: 0, kind: 'http' }], '127.0.0.1');
    t.teardown(() => server.close(0));
    const ports = { http: [server.listeners()[0]!.port], https: [] as number[], clientAuth: [] as number[] };
    const later = await request(ports, '/later');
    t.equal(later.status, 200, `async stage ${asyncStage}`);
    t.same(later.json(), { value: 'answer' });
    const bad = await request(ports, '/bad');
    t.equal(bad.status, 500);
    t.same(bad.json(), { message: 'An internal error occurred' });
    const none = await request(ports, '/none');
    t.equal(none.status, 204, 'no reply, no answer: 204');
    t.same(replies, ['answer', 'bad']);
  }
});

t.test('garbage on the socket gets 400 and the server keeps serving', async (t) => {
  const { ports } = await startServer(t, [{ port: 0, kind: 'http' }]);
  const answer = await new Promise<string>((resolve) => {
    const s = net.connect(ports.http[0], '127.0.0.1', () => s.write('\x16\x03\x01garbage\r\n\r\n'));
    let data = '';
    s.on('data', (d) => (data += d));
    s.on('close', () => resolve(data));
    s.on('error', () => resolve(data));
  });
  t.match(answer, /^HTTP\/1\.1 400/);
  const ok = await request(ports, '/echo', { method: 'POST', body: {} });
  t.equal(ok.status, 200);
});

t.test('a client still sending gets its 431 or 400 before the connection closes, not a reset', async (t) => {
  const { ports } = await startServer(t, [{ port: 0, kind: 'http' }]);
  // The client goes on writing after its bad head, as a client with 200 KB of headers does: closing
  // at once with those bytes arriving made the kernel reset the connection over the answer (every
  // oversized-header try here saw ECONNRESET instead of the 431).
  const exchange = (head: string) =>
    new Promise<string>((resolve) => {
      const s = net.connect(ports.http[0], '127.0.0.1');
      let data = '';
      s.on('data', (d) => (data += d));
      s.on('close', () => resolve(data || 'closed without an answer'));
      s.on('error', (err: NodeJS.ErrnoException) => resolve(data || String(err.code)));
      s.on('connect', () => {
        s.write(head);
        let n = 0;
        const more = () => n++ < 50 && !s.destroyed && s.write('a'.repeat(4096), () => setImmediate(more));
        more();
      });
    });
  const statusLine = (r: string) => r.split('\r\n')[0];
  const big = await Promise.all(Array.from({ length: 10 }, () => exchange(`GET /whoami HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}`)));
  t.same(big.map(statusLine), Array(10).fill('HTTP/1.1 431 Request Header Fields Too Large'), 'oversized headers: 431 every time');
  const bad = await Promise.all(Array.from({ length: 10 }, () => exchange('GARBAGE\x01\r\n')));
  t.same(bad.map(statusLine), Array(10).fill('HTTP/1.1 400 Bad Request'), 'garbage: 400 every time');
  const ok = await request(ports, '/whoami');
  t.equal(ok.status, 200, 'and the server keeps serving');
});

t.test('a client still sending a refused body gets its 413 before the connection closes, not a reset', async (t) => {
  const { ports } = await startServer(t, [{ port: 0, kind: 'http' }]);
  // The body is refused from its declared length, before it is read. Node closes a `Connection:
  // close` answer's socket as soon as the answer is out; the client's next bytes then drew a reset,
  // and a client that had not read the answer yet lost it (curl: "Failed sending network data").
  // The client here waits for the answer to be sent before it writes again, as a slow uploader does.
  const exchange = () =>
    new Promise<string>((resolve) => {
      const s = net.connect(ports.http[0], '127.0.0.1');
      let data = '';
      s.on('data', (d) => (data += d));
      s.on('close', () => resolve(data || 'closed without an answer'));
      s.on('error', (err: NodeJS.ErrnoException) => resolve(String(err.code)));
      s.on('connect', () => {
        s.pause(); // the answer waits in the socket, unread, while the body goes on
        s.write('POST /echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n{');
        setTimeout(() => {
          let n = 0;
          const more = () => (n++ < 20 && !s.destroyed ? s.write('a'.repeat(4096), () => setTimeout(more, 5)) : s.resume());
          more();
        }, 100);
      });
    });
  const answers = await Promise.all(Array.from({ length: 5 }, exchange));
  t.same(answers.map((r) => r.split('\r\n')[0]), Array(5).fill('HTTP/1.1 413 Payload Too Large'), '413 every time');
  t.ok(answers.every((r) => /\r\nconnection: close\r\n/i.test(r)), 'and each says it closes the connection');
  const ok = await request(ports, '/echo', { method: 'POST', body: {} });
  t.equal(ok.status, 200, 'and the server keeps serving');
});

t.test('a slow client (slowloris) is cut off by the header timeout', async (t) => {
  const { ports } = await startServer(t, [{ port: 0, kind: 'http' }], undefined, { ...DEFAULT_LIMITS, headersTimeoutMs: 500, requestTimeoutMs: 1000 });
  const start = Date.now();
  const answer = await new Promise<string>((resolve) => {
    const s = net.connect(ports.http[0], '127.0.0.1', () => s.write('GET /whoami HTTP/1.1\r\nHost: x\r\n'));
    const drip = setInterval(() => s.writable && s.write('X-a: b\r\n'), 100);
    let data = '';
    s.on('data', (d) => (data += d));
    s.on('close', () => {
      clearInterval(drip);
      resolve(data);
    });
    s.on('error', () => {});
  });
  t.match(answer, /^HTTP\/1\.1 408/);
  t.ok(Date.now() - start < 5000, 'closed well before the socket timeout');
});

t.test('no timer runs for a listener without connections; a connection starts the checks, and they still cut a slow client off', async (t) => {
  const tlsSetup = testPki(t);
  if (!tlsSetup) return;
  const { pki, material } = tlsSetup;
  const { server, ports } = await startServer(t, [{ port: 0, kind: 'http' }, { port: 0, kind: 'https' }], material, { ...DEFAULT_LIMITS, headersTimeoutMs: 500, requestTimeoutMs: 1000, socketTimeoutMs: 600 });
  const idle = { connectionChecks: 0, controlled: 2, sweeper: false };
  t.same(server.timersRunning(), idle, "after listen: Node's interval of both listeners stopped, no idle sweep");
  // A connection: its listener's check and the sweep run while it is open, and stop after.
  const s = net.connect(ports.http[0], '127.0.0.1');
  await new Promise((r) => s.once('connect', r));
  await new Promise((r) => setTimeout(r, 50));
  t.same(server.timersRunning(), { connectionChecks: 1, controlled: 2, sweeper: true }, 'one connection: its listener checks, the sweep runs');
  s.destroy();
  const until = Date.now() + 5000;
  while (server.timersRunning().sweeper && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
  t.same(server.timersRunning(), idle, 'closed: the check stops at once, the sweep at its next round');
  // After the idle spell, on either listener: a slowloris client still gets its 408 in time.
  const slow = (connect: (cb: () => void) => net.Socket) =>
    new Promise<{ answer: string; ms: number }>((resolve) => {
      const start = Date.now();
      const c = connect(() => c.write('GET /whoami HTTP/1.1\r\nHost: x\r\n'));
      const drip = setInterval(() => c.writable && c.write('X-a: b\r\n'), 100);
      let data = '';
      c.on('data', (d) => (data += d));
      c.on('close', () => {
        clearInterval(drip);
        resolve({ answer: data, ms: Date.now() - start });
      });
      c.on('error', () => {});
    });
  const plain = await slow((cb) => net.connect(ports.http[0], '127.0.0.1', cb));
  t.match(plain.answer, /^HTTP\/1\.1 408/, `HTTP: 408 after ${plain.ms} ms`);
  t.ok(plain.ms < 3000, 'well before the socket timeout would have closed it');
  const secure = await slow((cb) => tls.connect({ port: ports.https[0], host: '127.0.0.1', ca: fs.readFileSync(pki.caCert), servername: 'localhost' }, cb));
  t.match(secure.answer, /^HTTP\/1\.1 408/, `HTTPS: 408 after ${secure.ms} ms`);
  t.ok(secure.ms < 3000, 'well before the socket timeout would have closed it');
  // And a connection that stops moving bytes is still closed by the sweep.
  const quiet = net.connect(ports.http[0], '127.0.0.1');
  quiet.on('error', () => {});
  quiet.resume(); // reads, so that it sees the server's end
  const q0 = Date.now();
  await new Promise((r) => quiet.once('close', r));
  t.ok(Date.now() - q0 < 3000, `a silent connection closed after ${Date.now() - q0} ms`);
});

t.test('a connection that moves no byte for the socket timeout is closed; one in use is kept', async (t) => {
  const { ports } = await startServer(t, [{ port: 0, kind: 'http' }], undefined, { ...DEFAULT_LIMITS, socketTimeoutMs: 600 });
  // A handler that never answers: the connection is closed, without an answer.
  const answer = await new Promise<string>((resolve) => {
    const s = net.connect(ports.http[0], '127.0.0.1', () => s.write('GET /hang HTTP/1.1\r\nHost: x\r\n\r\n'));
    let data = '';
    s.on('data', (d) => (data += d));
    s.on('close', () => resolve(data));
    s.on('error', () => {});
  });
  t.equal(answer, '', 'closed without an answer');
  // A keep-alive connection sending a request every 50 ms for four periods stays open.
  const s = net.connect(ports.http[0], '127.0.0.1');
  s.on('error', () => {});
  let closed = false;
  let answers = 0;
  s.on('close', () => (closed = true));
  s.on('data', (d) => (answers += (String(d).match(/HTTP\/1\.1 200/g) ?? []).length));
  for (let i = 0; i < 48 && !closed; i++) {
    s.write('GET /whoami HTTP/1.1\r\nHost: x\r\n\r\n');
    await new Promise((r) => setTimeout(r, 50));
  }
  t.notOk(closed, 'the busy connection was kept');
  t.ok(answers > 0, `answers on it: ${answers}`);
  s.destroy();
});

t.test('graceful close lets an in-flight request finish', async (t) => {
  const { server, ports } = await startServer(t, [{ port: 0, kind: 'http' }]);
  const pending = request(ports, '/slow');
  await new Promise((r) => setTimeout(r, 100));
  await server.close(3000);
  const res = await pending;
  t.equal(res.status, 200);
  t.same(res.json(), { done: true });
  await t.rejects(request(ports, '/whoami'), 'no longer accepting');
});

t.test('TLS listeners: client certificate required and verified on client-auth ports only', async (t) => {
  const tlsSetup = testPki(t);
  if (!tlsSetup) return;
  const { pki, material } = tlsSetup;
  const { ports } = await startServer(t, [{ port: 0, kind: 'https' }, { port: 0, kind: 'client-auth' }], material);
  const alice = pki.client('alice');

  const plain = await request(ports, '/whoami', { port: ports.https[0], tls: true, ca: pki.caCert, cert: alice.cert, key: alice.key });
  t.same(plain.json(), { secure: true, cn: null }, 'the plain HTTPS port never asks for (or sees) a client certificate');

  const withCert = await request(ports, '/whoami', { port: ports.clientAuth[0], tls: true, ca: pki.caCert, cert: alice.cert, key: alice.key });
  t.same(withCert.json(), { secure: true, cn: 'alice' }, 'accepted on the client-auth port');

  await t.rejects(request(ports, '/whoami', { port: ports.clientAuth[0], tls: true, ca: pki.caCert }), 'no certificate: refused');
  const mallory = pki.client('mallory', { untrusted: true });
  await t.rejects(
    request(ports, '/whoami', { port: ports.clientAuth[0], tls: true, ca: pki.caCert, cert: mallory.cert, key: mallory.key }),
    'a certificate from another CA: refused',
  );

  // TLS 1.2 minimum: a TLS 1.1 client cannot connect.
  await t.rejects(
    new Promise((resolve, reject) => {
      const s = tls.connect({ port: ports.https[0], host: '127.0.0.1', maxVersion: 'TLSv1.1', minVersion: 'TLSv1', rejectUnauthorized: false }, () => resolve(s.getProtocol()));
      s.on('error', reject);
    }),
  );
  const proto = await new Promise<string | null>((resolve, reject) => {
    const s = tls.connect({ port: ports.https[0], host: '127.0.0.1', maxVersion: 'TLSv1.2', ca: fs.readFileSync(pki.caCert), servername: 'localhost' }, () => {
      const p = s.getProtocol();
      const c = s.getCipher();
      s.end();
      t.match(c.name, /GCM|CHACHA20/, 'an AEAD suite');
      resolve(p);
    });
    s.on('error', reject);
  });
  t.equal(proto, 'TLSv1.2');
  t.ok(https, 'https module available');
});

t.test('router: routes with parameters in their first segments are found beside literal ones', async (t) => {
  const r = new Router<string>();
  r.add('GET', '/a/b/c', 'abc').add('GET', '/:x/b/c', 'xbc').add('GET', '/a', 'a').add('GET', '/:y', 'y').add('POST', '/a/:z', 'az');
  t.same(r.find('GET', '/a/b/c'), { kind: 'found', handler: 'abc', params: {} });
  t.same(r.find('GET', '/q/b/c'), { kind: 'found', handler: 'xbc', params: { x: 'q' } });
  t.same(r.find('GET', '/a'), { kind: 'found', handler: 'a', params: {} });
  t.same(r.find('GET', '/zz'), { kind: 'found', handler: 'y', params: { y: 'zz' } });
  t.same(r.find('POST', '/a/1'), { kind: 'found', handler: 'az', params: { z: '1' } });
  t.same(r.find('GET', '/a/1'), { kind: 'method-not-allowed', allowed: ['POST'] });
  t.same(r.find('GET', '/'), { kind: 'not-found' });
  t.same(r.find('GET', '/b/1'), { kind: 'not-found' });
});
