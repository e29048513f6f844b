// Getting a package file to install: `http:`/`https:` downloads and `file:` copies, each written
// to a path inside dataDir, never more than `maxBytes`.
//
// Kura's DeploymentAgent follows 301/302/303 without limit and moves `file:` sources into its
// packages folder; gatewayd follows at most `maxRedirects` redirects (301/302/303/307/308, never to
// another scheme than http/https) and copies `file:` sources, so the user's file is never moved or
// deleted (COMPATIBILITY.md "Decided deviations").

import fs from 'node:fs';
import fsp from 'node:fs/promises';
import { spaceMeter } from '../store/reserve.js';
import http from 'node:http';
import type https from 'node:https';
import { lazyBuiltin } from '../core/builtin.js';
import { timerDelay } from '../core/timers.js';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';
import { fileURLToPath } from 'node:url';

// Loaded for the first https: download (docs/installation.md "Start-up time").
const httpsModule = lazyBuiltin<typeof https>('node:https');

export interface FetchOptions {
  /** Connect and idle timeout, ms. */
  timeoutMs: number;
  /** Overall deadline of the whole transfer, ms (a server trickling a byte now and then). */
  deadlineMs?: number;
  maxBytes: number;
  maxRedirects: number;
  /** Absolute folders a `file:` URL must be inside. */
  allowedDirs: string[];
  /** Aborts the transfer (daemon shutdown must not wait for a slow server). */
  signal?: AbortSignal;
  /**
   * Told the bytes received so far and the size when the server declared it (`Content-Length`),
   * once when the answer starts (nothing received yet, or the bytes a resumed transfer already
   * has) and after every chunk: DEPLOY-V2 progress, the deployment queue's byte bound. Throwing
   * ends the transfer with that error.
   */
  onProgress?: (received: number, total: number | undefined) => void;
  /** Extra request headers (DEPLOY-V2 credentials). */
  headers?: Record<string, string>;
}

/** How often a transfer broken by the network is taken up again (with a Range request) before it fails. */
export const MAX_RESUMES = 3;

/** A request refused before anything is queued (answered 400; COMPATIBILITY.md). */
export class UrlRefusedError extends Error {
  override name = 'UrlRefusedError';
}

/** A download that failed; its message names the (redacted) URL. */
export class DownloadError extends Error {
  override name = 'DownloadError';
}

/** The URL without user info, for logs and the jobs list (a password in a URL is a secret). */
export function redactUrl(raw: string): string {
  try {
    const u = new URL(raw);
    if (!u.username && !u.password) return raw;
    u.username = '';
    u.password = '';
    return u.href;
  } catch {
    return raw;
  }
}

function inside(file: string, dirs: string[]): boolean {
  return dirs.some((d) => {
    const rel = path.relative(path.resolve(d), file);
    return rel !== '' && rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel);
  });
}

/**
 * Checks an install URL before it is queued. Refuses other schemes, and `file:` paths outside the
 * allowed folders (lexically here; the real path is checked again when the file is read).
 */
export function checkInstallUrl(raw: string, allowedDirs: string[]): URL {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new UrlRefusedError(`Bad request: not a URL: ${redactUrl(raw)}`);
  }
  if (u.protocol === 'http:' || u.protocol === 'https:') return u;
  if (u.protocol !== 'file:') throw new UrlRefusedError(`Bad request: unsupported URL scheme ${u.protocol} (use http:, https: or file:)`);
  let file: string;
  try {
    file = fileURLToPath(u);
  } catch {
    throw new UrlRefusedError(`Bad request: not a local file URL: ${raw}`);
  }
  if (!inside(path.resolve(file), allowedDirs)) {
    throw new UrlRefusedError(`Bad request: ${file} is not inside deploy.file.allowed.dirs`);
  }
  return u;
}

