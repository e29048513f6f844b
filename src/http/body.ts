// Request bodies: bounded reading (413), the JSON content type (415) and strict JSON (400).

import type { RequestContext } from './context.js';
import { HttpError } from './context.js';
import { readJsonBytes } from '../core/json.js';

export const DEFAULT_JSON_LIMIT = 1024 * 1024;

/**
 * Deadlines and slots for the bodies read into memory (docs/configuration.md, `http` section):
 * `body.timeout` bounds the time to receive one, `max.unauthenticated.bodies` how many requests
 * without a principal (a login) may be receiving one at once. When the slots are full the oldest
 * such read is cut (408) for the newcomer: a slow client cannot hold them against a prompt one.
 */
export class BodyGate {
  private anonymous = new Set<(err: HttpError) => void>();

  constructor(
    public timeoutMs = 20_000,
    public maxUnauthenticated = 8,
  ) {}

  /** Registers a read without a principal; returns its release. */
  enter(cut: (err: HttpError) => void): () => void {
    this.anonymous.add(cut);
    if (this.anonymous.size > this.maxUnauthenticated) {
      const oldest = this.anonymous.values().next().value!;
      this.anonymous.delete(oldest);
      oldest(new HttpError(408, 'Request body not received in time: too many slow requests'));
    }
    return () => this.anonymous.delete(cut);
  }
}

const tooLarge = (limit: number) => new HttpError(413, `Request body larger than ${limit} bytes`);

/**
 * Reads the whole body, refusing more than `limit` bytes (declared or actual) with 413 and a body not
 * received within the gate's deadline with 408. The bytes are copied into one buffer as they come
 * (sized from Content-Length, or grown by doubling up to `limit` when chunked): memory is bounded by
 * the limit whatever the chunking — a body sent one byte per packet does not keep a Buffer per byte.
 */
export function readBody(ctx: RequestContext, limit: number): Promise<Buffer> {
  const req = ctx.req;
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) {
    req.resume();
    return Promise.reject(tooLarge(limit));
  }
  const gate = ctx.bodyGate;
  return new Promise((resolve, reject) => {
    let buf = Buffer.allocUnsafe(declared !== undefined ? Number(declared) : Math.min(limit, 4096));
    let size = 0;
    let done = false;
    let timer: NodeJS.Timeout | undefined;
    let release: (() => void) | undefined;
    const finish = (err: HttpError | undefined) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      release?.();
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('aborted', onAborted);
      if (err) {
        // Keep draining so the answer can still be written on this connection (the server closes it).
        req.resume();
        reject(err);
      } else resolve(buf.subarray(0, size));
    };
    const onData = (c: Buffer) => {
      if (size + c.length > limit) return finish(tooLarge(limit));
      if (size + c.length > buf.length) {
        const bigger = Buffer.allocUnsafe(Math.min(limit, Math.max(size + c.length, buf.length * 2)));
        buf.copy(bigger, 0, 0, size);
        buf = bigger;
      }
      size += c.copy(buf, size);
    };
    const onEnd = () => finish(undefined);
    const onError = () => finish(new HttpError(400, 'Request body could not be read'));
    const onAborted = () => finish(new HttpError(400, 'Request aborted'));
    const ms = gate?.timeoutMs ?? 0;
    timer = ms > 0 ? setTimeout(() => finish(new HttpError(408, `Request body not received within ${ms / 1000} s`)), ms) : undefined;
    release = gate && !ctx.principal ? gate.enter(finish) : undefined;
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('aborted', onAborted);
  });
}

/** Whether the request announces a body (RFC 9112 §6.3: Transfer-Encoding or a non-zero Content-Length). */
function hasBody(ctx: RequestContext): boolean {
  const h = ctx.req.headers;
  return h['transfer-encoding'] !== undefined || (h['content-length'] !== undefined && h['content-length'] !== '0');
}

/** The media type of the request without parameters, lower case ('' when absent). */
export function mediaType(ctx: RequestContext): string {
  const ct = ctx.header('content-type');
  if (!ct) return '';
  return ct.split(';')[0].trim().toLowerCase();
}

export interface JsonOptions {
  limit?: number;
  /** Keep number texts (src/core/json.ts parseExactJson), e.g. for exact LONG values. */
  exact?: boolean;
}

/**
 * The JSON body of a request, through the one reader (src/core/json.ts): `Content-Type` must be
 * `application/json` (or `+json`), else 415, a missing type included — a form post from another
 * site (cross-site request forgery with a browser's cached BASIC credentials) carries none or
 * `text/plain`. Then the bounded body, strict UTF-8 and strict JSON (RFC 8259; Kura's lenient single
 * quotes are refused). Undefined for an empty body: the caller answers it (usually 400).
 * A request without any body needs no type.
 */
export async function readJsonBody(ctx: RequestContext, opts: JsonOptions = {}): Promise<unknown> {
  const mt = mediaType(ctx);
  // No body at all and no type: nothing to refuse, the caller answers the missing body.
  if (mt === '' && !hasBody(ctx)) return undefined;
  if (mt !== 'application/json' && !mt.endsWith('+json')) {
    ctx.req.resume();
    throw new HttpError(415, mt === '' ? 'Content-Type application/json is required' : `Unsupported content type ${JSON.stringify(mt)}: expected application/json`);
  }
  return readJsonBytes(await readBody(ctx, opts.limit ?? DEFAULT_JSON_LIMIT), opts);
}

/** readJsonBody, with an empty body refused: 400 `Request body is missing`. Never returns undefined. */
export async function readJson(ctx: RequestContext, opts: JsonOptions = {}): Promise<unknown> {
  const v = await readJsonBody(ctx, opts);
  if (v === undefined) throw new HttpError(400, 'Request body is missing');
  return v;
}
