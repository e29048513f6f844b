// The `gpio` driver factory (docs/drivers.md "gpio"; Kura's GPIO driver, over sysfs or the
// character device).

import type { DriverFactory } from '../driver.js';
import { CHANNEL_KEYS, INSTANCE_KEYS, LABELS, lineContext, parseChannel, parseInstance } from './config.js';
import { GpioDriver } from './driver.js';

export { levelToValue, valueToLevel } from './driver.js';

export const gpioFactory: DriverFactory = {
  name: 'gpio',
  instanceKeys: INSTANCE_KEYS,
  channelKeys: CHANNEL_KEYS,
  labels: LABELS,
  validateInstance: (props, path) => parseInstance(props, path).problems,
  validateChannel: (props, _valueType, path, instanceProps) => parseChannel(props, path, lineContext(instanceProps)).problems,
  create: (props, ctx) => new GpioDriver(parseInstance(props, `drivers.${ctx.id}`).value),
};
