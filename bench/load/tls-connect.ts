// New HTTPS connections per second with TLS session resumption (a process of its own): each
// connection resumes the last session ticket it was given, sends one request with
// `Connection: close`, reads the answer and closes.
//
//   node bench/out/tls-connect.mjs PORT MS CONCURRENCY PATH HEADERS_JSON
//   → {"cps":x,"n":count,"resumed":fraction,"bad":non200}

import tls from 'node:tls';

const [port, ms, concurrency, path, headersJson] = process.argv.slice(2);
const headers = JSON.parse(headersJson) as Record<string, string>;
const request = Buffer.from(
  `GET ${path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`,
);
let session: Buffer | undefined;
let n = 0;
let resumed = 0;
let bad = 0;

function once(): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port: Number(port), servername: 'localhost', rejectUnauthorized: false, session });
    s.on('session', (sess) => (session = sess));
    let head = '';
    s.once('secureConnect', () => {
      if (s.isSessionReused()) resumed++;
      s.write(request);
    });
    s.on('data', (d) => {
      if (head.length < 16) head += d.toString('latin1');
    });
    s.once('error', reject);
    s.once('close', () => {
      n++;
      if (!head.startsWith('HTTP/1.1 200')) bad++;
      resolve();
    });
  });
}

const end = Date.now() + Number(ms);
const t0 = process.hrtime.bigint();
await once(); // the full handshake whose ticket the others resume
await Promise.all(
  Array.from({ length: Number(concurrency) }, async () => {
    while (Date.now() < end) await once();
  }),
);
const s = Number(process.hrtime.bigint() - t0) / 1e9;
process.stdout.write(JSON.stringify({ cps: n / s, n, resumed: resumed / n, bad }) + '\n');
