// Simulator channel properties (docs/drivers.md "simulator"): `simulation` = constant (with
// `initial`), counter, sine, random, or memory (the default: holds the last written value);
// extension `delay` (ms a batch containing the channel takes). No instance properties.

import type { TypedValue, ValueType } from '../../channels/types.js';
import { fromJsonValue, zeroValue } from '../../channels/values.js';
import type { PropertyLabel } from '../driver.js';
import { PropReader, type Parsed } from '../props.js';

export const INSTANCE_KEYS = [] as const;
export const CHANNEL_KEYS = ['simulation', 'initial', 'delay'] as const;
export const SIMULATIONS = ['constant', 'counter', 'sine', 'random', 'memory'] as const;
export type Simulation = (typeof SIMULATIONS)[number];
const NUMERIC: ValueType[] = ['INTEGER', 'LONG', 'FLOAT', 'DOUBLE', 'BOOLEAN'];

export interface SimulatorChannelSpec {
  simulation: Simulation;
  /** The value of `constant`, and of `memory` until written. */
  initial: TypedValue;
  delay: number;
}

export function parseChannel(props: Record<string, unknown>, valueType: ValueType, path: string): Parsed<SimulatorChannelSpec> {
  const r = new PropReader(props, path);
  const simulation = r.enumOf('simulation', SIMULATIONS, 'memory');
  if ((simulation === 'sine' || simulation === 'counter' || simulation === 'random') && !NUMERIC.includes(valueType)) {
    r.problem('simulation', `${simulation} needs a numeric or BOOLEAN value.type, not ${valueType}`);
  }
  const delay = r.duration('delay', 0, 'ms', 0, 60_000);
  let initial = zeroValue(valueType);
  if (r.has('initial')) {
    const v = fromJsonValue(valueType, r.raw('initial'));
    if (typeof v === 'string') r.problem('initial', v);
    else initial = v;
  }
  return { value: { simulation, initial, delay }, problems: r.problems };
}

/** Labels of the channel keys (docs/drivers.md "simulator"), shown by configuration/v2. */
export const LABELS: Readonly<Record<(typeof CHANNEL_KEYS)[number], PropertyLabel>> = {
  simulation: { name: 'Simulation', description: 'How values are produced: memory (holds the last written value), constant, counter, sine or random.' },
  initial: { name: 'Initial value', description: 'First value of a memory channel; the value of a constant channel.' },
  delay: { name: 'Delay', description: 'A read or write that includes this channel takes this long (a slow device).', unit: 'ms' },
};
