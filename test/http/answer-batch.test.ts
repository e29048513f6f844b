// The answer batch (src/http/answer-batch.ts): answers written while the requests of one turn of the event loop
// are handled leave together after the last of them, over real sockets; and the batch's own rules
// (order, a client gone meanwhile, an end that throws, an answer ended during a flush).

import t from 'tap';
import net from 'node:net';
import type { ServerResponse } from 'node:http';
import { HttpServer, jsonFamily, DEFAULT_LIMITS } from '../../src/http/server.js';
import { AnswerBatch } from '../../src/http/answer-batch.js';
import { createLogger } from '../../src/log.js';

const log = createLogger('error', () => {});
const turn = () => new Promise<void>((r) => setImmediate(r));

/** A stand-in response that records what was done to it. */
function fakeResponse(name: string, events: string[], opts: { throws?: boolean; onEnd?: () => void } = {}) {
  const res = {
    destroyed: false,
    end(body?: unknown, encoding?: unknown) {
      if (opts.throws) throw new Error('content length mismatch');
      events.push(body === undefined ? `${name} end` : `${name} end ${String(body)} ${String(encoding)}`);
      opts.onEnd?.();
      return res;
    },
    destroy() {
      res.destroyed = true;
      events.push(`${name} destroy`);
      return res;
    },
  };
  return res as typeof res & ServerResponse;
}

t.test('ends nothing at once, then every answer of the turn in the order given', async (t) => {
  const events: string[] = [];
  const box = new AnswerBatch();
  box.end(fakeResponse('a', events), '{"x":1}', 'latin1');
  box.end(fakeResponse('b', events), undefined, 'latin1');
  box.end(fakeResponse('c', events), Buffer.from('é'), 'utf8');
  t.same(events, [], 'nothing is sent while the turn goes on');
  await turn();
  t.same(events, ['a end {"x":1} latin1', 'b end', 'c end é utf8']);
  await turn();
  t.equal(events.length, 3, 'each answer is ended once');
});

t.test('a client gone meanwhile is skipped; an end that throws closes that connection only', async (t) => {
  const events: string[] = [];
  const box = new AnswerBatch();
  const gone = fakeResponse('gone', events);
  box.end(gone, 'late', 'latin1');
  box.end(fakeResponse('bad', events, { throws: true }), 'x', 'latin1');
  box.end(fakeResponse('ok', events), 'y', 'latin1');
  gone.destroyed = true;
  await turn();
  t.same(events, ['bad destroy', 'ok end y latin1']);
});

t.test('an answer ended while the batch flushes goes out in the next turn', async (t) => {
  const events: string[] = [];
  const box = new AnswerBatch();
  box.end(fakeResponse('first', events, { onEnd: () => box.end(fakeResponse('second', events), 'z', 'latin1') }), 'w', 'latin1');
  await turn();
  t.same(events, ['first end w latin1'], 'not in the flush that is running');
  await turn();
  t.same(events, ['first end w latin1', 'second end z latin1']);
});

