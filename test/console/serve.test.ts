// The field console's files as the daemon serves them (docs/console.md): the redirect, the
// Content-Security-Policy, precompression and caching, the first-load budget, console.enabled and
// the allowed ports. The browser tests (workflow.test.ts) drive the page itself.

import t from 'tap';
import zlib from 'node:zlib';
import { startDaemon } from '../helpers/daemon.js';

const BUDGET = 50 * 1024;

t.test('served at /console/ with a strict CSP, precompressed, cached by content hash', async (t) => {
  const d = await startDaemon(t, {}, { https: 1 });

  const root = await d.request('/');
  t.equal(root.status, 302);
  t.equal(root.headers.location, '/console/');

  for (const port of [d.ports.http[0], d.ports.https[0]]) {
    const r = await d.request('/console/', { port });
    t.equal(r.status, 200, `port ${port}`);
    t.match(r.headers['content-type'], /^text\/html/);
  }

  const page = await d.request('/console/');
  const csp = String(page.headers['content-security-policy']);
  t.match(csp, /frame-ancestors 'none'/);
  t.match(csp, /script-src 'self'(;|$)/, 'scripts only from the gateway itself');
  t.notMatch(csp, /unsafe-inline|unsafe-eval/);
  t.equal(page.headers['x-frame-options'], 'DENY');
  t.equal(page.headers['cache-control'], 'no-cache', 'the page is revalidated on every load');
  t.notMatch(page.body, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script');
  t.notMatch(page.body, /\son[a-z]+=/i, 'no inline event handlers');
  t.notMatch(page.body, /https?:\/\//, 'nothing from another origin (no CDN)');

  const again = await d.request('/console/', { headers: { 'if-none-match': String(page.headers.etag) } });
  t.equal(again.status, 304, 'ETag revalidation');

  const assets = [...page.body.matchAll(/(?:src|href)="(\/console\/[^"]+)"/g)].map((m) => m[1]);
  t.equal(assets.length, 2, 'one script and one style sheet');
  for (const a of assets) {
    t.match(a, /-[A-Z0-9]{8}\.(js|css)$/, `${a}: content-hashed name`);
    const plain = await d.request(a);
    t.equal(plain.status, 200);
    t.match(plain.headers['cache-control'], /immutable/, `${a} cached for good`);
    t.equal(plain.headers['content-encoding'], undefined, 'identity when the client accepts no encoding');
    const gz = await d.request(a, { headers: { 'accept-encoding': 'gzip' } });
    t.equal(gz.headers['content-encoding'], 'gzip');
    t.equal(gz.headers.vary, 'accept-encoding');
  }
  if (assets.length > 0) {
    // The precompressed forms decode to the same bytes.
    const https = await import('node:https');
    const raw = (p: string, enc: string) => new Promise<Buffer>((resolve, reject) => {
      https.get({ host: '127.0.0.1', port: d.ports.https[0], path: p, rejectUnauthorized: false, headers: { 'accept-encoding': enc } }, (res) => {
        const c: Buffer[] = [];
        res.on('data', (x) => c.push(x)).on('end', () => resolve(Buffer.concat(c))).on('error', reject);
      }).on('error', reject);
    });
    const js = assets.find((a) => a.endsWith('.js'))!;
    t.same(zlib.brotliDecompressSync(await raw(js, 'br')), await raw(js, 'identity'), 'br decodes to the file');
    t.same(zlib.gunzipSync(await raw(js, 'gzip')), await raw(js, 'identity'), 'gzip decodes to the file');
  }

  // The budget: what a browser transfers on the first load (page, script, style sheet; brotli).
  let total = 0;
  for (const p of ['/console/', ...assets]) {
    const r = await d.request(p, { headers: { 'accept-encoding': 'gzip, deflate, br' } });
    t.equal(r.headers['content-encoding'], 'br', `${p} served with brotli`);
    total += Number(r.headers['content-length']);
  }
  t.ok(total > 1000 && total <= BUDGET, `first load ${total} bytes compressed (budget ${BUDGET})`);

  t.equal((await d.request('/console/nothing-here.js')).status, 404);
  t.equal((await d.request('/console/..%2Fgatewayd.js')).status, 404, 'no way out of the console folder');
});

t.test('console.enabled false: neither / nor /console/ is served', async (t) => {
  const d = await startDaemon(t, { console: { 'console.enabled': false } });
  for (const p of ['/', '/console/', '/console/index.html']) t.equal((await d.request(p)).status, 404, p);
  t.equal((await d.request('/services/session/v1/authenticationInfo')).status, 200, 'REST still served');
});

t.test('only on the ports REST is allowed on', async (t) => {
  const d = await startDaemon(t, (p) => ({ rest: { 'allowed.ports': [p.http[0]] } }), { http: 2 });
  t.equal((await d.request('/console/', { port: d.ports.http[0] })).status, 200);
  t.equal((await d.request('/console/', { port: d.ports.http[1] })).status, 404);
  t.equal((await d.request('/', { port: d.ports.http[1] })).status, 404);
});

t.test('the files are read when the console is first asked for, once; a boot without them warns', async (t) => {
  const { HttpServer } = await import('../../src/http/server.js');
  const { mountConsole } = await import('../../src/console/serve.js');
  const { createLogger } = await import('../../src/log.js');
  const { request } = await import('../helpers/daemon.js');
  const fs = await import('node:fs');
  const path = await import('node:path');
  const dir = t.testdir({ 'index.html': '<p>first</p>' });
  const logs: string[] = [];
  const log = createLogger('info', (l) => logs.push(l));
  const server = new HttpServer(log);
  mountConsole(server, { enabled: () => true, log, dir });
  const missing = path.join(dir, 'nothing-here');
  mountConsole(new HttpServer(log), { enabled: () => true, log, dir: missing });
  t.equal(logs.filter((l) => l.includes('console files not found')).length, 1, 'only the mount without files warns');
  await server.listen([{ port: 0, kind: 'http' }], '127.0.0.1');
  t.teardown(() => server.close(0));
  const ports = { http: [server.listeners()[0]!.port], https: [], clientAuth: [] };
  fs.writeFileSync(path.join(dir, 'index.html'), '<p>second</p>');
  const first = await request(ports, '/console/');
  t.equal(first.status, 200);
  t.equal(first.body, '<p>second</p>', 'read at the first request, not when mounted');
  fs.writeFileSync(path.join(dir, 'index.html'), '<p>third</p>');
  t.equal((await request(ports, '/console/')).body, '<p>second</p>', 'and kept: read once');
});
