// The channel model shared by drivers, the asset REST API and ASSET-V1.

export const VALUE_TYPES = ['BOOLEAN', 'BYTE_ARRAY', 'DOUBLE', 'INTEGER', 'LONG', 'FLOAT', 'STRING'] as const;
export type ValueType = (typeof VALUE_TYPES)[number];

export const CHANNEL_MODES = ['READ', 'WRITE', 'READ_WRITE'] as const;
export type ChannelMode = (typeof CHANNEL_MODES)[number];

/**
 * A value with its type. Representation per type:
 * BOOLEAN boolean; INTEGER number (int32); LONG bigint (64-bit exact); FLOAT number (already rounded
 * to float32); DOUBLE number; STRING string; BYTE_ARRAY Buffer.
 */
export type TypedValue =
  | { type: 'BOOLEAN'; value: boolean }
  | { type: 'INTEGER'; value: number }
  | { type: 'LONG'; value: bigint }
  | { type: 'FLOAT'; value: number }
  | { type: 'DOUBLE'; value: number }
  | { type: 'STRING'; value: string }
  | { type: 'BYTE_ARRAY'; value: Buffer };

export const SPEC_OF: unique symbol = Symbol('specOf');
export const SPEC: unique symbol = Symbol('spec');

/** A channel as configured (generic Kura properties plus the driver's own, untouched). */
export interface ChannelConfig {
  name: string;
  enabled: boolean;
  mode: ChannelMode;
  valueType: ValueType;
  scale: number;
  offset: number;
  unit?: string;
  /** Numeric channels: a change smaller than this is not published as telemetry. */
  deadband: number;
  /** Driver-specific channel properties (everything that is not a generic key). */
  driverProps: Record<string, unknown>;
  /** The driver's parse of driverProps and who made it (drivers/props.ts channelSpecs); symbols: not in JSON. */
  [SPEC_OF]?: object;
  [SPEC]?: unknown;
}

export interface AssetConfig {
  pid: string;
  driverPid: string;
  description: string;
  pollInterval: number;
  publishMaxInterval: number;
  /** Channels in configuration order. */
  channels: ChannelConfig[];
}

/**
 * The outcome of reading or writing one channel (Kura's ChannelRecord).
 * Read records: `valueType` and `unit` are the channel's; `value` only on SUCCESS, with
 * scale/offset applied. Write records: `valueType` and `value` are what was written (in the
 * channel's type), on SUCCESS and FAILURE alike, and there is no `unit`.
 */
export interface ChannelRecord {
  name: string;
  status: 'SUCCESS' | 'FAILURE';
  /** The channel's configured value type (for unknown channels: the written value's type, else STRING). */
  valueType: ValueType;
  value?: TypedValue;
  /** Present on FAILURE: a message a user can act on (e.g. `Channel not available`). */
  error?: string;
  /** Milliseconds since the epoch; never 0. */
  timestamp: number;
  unit?: string;
  /**
   * True when the asset refused the channel before any driver call (unknown, disabled, wrong
   * mode). Kura's record then carries no valueType, value or unit (AssetRestService).
   */
  refused?: boolean;
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
