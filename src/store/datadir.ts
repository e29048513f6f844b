// dataDir format versioning, for over-the-air updates: a newer gatewayd migrates an older dataDir
// forward; an older gatewayd refuses a newer dataDir instead of corrupting it.

import fs from 'node:fs';
import path from 'node:path';
import { cleanTempFiles, ensurePrivateDir, readJsonFile, writeFileAtomicSync } from './atomic.js';

/** The dataDir layout this build writes. Bump it together with a migration below. */
export const DATA_FORMAT_VERSION = 1;

export interface DataDirInfo {
  formatVersion: number;
  writtenBy: string;
}

export class DataDirError extends Error {}

/** Migrations from format N to N+1, by N. Each must be idempotent (a power cut may repeat it). */
export type Migration = (dataDir: string) => void;
export const MIGRATIONS: Record<number, Migration> = {};

const MARKER = 'gatewayd-data.json';

/**
 * Prepares dataDir: creates it 0700, removes temp files of interrupted writes, checks the format
 * version and migrates forward. Throws DataDirError with a message for the operator.
 */
export function openDataDir(dataDir: string, version: string, migrations: Record<number, Migration> = MIGRATIONS, current = DATA_FORMAT_VERSION): DataDirInfo {
  try {
    ensurePrivateDir(dataDir);
  } catch (err) {
    throw new DataDirError(`cannot create dataDir ${dataDir}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  cleanTempFiles(dataDir);
  const file = path.join(dataDir, MARKER);
  let info: DataDirInfo | undefined;
  try {
    info = readJsonFile<DataDirInfo>(file);
  } catch (err) {
    throw new DataDirError(`${file} is unreadable (${(err as Error).message}); refusing to touch this dataDir`);
  }
  if (info === undefined) {
    // A dataDir with content but no marker was written by the first format.
    const fresh = fs.readdirSync(dataDir).filter((n) => n !== MARKER).length === 0;
    info = { formatVersion: fresh ? current : 1, writtenBy: fresh ? version : 'unknown' };
  }
  if (typeof info.formatVersion !== 'number' || !Number.isInteger(info.formatVersion) || info.formatVersion < 1) {
    throw new DataDirError(`${file} has no valid formatVersion; refusing to touch this dataDir`);
  }
  if (info.formatVersion > current) {
    throw new DataDirError(
      `dataDir ${dataDir} has format ${info.formatVersion} (written by gatewayd ${info.writtenBy}); this gatewayd ${version} understands up to format ${current}. Install a newer gatewayd or point dataDir elsewhere.`,
    );
  }
  while (info.formatVersion < current) {
    const m = migrations[info.formatVersion];
    if (!m) throw new DataDirError(`no migration from dataDir format ${info.formatVersion}`);
    m(dataDir);
    info = { formatVersion: info.formatVersion + 1, writtenBy: version };
    writeFileAtomicSync(file, JSON.stringify(info) + '\n');
  }
  if (info.writtenBy !== version || !fs.existsSync(file)) {
    info = { formatVersion: current, writtenBy: version };
    writeFileAtomicSync(file, JSON.stringify(info) + '\n');
  }
  return info;
}
