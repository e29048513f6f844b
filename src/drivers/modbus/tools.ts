// Commissioning tools of a Modbus driver instance (docs/drivers.md "Commissioning tools"): a probe
// (one read, or one confirmed write, of any table, address, count, data type, word order and unit)
// sent through the line's transaction queue (client.ts), so it never interleaves a poll's frame;
// the line's request log.

import { nodeCrypto } from '../../core/builtin.js';
import type { ValueType } from '../../channels/types.js';
import { parseValueText } from '../../channels/values.js';
import { ToolError } from '../../core/errors.js';
import { JsonNumber } from '../../core/json.js';
import type { DriverTools } from '../driver.js';
import type { ModbusClient, RequestOptions } from './client.js';
import { SWEEP_BAUD_RATES, SWEEP_PARITIES, parseChannel, type LineSettings, type ModbusChannelSpec, type ModbusInstanceConfig, type Parity } from './config.js';
import { MAX_READ_BITS, MAX_READ_REGISTERS, READ_FC, exceptionName, isBitTable } from './constants.js';
import { decodeRegisters, encodeRegisters, type DataType } from './datatypes.js';
import type { ModbusRequest, ModbusResponse } from './pdu.js';
import { SettingsError } from './transport.js';

/** The keys a probe request may carry: a channel's Modbus keys, plus what a probe adds. */
export const PROBE_KEYS: readonly string[] = Object.freeze([
  'unit.id', 'primary.table', 'memory.address', 'data.type', 'data.order', 'array.data.length', 'value.type', 'count', 'value', 'confirm',
]);

// The value type a data type reads as by default: the narrowest that holds every value.
const NATURAL_TYPE: Record<DataType, ValueType> = {
  INT16: 'INTEGER', UINT16: 'INTEGER', INT32: 'INTEGER', UINT32: 'LONG', INT64: 'LONG', UINT64: 'LONG', FLOAT32: 'FLOAT', FLOAT64: 'DOUBLE', STRING: 'STRING',
};
const VALUE_TYPES: readonly ValueType[] = ['BOOLEAN', 'BYTE_ARRAY', 'DOUBLE', 'INTEGER', 'LONG', 'FLOAT', 'STRING'];

/** A typed value as JSON: a LONG as a JSON number of its exact digits, a BYTE_ARRAY as Base64. */
function jsonValue(v: { type: ValueType; value: unknown }): unknown {
  if (typeof v.value === 'bigint') return new JsonNumber(v.value.toString());
  if (Buffer.isBuffer(v.value)) return v.value.toString('base64');
  return v.value;
}

/** Object names of Read Device Identification (Modbus Application Protocol §6.21). */
const OBJECT_NAMES: Readonly<Record<number, string>> = Object.freeze({
  0: 'VendorName', 1: 'ProductCode', 2: 'MajorMinorRevision', 3: 'VendorUrl', 4: 'ProductName', 5: 'ModelName', 6: 'UserApplicationName',
});

/** Scan requests per second at most, so that a scan leaves most of the line to the polls. */
export const SCAN_RATE = 10;
/**
 * Requests of one sweep at most (combinations × units): 24 combinations for 41 units, or every
 * unit of a line at 4; at the scan rate and a 1 s timeout, under 17 minutes.
 */
export const MAX_SWEEP_REQUESTS = 1000;
/** Finished scans an instance remembers (the oldest is forgotten first). */
const SCANS_KEPT = 8;

interface Scan {
  id: string;
  state: 'RUNNING' | 'DONE' | 'CANCELLED';
  total: number;
  done: number;
  found: { unit: number; baudRate?: number; parity?: Parity; identification?: Record<string, unknown> }[];
  /** Sweep combinations the port refused (their units were not asked). */
  errors: { baudRate: number; parity: Parity; error: string }[];
}

export class ModbusTools implements DriverTools {
  private readonly scans = new Map<string, Scan>();
  private closed = false;

  constructor(
    private readonly config: ModbusInstanceConfig,
    private readonly client: ModbusClient,
  ) {}

  /** Stops this instance's scans (the driver is closing). */
  close(): void {
    this.closed = true;
    for (const s of this.scans.values()) if (s.state === 'RUNNING') s.state = 'CANCELLED';
  }

