// GPIO instance and channel properties (docs/drivers.md "gpio"; Kura's GPIO driver).
//
// Instance: `gpio.backend` (sysfs, the default, or chardev: /dev/gpiochipN through the libgpiod
// v2 tools), `gpio.sysfs.root` (default /sys/class/gpio), `pins` (names → line numbers; with
// chardev also `"<chip>:<line>"`).
// Channel: `resource.name` (a `pins` name, a line number as a string, or with chardev
// `<chip>:<line>`; a plain number is a line of gpiochip0 there), `resource.direction`
// (INPUT | OUTPUT; Kura's enum, case-sensitive), `resource.trigger` (Kura's enum; only NONE is acted
// on: inputs are polled), and our extension `resource.active.low` (boolean, default false).
// Kura's placeholders `#select resource` / `#select direction` mean "unset": the configuration is
// accepted with a warning and the channel fails with Kura's message, as in Kura.

import { existsSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import type { PropertyLabel } from '../driver.js';
import { PropReader, type Parsed } from '../props.js';

export const DEFAULT_SYSFS_ROOT = '/sys/class/gpio';
export const INSTANCE_KEYS = ['gpio.backend', 'gpio.sysfs.root', 'pins'] as const;
const BACKENDS = ['sysfs', 'chardev'] as const;
export const CHANNEL_KEYS = ['resource.name', 'resource.direction', 'resource.trigger', 'resource.active.low'] as const;
const DIRECTIONS = ['INPUT', 'OUTPUT'] as const;
// Kura's trigger enum, spelling included (RAISING, not RISING).
const TRIGGERS = ['NONE', 'RAISING_EDGE', 'FALLING_EDGE', 'BOTH_EDGES', 'HIGH_LEVEL', 'LOW_LEVEL', 'BOTH_LEVELS'] as const;
const UNSET_RESOURCE = '#select resource';
const UNSET_DIRECTION = '#select direction';
const MAX_LINE = 65535;

export interface GpioInstanceConfig {
  chardev: boolean;
  sysfsRoot: string;
  pins: Pins;
}

/** Pin names to line numbers, or (chardev) to `<chip>:<line>`. */
type Pins = Record<string, number | string>;

export interface GpioChannelSpec {
  /** chardev: the chip (`gpiochip0`); sysfs: undefined. */
  chip?: string;
  line: number;
  direction: 'in' | 'out';
  activeLow: boolean;
  /** Set when a Kura placeholder leaves the channel unusable: what its reads and writes answer. */
  unset?: string;
}

export function parseInstance(props: Record<string, unknown>, path: string): Parsed<GpioInstanceConfig> {
  const r = new PropReader(props, path);
  const chardev = r.enumOf('gpio.backend', BACKENDS, 'sysfs') === 'chardev';
  let sysfsRoot = r.str('gpio.sysfs.root', DEFAULT_SYSFS_ROOT) || DEFAULT_SYSFS_ROOT;
  if (!isAbsolute(sysfsRoot)) {
    r.problem('gpio.sysfs.root', 'expected an absolute directory path');
    sysfsRoot = DEFAULT_SYSFS_ROOT;
  } else if (!chardev && !existsSync(sysfsRoot)) {
    // A missing referenced file is a warning: the board may not be provisioned yet.
    r.problem('gpio.sysfs.root', `directory not found: ${sysfsRoot}: GPIO channels fail until it exists`, 'warning');
  }
  return { value: { chardev, sysfsRoot, pins: parsePins(r, chardev) }, problems: r.problems };
}

const CHIP_LINE = /^([A-Za-z0-9_.-]+):(\d+)$/;

function parsePins(r: PropReader, chardev: boolean): Pins {
  const pins: Pins = {};
  for (const [name, line] of Object.entries(r.object('pins'))) {
    const ok = typeof line === 'number' ? Number.isInteger(line) && line >= 0 && line <= MAX_LINE : chardev && typeof line === 'string' && CHIP_LINE.test(line);
    if (!ok) r.problem(`pins.${name}`, `expected a line number 0-${MAX_LINE}${chardev ? ' or "<chip>:<line>"' : ''}`);
    else pins[name] = line as number | string;
  }
  return pins;
}

/** What a channel needs of its instance's properties: the backend and the valid `pins`. */
export function lineContext(instanceProps: Record<string, unknown>): { chardev: boolean; pins: Pins } {
  const r = new PropReader(instanceProps, 'drivers');
  const chardev = r.enumOf('gpio.backend', BACKENDS, 'sysfs') === 'chardev';
  return { chardev, pins: parsePins(r, chardev) };
}

/** The line a `resource.name` names, or a reason it names none. */
function resolveLine(name: string, { chardev, pins }: { chardev: boolean; pins: Pins }): { chip?: string; line: number } | string {
  const target = Object.prototype.hasOwnProperty.call(pins, name) ? String(pins[name]) : name;
  const m = chardev ? CHIP_LINE.exec(target) : null;
  if (m && Number(m[2]) <= MAX_LINE) return { chip: m[1], line: Number(m[2]) };
  if (/^\d+$/.test(target) && Number(target) <= MAX_LINE) return { chip: chardev ? 'gpiochip0' : undefined, line: Number(target) };
  return `resource.name ${JSON.stringify(name)} is neither a pins name nor a line number${chardev ? ' nor <chip>:<line>' : ''}`;
}

export function parseChannel(props: Record<string, unknown>, path: string, ctx: { chardev: boolean; pins: Pins }): Parsed<GpioChannelSpec> {
  const r = new PropReader(props, path);
  const spec: GpioChannelSpec = { line: 0, direction: 'in', activeLow: false };
  const name = r.raw('resource.name');
  if (name === undefined) r.problem('resource.name', 'missing: a pins name or a line number as a string');
  else if (name === UNSET_RESOURCE) {
    r.problem('resource.name', 'not set: the channel will fail every read and write', 'warning');
    spec.unset = 'resource.name is not set';
  } else if (typeof name !== 'string') r.problem('resource.name', 'expected a string: a pins name or a line number written as a string');
  else {
    const line = resolveLine(name, ctx);
    if (typeof line === 'string') r.problem('resource.name', line);
    else Object.assign(spec, line);
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

/** Labels of the instance and channel keys (docs/drivers.md "gpio"), shown by configuration/v2. */
export const LABELS: Readonly<Record<(typeof INSTANCE_KEYS)[number] | (typeof CHANNEL_KEYS)[number], PropertyLabel>> = {
  'gpio.backend': { name: 'Backend', description: 'sysfs (older kernels) or chardev (/dev/gpiochipN through the libgpiod v2 tools).' },
  'gpio.sysfs.root': { name: 'sysfs folder', description: 'The sysfs GPIO folder (sysfs backend).' },
  pins: { name: 'Pin names', description: 'Names for lines as a JSON object: name to line number, or with chardev "<chip>:<line>".' },
  'resource.name': { name: 'Line', description: 'A name from the pin names, or a line number written as text; with chardev also <chip>:<line>.' },
  'resource.direction': { name: 'Direction', description: 'INPUT or OUTPUT.' },
  'resource.trigger': { name: 'Trigger', description: 'Kura\'s trigger; only NONE is acted on (inputs are polled).' },
  'resource.active.low': { name: 'Active low', description: 'The line reads and writes inverted.' },
};
