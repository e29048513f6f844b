// The driver factories built into the bundle. A deployment package adds more through the
// DriverRegistry (see "Writing a driver" in docs/drivers.md).

import type { DriverFactory } from './driver.js';
import { simulatorFactory } from './simulator/index.js';
import { gpioFactory } from './gpio/index.js';
import { modbusFactory } from './modbus/index.js';

export function builtinDrivers(): DriverFactory[] {
  return [simulatorFactory, modbusFactory, gpioFactory];
}