/** Fetches `url` into `dest` (created; removed again on failure). */
export async function fetchPackage(url: URL, dest: string, opts: FetchOptions): Promise<void> {
  // One signal for the caller's abort (cancel, shutdown) and the deadline; Node 18 has no AbortSignal.any.
  const ctl = new AbortController();
  const outer = opts.signal;
  const onAbort = () => ctl.abort(outer!.reason);
  if (outer?.aborted) onAbort();
  outer?.addEventListener('abort', onAbort);
  const timer = opts.deadlineMs
    ? setTimeout(() => ctl.abort(new DownloadError(`download of ${redactUrl(url.href)} did not complete within download.deadline (${opts.deadlineMs} ms)`)), timerDelay(opts.deadlineMs))
    : undefined;
  const o = { ...opts, signal: ctl.signal };
  try {
    if (url.protocol === 'file:') await copyLocal(fileURLToPath(url), dest, o);
    else await download(url, dest, o);
  } catch (err) {
    await fsp.rm(dest, { force: true });
    throw ctl.signal.aborted ? ctl.signal.reason : err;
  } finally {
    clearTimeout(timer);
    outer?.removeEventListener('abort', onAbort);
  }
}

async function copyLocal(file: string, dest: string, opts: FetchOptions): Promise<void> {
  let real: string;
  try {
    real = await fsp.realpath(file);
  } catch {
    throw new Error(`file not found: ${file}`);
  }
  // The real path counts: a symlink inside an allowed folder must not reach outside it.
  const realDirs = await Promise.all(opts.allowedDirs.map((d) => fsp.realpath(d).catch(() => path.resolve(d))));
  if (!inside(real, realDirs)) throw new Error(`${file} resolves outside deploy.file.allowed.dirs`);
  const st = await fsp.stat(real);
  if (!st.isFile()) throw new Error(`${file} is not a regular file`);
  if (st.size > opts.maxBytes) throw new Error(`${file} is larger than ${opts.maxBytes} bytes`);
  await pipeline(fs.createReadStream(real), limiter(opts.maxBytes, file, dest), fs.createWriteStream(dest, { flags: 'wx', mode: 0o600 }), { signal: opts.signal });
}

/** Passes at most `maxBytes`; with `dest`, written there, each chunk stops at the data partition's reserve. */
function limiter(maxBytes: number, what: string, dest?: string): Transform {
  let seen = 0;
  const wrote = dest ? spaceMeter(path.dirname(dest)) : undefined;
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      seen += chunk.length;
      if (seen > maxBytes) return cb(new DownloadError(`${what} is larger than ${maxBytes} bytes`));
      try {
        wrote?.(chunk.length);
      } catch (err) {
        return cb(err as Error);
      }
      cb(null, chunk);
    },
  });
}

/** GETs `url` as text (at most `maxBytes`), following redirects like a package download. */
export async function fetchText(url: URL, opts: Omit<FetchOptions, 'allowedDirs'>): Promise<string> {
  let text = '';
  await get(url, opts, 0, async (res, shown) => {
    const chunks: Buffer[] = [];
    await pipeline(res, limiter(opts.maxBytes, shown), async function* (src: AsyncIterable<Buffer>) {
      for await (const c of src) chunks.push(c);
    });
    text = Buffer.concat(chunks).toString('utf8');
  });
  return text;
}

/**
 * Downloads into `dest`. A transfer the network breaks (reset, premature close, idle timeout) is
 * taken up again up to MAX_RESUMES times, from the bytes already on disk when the server answers a
 * Range request with 206, else from the start; the overall deadline still bounds the whole.
 */
async function download(url: URL, dest: string, opts: FetchOptions): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const have = attempt === 0 ? 0 : await fsp.stat(dest).then((st) => st.size, () => 0);
    try {
      return await get(url, opts, 0, (res, shown) => {
        const resumed = res.statusCode === 206 && have > 0 && contentRangeStart(res) === have;
        if (res.statusCode === 206 && !resumed) throw new Error(`unexpected partial content from ${shown}`);
        const start = resumed ? have : 0;
        const length = Number(res.headers['content-length']);
        const total = Number.isFinite(length) ? start + length : undefined;
        let received = start;
        // The size is known as soon as the answer starts: Kura's first IN_PROGRESS notification
        // already carries it.
        opts.onProgress?.(received, total);
        const wrote = spaceMeter(path.dirname(dest));
        const progress = new Transform({
          transform(chunk: Buffer, _enc, cb) {
            received += chunk.length;
            if (received > opts.maxBytes) return cb(new Error(`${shown} is larger than ${opts.maxBytes} bytes`));
            try {
              wrote(chunk.length); // a download stops at the data partition's reserve
              opts.onProgress?.(received, total); // and at the queue's byte bound
            } catch (err) {
              return cb(err as Error);
            }
            cb(null, chunk);
          },
        });
        return pipeline(res, progress, fs.createWriteStream(dest, { flags: resumed ? 'a' : 'w', mode: 0o600 }), { signal: opts.signal });
      }, have > 0 ? { range: `bytes=${have}-` } : {});
    } catch (err) {
      if (opts.signal?.aborted || attempt >= MAX_RESUMES || !brokenTransfer(err as Error)) throw err;
      await new Promise((r) => setTimeout(r, 250 << attempt));
    }
  }
}

