// Bodies under attack, against the real daemon run with the image launcher's heap flags
// (rootfs/usr/bin/gatewayd): anonymous login bodies sent one byte per packet (plain and chunked),
// slow bodies holding the anonymous body slots, and a flood of connections that never send a request.
// In each, memory stays bounded, the slow ones are cut, and a prompt legitimate client gets in.

import t from 'tap';
import http from 'node:http';
import net from 'node:net';
import { startDaemon, type Daemon } from '../helpers/daemon.js';
import { launcherHeapOptions } from '../helpers/launch.mjs';

const LOGIN = '/services/session/v1/login/password';
const PW = 'Legit-pw-123';
const identities = { legit: { password: PW, permissions: ['rest.assets'] } };
// The launcher's V8 flags (a heap of 48 MB): the bound the device runs with.
const env = { NODE_OPTIONS: launcherHeapOptions() };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms).unref());

const login = (d: Daemon) => d.request(LOGIN, { method: 'POST', body: { username: 'legit', password: PW }, timeoutMs: 30_000 }).then((r) => r.status, (e) => `error ${e.message}`);

interface Slow {
  /** Status of the answer the daemon gave before closing (0: none). */
  status: Promise<number>;
  sent: () => number;
  destroy(): void;
}

/** A login whose body (`length` bytes) goes out one byte per `everyMs`, plain or in 1-byte chunks. */
function slowLogin(port: number, length: number, opts: { chunked?: boolean; everyMs?: number; stallAfter?: number; from?: string; served?: boolean } = {}): Slow {
  const s = net.connect({ port, host: '127.0.0.1', localAddress: opts.from });
  s.setNoDelay(true);
  let sent = 0;
  let got = '';
  let timer: NodeJS.Timeout | undefined;
  const start = () => {
    const framing = opts.chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${length}`;
    s.write(`POST ${LOGIN} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${framing}\r\n\r\n`);
    timer = setInterval(() => {
      if (sent >= length || sent >= (opts.stallAfter ?? Infinity)) return;
      s.write(opts.chunked ? '1\r\na\r\n' : 'a');
      sent++;
    }, opts.everyMs ?? 1);
  };
  // `served`: one quick request answered first, so the connection has completed a request.
  s.on('connect', () => (opts.served ? s.write('GET /services/session/v1/xsrfToken HTTP/1.1\r\nHost: x\r\n\r\n') : start()));
  s.on('data', (c) => {
    if (opts.served && got === '') setImmediate(start);
    got += c.toString('latin1');
  });
  s.on('error', () => {});
  const status = new Promise<number>((resolve) =>
    s.on('close', () => {
      clearInterval(timer);
      resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(got)?.[1] ?? 0));
    }),
  );
  return { status, sent: () => sent, destroy: () => s.destroy() };
}

/** Logs in every 200 ms until `done` settles; every answer must be 200. */
async function legitDuring(d: Daemon, done: Promise<unknown>): Promise<(number | string)[]> {
  let over = false;
  void done.then(() => (over = true));
  const answers: (number | string)[] = [];
  while (!over) {
    answers.push(await login(d));
    await sleep(200);
  }
  return answers;
}

t.test('login bodies one byte per packet: bounded memory, cut by the body deadline, legit client served', async (t) => {
  const d = await startDaemon(t, { identities, http: { 'body.timeout': 3000 } }, { env });
  // The attack of the issue: 16 anonymous connections, Content-Length 16000, one byte per packet
  // (half of them as 1-byte chunks of a chunked body).
  const slow = Array.from({ length: 16 }, (_, i) => slowLogin(d.ports.http[0], 16_000, { chunked: i % 2 === 1 }));
  const statuses = Promise.all(slow.map((s) => s.status));
  const legit = await legitDuring(d, statuses);
  const got = await statuses;
  t.ok(legit.length > 0, `legitimate logins during the attack: ${legit.length}`);
  t.same(legit.filter((s) => s !== 200), [], 'every legitimate login succeeded');
  t.same(got, got.map(() => 408), 'each slow body answered 408 before the connection was closed');
  t.ok(slow.every((s) => s.sent() < 16_000), 'each slow body cut before it was complete');
  t.equal(d.proc.exitCode, null, 'daemon alive');
  t.equal(await login(d), 200, 'and serving');
});

t.test('slow bodies cannot hold the anonymous body slots against a prompt client', async (t) => {
  // A long deadline: here only the slot bound can free the daemon from the slow bodies.
  const d = await startDaemon(t, { identities, http: { 'body.timeout': 120_000, 'max.unauthenticated.bodies': 4 } }, { env });
  const slow: Slow[] = [];
  for (let i = 0; i < 10; i++) {
    slow.push(slowLogin(d.ports.http[0], 1000, { stallAfter: 5 }));
    await sleep(50);
  }
  await sleep(500);
  t.equal(await login(d), 200, 'a prompt login is served while slow bodies hold the slots');
  // 10 slow reads and one prompt one through 4 slots: 7 of the slow ones are cut (the oldest to
  // enter), whatever order the daemon parsed their requests in.
  const cut: number[] = [];
  for (const x of slow) void x.status.then((st) => cut.push(st));
  for (let i = 0; i < 600 && cut.length < 7; i++) await sleep(100);
  await sleep(500);
  t.same(cut, [408, 408, 408, 408, 408, 408, 408], 'seven slow bodies were cut with 408 for the newer requests, the others still held');
  for (const s of slow) s.destroy();
  t.equal(d.proc.exitCode, null, 'daemon alive');
});

t.test('connections are bounded; one that never sends a request makes room for a prompt client', async (t) => {
  const d = await startDaemon(t, { identities, http: { 'max.connections': 32 } }, { env });
  const idle: net.Socket[] = [];
  let open = 0;
  for (let i = 0; i < 100; i++) {
    const s = net.connect(d.ports.http[0], '127.0.0.1');
    s.on('error', () => {});
    s.on('connect', () => open++);
    s.on('close', () => open--);
    idle.push(s);
  }
  t.teardown(() => idle.forEach((s) => s.destroy()));
  // Wait until the daemon has seen them all (each either kept or closed), then try a real client.
  for (let i = 0; i < 200 && !(open <= 32 && idle.every((s) => s.readyState !== 'opening')); i++) await sleep(50);
  t.ok(open <= 32, `connections the daemon kept open: ${open} (bound 32)`);
  t.equal(await login(d), 200, 'a new client is served at the connection bound');
  t.equal(d.proc.exitCode, null, 'daemon alive');
});

t.test('at the connection bound, a flood of busy connections from one address makes room for another address', async (t) => {
  // Every connection the daemon keeps has completed a request and is busy with the next (a stalled
  // login body, long deadline, many slots): the room for a new client must come from the address
  // holding the most connections.
  const d = await startDaemon(t, { identities, http: { 'max.connections': 16, 'max.unauthenticated.bodies': 64, 'body.timeout': 120_000 } }, { env });
  const slow = Array.from({ length: 20 }, () => slowLogin(d.ports.http[0], 1000, { stallAfter: 5, from: '127.0.0.21', served: true }));
  t.teardown(() => slow.forEach((s) => s.destroy()));
  await sleep(1000);
  const body = JSON.stringify({ username: 'legit', password: PW });
  const status = await new Promise<number | string>((resolve) => {
    const req = http.request({ host: '127.0.0.1', port: d.ports.http[0], localAddress: '127.0.0.22', method: 'POST', path: LOGIN, agent: false, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.setTimeout(30_000, () => req.destroy(new Error('no answer')));
    req.on('error', (e) => resolve(`error ${e.message}`));
    req.end(body);
  });
  t.equal(status, 200, 'the client from another address is served');
  t.equal(d.proc.exitCode, null, 'daemon alive');
});
