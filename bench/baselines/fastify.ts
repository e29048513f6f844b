// The same endpoint written the way a Node developer would with Fastify: GET
// /services/assets/:pid/_read behind a session-cookie + XSRF-token check (an onRequest hook over
// an in-memory session map), reading the simulated demo channels and answering Kura's record
// array with the same headers as gatewayd. Benchmark-only (a dev dependency; src/ never imports it).
//
//   node bench/out/fastify.mjs [CERT KEY]  → {"ready":true,"http":PORT,"https":PORT|null,"cookie":…,"xsrf":…}

import crypto from 'node:crypto';
import fs from 'node:fs';
import Fastify, { type FastifyInstance } from 'fastify';

const [cert, key] = process.argv.slice(2);
const sessions = new Map<string, { user: string; xsrf: string }>();
const sid = crypto.randomBytes(16).toString('hex');
const xsrf = crypto.randomUUID();
sessions.set(sid, { user: 'bench', xsrf });

let counter = 0;
const assets = new Map<string, () => object[]>([
  [
    'demo',
    () => {
      const timestamp = Date.now();
      return [
        { channelStatus: { channelFlag: 'SUCCESS' }, name: 'temperature', valueType: 'DOUBLE', value: 20 + 10 * Math.sin(timestamp / 60_000), timestamp, unit: 'C' },
        { channelStatus: { channelFlag: 'SUCCESS' }, name: 'counter', valueType: 'INTEGER', value: ++counter, timestamp },
      ];
    },
  ],
]);

function cookieValue(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim();
  }
  return undefined;
}

function app(f: FastifyInstance): FastifyInstance {
  f.addHook('onRequest', async (req, reply) => {
    reply.header('cache-control', 'no-store').header('x-content-type-options', 'nosniff');
    const s = sessions.get(cookieValue(req.headers.cookie, 'JSESSIONID') ?? '');
    if (!s || req.headers['x-xsrf-token'] !== s.xsrf) return reply.code(401).send();
  });
  f.get<{ Params: { pid: string } }>('/services/assets/:pid/_read', async (req, reply) => {
    const read = assets.get(req.params.pid);
    if (!read) return reply.code(404).type('text/plain').send(`Asset not found: ${req.params.pid}`);
    return read();
  });
  return f;
}

const plain = app(Fastify({ logger: false }));
const httpAddr = await plain.listen({ port: 0, host: '127.0.0.1' });
let httpsPort: number | null = null;
if (cert && key) {
  const secure = app(Fastify({ logger: false, https: { cert: fs.readFileSync(cert), key: fs.readFileSync(key) } }));
  httpsPort = Number(new URL(await secure.listen({ port: 0, host: '127.0.0.1' })).port);
}
process.stdout.write(JSON.stringify({ ready: true, http: Number(new URL(httpAddr).port), https: httpsPort, cookie: `JSESSIONID=${sid}`, xsrf }) + '\n');
