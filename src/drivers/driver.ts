// The driver interface: what a field driver (built in, or added by a deployment package) implements.
//
// A driver instance is created from a factory with the instance properties of `drivers.<id>` and is
// handed whole channel lists, so it can coalesce a read of many channels into few bus transactions.
// A driver never throws for a per-channel problem: each channel gets its own result, in input order.
// A rejected promise means "the whole batch failed" and is turned into per-channel failures by the
// caller, with the rejection's message.
//
// The contract, as the asset runtime (src/assets/: service.ts and the files it composes) relies on it; the simulator
// (drivers/simulator) is the reference implementation and test/helpers/driver-conformance.ts checks
// any driver against it:
// - read(channels) resolves with exactly one ChannelResult per channel, in input order. A driver
//   whose values are in memory (the simulator) may return the list itself instead of a promise:
//   the asset runtime then answers without a promise, and a REST read in the same step. A driver
//   that talks to a device returns a promise (no sync I/O, see below). A success
//   carries a TypedValue of the channel's `valueType` (a LONG as a bigint, a FLOAT already rounded
//   to float32, a BYTE_ARRAY as a Buffer) and, when the device says when, a `timestamp` (ms since
//   the epoch; the runtime stamps `Date.now()` otherwise). Scale and offset are NOT the driver's
//   business: the runtime applies them to reads (Kura's BaseAsset).
// - One read() call is one batch: the runtime sends every readable channel of an asset in one call
//   per poll cycle, and identical concurrent reads are joined before they reach the driver, so the
//   driver only coalesces within a call. Calls may overlap (HTTP, MQTT and polling run
//   concurrently): a driver on a shared line queues its own transactions.
// - write(requests) gets values already converted to each channel's type; on success it echoes the
//   value. Writes must land in request order.
// - Errors are messages a user can act on (which channel, address, port; `Modbus exception 2
//   (Illegal Data Address) at 40001`), never a stack trace. They appear verbatim in REST
//   `exceptionMessage` and ASSET-V1 `error`.
// - Never hang: bound every device interaction with a timeout (the runtime's own bound,
//   `driverCallTimeoutMs`, 30 s, only catches broken drivers). A slow device must not block other
//   assets: do not block the event loop (no sync I/O on device files, no busy waits).
// - close() releases sockets, files and timers and is idempotent. A call in flight settles; every
//   later read() and write() resolves (never rejects, never hangs) with one `closedResults()` error
//   per channel, `Driver not attached`: what the asset answers once the runtime has dropped the
//   driver. The runtime closes a driver on reload when its properties change, and when its factory
//   is unregistered (a package uninstalled).
// - The factory validates properties up front (validateInstance/validateChannel, with key paths
//   such as `drivers.plc.modbus.timeout`), so create() can trust them; channelKeys/instanceKeys list
//   the keys it understands, and any other key in the configuration is an error. Built-in drivers
//   parse with drivers/props.ts (PropReader) in their config.ts, one parse for check and run.
// - A resource several instances must share (a serial port) is taken from `ctx.lines`.
//
// Folder layout of a built-in driver, `src/drivers/<name>/`: index.ts (the factory), config.ts
// (keys, parsing and validation), driver.ts (the Driver), then its protocol or back-end files.

import type { Logger } from '../log.js';
import type { ChannelConfig, ChannelMode, TypedValue, ValueType } from '../channels/types.js';
import type { SharedLines } from './lines.js';

export type ChannelResult = { ok: true; value: TypedValue; timestamp?: number } | { ok: false; error: string };

export interface WriteRequest {
  channel: ChannelConfig;
  /** Already converted to the channel's value type. */
  value: TypedValue;
}

/** Counters of one device (e.g. a Modbus unit) behind a driver, for the asset poll status. */
export interface DeviceStatus {
  unit: number;
  requests: number;
  responses: number;
  timeouts: number;
  exceptions: number;
  /** Attempts the line could not carry (connection refused or lost, port unusable); drivers without a line leave it out. */
  connectionFailures?: number;
  /** Until when (ms since the epoch) requests to it fail at once; 0 when not backed off. */
  backoffUntil: number;
}

