// The Modbus driver: channel reads coalesced into few requests, writes to contiguous addresses
// coalesced into one FC16 / FC15, every problem reported on the channel it concerns (driver.ts
// contract: never throw per channel).

import type { ChannelConfig } from '../../channels/types.js';
import { removeScaleOffset } from '../../channels/scaling.js';
import { closedResults, type ChannelResult, type DeviceStatus, type Driver, type WriteRequest } from '../driver.js';
import { channelSpecs, SpecError, type ChannelSpec } from '../props.js';
import type { ModbusClient, RequestOptions } from './client.js';
import { parseChannel, type ModbusChannelSpec, type ModbusInstanceConfig } from './config.js';
import { exceptionName, isBitTable, MAX_WRITE_BITS, MAX_WRITE_REGISTERS, type Table } from './constants.js';
import { decodeRegisters, encodeRegisters, layoutDecoder, type Decoder } from './datatypes.js';
import type { ModbusRequest, ModbusResponse } from './pdu.js';
import { planReads, type ReadBlock, type ReadItem } from './plan.js';
import type { LineStats } from './transport.js';
import { ModbusTools } from './tools.js';
import { YoungValue } from '../../channels/young.js';
import type { TypedValue } from '../../channels/types.js';

interface ResultCtor {
  new (value: TypedValue, timestamp: number): ChannelResult;
}

/** `{ ok: true, value, timestamp }`, made young as channels/young.ts explains: one per channel per poll. */
const ReadResult = function (this: { ok: true; value: TypedValue; timestamp: number }, value: TypedValue, timestamp: number) {
  this.ok = true;
  this.value = value;
  this.timestamp = timestamp;
} as unknown as ResultCtor;
ReadResult.prototype = Object.prototype;

export interface ModbusDriver extends Driver {
  /** Counters of the line this driver uses (shared with other drivers on the same serial port). */
  stats(): LineStats;
  /** Counters per unit this driver's channels address. */
  devices(): DeviceStatus[];
}

/** Kura's 1-based addresses for messages: `HOLDING_REGISTERS 1..100`. */
function range(table: string, address: number, quantity: number): string {
  return quantity === 1 ? `${table} ${address + 1}` : `${table} ${address + 1}..${address + quantity}`;
}

function exceptionMessage(code: number, what: string, unitId: number): string {
  return `Modbus exception ${code} (${exceptionName(code)}) for ${what} on unit ${unitId}`;
}

/**
 * A planned read request (plan.ts ReadBlock) with its channels as parallel lists: position in the
 * caller's list, spec and decoder (undefined: decodeRegisters with the spec). No object per channel:
 * a poll plan of 10,000 channels kept 10,000 ReadItems (0.5 MB) for as long as it was used.
 */
interface PlannedRead {
  unitId: number;
  table: Table;
  fc: 1 | 2 | 3 | 4;
  address: number;
  quantity: number;
  index: number[];
  specs: ModbusChannelSpec[];
  decode: (Decoder | undefined)[];
}

function planned(b: ReadBlock): PlannedRead {
  const { unitId, table, fc, address, quantity, items } = b;
  return { unitId, table, fc, address, quantity, index: items.map((i) => i.index), specs: items.map((i) => i.spec), decode: items.map((i) => layoutDecoder(i.spec)) };
}

/** One channel's write, encoded: registers (two bytes each) or one coil. */
interface WriteItem {
  index: number;
  unitId: number;
  table: Table;
  address: number;
  /** Registers or bits. */
  count: number;
  data?: Buffer;
  bit?: boolean;
}

export class ModbusDriverImpl implements ModbusDriver {
  private readonly spec: (ch: ChannelConfig) => ChannelSpec<ModbusChannelSpec>;
  private readonly opts: RequestOptions;
  private readonly units = new Set<number>();
  private closed = false;
  private lastPlan?: { channels: ChannelConfig[]; blocks: PlannedRead[]; invalid: [number, ChannelResult][] };
  /** Probe and the other commissioning tools, on this instance's line (docs/drivers.md "Commissioning tools"). */
  readonly tools: ModbusTools;

  constructor(
    private readonly config: ModbusInstanceConfig,
    private readonly client: ModbusClient,
    private readonly release: () => Promise<void>,
  ) {
    this.opts = { timeout: config.timeout, retries: config.retries, backoffMax: config.backoffMax };
    this.tools = new ModbusTools(config, client);
    const inst = { 'access.type': config.accessType };
    this.spec = channelSpecs((ch, path) => {
      const parsed = parseChannel(ch.driverProps, ch.valueType, path, inst);
      this.units.add(parsed.value.unitId);
      return parsed;
    });
  }