  /**
   * Asks each unit of `units: [from, to]` one read (holding register 1): any answer, an exception
   * included, means the unit is there. One request at a time in the line's queue, at most
   * SCAN_RATE a second, no retry; `identify: true` also reads the identification of each found.
   * On an RTU line, `baudRates` and `parities` sweep the serial settings: every unit is asked at
   * every combination (the line's own rate or parity where one list is missing), each request
   * at its combination and the port set back to the line's own settings before the next exchange.
   */
  startScan(request: Record<string, unknown>): { id: string } {
    const allowed = ['units', 'identify', 'baudRates', 'parities'];
    const unknown = Object.keys(request).find((k) => !allowed.includes(k));
    if (unknown !== undefined) throw new ToolError('input', `unknown key ${JSON.stringify(unknown.slice(0, 40))}; a scan takes units, identify, baudRates, parities`);
    const min = this.config.accessType === 'RTU' ? 1 : 0;
    const max = this.config.accessType === 'RTU' ? 247 : 255;
    const units = request.units;
    const ok = Array.isArray(units) && units.length === 2 && units.every((u) => Number.isInteger(u) && u >= min && u <= max) && units[0] <= units[1];
    if (!ok) throw new ToolError('input', `units must be [from, to], integers ${min}..${max} with from <= to`);
    if (request.identify !== undefined && typeof request.identify !== 'boolean') throw new ToolError('input', 'identify must be true or false');
    const [from, to] = units as [number, number];
    const settings = this.sweepSettings(request, to - from + 1);
    if (this.client.activeScan !== undefined) throw new ToolError('busy', `a scan is already running on ${this.client.label} (${this.client.activeScan})`);
    const scan: Scan = { id: nodeCrypto().randomUUID(), state: 'RUNNING', total: (to - from + 1) * settings.length, done: 0, found: [], errors: [] };
    for (const [id, s] of this.scans) if (this.scans.size >= SCANS_KEPT && s.state !== 'RUNNING') this.scans.delete(id);
    this.scans.set(scan.id, scan);
    this.client.activeScan = scan.id;
    void this.runScan(scan, from, to, settings, request.identify === true).finally(() => {
      if (this.client.activeScan === scan.id) this.client.activeScan = undefined;
    });
    return { id: scan.id };
  }

  /**
   * The combinations of a sweep, rates outer and parities inner ([undefined]: no sweep, the line as
   * it is). Only a serial line has them; at most MAX_SWEEP_REQUESTS combinations × units.
   */
  private sweepSettings(request: Record<string, unknown>, unitCount: number): (LineSettings | undefined)[] {
    const { baudRates, parities } = request;
    if (baudRates === undefined && parities === undefined) return [undefined];
    if (this.config.accessType === 'TCP') throw new ToolError('input', 'baudRates and parities sweep a serial line: a Modbus TCP device has none (scan its units only)');
    if (this.config.accessType === 'RTU_OVER_TCP') {
      throw new ToolError('input', 'baudRates and parities sweep a serial port this daemon opens: on RTU over TCP the converter owns the serial settings (set them on the converter, then scan)');
    }
    const list = <T>(v: unknown, key: string, allowed: readonly T[], own: T): T[] => {
      if (v === undefined) return [own];
      if (!Array.isArray(v) || v.length === 0 || v.some((x) => !allowed.includes(x as T))) throw new ToolError('input', `${key} must be a non-empty list of ${allowed.join(', ')}`);
      if (new Set(v).size !== v.length) throw new ToolError('input', `${key} names a value twice`);
      return v as T[];
    };
    const rates = list<number>(baudRates, 'baudRates', SWEEP_BAUD_RATES, this.config.serial.baudrate);
    const pars = list<Parity>(parities, 'parities', SWEEP_PARITIES, this.config.serial.parity);
    const n = rates.length * pars.length * unitCount;
    if (n > MAX_SWEEP_REQUESTS) {
      throw new ToolError('input', `a sweep of ${rates.length * pars.length} combinations × ${unitCount} units is ${n} requests; at most ${MAX_SWEEP_REQUESTS} (fewer units, rates or parities)`);
    }
    return rates.flatMap((baudrate) => pars.map((parity) => ({ baudrate, parity })));
  }

  private async runScan(scan: Scan, from: number, to: number, settings: (LineSettings | undefined)[], identify: boolean): Promise<void> {
    let lastStart = -Infinity;
    for (const line of settings) {
      for (let unit = from; unit <= to; unit++) {
        if (scan.state !== 'RUNNING' || this.closed) return;
        const wait = lastStart + 1000 / SCAN_RATE - Date.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        if (scan.state !== 'RUNNING' || this.closed) return;
        lastStart = Date.now();
        const opts = line ? { ...this.attended, line } : this.attended;
        const outcome = await this.client.request(unit, { fc: 3, address: 0, quantity: 1 }, opts).then(() => 'answered', (err: unknown) => err);
        // A scan cancelled while its last request was on the wire stays as it was when cancelled.
        if (scan.state !== 'RUNNING') return;
        if (outcome instanceof SettingsError && line) {
          // The port cannot take this combination: its other units are not asked.
          scan.errors.push({ baudRate: line.baudrate, parity: line.parity, error: outcome.message });
          scan.done += to - unit + 1;
          break;
        }
        if (outcome === 'answered') {
          const entry: Scan['found'][number] = line ? { unit, baudRate: line.baudrate, parity: line.parity } : { unit };
          if (identify) entry.identification = await this.identify(String(unit), line).catch(() => undefined);
          if (scan.state !== 'RUNNING') return;
          scan.found.push(entry);
        }
        scan.done++;
      }
    }
    if (scan.state === 'RUNNING') scan.state = 'DONE';
  }

