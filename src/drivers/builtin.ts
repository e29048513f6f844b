// The driver factories built into the bundle.

import type { DriverFactory } from './driver.js';
import { simulatorFactory } from './simulator/index.js';

export function builtinDrivers(): DriverFactory[] {
  return [simulatorFactory];
}