  stats(): LineStats {
    return { ...this.client.stats };
  }

  devices(): DeviceStatus[] {
    return this.client.unitStats([...this.units].sort((a, b) => a - b));
  }

  async read(channels: ChannelConfig[]): Promise<ChannelResult[]> {
    if (this.closed) return closedResults(channels.length);
    // A poll hands over the same list every cycle: its plan is made once (the last list's is kept).
    let plan = this.lastPlan;
    if (plan?.channels !== channels) {
      const invalid: [number, ChannelResult][] = [];
      const items: ReadItem[] = [];
      channels.forEach((ch, index) => {
        const s = this.spec(ch);
        if (!(s instanceof SpecError)) items.push({ index, spec: s });
        else invalid.push([index, { ok: false, error: `Invalid Modbus channel configuration: ${s.error}` }]);
      });
      this.lastPlan = plan = { channels, blocks: planReads(items, this.config.maxGap).map(planned), invalid };
    }
    const results: ChannelResult[] = new Array(channels.length);
    for (const [index, r] of plan.invalid) results[index] = r;
    const { blocks } = plan;
    // The responses are kept as they arrive and decoded together once the last is in: a channel's
    // value and result are made in one step with its record and telemetry after it, and are garbage
    // by the end of that step. Decoded per response, ten assets' results waited across the other
    // requests of their polls, and the young-generation collections that fell in those waits moved
    // them to the old generation, which then grew by megabytes a second (make bench's scale section).
    if (blocks.length === 1) this.decode(blocks[0]!, await this.fetch(blocks[0]!, results), results);
    else {
      const fetched = await Promise.all(blocks.map((b) => this.fetch(b, results)));
      for (let k = 0; k < blocks.length; k++) this.decode(blocks[k]!, fetched[k], results);
    }
    return results;
  }

  private async readBlock(block: PlannedRead, results: ChannelResult[]): Promise<void> {
    this.decode(block, await this.fetch(block, results), results);
  }

  /**
   * One planned request: its response, the error message every channel of it fails with, or
   * undefined when its channels were read one by one (their results are in `results` then).
   */
  private async fetch(block: PlannedRead, results: ChannelResult[]): Promise<ModbusResponse | string | undefined> {
    const req: ModbusRequest = { fc: block.fc, address: block.address, quantity: block.quantity };
    let res: ModbusResponse;
    try {
      res = await this.client.request(block.unitId, req, this.opts);
    } catch (err) {
      return (err as Error).message;
    }
    if ('exception' in res) {
      const spans = new Set(block.specs.map((s) => `${s.address}:${s.count}`));
      // A merged request can fail only because of a gap or one bad channel (exception 2 or 3):
      // read each channel on its own so the error lands on the channel that causes it.
      if ((res.exception === 2 || res.exception === 3) && spans.size > 1) {
        await Promise.all(block.specs.map((_, k) => this.readBlock(singleBlock(block, k), results)));
        return undefined;
      }
      return exceptionMessage(res.exception, `reading ${range(block.table, block.address, block.quantity)}`, block.unitId);
    }
    return res;
  }

  /** The results of a block's channels from what fetch() got. */
  private decode(block: PlannedRead, res: ModbusResponse | string | undefined, results: ChannelResult[]): void {
    if (res === undefined) return;
    if (typeof res === 'string') {
      for (const i of block.index) results[i] = { ok: false, error: res };
      return;
    }
    if ('exception' in res) return;
    const what = () => range(block.table, block.address, block.quantity);
    // Reads joined into one bus transaction share its response, and so its timestamp.
    const timestamp = this.client.receivedAt.get(res) ?? Date.now();
    const bits = 'bits' in res ? res.bits : undefined;
    const data = 'data' in res ? res.data : undefined;
    if ((bits && bits.length < block.quantity) || (data && data.length !== block.quantity * 2) || (!bits && !data)) {
      const error = `${this.client.label}: unit ${block.unitId} sent a response of the wrong size for ${what()}`;
      for (const i of block.index) results[i] = { ok: false, error };
      return;
    }
    const { index: indexes, specs, decode: decoders } = block;
    for (let k = 0; k < indexes.length; k++) {
      const index = indexes[k]!;
      const spec = specs[k]!;
      const decode = decoders[k];
      const offset = spec.address - block.address;
      if (bits) {
        results[index] = new ReadResult(new YoungValue('BOOLEAN', bits[offset]), timestamp);
        continue;
      }
      const v = decode ? decode(data!, offset * 2, spec.count * 2) : decodeRegisters(data!, spec, offset * 2, spec.count * 2);
      results[index] = 'error' in v ? { ok: false, error: `${range(spec.table, spec.address, spec.count)}: ${v.error}` } : new ReadResult(v, timestamp);
    }
  }

