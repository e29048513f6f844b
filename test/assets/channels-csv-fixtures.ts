// Channel property definitions for the channel CSV tests, shaped as the asset definition gives
// them (docs/configuration-v2.md): Kura's generic keys with `+`, gatewayd's deadband, the Modbus
// driver's keys (docs/drivers.md "modbus"), plus a LONG and a value-typed key to cover every type.

import type { ChannelPropertyDefinition } from '../../src/assets/channels-csv.js';

export const GENERIC: ChannelPropertyDefinition[] = [
  { id: '+name', type: 'STRING', default: 'Channel-1', required: true },
  { id: '+enabled', type: 'BOOLEAN', default: true, required: true },
  { id: '+type', type: 'STRING', default: 'READ', options: ['READ', 'WRITE', 'READ_WRITE'], required: true },
  { id: '+value.type', type: 'STRING', default: 'INTEGER', options: ['BOOLEAN', 'BYTE_ARRAY', 'DOUBLE', 'INTEGER', 'LONG', 'FLOAT', 'STRING'], required: true },
  { id: '+scale', type: 'DOUBLE', default: 1 },
  { id: '+offset', type: 'DOUBLE', default: 0 },
  { id: '+unit', type: 'STRING', default: '' },
  { id: 'deadband', type: 'DOUBLE', default: 0, min: 0, extension: true },
];

export const MODBUS: ChannelPropertyDefinition[] = [
  ...GENERIC,
  { id: 'unit.id', type: 'INTEGER', default: 1, min: 0, max: 255 },
  { id: 'primary.table', type: 'STRING', default: 'HOLDING_REGISTERS', options: ['COILS', 'DISCRETE_INPUTS', 'INPUT_REGISTERS', 'HOLDING_REGISTERS'] },
  { id: 'memory.address', type: 'INTEGER', default: 1, min: 1, max: 65536 },
  { id: 'data.type', type: 'STRING', default: 'INT16', options: ['INT16', 'UINT16', 'INT32', 'UINT32', 'INT64', 'UINT64', 'FLOAT32', 'FLOAT64', 'STRING'] },
  { id: 'data.order', type: 'STRING', default: 'BIG_ENDIAN', options: ['BIG_ENDIAN', 'LITTLE_ENDIAN', 'BIG_ENDIAN_BYTE_SWAP', 'LITTLE_ENDIAN_BYTE_SWAP'] },
  { id: 'array.data.length', type: 'INTEGER', min: 1, max: 125 },
  { id: 'scale.on.write', type: 'BOOLEAN', default: false },
];

/** Every type the codec knows, each once (the simulator's value-typed `initial` among them). */
export const ALL_TYPES: ChannelPropertyDefinition[] = [
  ...GENERIC,
  { id: 'counter', type: 'LONG' },
  { id: 'small', type: 'SHORT', min: -100 },
  { id: 'tiny', type: 'BYTE' },
  { id: 'ratio', type: 'FLOAT' },
  { id: 'sep', type: 'CHAR' },
  { id: 'label', type: 'STRING', min: 0, max: 200 },
  { id: 'secret', type: 'PASSWORD' },
  { id: 'initial', type: 'STRING', valueTyped: true },
  { id: 'address', type: 'INTEGER', required: true },
];

export const LIMITS = { maxRows: 1000, maxBytes: 4 * 1024 * 1024 };

// xorshift32, seeded: a failure names the seed and iteration that reproduce it.
export function generator(seed: number) {
  let s = seed >>> 0 || 1;
  const next = () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 0x100000000;
  };
  const int = (n: number) => Math.floor(next() * n);
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)];
  return { next, int, pick };
}
