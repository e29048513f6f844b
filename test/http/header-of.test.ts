// headerOf (src/http/context.ts): one request header read from rawHeaders must be exactly what
// req.headers gives, whatever the case of the name and however often the client repeated it.

import t from 'tap';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { headerOf } from '../../src/http/context.js';

const NAMES = ['cookie', 'x-xsrf-token', 'authorization', 'host', 'content-type', 'x-custom', 'set-cookie', 'absent', 'x-empty'];

t.test('the same value as req.headers, for single, repeated and absent headers', async (t) => {
  const seen: { mine: Record<string, string | undefined>; node: Record<string, string | undefined> }[] = [];
  const server = http.createServer((req, res) => {
    // headerOf first: req.headers is not built yet, so the scan is what answers.
    const mine = Object.fromEntries(NAMES.map((n) => [n, headerOf(req, n)]));
    const node = Object.fromEntries(NAMES.map((n) => {
      const v = req.headers[n];
      return [n, Array.isArray(v) ? v[0] : v];
    }));
    seen.push({ mine, node });
    res.end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise((r) => server.close(r)));
  const port = (server.address() as AddressInfo).port;
  const requests = [
    'Host: a\r\nCookie: JSESSIONID=1\r\nX-XSRF-Token: t1\r\n',
    // Names of the same length that differ outside the letters (no case folding makes them equal).
    'Host: a\r\nX_XSRF-TOKEN: u1\r\nCOOKI^: c=0\r\nX-XSRF-Token: t1\r\nX-XSRF~Token: u2\r\n',
    'HOST: a\r\ncookie: a=1\r\nCOOKIE: b=2\r\nx-xsrf-token: t1\r\nX-Xsrf-Token: t2\r\n',
    'Host: a\r\nAuthorization: Basic one\r\nauthorization: Basic two\r\nContent-Type: a/b\r\ncontent-type: c/d\r\n',
    'Host: a\r\nX-Custom: 1\r\nx-custom: 2\r\nX-CUSTOM: 3\r\nSet-Cookie: s=1\r\nset-cookie: s=2\r\nX-Empty: \r\n',
    'Host: a\r\n',
  ];
  for (const head of requests) {
    const sock = net.connect(port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => {
      sock.once('error', reject);
      sock.on('data', (d) => d.toString().includes('\r\n\r\n') && (sock.end(), resolve()));
      sock.write(`GET / HTTP/1.1\r\n${head}Connection: close\r\n\r\n`);
    });
  }
  t.equal(seen.length, requests.length);
  for (const [i, s] of seen.entries()) t.same(s.mine, s.node, `request ${i}: ${JSON.stringify(s.node)}`);
  t.equal(seen[1]!.mine['x-xsrf-token'], 't1', 'look-alike names are other headers');
  t.equal(seen[1]!.mine.cookie, undefined);
  t.equal(seen[2]!.mine['x-xsrf-token'], 't1, t2', 'a repeated token is joined, as Node does (and so never matches)');
  t.equal(seen[3]!.mine.authorization, 'Basic one', 'a repeated authorization keeps the first, as Node does');
});