  /**
   * Writes in request order. Consecutive requests to consecutive addresses of one unit and table
   * become one FC16 (registers) or FC15 (coils), up to the protocol's limits (§6.11, §6.12); a single
   * register is written with FC6 and a single coil with FC5 unless `write.multiple.registers.only`.
   * A value longer than 123 registers is split into several FC16 requests (not atomic).
   */
  async write(requests: WriteRequest[]): Promise<ChannelResult[]> {
    if (this.closed) return closedResults(requests.length);
    const results: ChannelResult[] = new Array(requests.length);
    const groups: WriteItem[][] = [];
    let group: WriteItem[] = [];
    let total = 0;
    requests.forEach((r, index) => {
      const item = this.encode(r, index);
      if ('error' in item) {
        results[index] = { ok: false, error: item.error };
        return;
      }
      const last = group[group.length - 1];
      const limit = item.data ? MAX_WRITE_REGISTERS : MAX_WRITE_BITS;
      const joins = last && last.unitId === item.unitId && last.table === item.table && last.address + last.count === item.address && total + item.count <= limit;
      if (!joins) {
        if (group.length) groups.push(group);
        group = [];
        total = 0;
      }
      group.push(item);
      total += item.count;
    });
    if (group.length) groups.push(group);
    // Every request is queued now, in input order (the client is FIFO): two writes to one register
    // land in order, and a read asked for after this write sees it.
    await Promise.all(groups.map(async (g) => {
      const error = await this.writeGroup(g);
      for (const it of g) results[it.index] = error ? { ok: false, error } : { ok: true, value: requests[it.index].value, timestamp: Date.now() };
    }));
    return results;
  }

  private encode({ channel, value }: WriteRequest, index: number): WriteItem | { error: string } {
    const s = this.spec(channel);
    if (s instanceof SpecError) return { error: `Invalid Modbus channel configuration: ${s.error}` };
    const spec: ModbusChannelSpec = s;
    const what = range(spec.table, spec.address, spec.count);
    // Kura's driver: discrete inputs and input registers cannot be written.
    if (spec.table === 'DISCRETE_INPUTS' || spec.table === 'INPUT_REGISTERS') return { error: `${spec.table} cannot be written (${what})` };
    const base = { index, unitId: spec.unitId, table: spec.table, address: spec.address, count: spec.count };
    if (isBitTable(spec.table)) {
      if (value.type !== 'BOOLEAN') return { error: `a ${value.type} value cannot be written to ${what}` };
      return { ...base, bit: value.value };
    }
    const raw = spec.scaleOnWrite ? removeScaleOffset(value, channel) : value;
    if (typeof raw === 'string') return { error: `${what}: ${raw}` };
    const data = encodeRegisters(raw, spec, spec.arrayLength);
    return Buffer.isBuffer(data) ? { ...base, data } : { error: `${what}: ${data.error}` };
  }

  /** Queues one group's requests at once; resolves with the first error message, or undefined. */
  private async writeGroup(g: WriteItem[]): Promise<string | undefined> {
    const { unitId, table, address } = g[0];
    const multiple = this.config.multipleOnly;
    const reqs: Exclude<ModbusRequest, { fc: 43 }>[] = [];
    if (g[0].data) {
      const data = Buffer.concat(g.map((it) => it.data!));
      const max = MAX_WRITE_REGISTERS * 2;
      if (data.length === 2 && !multiple) reqs.push({ fc: 6, address, value: data.readUInt16BE(0) });
      else for (let at = 0; at < data.length; at += max) reqs.push({ fc: 16, address: address + at / 2, data: data.subarray(at, at + max) });
    } else if (g.length === 1 && !multiple) reqs.push({ fc: 5, address, value: g[0].bit! });
    else reqs.push({ fc: 15, address, values: g.map((it) => it.bit!) });
    const outcomes = reqs.map(async (req) => {
      const n = 'data' in req ? req.data.length / 2 : 'values' in req ? req.values.length : 1;
      try {
        const res = await this.client.request(unitId, req, this.opts);
        if ('exception' in res) return exceptionMessage(res.exception, `writing ${range(table, req.address, n)}`, unitId);
      } catch (err) {
        return (err as Error).message;
      }
      return undefined;
    });
    return (await Promise.all(outcomes)).find((e) => e !== undefined);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.tools.close();
    await this.release();
  }
}

function singleBlock(block: PlannedRead, k: number): PlannedRead {
  const spec = block.specs[k]!;
  return { ...block, address: spec.address, quantity: spec.count, index: [block.index[k]!], specs: [spec], decode: [block.decode[k]] };
}
