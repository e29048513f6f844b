// The driver interface: what a field driver (built in, or added by a deployment package) implements.
//
// A driver instance is created from a factory with the instance properties of `drivers.<id>` and is
// handed whole channel lists, so it can coalesce a read of many channels into few bus transactions.
// A driver never throws for a per-channel problem: each channel gets its own result, in input order.
// A rejected promise means "the whole batch failed" and is turned into per-channel failures by the
// caller, with the rejection's message.

import type { Logger } from '../log.js';
import type { ChannelConfig, TypedValue, ValueType } from '../assets/types.js';

export type ChannelResult = { ok: true; value: TypedValue; timestamp?: number } | { ok: false; error: string };

export interface WriteRequest {
  channel: ChannelConfig;
  /** Already converted to the channel's value type. */
  value: TypedValue;
}

export interface Driver {
  /** Reads the channels; results in the same order. */
  read(channels: ChannelConfig[]): Promise<ChannelResult[]>;
  /** Writes the values; results in the same order (on success `value` echoes what was written). */
  write(requests: WriteRequest[]): Promise<ChannelResult[]>;
  /** Releases sockets, files and timers. Idempotent. */
  close(): Promise<void>;
}

/** A configuration problem: the key path (e.g. `drivers.plc.modbus.timeout`) and what is wrong. */
export interface Problem {
  path: string;
  message: string;
  severity?: 'error' | 'warning';
}

export interface DriverContext {
  id: string;
  log: Logger;
  dataDir: string;
}

export interface DriverFactory {
  /** The name used in `drivers.<id>.factory`. */
  name: string;
  /** Validates instance properties (everything under `drivers.<id>` except `factory`). */
  validateInstance(props: Record<string, unknown>, path: string): Problem[];
  /**
   * Validates a channel's driver-specific properties against the channel's value type.
   * `instanceProps` are the properties of the driver instance the asset uses (e.g. GPIO pin names).
   */
  validateChannel(
    props: Record<string, unknown>,
    valueType: ValueType,
    path: string,
    instanceProps: Record<string, unknown>,
  ): Problem[];
  /** The driver-specific channel keys this factory understands (anything else is an unknown key). */
  channelKeys: readonly string[];
  /** The instance keys this factory understands. */
  instanceKeys: readonly string[];
  create(props: Record<string, unknown>, ctx: DriverContext): Driver;
}