export interface Driver {
  /** Reads the channels; results in the same order (the list itself when it is already in memory). */
  read(channels: ChannelConfig[]): ChannelResult[] | Promise<ChannelResult[]>;
  /** Writes the values; results in the same order (on success `value` echoes what was written). */
  write(requests: WriteRequest[]): Promise<ChannelResult[]>;
  /** Releases sockets, files and timers. Idempotent. */
  close(): Promise<void>;
  /** Optional: counters per device the driver talks to (none for drivers without units). */
  devices?(): DeviceStatus[];
  /** Optional: commissioning tools (docs/drivers.md "Commissioning tools"); absent: the driver has none. */
  readonly tools?: DriverTools;
}

/**
 * A driver's commissioning tools, reached over REST at `/services/drivers/{pid}/…`: requests a
 * technician makes without an asset. Each goes through the driver's own request queue, like a
 * poll's request. A tool refuses bad input and reports a device's failure with ToolError (src/core/errors.ts).
 */
export interface DriverTools {
  /** One read (or, with `confirm`, one write) described by the request's properties. */
  probe?(request: Record<string, unknown>): Promise<Record<string, unknown>>;
  /** The last exchanges on the driver's line, oldest first; `frames` adds the raw frames. */
  requestLog?(frames: boolean): Record<string, unknown>[];
  /** A device's identification objects by name; `unit` is the path segment as given. */
  identify?(unit: string): Promise<Record<string, unknown>>;
  /** Starts a scan for the units that answer; resolves with its id at once. */
  startScan?(request: Record<string, unknown>): { id: string };
  /** A scan's state, progress and what it found; a ToolError `missing` for an unknown id. */
  scan?(id: string): Record<string, unknown>;
  /** Cancels a scan (a finished one stays as it is). */
  cancelScan?(id: string): Record<string, unknown>;
}


import type { Problem } from '../core/schema.js';
export type { Problem };

export interface DriverContext {
  id: string;
  log: Logger;
  dataDir: string;
  /** Lines shared between instances of this pool (drivers/lines.ts). */
  lines: SharedLines;
}

/** What a channel answers when its asset's driver is missing or closed (Kura's wording). */
export const DRIVER_NOT_ATTACHED = 'Driver not attached';

/** The answer of a closed driver: one `Driver not attached` failure per channel. */
export function closedResults(n: number): ChannelResult[] {
  return Array.from({ length: n }, () => ({ ok: false as const, error: DRIVER_NOT_ATTACHED }));
}

/**
 * A property definition as configuration/v2 shows it (Kura's AD; docs/configuration-v2.md). `json`:
 * the value is an object, exchanged as its JSON text in a STRING property (e.g. GPIO `pins`).
 */
export interface AttributeDef {
  id: string;
  type: 'STRING' | 'PASSWORD' | 'BOOLEAN' | 'INTEGER' | 'LONG' | 'DOUBLE' | 'FLOAT';
  name?: string;
  description?: string;
  default?: unknown;
  min?: number;
  max?: number;
  options?: readonly string[];
  required?: boolean;
  /** 0 (or absent): a scalar; n > 0: an array of at most n values. */
  cardinality?: number;
  json?: boolean;
  /** A time-valued property: the unit its integer counts (its maximum fits a timer). */
  unit?: 'ms' | 's';
}

/**
 * What a person reads about a property: its label, what it does, and the unit of its number (none
 * for a plain count). configuration/v2, CONF-V2 and CONF-V1 carry label and description as the AD's
 * name and description; the unit ends the description as `Unit: <unit>.` (Kura's AD has no unit).
 */
export interface PropertyLabel {
  name: string;
  description: string;
  unit?: string;
}

/** The definitions of a factory's instance and channel properties, for configuration/v2. */
export interface DriverOcd {
  name?: string;
  description?: string;
  instance: AttributeDef[];
  channel: AttributeDef[];
}

export interface DriverFactory {
  /** The name used in `drivers.<id>.factory`. */
  name: string;
  /**
   * Optional: the property definitions shown by configuration/v2 under the factory PID
   * `org.eclipse.kura.driver.<name>`. Without it, every key of instanceKeys/channelKeys is shown as
   * an optional STRING and values keep their JSON type.
   */
  ocd?: DriverOcd;
  /** Optional: labels of its instance and channel keys by key (a recorded or declared AD takes them). */
  labels?: Readonly<Record<string, PropertyLabel>>;
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
    /** The channel's `type`: a channel that could never be written as configured is an error. */
    mode?: ChannelMode,
  ): Problem[];
  /** The driver-specific channel keys this factory understands (anything else is an unknown key). */
  channelKeys: readonly string[];
  /** The instance keys this factory understands. */
  instanceKeys: readonly string[];
  create(props: Record<string, unknown>, ctx: DriverContext): Driver;
}
