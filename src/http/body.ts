// Request bodies: bounded reading (413), the JSON content type (415) and strict JSON (400).

import type { RequestContext } from './context.js';
import { HttpError } from './context.js';
import { readJsonBytes } from '../core/json.js';

export const DEFAULT_JSON_LIMIT = 1024 * 1024;

/** Reads the whole body, refusing more than `limit` bytes (declared or actual) with 413. */
export function readBody(ctx: RequestContext, limit: number): Promise<Buffer> {
  const req = ctx.req;
  const declared = req.headers['content-length'];
  if (declared !== undefined && Number(declared) > limit) {
    req.resume();
    return Promise.reject(new HttpError(413, `Request body larger than ${limit} bytes`));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    const finish = (err: Error | undefined, buf?: Buffer) => {
      if (done) return;
      done = true;
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('aborted', onAborted);
      if (err) reject(err);
      else resolve(buf!);
    };
    const onData = (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        // Keep draining so the 413 can still be written on this connection.
        req.resume();
        finish(new HttpError(413, `Request body larger than ${limit} bytes`));
        return;
      }
      chunks.push(c);
    };
    const onEnd = () => finish(undefined, Buffer.concat(chunks, size));
    const onError = () => finish(new HttpError(400, 'Request body could not be read'));
    const onAborted = () => finish(new HttpError(400, 'Request aborted'));
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
