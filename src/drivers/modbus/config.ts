// Modbus instance and channel properties (docs/drivers.md "modbus"; Kura's Modbus driver):
// validation with key paths, and parsing into plain specs. Enum values are accepted in any case,
// as Kura's driver does for `primary.table`.

import type { ChannelMode, ValueType } from '../../channels/types.js';
import type { PropertyLabel } from '../driver.js';
import { PropReader, channelName, type Parsed } from '../props.js';
import { MAX_READ_REGISTERS, TABLES, isBitTable, type Table } from './constants.js';
import { ALLOWED_DATA_TYPES, DATA_ORDERS, DATA_TYPES, registerCount, type DataOrder, type DataType } from './datatypes.js';

export const INSTANCE_KEYS = [
  'access.type',
  'modbus.tcp-udp.ip',
  'modbus.tcp-udp.port',
  'modbus.rtu.port.name',
  'modbus.rtu.baudrate',
  'modbus.rtu.databits',
  'modbus.rtu.stopbits',
  'modbus.rtu.parity',
  'modbus.timeout',
  'modbus.transaction.retry',
  'read.max.gap',
  'write.multiple.registers.only',
  'unit.backoff.max',
  'inter.request.delay',
] as const;

export const CHANNEL_KEYS = ['unit.id', 'primary.table', 'memory.address', 'data.type', 'data.order', 'array.data.length', 'scale.on.write'] as const;

export const ACCESS_TYPES = ['TCP', 'RTU', 'RTU_OVER_TCP'] as const;
export type AccessType = (typeof ACCESS_TYPES)[number];

/** Rates `stty` knows (POSIX termios speeds in Linux). */
export const BAUD_RATES = [1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200, 230400, 460800, 921600] as const;
const STOP_BITS = ['ONE_STOP_BIT', 'TWO_STOP_BITS'] as const;
const PARITIES = ['NO_PARITY', 'EVEN_PARITY', 'ODD_PARITY'] as const;

export interface TcpSettings {
  host: string;
  port: number;
}

export type Parity = 'none' | 'even' | 'odd';

export interface SerialSettings {
  portName: string;
  baudrate: number;
  databits: number;
  stopbits: 1 | 2;
  parity: Parity;
}

/** The rate and parity of one exchange on a serial line, when a scan sweeps them (tools.ts). */
export interface LineSettings {
  baudrate: number;
  parity: Parity;
}

/** Rates a scan may sweep: the usual ones of a Modbus serial line (Modbus over Serial Line V1.02 requires 9600 and 19200; the others are common options). */
export const SWEEP_BAUD_RATES = [1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200] as const;
export const SWEEP_PARITIES: readonly Parity[] = ['none', 'even', 'odd'];

export interface ModbusInstanceConfig {
  accessType: AccessType;
  tcp: TcpSettings;
  serial: SerialSettings;
  /** Milliseconds to wait for one response. */
  timeout: number;
  /** Retries after the first attempt (docs/drivers.md, `modbus.transaction.retry`). */
  retries: number;
  /** Unrequested registers (or bits) that may be read to merge two ranges into one request. */
  maxGap: number;
  /** FC16 for one register and FC15 for coils, for devices that refuse FC6 / FC5. */
  multipleOnly: boolean;
  /** Longest back-off of a unit that stopped answering, ms (0: no back-off). */
  backoffMax: number;
  /** Silence kept on the line between the end of one exchange and the next request, ms. */
  interRequestDelay: number;
}

/** The longest `inter.request.delay`, ms: beyond it a line with a few units could hardly poll. */
export const MAX_INTER_REQUEST_DELAY = 10_000;

export interface ModbusChannelSpec {
  unitId: number;
  table: Table;
  /** PDU address: Kura's 1-based `memory.address` minus one. */
  address: number;
  /** Registers (or bits, for COILS/DISCRETE_INPUTS) the channel occupies. */
  count: number;
  dataType: DataType;
  order: DataOrder;
  valueType: ValueType;
  arrayLength: number;
  /** Writes apply the inverse of the channel's scale and offset. */
  scaleOnWrite: boolean;
}

