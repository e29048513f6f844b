// The `modbus` driver factory (docs/drivers.md "modbus").
//
// Properties are parsed by config.ts (one parse for the configuration check and for create()).
// A serial port, or the converter of an RTU-over-TCP line, is one line however many instances
// name it: the line comes from the pool's SharedLines (ctx.lines), so its transaction queue is
// shared and only one transaction is on the wire at a time.
// The driver returned also has `stats()` (ModbusDriver) for the benchmark and diagnostics.

import path from 'node:path';
import type { ChannelMode, ValueType } from '../../channels/types.js';
import type { DriverContext, DriverFactory, Problem } from '../driver.js';
import { ModbusClient } from './client.js';
import { CHANNEL_KEYS, INSTANCE_KEYS, LABELS, parseChannel, parseInstance } from './config.js';
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
  labels: LABELS,

  validateInstance(props: Record<string, unknown>, keyPath: string): Problem[] {
    return parseInstance(props, keyPath).problems;
  },

  validateChannel(props: Record<string, unknown>, valueType: ValueType, keyPath: string, instanceProps: Record<string, unknown>, mode?: ChannelMode): Problem[] {
    return parseChannel(props, valueType, keyPath, instanceProps, mode).problems;
  },

  create(props: Record<string, unknown>, ctx: DriverContext): ModbusDriver {
    // The config layer has validated; a bad value here falls back to its default.
    const { value: config } = parseInstance(props, `drivers.${ctx.id}`);
    const log = ctx.log.child({ driver: ctx.id });
    const line = { interRequestDelay: config.interRequestDelay };
    if (config.accessType === 'TCP') {
      const client = new ModbusClient(new TcpTransport(config.tcp.host, config.tcp.port, log), line);
      return new ModbusDriverImpl(config, client, () => client.close());
    }
    // A serial line, or a converter's TCP port (most accept one connection), is shared.
    const { host, port } = config.tcp;
    const lease = config.accessType === 'RTU'
      ? ctx.lines.acquire(`modbus-rtu:${path.resolve(config.serial.portName)}`, () => new ModbusClient(new SerialTransport(config.serial, log), line), (c) => c.close())
      : ctx.lines.acquire(`modbus-rtu-tcp:${host}:${port}`, () => new ModbusClient(new TcpTransport(host, port, log, 'rtu'), line), (c) => c.close());
    if (lease.shared) log.info('modbus line shared with another driver instance; its settings apply', { line: lease.line.label });
    return new ModbusDriverImpl(config, lease.line, lease.release);
  },
};
