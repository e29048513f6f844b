// The channel vocabulary shared by drivers, assets and every front end (docs/architecture.md
// "Layers"): value types, channel modes, typed values, a channel's configuration and the record of
// reading or writing it (Kura's ChannelRecord).

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
