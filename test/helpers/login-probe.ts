// Probing which names exist, for the tests that check it cannot be told (test/auth/login-timing*.test.ts,
// docs/rest-api.md "Password checks"): failed logins and BASIC reads from a chosen source address,
// timed; a background of wrong logins for made-up names; and the comparison of the kinds of name —
// the same answer (status, body, challenge) and medians of interleaved probes within a ratio.

import type { Test } from 'tap';
import crypto from 'node:crypto';
import http from 'node:http';
import type { Daemon } from './daemon.js';

const LOGIN = '/services/session/v1/login/password';
const WRONG = 'Wrong-password-1';
/** Generous: what leaked differed by one or two orders of magnitude. */
export const RATIO_BOUND = 2;

export interface Answer {
  status: number;
  /** Status, body and challenge: what a client can compare. */
  shape: string;
  ms: number;
}

export function send(d: Daemon, localAddress: string, opts: { path: string; method: string; headers?: Record<string, string>; body?: string }): Promise<Answer> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.body !== undefined) {
    headers['content-type'] = 'application/json';
    headers['content-length'] = String(Buffer.byteLength(opts.body));
  }
  const t0 = process.hrtime.bigint();
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port: d.ports.http[0], localAddress, method: opts.method, path: opts.path, agent: false, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const ms = Number(process.hrtime.bigint() - t0) / 1e6;
        resolve({ status: res.statusCode ?? 0, shape: `${res.statusCode} ${Buffer.concat(chunks).toString('utf8')} ${res.headers['www-authenticate'] ?? '-'}`, ms });
      });
    });
    req.setTimeout(60_000, () => req.destroy());
    req.on('error', (err) => resolve({ status: 0, shape: `error ${err.message}`, ms: Number(process.hrtime.bigint() - t0) / 1e6 }));
    req.end(opts.body);
  });
}

export const login = (d: Daemon, from: string, username: string, password = WRONG) => send(d, from, { method: 'POST', path: LOGIN, body: JSON.stringify({ username, password }) });
export const basicRead = (d: Daemon, from: string, username: string, password = WRONG) =>
  send(d, from, { method: 'GET', path: '/services/assets', headers: { authorization: `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`, 'sec-fetch-mode': 'navigate' } });

/** Wrong logins for made-up names, `workers` at a time, from `address(i)`, until stopped. */
export function background(d: Daemon, workers: number, address: (i: number) => string) {
  let stop = false;
  let answered = 0;
  let n = 0;
  const running = Array.from({ length: workers }, async (_, w) => {
    while (!stop) {
      await login(d, address(n++), `made-up-${w}-${n}`);
      answered++;
    }
  });
  return {
    answered: () => answered,
    stop: async () => {
      stop = true;
      await Promise.all(running);
    },
  };
}

export const median = (a: number[]) => {
  const s = [...a].sort((x, y) => x - y);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** Kinds of name probed one way (a login, a BASIC read), whose answers are compared with one another. */
export interface ProbeSet {
  label: string;
  kinds: string[];
  probe: (kind: string, round: number) => Promise<Answer>;
}

/**
 * Probes every kind of every set once per round, all of a round's probes sent together in an order
 * rotated each round (so each kind meets each place in the queue, and a drift of the background load
 * falls on every kind alike), then checks within each set the answers' shapes and the medians of
 * their times.
 */
export async function compareKinds(t: Test, rounds: number, sets: ProbeSet[]): Promise<void> {
  const all = sets.flatMap((set) => set.kinds.map((kind) => ({ set, kind, times: [] as number[], shapes: new Set<string>() })));
  for (let r = 0; r < rounds; r++) {
    const order = all.map((_, i) => all[(i + r) % all.length]);
    await Promise.all(
      order.map(async (p) => {
        const a = await p.set.probe(p.kind, r);
        p.times.push(a.ms);
        p.shapes.add(a.shape);
      }),
    );
  }
  for (const set of sets) {
    const mine = all.filter((p) => p.set === set);
    const shapes = new Set(mine.flatMap((p) => [...p.shapes]));
    t.equal(shapes.size, 1, `${set.label}: every kind answered alike (${[...shapes].join(' | ')})`);
    t.ok([...shapes][0]?.startsWith('401 '), `${set.label}: with 401`);
    const medians = mine.map((p) => median(p.times));
    const ratio = Math.max(...medians) / Math.max(0.001, Math.min(...medians));
    const shown = mine.map((p, i) => `${p.kind} ${medians[i].toFixed(0)} ms`).join(', ');
    t.ok(ratio <= RATIO_BOUND, `${set.label}: medians over ${rounds} probes each within ${RATIO_BOUND}× of one another (${shown}; ratio ${ratio.toFixed(2)})`);
  }
}

export const kuraHash = (p: string) => crypto.createHash('sha256').update(p).digest('base64');
