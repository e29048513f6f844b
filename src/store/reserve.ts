// The space every writer of dataDir leaves free on its file system (docs/installation.md "What
// dataDir holds"): snapshots, the runtime configuration, packages, uploads and downloads stop at the
// reserve with a clear error (507 over HTTP), so that a client filling the data partition cannot take
// from the device what it needs to keep working. The identity store and the files the daemon needs
// to start (the dataDir marker, the self-signed certificate) may use the reserve: a password can still
// be changed, an identity still be added, on a partition that is nearly full.

import fs from 'node:fs';

/** The reserve: 1 % of the file system, at least MIN and at most MAX. */
export const RESERVE_MIN_BYTES = 2 * 1024 * 1024;
export const RESERVE_MAX_BYTES = 32 * 1024 * 1024;
export const RESERVE_SHARE = 0.01;

export const reserveOf = (totalBytes: number): number => Math.min(RESERVE_MAX_BYTES, Math.max(RESERVE_MIN_BYTES, Math.round(totalBytes * RESERVE_SHARE)));

/** A write refused because it would eat into the reserve; `code` lets storageError() answer 507. */
export class ReserveError extends Error {
  readonly code = 'ERESERVE';
}

export interface SpaceOptions {
  /** The identity store and start-up files: only a write larger than what is free is refused. */
  useReserve?: boolean;
}

/** What is free under `dir` for unprivileged writers (statfs `bavail`), and what of it to keep. */
function room(dir: string, opts: SpaceOptions): { free: number; keep: number } | undefined {
  try {
    const s = fs.statfsSync(dir);
    return { free: s.bavail * s.bsize, keep: opts.useReserve ? 0 : reserveOf(s.blocks * s.bsize) };
  } catch {
    return undefined; // Node before 18.15: a full disk is the file system's ENOSPC
  }
}

/** Throws ReserveError when `bytes` more written under `dir` would leave less than the reserve free. */
export function checkSpace(dir: string, bytes: number, opts: SpaceOptions = {}): void {
  const r = room(dir, opts);
  if (r && r.free - bytes < r.keep) {
    throw new ReserveError(
      opts.useReserve
        ? `no space left on the device: ${bytes} bytes to write, ${r.free} bytes free`
        : `the data partition keeps its last ${(r.keep / 1048576).toFixed(1)} MiB free for the device's identities; ${(r.free / 1048576).toFixed(1)} MiB are free, ${(bytes / 1048576).toFixed(1)} MiB to write`,
    );
  }
}

/**
 * Checks writes of unknown length as they go: `wrote(n)` before each chunk of n bytes. The file
 * system is asked again only once an eighth of what was free above the reserve has been written
 * since it last was: a large upload costs a few statfs calls, not one per chunk, and a few writers
 * at once cannot overrun the reserve between two looks.
 */
export function spaceMeter(dir: string, opts: SpaceOptions = {}): (bytes: number) => void {
  let allowance = 0;
  return (bytes) => {
    allowance -= bytes;
    if (allowance >= 0) return;
    checkSpace(dir, bytes, opts);
    const r = room(dir, opts);
    allowance = r ? Math.floor((r.free - r.keep - bytes) / 8) : Infinity;
  };
}