export function parseInstance(props: Record<string, unknown>, path: string): Parsed<ModbusInstanceConfig> {
  const r = new PropReader(props, path);
  let accessType: AccessType = 'TCP';
  if (String(r.raw('access.type')).toUpperCase() === 'UDP') r.problem('access.type', 'UDP is not supported (use TCP, RTU or RTU_OVER_TCP)');
  else accessType = accessTypeOf(r);
  const host = r.str('modbus.tcp-udp.ip', '');
  const port = r.int('modbus.tcp-udp.port', 502, 1, 65535);
  const portName = r.str('modbus.rtu.port.name', '');
  const baudrate = r.int('modbus.rtu.baudrate', 9600, 1, 4_000_000);
  if (r.has('modbus.rtu.baudrate') && Number.isInteger(props['modbus.rtu.baudrate']) && !(BAUD_RATES as readonly number[]).includes(baudrate)) {
    r.problem('modbus.rtu.baudrate', `${baudrate} is not a standard rate (${BAUD_RATES.join(', ')})`);
  }
  const databits = r.int('modbus.rtu.databits', 8, 5, 8);
  const stop = r.enumOf('modbus.rtu.stopbits', STOP_BITS, 'ONE_STOP_BIT', true);
  const parity = r.enumOf('modbus.rtu.parity', PARITIES, 'NO_PARITY', true);
  const timeout = r.duration('modbus.timeout', 1000, 'ms', 1, 600_000);
  const retries = r.int('modbus.transaction.retry', 1, 0, 10);
  const maxGap = r.int('read.max.gap', 0, 0, MAX_READ_REGISTERS - 1);
  const multipleOnly = r.bool('write.multiple.registers.only', false);
  const backoffMax = r.duration('unit.backoff.max', 30_000, 'ms', 0, 3_600_000);
  const interRequestDelay = r.duration('inter.request.delay', 0, 'ms', 0, MAX_INTER_REQUEST_DELAY);
  if (accessType !== 'RTU' && host.trim() === '') r.problem('modbus.tcp-udp.ip', `is required when access.type is ${accessType}`);
  if (accessType === 'RTU' && portName.trim() === '') r.problem('modbus.rtu.port.name', 'is required when access.type is RTU');
  if (accessType === 'RTU' && databits !== 8) {
    r.problem('modbus.rtu.databits', `RTU frames carry 8 data bits (Modbus over Serial Line §2.5.1); ${databits} will not work with most devices`, 'warning');
  }
  return {
    value: {
      accessType,
      tcp: { host, port },
      serial: {
        portName,
        baudrate,
        databits,
        stopbits: stop === 'TWO_STOP_BITS' ? 2 : 1,
        parity: parity === 'EVEN_PARITY' ? 'even' : parity === 'ODD_PARITY' ? 'odd' : 'none',
      },
      timeout,
      retries,
      maxGap,
      multipleOnly,
      backoffMax,
      interRequestDelay,
    },
    problems: r.problems,
  };
}

function accessTypeOf(r: PropReader): AccessType {
  // Kura's name for RTU over TCP is TCP-RTU.
  return String(r.raw('access.type')).toUpperCase() === 'TCP-RTU' ? 'RTU_OVER_TCP' : r.enumOf('access.type', ACCESS_TYPES, 'TCP', true);
}

/**
 * A channel's properties. `instanceProps` are its driver's (the access type decides the unit id
 * range); `mode`, when known, lets a channel that could never be written be refused.
 */
export function parseChannel(
  props: Record<string, unknown>,
  valueType: ValueType,
  path: string,
  instanceProps: Record<string, unknown> = {},
  mode?: ChannelMode,
): Parsed<ModbusChannelSpec> {
  const r = new PropReader(props, path);
  const name = channelName(path);
  // On a serial line 0 is the broadcast address and 248-255 are reserved (Modbus over Serial Line
  // §2.2); over TCP a gateway passes any unit id, and some devices need 0 or 255.
  const serial = accessTypeOf(new PropReader(instanceProps, '')) === 'RTU';
  const unitId = r.int('unit.id', 1, serial ? 1 : 0, serial ? 247 : 255);
  const table = r.enumOf('primary.table', TABLES, 'HOLDING_REGISTERS', true);
  const memoryAddress = r.int('memory.address', 1, 1, 65536);
  const bits = isBitTable(table);
  // STRING and BYTE_ARRAY channels default to the STRING layout; everything else to INT16
  // (docs/drivers.md).
  const defType: DataType = valueType === 'STRING' || valueType === 'BYTE_ARRAY' ? 'STRING' : 'INT16';
  const dataType = r.enumOf('data.type', DATA_TYPES, defType, true);
  const order = r.enumOf('data.order', DATA_ORDERS, 'BIG_ENDIAN', true);
  const arrayLength = r.int('array.data.length', 0, 1, MAX_READ_REGISTERS);
  const scaleOnWrite = r.bool('scale.on.write', false);
  if ((mode === 'WRITE' || mode === 'READ_WRITE') && (table === 'INPUT_REGISTERS' || table === 'DISCRETE_INPUTS')) {
    r.problem('primary.table', `channel ${name}: ${table} cannot be written, so type ${mode} can never work (use READ, or COILS / HOLDING_REGISTERS)`);
  }
  let count = 1;
  if (bits) {
    // Kura's driver: coils and discrete inputs are single bits read as BOOLEAN.
    if (valueType !== 'BOOLEAN') {
      r.problem('value.type', `channel ${name}: ${table} are single bits, so value.type must be BOOLEAN, not ${valueType}`);
    }
    for (const key of ['data.type', 'data.order', 'array.data.length']) {
      if (r.has(key)) r.problem(key, `ignored for ${table} (single bits)`, 'warning');
    }
  } else {
    if (!ALLOWED_DATA_TYPES[valueType].includes(dataType)) {
      r.problem('data.type', `channel ${name}: data.type ${dataType} does not fit value.type ${valueType} (allowed: ${ALLOWED_DATA_TYPES[valueType].join(', ')})`);
    } else if (dataType === 'STRING' && arrayLength === 0) {
      r.problem('array.data.length', `channel ${name}: is required for value.type ${valueType} (registers, 1..${MAX_READ_REGISTERS})`);
    }
    count = registerCount(dataType, arrayLength || 1);
  }
  if (memoryAddress - 1 + count > 65536) {
    r.problem('memory.address', `channel ${name}: ${count} registers from ${memoryAddress} run past the end of the table (65536)`);
  }
  return { value: channelSpec(memoryAddress - 1, { unitId, table, count, dataType, order, valueType, arrayLength: arrayLength || 1, scaleOnWrite }), problems: r.problems };
}

