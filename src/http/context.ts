// The per-request context handed to handlers, and the one place responses are written.

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket, PeerCertificate } from 'node:tls';
import { NO_PARAMS, bareObject, type Params } from '../core/router.js';
import { RequestError } from '../core/errors.js';
import type { AnswerBatch } from './answer-batch.js';

/**
 * The part of a client address that one party controls: IPv4 whole (also IPv4-mapped IPv6), IPv6 its
 * /64 (a single host usually has a whole /64 to pick addresses from).
 */
export function addressPrefix(address: string): string {
  // A plain IPv4 address (the usual case) is its own prefix: no regular expressions for it.
  if (!address.includes(':') && !address.includes('%')) return address;
  const a = address.replace(/%.*$/, '');
  if (!a.includes(':')) return a;
  if (/^::ffff:\d+\.\d+\.\d+\.\d+$/i.test(a)) return a.slice(7);
  const [head, tail] = a.split('::');
  const h = head ? head.split(':') : [];
  const g = tail === undefined ? h : [...h, ...Array(8).fill('0')].slice(0, 8 - (tail ? tail.split(':').length : 0));
  return `${g.slice(0, 4).map((x) => parseInt(x || '0', 16).toString(16)).join(':')}::/64`;
}

/** Who the request was authenticated as, and how. */
export interface Principal {
  name: string;
  /** Which provider produced it: 'certificate' | 'basic' | 'session' | a custom provider's name. */
  via: string;
}

export interface ListenerInfo {
  port: number;
  secure: boolean;
  /** True on `https.client.auth.ports` listeners (client certificate required and verified). */
  clientAuth: boolean;
}

/**
 * Thrown by handlers (and body readers) to answer with a status; the API family decides the body.
 * A RequestError (src/core/errors.ts) with HTTP extras; like it, it captures no stack trace.
 */
export class HttpError extends RequestError {
  /** A bodiless error (Kura's Jersey-generated 404/405/403): the family policy sends no entity. */
  readonly bodiless: boolean;
  readonly headers: Record<string, string>;

  constructor(status: number, message: string, bodiless = false, headers: Record<string, string> = {}) {
    super(status, message);
    this.bodiless = bodiless;
    this.headers = headers;
  }
}

const STORAGE_ERRORS: Record<string, string> = {
  ENOSPC: 'no space left on the device',
  EDQUOT: 'the disk quota is exhausted',
  EROFS: 'the data folder is read-only',
  EFBIG: 'the file is larger than the device allows',
};

/**
 * A storage failure (full disk, quota, read-only data folder) as a clear 507 instead of an anonymous
 * 500: the operator can act on it. Undefined for any other error.
 */
export function storageError(err: unknown): HttpError | undefined {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  // The data partition's reserve (src/store/reserve.ts): its message says how much is kept and free.
  const why = code === 'ERESERVE' ? (err as Error).message : code ? STORAGE_ERRORS[code] : undefined;
  return why ? new HttpError(507, `Insufficient storage: the change could not be saved (${why})`) : undefined;
}

/** What body reading needs from the server's BodyGate (declared here: body.ts imports this file). */
export interface BodyAdmission {
  readonly timeoutMs: number;
  /** Registers a read without a principal; `cut` ends it early; returns its release. */
  enter(cut: (err: HttpError) => void): () => void;
}

export type ResponseFilter = (ctx: RequestContext, status: number, headers: Record<string, string | string[]>) => number;

export class RequestContext {
  params: Params = NO_PARAMS;
  principal: Principal | undefined;
  /** Free slots for pipeline stages (e.g. the session the request authenticated with). */
  readonly locals: Record<string, unknown> = bareObject();
  responded = false;
  /** Set by the server: deadline and slots for reading a body into memory (BodyGate in body.ts). */
  bodyGate: BodyAdmission | undefined;
  /**
   * The answer goes out without the response filters: set by a stage that refuses a request before
   * authentication ran (cross-site.ts), whose answer the filters, which act on authentication's
   * outcome, must not rewrite.
   */
  unfiltered = false;

  constructor(
    readonly req: IncomingMessage,
    readonly res: ServerResponse,
    readonly listener: ListenerInfo,
    readonly path: string,
    private readonly filters: ResponseFilter[],
    /** Where `send` leaves its answer to go out with the others of this turn (answer-batch.ts). */
    private readonly answers: AnswerBatch,
  ) {}

  get method(): string {
    return this.req.method ?? 'GET';
  }

  get remoteAddress(): string {
    return this.req.socket.remoteAddress ?? '';
  }

  /** The verified client certificate on a client-auth port; undefined elsewhere. */
  peerCertificate(): PeerCertificate | undefined {
    if (!this.listener.clientAuth) return undefined;
    const sock = this.req.socket as TLSSocket;
    if (typeof sock.getPeerCertificate !== 'function' || !sock.authorized) return undefined;
    const cert = sock.getPeerCertificate();
    return cert && Object.keys(cert).length > 0 ? cert : undefined;
  }

  /** A request header by its lower-case name, as `req.headers` gives it (see headerOf). */
  header(name: string): string | undefined {
    return headerOf(this.req, name);
  }

