// GPIO instance and channel properties (docs/drivers.md "gpio"; Kura's GPIO driver).
//
// Instance: `gpio.sysfs.root` (default /sys/class/gpio), `pins` (names → line numbers).
// Channel: `resource.name` (a `pins` name or a line number as a string), `resource.direction`
// (INPUT | OUTPUT; Kura's enum, case-sensitive), `resource.trigger` (Kura's enum; only NONE is acted
// on: inputs are polled), and our extension `resource.active.low` (boolean, default false).
// Kura's placeholders `#select resource` / `#select direction` mean "unset": the configuration is
// accepted with a warning and the channel fails with Kura's message, as in Kura.

import { existsSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { PropReader, type Parsed } from '../props.js';

export const DEFAULT_SYSFS_ROOT = '/sys/class/gpio';
export const INSTANCE_KEYS = ['gpio.sysfs.root', 'pins'] as const;
export const CHANNEL_KEYS = ['resource.name', 'resource.direction', 'resource.trigger', 'resource.active.low'] as const;
const DIRECTIONS = ['INPUT', 'OUTPUT'] as const;
// Kura's trigger enum, spelling included (RAISING, not RISING).
const TRIGGERS = ['NONE', 'RAISING_EDGE', 'FALLING_EDGE', 'BOTH_EDGES', 'HIGH_LEVEL', 'LOW_LEVEL', 'BOTH_LEVELS'] as const;
const UNSET_RESOURCE = '#select resource';
const UNSET_DIRECTION = '#select direction';
const MAX_LINE = 65535;

export interface GpioInstanceConfig {
  sysfsRoot: string;
  pins: Record<string, number>;
}

export interface GpioChannelSpec {
  line: number;
  direction: 'in' | 'out';
  activeLow: boolean;
  /** Set when a Kura placeholder leaves the channel unusable: what its reads and writes answer. */
  unset?: string;
}

export function parseInstance(props: Record<string, unknown>, path: string): Parsed<GpioInstanceConfig> {
  const r = new PropReader(props, path);
  let sysfsRoot = r.str('gpio.sysfs.root', DEFAULT_SYSFS_ROOT) || DEFAULT_SYSFS_ROOT;
  if (!isAbsolute(sysfsRoot)) {
    r.problem('gpio.sysfs.root', 'expected an absolute directory path');
    sysfsRoot = DEFAULT_SYSFS_ROOT;
  } else if (!existsSync(sysfsRoot)) {
    // A missing referenced file is a warning: the board may not be provisioned yet.
    r.problem('gpio.sysfs.root', `directory not found: ${sysfsRoot}: GPIO channels fail until it exists`, 'warning');
  }
  return { value: { sysfsRoot, pins: parsePins(r) }, problems: r.problems };
}

function parsePins(r: PropReader): Record<string, number> {
  const pins: Record<string, number> = {};
  for (const [name, line] of Object.entries(r.object('pins'))) {
    if (typeof line !== 'number' || !Number.isInteger(line) || line < 0 || line > MAX_LINE) r.problem(`pins.${name}`, `expected a line number 0-${MAX_LINE}`);
    else pins[name] = line;
  }
  return pins;
}

/** The valid `pins` of instance properties (a channel names its line through them). */
export function pinsOf(instanceProps: Record<string, unknown>): Record<string, number> {
  return parsePins(new PropReader(instanceProps, 'drivers'));
}

/** The line a `resource.name` names, or a reason it names none. */
function resolveLine(name: string, pins: Record<string, number>): number | string {
  if (Object.prototype.hasOwnProperty.call(pins, name)) return pins[name];
  if (/^\d+$/.test(name) && Number(name) <= MAX_LINE) return Number(name);
  return `resource.name ${JSON.stringify(name)} is neither a pins name nor a line number`;
}

export function parseChannel(props: Record<string, unknown>, path: string, pins: Record<string, number>): Parsed<GpioChannelSpec> {
  const r = new PropReader(props, path);
  const spec: GpioChannelSpec = { line: 0, direction: 'in', activeLow: false };
  const name = r.raw('resource.name');
  if (name === undefined) r.problem('resource.name', 'missing: a pins name or a line number as a string');
  else if (name === UNSET_RESOURCE) {
    r.problem('resource.name', 'not set: the channel will fail every read and write', 'warning');
    spec.unset = 'resource.name is not set';
  } else if (typeof name !== 'string') r.problem('resource.name', 'expected a string: a pins name or a line number written as a string');
  else {
    const line = resolveLine(name, pins);
    if (typeof line === 'string') r.problem('resource.name', line);
    else spec.line = line;
  }
  const dir = r.raw('resource.direction');
  if (dir === undefined) r.problem('resource.direction', `missing: ${DIRECTIONS.join(' or ')}`);
  else if (dir === UNSET_DIRECTION) {
    r.problem('resource.direction', 'not set: the channel will fail every read and write', 'warning');
    spec.unset ??= 'resource.direction is not set';
  } else spec.direction = r.enumOf('resource.direction', DIRECTIONS, 'INPUT') === 'OUTPUT' ? 'out' : 'in';
  const trig = r.enumOf('resource.trigger', TRIGGERS, 'NONE');
  if (trig !== 'NONE') r.problem('resource.trigger', `${trig} is accepted but not acted on: inputs are polled`, 'warning');
  spec.activeLow = r.bool('resource.active.low', false);
  return { value: spec, problems: r.problems };
}
