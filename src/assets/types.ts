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
