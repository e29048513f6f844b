// Request bodies: bounded reading (413), content-type checks (415) and strict JSON (400).

import type { RequestContext } from './context.js';
import { HttpError } from './context.js';

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

/** The media type of the request without parameters, lower case ('' when absent). */
export function mediaType(ctx: RequestContext): string {
  const ct = ctx.header('content-type');
  if (!ct) return '';
  return ct.split(';')[0].trim().toLowerCase();
}

export interface JsonOptions {
  limit?: number;
  /**
   * Require `application/json` (415 otherwise). Kura's `@Consumes(application/json)` endpoints do;
   * a missing content type is accepted when `allowMissingType` (curl -d without -H).
   */
  requireJsonType?: boolean;
  allowMissingType?: boolean;
}

/**
 * Reads and parses a JSON body strictly (RFC 8259; Kura's lenient single quotes are refused).
 * Empty body → 400 `Request body is missing`. Never returns undefined.
 */
export async function readJson(ctx: RequestContext, opts: JsonOptions = {}): Promise<unknown> {
  if (opts.requireJsonType) {
    const mt = mediaType(ctx);
    const ok = mt === 'application/json' || mt.endsWith('+json') || (mt === '' && opts.allowMissingType !== false);
    if (!ok) {
      ctx.req.resume();
      throw new HttpError(415, `Unsupported content type ${JSON.stringify(mt)}: expected application/json`);
    }
  }
  const buf = await readBody(ctx, opts.limit ?? DEFAULT_JSON_LIMIT);
  return parseJsonBody(buf);
}

/** Strict JSON parse of a body buffer with a clear 400 for every kind of malformed input. */
export function parseJsonBody(buf: Buffer): unknown {
  if (buf.length === 0 || buf.toString('utf8').trim() === '') throw new HttpError(400, 'Request body is missing');
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(buf);
  } catch {
    throw new HttpError(400, 'Request body is not valid UTF-8');
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new HttpError(400, `Malformed JSON: ${(err as Error).message}`);
  }
}
