// The `modbus` driver factory (contract §2 "Driver properties").
//
// Wiring: register `modbusFactory` under its name next to the other factories; the config layer
// calls validateInstance/validateChannel and checks keys against instanceKeys/channelKeys; the
// asset service calls create() per `drivers.<id>` and close() on reload or shutdown.
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

/**
 * A factory with its own registry of open serial lines: two driver instances naming the same port
 * share one line and its transaction queue, so only one transaction is on the wire at a time.
 */
export function createModbusFactory(): ModbusFactory {
  const lines = new Map<string, { client: ModbusClient; users: number }>();

  return {
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
      let line = lines.get(key);
      if (!line) {
        line = { client: new ModbusClient(new SerialTransport(config.serial, log)), users: 0 };
        lines.set(key, line);
      } else {
        log.info('modbus serial port shared with another driver instance; its line settings apply', { port: key });
      }
      line.users++;
      const shared = line;
      return new ModbusDriverImpl(config, shared.client, async () => {
        if (--shared.users === 0) {
          lines.delete(key);
          await shared.client.close();
        }
      });
    },
  };
}

export const modbusFactory: ModbusFactory = createModbusFactory();