  /** Writes the response once; later calls are ignored. Response filters may change the status. */
  send(status: number, body?: string | Buffer, contentType?: string, extra?: Record<string, string | string[]>): void {
    if (this.responded || this.res.headersSent) return;
    this.responded = true;
    const headers: Record<string, string | string[]> = {
      'cache-control': 'no-store',
      'x-content-type-options': 'nosniff',
    };
    if (extra !== undefined) Object.assign(headers, extra);
    if (!this.unfiltered) for (const f of this.filters) status = f(this, status, headers);
    if (body !== undefined && status !== 204 && status !== 304) {
      headers['content-type'] = contentType ?? 'application/octet-stream';
      const length = typeof body === 'string' ? Buffer.byteLength(body, 'utf8') : body.length;
      headers['content-length'] = String(length);
      this.res.writeHead(status, headers);
      // A string body goes out in the same write as the headers (Node concatenates them); a Buffer
      // costs a second chunk (writev). Most answers are JSON text, and most of it ASCII: as many
      // UTF-8 bytes as characters means every character is ASCII, and then the write copies it
      // as Latin-1 (the same bytes) instead of encoding it as UTF-8 once more.
      if (this.method === 'HEAD') this.answers.end(this.res, undefined, 'latin1');
      else this.answers.end(this.res, body, length === body.length ? 'latin1' : 'utf8');
    } else {
      if (status !== 204 && status !== 304) headers['content-length'] = '0';
      this.res.writeHead(status, headers);
      this.answers.end(this.res, undefined, 'latin1');
    }
  }

  /**
   * Sends a body made a piece at a time (chunked), at the pace the client reads: the next pieces
   * are made only once the socket took the last ones, so a large answer is never whole in memory.
   * `done` runs once when the pieces are no longer needed: all sent, the client gone, or a piece
   * threw (`err`; the connection is then cut, the status line being out already).
   */
  stream(status: number, pieces: Iterable<string>, contentType: string, done: (err?: unknown) => void = () => {}): void {
    if (this.responded || this.res.headersSent) return done();
    this.responded = true;
    const headers: Record<string, string | string[]> = { 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' };
    for (const f of this.filters) status = f(this, status, headers);
    headers['content-type'] = contentType;
    this.res.writeHead(status, headers);
    if (this.method === 'HEAD' || status === 204 || status === 304) {
      this.res.end();
      return done();
    }
    writePieces(this.res, pieces).then(
      () => done(),
      (err) => {
        this.res.destroy();
        done(err);
      },
    );
  }

  json(status: number, value: unknown, extra?: Record<string, string | string[]>): void {
    this.send(status, JSON.stringify(value), 'application/json', extra);
  }

  /** Sends pre-serialised JSON text (e.g. containing exact 64-bit integers). */
  rawJson(status: number, text: string, extra?: Record<string, string | string[]>): void {
    this.send(status, text, 'application/json', extra);
  }

  text(status: number, text: string, extra?: Record<string, string | string[]>): void {
    this.send(status, text, 'text/plain; charset=utf-8', extra);
  }

  empty(status: number, extra?: Record<string, string | string[]>): void {
    this.send(status, undefined, undefined, extra);
  }
}

/**
 * A request header by its lower-case name: the value `req.headers[name]` has (the first one of an
 * array), without making `req.headers`. Node builds that object from every header line on first
 * use, and a session read needs two of them (cookie, XSRF token): one scan of `rawHeaders` each
 * costs less. A header sent more than once is left to `req.headers`, which joins or drops the
 * repeats by Node's rules, so the answer is always the same as before.
 */
export function headerOf(req: IncomingMessage, name: string): string | undefined {
  const raw = req.rawHeaders;
  let found: string | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    const k = raw[i]!;
    if (k.length !== name.length || (k !== name && !sameLowerCase(k, name))) continue;
    if (found !== undefined) {
      const v = req.headers[name];
      return Array.isArray(v) ? v[0] : v;
    }
    found = raw[i + 1];
  }
  return found;
}

/**
 * Whether header name `k` is `lower` (a lower-case name) in any letter case: what
 * `k.toLowerCase() === lower` says, without making the copy (clients send `Cookie`, `X-XSRF-Token`).
 * Only A-Z are folded: Node's parser accepts only ASCII token characters in a header name.
 */
function sameLowerCase(k: string, lower: string): boolean {
  for (let i = 0; i < k.length; i++) {
    const c = k.charCodeAt(i);
    if (c !== lower.charCodeAt(i) && (c < 65 || c > 90 || (c | 0x20) !== lower.charCodeAt(i))) return false;
  }
  return true;
}

/** Pieces are gathered into writes of about this many characters (fewer system calls and chunks). */
const STREAM_CHUNK = 64 * 1024;

/** Writes `pieces` to `res`, waiting for 'drain' whenever its buffer is full; stops when it closes. */
async function writePieces(res: ServerResponse, pieces: Iterable<string>): Promise<void> {
  const it = pieces[Symbol.iterator]();
  let closed = false;
  let wake: (() => void) | undefined;
  const onClose = () => {
    closed = true;
    wake?.();
  };
  const onDrain = () => wake?.();
  res.on('close', onClose);
  res.on('drain', onDrain);
  try {
    let chunk = '';
    for (let r = it.next(); !r.done; r = it.next()) {
      chunk += r.value;
      if (chunk.length < STREAM_CHUNK) continue;
      if (closed) return;
      const more = res.write(chunk);
      chunk = '';
      if (!more && !closed) await new Promise<void>((resolve) => (wake = resolve));
      wake = undefined;
      if (closed) return;
    }
    if (!closed) res.end(chunk);
  } finally {
    it.return?.();
    res.off('close', onClose);
    res.off('drain', onDrain);
  }
}