  scan(id: string): Record<string, unknown> {
    const s = this.scans.get(id);
    if (!s) throw new ToolError('missing', `Scan not found: ${id.slice(0, 60)}`);
    const out: Record<string, unknown> = { id: s.id, state: s.state, progress: s.total === 0 ? 1 : s.done / s.total, found: s.found.map((f) => ({ ...f })) };
    if (s.errors.length > 0) out.errors = s.errors.map((e) => ({ ...e }));
    return out;
  }

  cancelScan(id: string): Record<string, unknown> {
    const s = this.scans.get(id);
    if (!s) throw new ToolError('missing', `Scan not found: ${id.slice(0, 60)}`);
    if (s.state === 'RUNNING') s.state = 'CANCELLED';
    if (this.client.activeScan === id) this.client.activeScan = undefined;
    return this.scan(id);
  }

  /** The options of a request a technician asked for: no retry, no back-off either way. */
  private get attended(): RequestOptions {
    return { timeout: this.config.timeout, retries: 0, backoffMax: 0, attended: true };
  }

  requestLog(frames: boolean): Record<string, unknown>[] {
    return this.client.log.entries(frames);
  }

  async probe(request: Record<string, unknown>): Promise<Record<string, unknown>> {
    const unknown = Object.keys(request).filter((k) => !PROBE_KEYS.includes(k));
    if (unknown.length > 0) throw new ToolError('input', `unknown key ${JSON.stringify(unknown[0]!.slice(0, 40))}; a probe takes ${PROBE_KEYS.join(', ')}`);
    const table = typeof request['primary.table'] === 'string' ? request['primary.table'].toUpperCase() : request['primary.table'];
    const bits = table === 'COILS' || table === 'DISCRETE_INPUTS';
    const dataType = (typeof request['data.type'] === 'string' ? request['data.type'].toUpperCase() : 'INT16') as DataType;
    const vt = request['value.type'];
    if (vt !== undefined && !(VALUE_TYPES as readonly unknown[]).includes(vt)) throw new ToolError('input', `value.type must be one of ${VALUE_TYPES.join(', ')}`);
    const valueType: ValueType = bits ? 'BOOLEAN' : ((vt as ValueType | undefined) ?? NATURAL_TYPE[dataType] ?? 'INTEGER');
    const props: Record<string, unknown> = {};
    for (const k of ['unit.id', 'primary.table', 'memory.address', 'data.type', 'data.order', 'array.data.length']) if (request[k] !== undefined) props[k] = request[k];
    const write = request.value !== undefined;
    const parsed = parseChannel(props, valueType, 'probe', { 'access.type': this.config.accessType }, write ? 'WRITE' : 'READ');
    const errors = parsed.problems.filter((p) => p.severity === 'error');
    if (errors.length > 0) throw new ToolError('input', errors.map((p) => `${p.path.replace(/^probe\./, '')}: ${p.message}`).join('; '));
    const spec = parsed.value;
    return write ? this.probeWrite(spec, request) : this.probeRead(spec, request.count);
  }

  private async probeRead(spec: ModbusChannelSpec, countIn: unknown): Promise<Record<string, unknown>> {
    const bits = isBitTable(spec.table);
    const max = bits ? MAX_READ_BITS : MAX_READ_REGISTERS;
    let count = spec.count;
    if (countIn !== undefined) {
      // Modbus Application Protocol §6.1-6.4: at most 2000 bits or 125 registers per read.
      if (!Number.isInteger(countIn) || (countIn as number) < 1 || (countIn as number) > max) throw new ToolError('input', `count must be an integer 1..${max} for ${spec.table}`);
      count = countIn as number;
      if (!bits && count < spec.count) throw new ToolError('input', `count ${count} is fewer than the ${spec.count} registers of data.type ${spec.dataType}`);
    }
    if (spec.address + count > 65536) throw new ToolError('input', `count ${count} from memory.address ${spec.address + 1} runs past the end of the table (65536)`);
    const res = await this.send(spec.unitId, { fc: READ_FC[spec.table], address: spec.address, quantity: count }, `reading ${spec.table} ${spec.address + 1}`);
    if ('bits' in res) {
      const list = res.bits.slice(0, count);
      if (list.length < count) throw new ToolError('device', `unit ${spec.unitId} sent ${list.length} bits for ${count}`);
      return { bits: list, value: list[0], valueType: 'BOOLEAN' };
    }
    if (!('data' in res) || res.data.length !== count * 2) throw new ToolError('device', `unit ${spec.unitId} sent a response of the wrong size`);
    const registers: number[] = [];
    for (let i = 0; i < count; i++) registers.push(res.data.readUInt16BE(2 * i));
    const v = decodeRegisters(res.data, spec, 0, spec.count * 2);
    return 'error' in v ? { registers, value: null, valueType: spec.valueType, decodeError: v.error } : { registers, value: jsonValue(v), valueType: v.type };
  }

