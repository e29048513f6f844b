// The `gpio` driver factory over sysfs (contract §2 "Driver properties", reference §4.5).
//
// Instance: `gpio.sysfs.root` (default /sys/class/gpio), `pins` (names → line numbers).
// Channel: `resource.name` (a `pins` name or a line number as a string), `resource.direction`
// (INPUT | OUTPUT; Kura's enum, case-sensitive), `resource.trigger` (Kura's enum; only NONE is acted
// on: inputs are polled), and our extension `resource.active.low` (boolean, default false).
// Kura's placeholders `#select resource` / `#select direction` mean "unset": the configuration is
// accepted with a warning and the channel fails with Kura's message, as in Kura (check 48).

import { existsSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import type { ChannelConfig, TypedValue, ValueType } from '../../assets/types.js';
import type { ChannelResult, Driver, DriverContext, DriverFactory, Problem, WriteRequest } from '../driver.js';
import { GpioError, SysfsGpio, type LineSetup } from './sysfs.js';

export const DEFAULT_SYSFS_ROOT = '/sys/class/gpio';
const INSTANCE_KEYS = ['gpio.sysfs.root', 'pins'] as const;
const CHANNEL_KEYS = ['resource.name', 'resource.direction', 'resource.trigger', 'resource.active.low'] as const;
const DIRECTIONS = ['INPUT', 'OUTPUT'] as const;
// Kura's trigger enum, spelling included (RAISING, not RISING).
const TRIGGERS = ['NONE', 'RAISING_EDGE', 'FALLING_EDGE', 'BOTH_EDGES', 'HIGH_LEVEL', 'LOW_LEVEL', 'BOTH_LEVELS'] as const;
const UNSET_RESOURCE = '#select resource';
const UNSET_DIRECTION = '#select direction';
const MAX_LINE = 65535;

// Kura's messages (reference §4.5); we add what failed after a colon.
const READ_FAILED = 'GPIO read operation failed';
const WRITE_FAILED = 'GPIO write operation failed';

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function pinsOf(props: Record<string, unknown>): Record<string, number> {
  return isObject(props.pins) ? (props.pins as Record<string, number>) : {};
}

/** The line a `resource.name` names, or a reason it names none. */
function resolveLine(name: unknown, pins: Record<string, number>): number | string {
  if (typeof name !== 'string' || name === UNSET_RESOURCE) return 'resource.name is not set';
  if (Object.prototype.hasOwnProperty.call(pins, name)) return pins[name];
  if (/^\d+$/.test(name) && Number(name) <= MAX_LINE) return Number(name);
  return `resource.name ${JSON.stringify(name)} is neither a pins name nor a line number`;
}

/** The pin level as the channel's type (reference §4.5: numbers 1/0, "true"/"false", [1]/[0]). */
export function levelToValue(on: boolean, type: ValueType): TypedValue {
  switch (type) {
    case 'BOOLEAN': return { type, value: on };
    case 'INTEGER': return { type, value: on ? 1 : 0 };
    case 'LONG': return { type, value: on ? 1n : 0n };
    case 'FLOAT':
    case 'DOUBLE': return { type, value: on ? 1 : 0 };
    case 'STRING': return { type, value: on ? 'true' : 'false' };
    case 'BYTE_ARRAY': return { type, value: Buffer.from([on ? 1 : 0]) };
  }
}

/** A value as a pin level (reference §4.5: numbers > 0, "true" ignoring case, any non-zero byte). */
export function valueToLevel(v: TypedValue): boolean {
  switch (v.type) {
    case 'BOOLEAN': return v.value;
    case 'LONG': return v.value > 0n;
    case 'STRING': return v.value.toLowerCase() === 'true';
    case 'BYTE_ARRAY': return v.value.some((b) => b !== 0);
    default: return v.value > 0;
  }
}

interface Plan {
  line: number;
  setup: LineSetup;
}

class GpioDriver implements Driver {
  private readonly gpio: SysfsGpio;
  private readonly pins: Record<string, number>;
  // Lines set up as wanted (direction + active_low); forgotten on any error so that a line whose
  // files vanished is exported and configured again once they return.
  private ready = new Map<number, string>();
  private settingUp = new Map<number, Promise<void>>();
  private closed = false;

  constructor(props: Record<string, unknown>) {
    this.gpio = new SysfsGpio(typeof props['gpio.sysfs.root'] === 'string' && props['gpio.sysfs.root'] !== '' ? props['gpio.sysfs.root'] : DEFAULT_SYSFS_ROOT);
    this.pins = pinsOf(props);
  }

  private plan(ch: ChannelConfig): Plan | string {
    const line = resolveLine(ch.driverProps['resource.name'], this.pins);
    if (typeof line === 'string') return line;
    const dir = ch.driverProps['resource.direction'];
    if (dir !== 'INPUT' && dir !== 'OUTPUT') return 'resource.direction is not set';
    return { line, setup: { direction: dir === 'INPUT' ? 'in' : 'out', activeLow: ch.driverProps['resource.active.low'] === true } };
  }

  private async prepare(p: Plan): Promise<void> {
    const key = `${p.setup.direction}/${p.setup.activeLow}`;
    if (this.ready.get(p.line) === key) return;
    // One setup per line at a time: two exports of the same line would make the kernel say EBUSY.
    const pending = this.settingUp.get(p.line);
    if (pending) {
      await pending.catch(() => {});
      if (this.ready.get(p.line) === key) return;
    }
    const run = this.gpio.setup(p.line, p.setup).then(() => {
      this.ready.set(p.line, key);
    });
    this.settingUp.set(p.line, run);
    try {
      await run;
    } finally {
      if (this.settingUp.get(p.line) === run) this.settingUp.delete(p.line);
    }
  }

  private fail(prefix: string, line: number | undefined, err: unknown): ChannelResult {
    if (line !== undefined) this.ready.delete(line);
    const msg = err instanceof GpioError ? err.message : (err as Error)?.message ?? String(err);
    return { ok: false, error: `${prefix}: ${msg}` };
  }

  async read(channels: ChannelConfig[]): Promise<ChannelResult[]> {
    if (this.closed) return channels.map(() => ({ ok: false, error: `${READ_FAILED}: driver closed` }));
    // Each line is read once per batch, however many channels name it.
    const levels = new Map<number, Promise<boolean>>();
    return Promise.all(
      channels.map(async (ch): Promise<ChannelResult> => {
        const p = this.plan(ch);
        if (typeof p === 'string') return { ok: false, error: `${READ_FAILED}: ${p}` };
        try {
          let level = levels.get(p.line);
          if (!level) {
            level = this.prepare(p).then(() => this.gpio.getValue(p.line));
            levels.set(p.line, level);
          }
          const on = await level;
          return { ok: true, value: levelToValue(on, ch.valueType), timestamp: Date.now() };
        } catch (err) {
          return this.fail(READ_FAILED, p.line, err);
        }
      }),
    );
  }

  async write(requests: WriteRequest[]): Promise<ChannelResult[]> {
    const out: ChannelResult[] = [];
    // In request order: two writes to one line must land in the order they were asked for.
    for (const { channel: ch, value } of requests) {
      if (this.closed) {
        out.push({ ok: false, error: `${WRITE_FAILED}: driver closed` });
        continue;
      }
      const p = this.plan(ch);
      if (typeof p === 'string') {
        out.push({ ok: false, error: `${WRITE_FAILED}: ${p}` });
        continue;
      }
      if (p.setup.direction !== 'out') {
        out.push({ ok: false, error: `${WRITE_FAILED}: line ${p.line} is an INPUT` });
        continue;
      }
      try {
        await this.prepare(p);
        await this.gpio.setValue(p.line, valueToLevel(value));
        out.push({ ok: true, value, timestamp: Date.now() });
      } catch (err) {
        out.push(this.fail(WRITE_FAILED, p.line, err));
      }
    }
    return out;
  }

  async close(): Promise<void> {
    // Lines stay exported: unexporting would drop an output to its default level.
    this.closed = true;
    this.ready.clear();
  }
}

function validateInstance(props: Record<string, unknown>, path: string): Problem[] {
  const p: Problem[] = [];
  const root = props['gpio.sysfs.root'];
  if (root !== undefined && (typeof root !== 'string' || !isAbsolute(root))) p.push({ path: `${path}.gpio.sysfs.root`, message: 'expected an absolute directory path' });
  else if (!existsSync((root as string | undefined) ?? DEFAULT_SYSFS_ROOT)) {
    // Contract §5: a missing referenced file is a warning (the board may not be provisioned yet).
    p.push({ path: `${path}.gpio.sysfs.root`, message: `directory not found: ${root ?? DEFAULT_SYSFS_ROOT}: GPIO channels fail until it exists`, severity: 'warning' });
  }
  if (props.pins !== undefined) {
    if (!isObject(props.pins)) p.push({ path: `${path}.pins`, message: 'expected an object of pin names to line numbers' });
    else {
      for (const [name, line] of Object.entries(props.pins)) {
        if (typeof line !== 'number' || !Number.isInteger(line) || line < 0 || line > MAX_LINE) {
          p.push({ path: `${path}.pins.${name}`, message: `expected a line number 0-${MAX_LINE}` });
        }
      }
    }
  }
  return p;
}

function validateChannel(props: Record<string, unknown>, _valueType: ValueType, path: string, instanceProps: Record<string, unknown>): Problem[] {
  const p: Problem[] = [];
  const name = props['resource.name'];
  if (name === undefined) p.push({ path: `${path}.resource.name`, message: 'missing: a pins name or a line number as a string' });
  else if (name === UNSET_RESOURCE) p.push({ path: `${path}.resource.name`, message: 'not set: the channel will fail every read and write', severity: 'warning' });
  else if (typeof name !== 'string') p.push({ path: `${path}.resource.name`, message: 'expected a string: a pins name or a line number written as a string' });
  else {
    const line = resolveLine(name, pinsOf(instanceProps));
    if (typeof line === 'string') p.push({ path: `${path}.resource.name`, message: line });
  }
  const dir = props['resource.direction'];
  if (dir === undefined) p.push({ path: `${path}.resource.direction`, message: `missing: ${DIRECTIONS.join(' or ')}` });
  else if (dir === UNSET_DIRECTION) p.push({ path: `${path}.resource.direction`, message: 'not set: the channel will fail every read and write', severity: 'warning' });
  else if (!(DIRECTIONS as readonly unknown[]).includes(dir)) p.push({ path: `${path}.resource.direction`, message: `expected one of ${DIRECTIONS.join(', ')}, got ${JSON.stringify(dir)}` });
  const trig = props['resource.trigger'];
  if (trig !== undefined) {
    if (!(TRIGGERS as readonly unknown[]).includes(trig)) p.push({ path: `${path}.resource.trigger`, message: `expected one of ${TRIGGERS.join(', ')}, got ${JSON.stringify(trig)}` });
    else if (trig !== 'NONE') p.push({ path: `${path}.resource.trigger`, message: `${trig} is accepted but not acted on: inputs are polled`, severity: 'warning' });
  }
  const al = props['resource.active.low'];
  if (al !== undefined && typeof al !== 'boolean') p.push({ path: `${path}.resource.active.low`, message: 'expected true or false' });
  return p;
}

export const gpioFactory: DriverFactory = {
  name: 'gpio',
  instanceKeys: INSTANCE_KEYS,
  channelKeys: CHANNEL_KEYS,
  validateInstance,
  validateChannel,
  create: (props: Record<string, unknown>, _ctx: DriverContext) => new GpioDriver(props),
};