function contentRangeStart(res: http.IncomingMessage): number | undefined {
  const m = /^bytes (\d+)-/.exec(String(res.headers['content-range'] ?? ''));
  return m ? Number(m[1]) : undefined;
}

/** A failure of the connection, not of the request: worth taking up again. */
function brokenTransfer(err: Error & { code?: string }): boolean {
  return /\b(ECONNRESET|EPIPE|ETIMEDOUT|ECONNABORTED|aborted|socket hang up|timed out|premature close)\b/i.test(`${err.code ?? ''} ${err.message}`);
}

type Consume = (res: http.IncomingMessage, shown: string) => Promise<void>;

function get(url: URL, opts: Omit<FetchOptions, 'allowedDirs'>, redirects: number, consume: Consume, extra: Record<string, string> = {}): Promise<void> {
  const shown = redactUrl(url.href);
  // A request's own timeout (DEPLOY-V2's dp.download.timeout) may be anything a client sends: kept
  // to what a socket timer honours, and 0 or less means none, as for Kura's HttpURLConnection
  // (download.deadline still bounds the download).
  const idleMs = timerDelay(opts.timeoutMs);
  const named = (err: Error) => (err instanceof DownloadError ? err : new DownloadError(`download of ${shown} failed: ${err.message}`));
  return new Promise<void>((resolve, reject) => {
    const mod = url.protocol === 'https:' ? httpsModule() : http;
    const req = mod.get(url, { timeout: idleMs, headers: { 'user-agent': 'gatewayd', ...opts.headers, ...extra }, signal: opts.signal }, (res) => {
      const status = res.statusCode ?? 0;
      if ([301, 302, 303, 307, 308].includes(status)) {
        res.resume();
        const loc = res.headers.location;
        if (!loc) return reject(new DownloadError(`redirect without a Location header from ${shown}`));
        if (redirects >= opts.maxRedirects) return reject(new DownloadError(`too many redirects (limit ${opts.maxRedirects}) from ${shown}`));
        let next: URL;
        try {
          next = new URL(loc, url);
        } catch {
          return reject(new DownloadError(`invalid redirect Location from ${shown}`));
        }
        if (next.protocol !== 'http:' && next.protocol !== 'https:') {
          return reject(new DownloadError(`redirect to unsupported scheme ${next.protocol} from ${shown}`));
        }
        return get(next, opts, redirects + 1, consume, extra).then(resolve, reject);
      }
      if (status < 200 || status > 299) {
        res.resume();
        return reject(new DownloadError(`HTTP ${status} from ${shown}`));
      }
      const declared = Number(res.headers['content-length']);
      if (status !== 206 && Number.isFinite(declared) && declared > opts.maxBytes) {
        res.destroy();
        return reject(new DownloadError(`${shown} is larger than ${opts.maxBytes} bytes`));
      }
      // The idle timeout keeps applying while the body streams (Kura's dpa.read.timeout).
      res.setTimeout(idleMs, () => res.destroy(new DownloadError(`download timed out after ${opts.timeoutMs} ms: ${shown}`)));
      Promise.resolve()
        .then(() => consume(res, shown))
        .then(resolve, (err: Error) => {
          res.destroy();
          reject(named(err));
        });
    });
    req.on('timeout', () => req.destroy(new DownloadError(`download timed out after ${opts.timeoutMs} ms: ${shown}`)));
    req.on('error', (err) => reject(named(err)));
  });
}
