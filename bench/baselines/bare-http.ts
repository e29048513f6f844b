// The HTTP ceiling: a bare node:http (and node:https, same certificate as gatewayd) server that
// answers every request with the exact status, headers and body gatewayd sent for the read.
// No routing, no authentication, no asset: what Node itself costs for these bytes. The benchmark
// sends it the session read's own request (cookie and XSRF header included), which it ignores.
//
//   node bench/out/bare-http.mjs SPEC_FILE   (SPEC: {headers, body (base64), cert?, key?})
//   → {"ready":true,"http":PORT,"https":PORT|null}

import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';

const spec = JSON.parse(fs.readFileSync(process.argv[2], 'utf8')) as { headers: Record<string, string>; body: string; cert?: string; key?: string };
const body = Buffer.from(spec.body, 'base64');
const headers = { ...spec.headers, 'content-length': String(body.length) };
const answer = (_req: http.IncomingMessage, res: http.ServerResponse) => {
  res.writeHead(200, headers);
  res.end(body);
};

const listen = (s: http.Server | https.Server) => new Promise<number>((resolve) => s.listen(0, '127.0.0.1', () => resolve((s.address() as AddressInfo).port)));
const httpPort = await listen(http.createServer(answer));
let httpsPort: number | null = null;
if (spec.cert && spec.key) {
  httpsPort = await listen(https.createServer({ cert: fs.readFileSync(spec.cert), key: fs.readFileSync(spec.key) }, answer));
}
process.stdout.write(JSON.stringify({ ready: true, http: httpPort, https: httpsPort }) + '\n');