/**
 * Channels of one layout (unit, table, width, type, order…) share its fields through their
 * prototype; a spec holds only its own address (56 bytes instead of 96: 0.4 MB at 10,000 channels).
 * Bounded like the decoders: layouts come from the configuration.
 */
const layouts = new Map<string, Omit<ModbusChannelSpec, 'address'>>();

function channelSpec(address: number, l: Omit<ModbusChannelSpec, 'address'>): ModbusChannelSpec {
  const key = `${l.unitId}|${l.table}|${l.count}|${l.dataType}|${l.order}|${l.valueType}|${l.arrayLength}|${l.scaleOnWrite}`;
  let shared = layouts.get(key);
  if (!shared) {
    if (layouts.size >= 1000) layouts.clear();
    layouts.set(key, (shared = l));
  }
  const spec = Object.create(shared) as ModbusChannelSpec;
  spec.address = address;
  return spec;
}

/** Labels of the instance and channel keys (docs/drivers.md "modbus"), shown by configuration/v2. */
export const LABELS: Readonly<Record<(typeof INSTANCE_KEYS)[number] | (typeof CHANNEL_KEYS)[number], PropertyLabel>> = {
  'access.type': { name: 'Transport', description: 'TCP (Modbus TCP), RTU (a serial line) or RTU_OVER_TCP (RTU frames through a TCP converter).' },
  'modbus.tcp-udp.ip': { name: 'Host', description: 'Host name or address of the device or converter (TCP and RTU_OVER_TCP).' },
  'modbus.tcp-udp.port': { name: 'TCP port', description: 'TCP port of the device or converter (TCP and RTU_OVER_TCP).' },
  'modbus.rtu.port.name': { name: 'Serial port', description: 'Serial device of the line, e.g. /dev/ttyS1 or /dev/ttyUSB0 (RTU).' },
  'modbus.rtu.baudrate': { name: 'Baud rate', description: `Line speed, one of ${BAUD_RATES.join(', ')} (RTU).`, unit: 'bit/s' },
  'modbus.rtu.databits': { name: 'Data bits', description: 'Data bits per character; RTU frames carry 8 (RTU).' },
  'modbus.rtu.stopbits': { name: 'Stop bits', description: 'Stop bits per character (RTU).' },
  'modbus.rtu.parity': { name: 'Parity', description: 'Parity bit of each character (RTU).' },
  'modbus.timeout': { name: 'Response timeout', description: 'How long to wait for each response.', unit: 'ms' },
  'modbus.transaction.retry': { name: 'Retries', description: 'Retries after the first attempt when a response does not come.' },
  'read.max.gap': { name: 'Read gap', description: 'Unrequested registers (or bits) that may be read between two requested ranges to merge them into one request.', unit: 'registers' },
  'write.multiple.registers.only': { name: 'Write with FC 15/16 only', description: 'Always write with FC 16 (registers) and FC 15 (coils), for devices without FC 6 and FC 5.' },
  'unit.backoff.max': { name: 'Longest back-off', description: 'Longest back-off of a unit that stopped answering; 0 turns back-off off.', unit: 'ms' },
  'inter.request.delay': { name: 'Delay between requests', description: 'Silence kept on the line between the end of one exchange and the next request.', unit: 'ms' },
  'unit.id': { name: 'Unit id', description: 'Unit (slave) id of the device: 1-247 on RTU, 0-255 over TCP.' },
  'primary.table': { name: 'Table', description: 'Which Modbus table the channel reads and writes.' },
  'memory.address': { name: 'Address', description: 'Address of the first register or bit, 1-based as in Kura (1 is protocol address 0).' },
  'data.type': { name: 'Data type', description: 'How the registers are interpreted (INT16 by default; STRING for STRING and BYTE_ARRAY channels).' },
  'data.order': { name: 'Word order', description: 'Order of registers and bytes of 32- and 64-bit types.' },
  'array.data.length': { name: 'Length', description: 'Registers a STRING or BYTE_ARRAY channel occupies.', unit: 'registers' },
  'scale.on.write': { name: 'Scale on write', description: 'Apply the inverse of the channel\'s scale and offset to written values.' },
};