t.test('over real sockets: requests ready together are all handled before any answer is sent', async (t) => {
  const server = new HttpServer(log, DEFAULT_LIMITS);
  const order: string[] = [];
  server.route('GET', '/r/:n', jsonFamily('json'), (ctx) => {
    const n = ctx.params.n!;
    order.push(`handled ${n}`);
    ctx.res.once('finish', () => order.push(`sent ${n}`));
    ctx.json(200, { n });
    // The answer is written (headers and body are final), and waits for the turn to end.
    t.equal(ctx.responded, true);
    t.equal(ctx.res.writableEnded, false, `answer ${n} is not ended inside its handler`);
  });
  await server.listen([{ port: 0, kind: 'http' }], '127.0.0.1');
  t.teardown(() => server.close(100));
  const port = server.listeners()[0]!.port;

  const connect = () =>
    new Promise<net.Socket>((resolve, reject) => {
      const s = net.connect(port, '127.0.0.1', () => resolve(s));
      s.once('error', reject);
    });
  const sockets = await Promise.all([connect(), connect(), connect()]);
  for (const s of sockets) s.setEncoding('latin1');
  const exchange = (round: string) => {
    const answers = sockets.map(
      (s) =>
        new Promise<string>((resolve) => {
          let text = '';
          const onData = (d: string) => {
            text += d;
            if (!text.endsWith('"}')) return;
            s.off('data', onData);
            resolve(text);
          };
          s.on('data', onData);
        }),
    );
    // Written in one step: the requests are in the server's receive queues before its next poll,
    // so it reads them all in one turn.
    sockets.forEach((s, i) => s.write(`GET /r/${round}${i} HTTP/1.1\r\nHost: x\r\n\r\n`));
    return Promise.all(answers);
  };
  // A first round, until the server has accepted every connection and reads from each.
  await exchange('w');
  order.length = 0;
  const texts = await exchange('');
  for (const s of sockets) s.destroy();

  t.same(order.slice(0, 3), ['handled 0', 'handled 1', 'handled 2'], 'every request of the turn was handled first');
  t.same(order.slice(3).sort(), ['sent 0', 'sent 1', 'sent 2']);
  texts.forEach((text, i) => {
    t.match(text, /^HTTP\/1\.1 200 OK\r\n/);
    t.match(text, /\r\ncontent-length: 9\r\n/i);
    t.ok(text.endsWith(`{"n":"${i}"}`), `connection ${i} got its own answer`);
  });
});

t.test('pipelined requests on one connection: answers in request order, HEAD without a body, errors between', async (t) => {
  const server = new HttpServer(log, DEFAULT_LIMITS);
  server.route('GET', '/r/:n', jsonFamily('json'), (ctx) => ctx.json(200, { n: ctx.params.n }));
  // An answer that comes later than the ones pipelined behind it would be ready.
  server.route('GET', '/slow/:n', jsonFamily('json'), (ctx) => new Promise<void>((resolve) => setTimeout(() => resolve(ctx.json(200, { slow: ctx.params.n })), 30)));
  await server.listen([{ port: 0, kind: 'http' }], '127.0.0.1');
  t.teardown(() => server.close(100));
  const port = server.listeners()[0]!.port;

  const requests = ['GET /r/a', 'GET /slow/b', 'HEAD /r/c', 'GET /nowhere', 'DELETE /r/d', 'GET /r/e'];
  const text = await new Promise<string>((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    let got = '';
    s.setEncoding('latin1');
    s.on('data', (d: string) => {
      got += d;
      // The last answer is the only one whose body ends in "e"}.
      if (got.endsWith('{"n":"e"}')) {
        s.destroy();
        resolve(got);
      }
    });
    s.once('error', reject);
    // Every request in one write: the server reads them in one turn.
    s.write(requests.map((r) => `${r} HTTP/1.1\r\nHost: x\r\n\r\n`).join(''));
  });

  // Split the stream into answers by their status lines; each keeps its headers and body.
  const answers = text.split(/(?=HTTP\/1\.1 \d{3} )/);
  t.equal(answers.length, requests.length, 'one answer per request');
  t.match(answers[0], /^HTTP\/1\.1 200 OK\r\n[^]*\r\n\r\n\{"n":"a"\}$/, 'first: its own body');
  t.match(answers[1], /^HTTP\/1\.1 200 OK\r\n[^]*\r\n\r\n\{"slow":"b"\}$/, 'second: the slow answer, still before the later ones');
  t.match(answers[2], /^HTTP\/1\.1 200 OK\r\n[^]*content-length: 9\r\n[^]*\r\n\r\n$/i, 'HEAD: the length of the GET body, and no body');
  t.match(answers[3], /^HTTP\/1\.1 404 /, 'an unknown path answers 404 in its place');
  t.match(answers[4], /^HTTP\/1\.1 405 [^]*\r\nallow: GET\r\n/i, 'a wrong method answers 405 in its place');
  t.match(answers[5], /^HTTP\/1\.1 200 OK\r\n[^]*\r\n\r\n\{"n":"e"\}$/, 'last: its own body');
});