  private async probeWrite(spec: ModbusChannelSpec, request: Record<string, unknown>): Promise<Record<string, unknown>> {
    // A write changes a machine: only when the request says so in so many words.
    if (request.confirm !== true) throw new ToolError('input', 'a probe with "value" writes to the device: add "confirm": true to send it');
    if (request.count !== undefined) throw new ToolError('input', 'count applies to reads only');
    const given = request.value;
    if (typeof given !== 'string' && typeof given !== 'number' && typeof given !== 'boolean') throw new ToolError('input', 'value must be a string, number or boolean');
    const typed = parseValueText(spec.valueType, String(given));
    if (typeof typed === 'string') throw new ToolError('input', typed);
    let req: ModbusRequest;
    let written: Record<string, unknown>;
    if (isBitTable(spec.table)) {
      req = { fc: 5, address: spec.address, value: typed.value as boolean };
      written = { bits: [typed.value] };
    } else {
      const data = encodeRegisters(typed, spec, spec.arrayLength);
      if (!Buffer.isBuffer(data)) throw new ToolError('input', data.error);
      req = data.length === 2 && !this.config.multipleOnly ? { fc: 6, address: spec.address, value: data.readUInt16BE(0) } : { fc: 16, address: spec.address, data };
      const registers: number[] = [];
      for (let i = 0; i < data.length; i += 2) registers.push(data.readUInt16BE(i));
      written = { registers };
    }
    await this.send(spec.unitId, req, `writing ${spec.table} ${spec.address + 1}`);
    return { written: true, ...written, value: jsonValue(typed), valueType: typed.type };
  }

  /**
   * Read Device Identification (§6.21, MEI type 14): the basic objects, then the regular ones when
   * the device's conformity level offers them, each stream read to its end ("more follows"), with
   * at most 256 objects asked for in all.
   */
  async identify(unitIn: string, line?: LineSettings): Promise<Record<string, unknown>> {
    const max = this.config.accessType === 'RTU' ? 247 : 255;
    const min = this.config.accessType === 'RTU' ? 1 : 0;
    const unit = typeof unitIn === 'string' && /^\d{1,3}$/.test(unitIn) ? Number(unitIn) : NaN;
    if (!(unit >= min && unit <= max)) throw new ToolError('input', `unit must be an integer ${min}..${max}`);
    const objects = new Map<number, Buffer>();
    let conformity = 0;
    const readStream = async (readCode: number) => {
      let objectId = 0;
      for (let requests = 0; requests < 256; requests++) {
        const res = await this.send(unit, { fc: 43, readCode, objectId }, 'reading the device identification', line);
        if (!('objects' in res)) throw new ToolError('device', `unit ${unit} sent a response of the wrong kind`);
        conformity = res.conformity;
        for (const o of res.objects) objects.set(o.id, o.value);
        // A device that says more follows but names no later object would loop for ever.
        if (!res.moreFollows || res.nextObjectId <= objectId || res.objects.length === 0) return;
        objectId = res.nextObjectId;
      }
    };
    await readStream(1);
    // Conformity level (§6.21 table): 0x02/0x82 regular, 0x03/0x83 extended, both include regular.
    if ((conformity & 0x7f) >= 2) await readStream(2);
    const out: Record<string, unknown> = {};
    for (const [id, value] of [...objects].sort((a, b) => a[0] - b[0])) out[OBJECT_NAMES[id] ?? `0x${id.toString(16).padStart(2, '0')}`] = value.toString('latin1');
    return out;
  }

  /** One attended request; an exception response or a failed line is a ToolError. */
  private async send(unitId: number, req: ModbusRequest, what: string, line?: LineSettings): Promise<ModbusResponse> {
    let res: ModbusResponse;
    try {
      res = await this.client.request(unitId, req, line ? { ...this.attended, line } : this.attended);
    } catch (err) {
      throw new ToolError('device', (err as Error).message);
    }
    if ('exception' in res) throw new ToolError('device', `Modbus exception ${res.exception} (${exceptionName(res.exception)}) for ${what} on unit ${unitId}`);
    return res;
  }
}
