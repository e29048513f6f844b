// The field console's files (docs/console.md): built by build/build.mjs into `console/` beside the
// bundle, read once when the console is first asked for (a boot only checks that they are there),
// served precompressed (br, gzip) and cached by content hash. `GET /` redirects to it. The
// pipeline's allowed-ports stage applies as to every route.

import { nodeCrypto } from '../core/builtin.js';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { textFamily, type HttpServer } from '../http/server.js';
import { HttpError, type RequestContext } from '../http/context.js';
import type { Logger } from '../log.js';

/** No inline script or style, nothing from another origin, never framed. */
export const CONSOLE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

interface File {
  type: string;
  raw: Buffer;
  gz?: Buffer;
  br?: Buffer;
  etag: string;
  html: boolean;
}

/** `console/` beside the running bundle (dist/console, or lib/gatewayd/console once installed). */
export const defaultConsoleDir = (): string => fileURLToPath(new URL('./console/', import.meta.url));

function load(dir: string): Map<string, File> {
  const files = new Map<string, File>();
  for (const name of fs.readdirSync(dir)) {
    const type = TYPES[path.extname(name)];
    if (!type) continue;
    const raw = fs.readFileSync(path.join(dir, name));
    const opt = (ext: string) => (fs.existsSync(path.join(dir, name + ext)) ? fs.readFileSync(path.join(dir, name + ext)) : undefined);
    const etag = `"${nodeCrypto().createHash('sha256').update(raw).digest('base64url').slice(0, 16)}"`;
    files.set(name, { type, raw, gz: opt('.gz'), br: opt('.br'), etag, html: name.endsWith('.html') });
  }
  return files;
}

export function mountConsole(server: HttpServer, opts: { enabled: () => boolean; log: Logger; dir?: string }): void {
  const dir = opts.dir ?? defaultConsoleDir();
  // Read on first use: reading and hashing them made part of every boot's CPU (docs/installation.md
  // "Start-up time"), and a device nobody opens the console on never holds them in memory.
  if (!fs.existsSync(path.join(dir, 'index.html'))) opts.log.warn('console files not found: /console/ answers 404', { dir });
  let files: Map<string, File> | undefined;
  const fileOf = (name: string): File | undefined => {
    if (!files) {
      try {
        files = load(dir);
      } catch {
        files = new Map(); // missing or unreadable: 404, as warned at start
      }
    }
    return files.get(name);
  };
  const family = textFamily('console');
  const notFound = () => new HttpError(404, 'Not found', true);

  const serve = (ctx: RequestContext, name: string) => {
    if (!opts.enabled()) throw notFound();
    const f = fileOf(name);
    if (!f) throw notFound();
    const headers: Record<string, string> = {
      // Hashed names never change; index.html is revalidated (its ETag) on every load.
      'cache-control': f.html ? 'no-cache' : 'public, max-age=31536000, immutable',
      etag: f.etag,
      vary: 'accept-encoding',
    };
    if (f.html) Object.assign(headers, { 'content-security-policy': CONSOLE_CSP, 'x-frame-options': 'DENY', 'referrer-policy': 'no-referrer' });
    if (ctx.header('if-none-match') === f.etag) return ctx.empty(304, headers);
    const accept = ctx.header('accept-encoding') ?? '';
    let body = f.raw;
    if (f.br && /\bbr\b/.test(accept)) [body, headers['content-encoding']] = [f.br, 'br'];
    else if (f.gz && /\bgzip\b/.test(accept)) [body, headers['content-encoding']] = [f.gz, 'gzip'];
    ctx.send(200, body, f.type, headers);
  };

  server.route('GET', '/', family, (ctx) => {
    if (!opts.enabled()) throw notFound();
    ctx.empty(302, { location: '/console/' });
  });
  server.route('GET', '/console', family, (ctx) => serve(ctx, 'index.html'));
  server.route('GET', '/console/:file', family, (ctx) => serve(ctx, ctx.params.file!));
}
