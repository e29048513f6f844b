// The `simulator` driver factory (docs/drivers.md "simulator"): the reference driver.

import type { DriverFactory } from '../driver.js';
import { CHANNEL_KEYS, INSTANCE_KEYS, LABELS, parseChannel } from './config.js';
import { SimulatorDriver } from './driver.js';

export const simulatorFactory: DriverFactory = {
  name: 'simulator',
  instanceKeys: INSTANCE_KEYS,
  channelKeys: CHANNEL_KEYS,
  labels: LABELS,
  validateInstance: () => [],
  validateChannel: (props, valueType, path) => parseChannel(props, valueType, path).problems,
  create: () => new SimulatorDriver(),
};
