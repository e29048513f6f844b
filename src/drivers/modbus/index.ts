// The `modbus` driver factory (docs/drivers.md "modbus").
//
// Properties are parsed by config.ts (one parse for the configuration check and for create()).
// A serial port, or the converter of an RTU-over-TCP line, is one line however many instances
// name it: the line comes from the pool's SharedLines (ctx.lines), so its transaction queue is
// shared and only one transaction is on the wire at a time.
// The driver returned also has `stats()` (ModbusDriver) for the benchmark and diagnostics.

import path from 'node:path';
import type { ValueType } from '../../assets/types.js';
import type { DriverContext, DriverFactory, Problem } from '../driver.js';
import { ModbusClient } from './client.js';
import { CHANNEL_KEYS, INSTANCE_KEYS, parseChannel, parseInstance } from './config.js';
import { ModbusDriverImpl, type ModbusDriver } from './driver.js';
import { SerialTransport } from './serial.js';
import { TcpTransport } from './tcp.js';

export type { ModbusDriver } from './driver.js';
export type { LineStats } from './transport.js';

export interface ModbusFactory extends DriverFactory {
  create(props: Record<string, unknown>, ctx: DriverContext): ModbusDriver;
}

export const modbusFactory: ModbusFactory = {
  name: 'modbus',
  instanceKeys: INSTANCE_KEYS,
  channelKeys: CHANNEL_KEYS,

  validateInstance(props: Record<string, unknown>, keyPath: string): Problem[] {
    return parseInstance(props, keyPath).problems;
  },

  validateChannel(props: Record<string, unknown>, valueType: ValueType, keyPath: string): Problem[] {
    return parseChannel(props, valueType, keyPath).problems;
  },

  create(props: Record<string, unknown>, ctx: DriverContext): ModbusDriver {
    // The config layer has validated; a bad value here falls back to its default.
    const { value: config } = parseInstance(props, `drivers.${ctx.id}`);
    const log = ctx.log.child({ driver: ctx.id });
    if (config.accessType === 'TCP') {
      const client = new ModbusClient(new TcpTransport(config.tcp.host, config.tcp.port, log));
      return new ModbusDriverImpl(config, client, () => client.close());
    }
    const key = path.resolve(config.serial.portName);
    const lease = ctx.lines.acquire(`modbus-rtu:${key}`, () => new ModbusClient(new SerialTransport(config.serial, log)), (c) => c.close());
    if (lease.shared) log.info('modbus serial port shared with another driver instance; its line settings apply', { port: key });
    return new ModbusDriverImpl(config, lease.line, lease.release);
  },
};
