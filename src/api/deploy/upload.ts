// The package upload of deploy/v2, `POST /services/deploy/v2/_upload` (docs/rest-api.md
// "deploy/v2"), role `deploy`, errors as the family's (text/plain). Not on the request core
// (src/core/family.ts), whose handlers receive a body read whole into memory: a package is
// streamed to a file in dataDir as its multipart body arrives, held against the deploy queue's
// byte bound and the data partition's reserve chunk by chunk, so no upload is ever in memory.

import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import busboy from 'busboy';
import { textFamily, type HttpServer } from '../../http/server.js';
import { HttpError, storageError, type RequestContext } from '../../http/context.js';
import { mediaType } from '../../http/body.js';
import { spaceMeter } from '../../store/reserve.js';
import type { Logger } from '../../log.js';
import type { DeploymentService } from '../../deploy/service.js';
import { QueueFullError, type QueueSlot } from '../../deploy/jobs.js';
import { DEPLOY_BASE, DEPLOY_ROLE } from './rest.js';

export function mountDeployUpload(server: HttpServer, deps: { deploy: DeploymentService; log: Logger }): void {
  const { deploy } = deps;
  const log = deps.log.child({ component: 'deploy-api' });
  server.route('POST', `${DEPLOY_BASE}/_upload`, textFamily('deploy/v2'), async (ctx) => {
    // The upload's place in the queue is taken before its first byte is stored (docs/rest-api.md
    // "deploy/v2"): a full queue refuses it at once.
    let slot: QueueSlot;
    try {
      slot = deploy.reserveUpload();
    } catch (err) {
      ctx.req.resume();
      if (err instanceof QueueFullError) throw new HttpError(507, err.message);
      throw err;
    }
    const { file, filename } = await receiveUpload(ctx, deploy, slot, log).catch((err) => {
      slot.release();
      throw err;
    });
    try {
      ctx.json(200, deploy.installUploaded(file, filename, slot));
    } catch (err) {
      await fsp.rm(file, { force: true });
      log.error('upload could not be queued', { file: filename, error: (err as Error).message });
      throw new HttpError(500, `Error installing deployment package: ${filename}`);
    }
  }, DEPLOY_ROLE);
}

/** What a multipart body may carry besides the file part (boundaries, part headers, small fields). */
const MULTIPART_SLACK = 64 * 1024;

/**
 * Streams the multipart part `file` to a file in dataDir, never holding it in memory, and refuses
 * more than `deploy.upload.max.bytes` with 413 (Kura has no limit). Other parts are drained. The
 * bytes are held in the upload's queue `slot` as they arrive: past `deploy.queue.max.bytes` the
 * upload ends with 507 (at once when its Content-Length already says so).
 */
function receiveUpload(ctx: RequestContext, deploy: DeploymentService, slot: QueueSlot, log: Logger): Promise<{ file: string; filename: string }> {
  const max = deploy.settings['upload.max.bytes'];
  if (mediaType(ctx) !== 'multipart/form-data') {
    ctx.req.resume();
    return Promise.reject(new HttpError(400, 'Bad request: expected multipart/form-data with the package in the part "file"'));
  }
  const declared = Number(ctx.header('content-length'));
  if (Number.isFinite(declared) && declared > max + MULTIPART_SLACK) {
    ctx.req.resume();
    return Promise.reject(new HttpError(413, `Upload larger than ${max} bytes`));
  }
  // The file is at least the body less its framing: held before the first byte is read.
  const least = Number.isFinite(declared) ? Math.max(0, declared - MULTIPART_SLACK) : 0;
  try {
    slot.hold(least);
  } catch (err) {
    ctx.req.resume();
    return Promise.reject(err instanceof QueueFullError ? new HttpError(507, err.message) : err);
  }
  return new Promise((resolve, reject) => {
    let bb: busboy.Busboy;
    try {
      bb = busboy({ headers: ctx.req.headers, limits: { files: 5, fileSize: max, fields: 20, parts: 40, fieldSize: 64 * 1024 } });
    } catch {
      ctx.req.resume();
      reject(new HttpError(400, 'Bad request: malformed multipart/form-data'));
      return;
    }
    const target = deploy.incomingPath();
    let out: fs.WriteStream | undefined;
    let writing: Promise<void> | undefined;
    let filename = '';
    let received = 0;
    let settled = false;
    const fail = (err: HttpError) => {
      if (settled) return;
      settled = true;
      ctx.req.unpipe(bb);
      ctx.req.resume();
      // The part will never end now; close the file ourselves, and answer once it is removed.
      out?.destroy();
      void (writing ?? Promise.resolve())
        .catch(() => {})
        .then(() => fsp.rm(target, { force: true }))
        .catch(() => {})
        .then(() => reject(err));
    };
    bb.on('file', (field, stream, info) => {
      if (field !== 'file' || writing) {
        stream.resume();
        return;
      }
      filename = info.filename ?? '';
      stream.on('limit', () => fail(new HttpError(413, `Upload larger than ${max} bytes`)));
      // An upload stops at the data partition's reserve (507), checked before each chunk is written,
      // and at the deploy queue's byte bound (507 naming the key).
      const wrote = spaceMeter(path.dirname(target));
      stream.on('data', (chunk: Buffer) => {
        try {
          wrote(chunk.length);
        } catch (err) {
          fail(storageError(err)!);
          return;
        }
        received += chunk.length;
        if (received <= least) return;
        try {
          slot.hold(received);
        } catch (err) {
          fail(err instanceof QueueFullError ? new HttpError(507, err.message) : new HttpError(500, `Error installing deployment package: ${filename}`));
        }
      });
      const file = fs.createWriteStream(target, { flags: 'wx', mode: 0o600 });
      out = file;
      writing = new Promise<void>((res, rej) => {
        file.on('finish', res);
        file.on('close', () => rej(new Error('upload file closed early')));
        file.on('error', rej);
        stream.on('error', rej);
      });
      stream.pipe(file);
    });
    bb.on('error', () => fail(new HttpError(400, 'Bad request: malformed multipart/form-data')));
    bb.on('close', () => {
      if (settled) return;
      if (!writing) {
        fail(new HttpError(400, 'Bad request: no part named "file"'));
        return;
      }
      writing.then(
        () => {
          if (settled) return;
          settled = true;
          // What was stored, now that it is known exactly (the estimate may have been larger).
          slot.hold(received);
          resolve({ file: target, filename });
        },
        (err) => {
          log.error('upload could not be stored', { file: filename, error: (err as Error)?.message ?? String(err) });
          fail(storageError(err) ?? new HttpError(500, `Error installing deployment package: ${filename}`));
        },
      );
    });
    ctx.req.on('aborted', () => fail(new HttpError(400, 'Request aborted')));
    ctx.req.pipe(bb);
  });
}
