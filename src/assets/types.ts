// What an asset is to the rest of the daemon: its configuration, and the service that reads and
// writes its channels (implemented by the asset runtime, AssetRuntime in this folder).

import type { ChannelConfig, ChannelRecord, TypedValue } from '../channels/types.js';

export interface AssetConfig {
  pid: string;
  driverPid: string;
  description: string;
  pollInterval: number;
  publishMaxInterval: number;
  /** Channels in configuration order. */
  channels: ChannelConfig[];
}

export class AssetNotFoundError extends Error {
  constructor(readonly pid: string) {
    super(`Asset not found: ${pid}`);
  }
}

/**
 * What the REST API, ASSET-V1 and telemetry use to reach assets. Implemented in `assets/service.ts`.
 * `read`/`write` throw AssetNotFoundError for an unknown pid and never throw for channel problems:
 * those become FAILURE records (unknown channel, wrong mode, disabled, driver error/not attached).
 */
export interface AssetService {
  /** Asset pids in configuration order. */
  list(): string[];
  get(pid: string): AssetConfig | undefined;
  /**
   * Reads channels. `names` undefined: every enabled channel whose mode is READ or READ_WRITE.
   * With names: exactly those, in that order, de-duplicated (first occurrence wins).
   */
  read(pid: string, names?: string[]): Promise<ChannelRecord[]>;
  /**
   * read(pid) with `map` applied to the records in the same step: a REST read writes its answer
   * there, one `then` fewer per read. When the driver answers from memory (the simulator), the
   * value itself, not a promise.
   */
  readAll<T>(pid: string, map: (records: ChannelRecord[]) => T): T | Promise<T>;
  /** Writes values (already converted to each channel's type); records in request order. */
  write(pid: string, items: { name: string; value: TypedValue }[]): Promise<ChannelRecord[]>;
  /** Telemetry hook: called with the records of each poll cycle of an asset with `poll.interval`. */
  onPoll(listener: (pid: string, records: ChannelRecord[]) => void): () => void;
}
