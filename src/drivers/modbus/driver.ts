// The Modbus driver: channel reads coalesced into few requests, writes one request per channel,
// every problem reported on the channel it concerns (driver.ts contract: never throw per channel).

import type { ChannelConfig } from '../../assets/types.js';
import { closedResults, type ChannelResult, type Driver, type WriteRequest } from '../driver.js';
import { channelSpecs } from '../props.js';
import type { ModbusClient, RequestOptions } from './client.js';
import { parseChannel, type ModbusInstanceConfig } from './config.js';
import { exceptionName, isBitTable, MAX_WRITE_REGISTERS } from './constants.js';
import { decodeRegisters, encodeRegisters } from './datatypes.js';
import type { ModbusRequest, ModbusResponse } from './pdu.js';
import { planReads, type ReadBlock, type ReadItem } from './plan.js';
import type { LineStats } from './transport.js';

export interface ModbusDriver extends Driver {
  /** Counters of the line this driver uses (shared with other drivers on the same serial port). */
  stats(): LineStats;
}

/** Kura's 1-based addresses for messages: `HOLDING_REGISTERS 1..100`. */
function range(table: string, address: number, quantity: number): string {
  return quantity === 1 ? `${table} ${address + 1}` : `${table} ${address + 1}..${address + quantity}`;
}

function exceptionMessage(code: number, what: string, unitId: number): string {
  return `Modbus exception ${code} (${exceptionName(code)}) for ${what} on unit ${unitId}`;
}

export class ModbusDriverImpl implements ModbusDriver {
  private readonly spec = channelSpecs((ch, path) => parseChannel(ch.driverProps, ch.valueType, path));
  private readonly opts: RequestOptions;
  private closed = false;

  constructor(
    private readonly config: ModbusInstanceConfig,
    private readonly client: ModbusClient,
    private readonly release: () => Promise<void>,
  ) {
    this.opts = { timeout: config.timeout, retries: config.retries };
  }

  stats(): LineStats {
    return { ...this.client.stats };
  }

  async read(channels: ChannelConfig[]): Promise<ChannelResult[]> {
    const results: ChannelResult[] = new Array(channels.length);
    if (this.closed) return closedResults(channels.length);
    const items: ReadItem[] = [];
    channels.forEach((ch, index) => {
      const s = this.spec(ch);
      if ('spec' in s) items.push({ index, spec: s.spec });
      else results[index] = { ok: false, error: `Invalid Modbus channel configuration: ${s.error}` };
    });
    await Promise.all(planReads(items, this.config.maxGap).map((b) => this.readBlock(b, results)));
    return results;
  }

  private async readBlock(block: ReadBlock, results: ChannelResult[]): Promise<void> {
    const req: ModbusRequest = { fc: block.fc, address: block.address, quantity: block.quantity };
    const what = range(block.table, block.address, block.quantity);
    let res: ModbusResponse;
    try {
      res = await this.client.request(block.unitId, req, this.opts);
    } catch (err) {
      const error = (err as Error).message;
      for (const item of block.items) results[item.index] = { ok: false, error };
      return;
    }
    if ('exception' in res) {
      const spans = new Set(block.items.map((i) => `${i.spec.address}:${i.spec.count}`));
      // A merged request can fail only because of a gap or one bad channel (exception 2 or 3):
      // read each channel on its own so the error lands on the channel that causes it.
      if ((res.exception === 2 || res.exception === 3) && spans.size > 1) {
        await Promise.all(block.items.map((item) => this.readBlock(singleBlock(block, item), results)));
        return;
      }
      const error = exceptionMessage(res.exception, `reading ${what}`, block.unitId);
      for (const item of block.items) results[item.index] = { ok: false, error };
      return;
    }
    const timestamp = Date.now();
    const bits = 'bits' in res ? res.bits : undefined;
    const data = 'data' in res ? res.data : undefined;
    if ((bits && bits.length < block.quantity) || (data && data.length !== block.quantity * 2) || (!bits && !data)) {
      const error = `${this.client.label}: unit ${block.unitId} sent a response of the wrong size for ${what}`;
      for (const item of block.items) results[item.index] = { ok: false, error };
      return;
    }
    for (const { index, spec } of block.items) {
      const offset = spec.address - block.address;
      if (bits) {
        results[index] = { ok: true, value: { type: 'BOOLEAN', value: bits[offset] }, timestamp };
        continue;
      }
      const v = decodeRegisters(data!.subarray(offset * 2, (offset + spec.count) * 2), spec);
      results[index] = 'error' in v ? { ok: false, error: `${range(spec.table, spec.address, spec.count)}: ${v.error}` } : { ok: true, value: v, timestamp };
    }
  }

  async write(requests: WriteRequest[]): Promise<ChannelResult[]> {
    if (this.closed) return closedResults(requests.length);
    // Queued in input order (the client is FIFO), so two writes to one register land in order.
    return Promise.all(requests.map((r) => this.writeOne(r)));
  }

  private async writeOne({ channel, value }: WriteRequest): Promise<ChannelResult> {
    const s = this.spec(channel);
    if (!('spec' in s)) return { ok: false, error: `Invalid Modbus channel configuration: ${s.error}` };
    const { spec } = s;
    const what = range(spec.table, spec.address, spec.count);
    let req: ModbusRequest;
    if (spec.table === 'DISCRETE_INPUTS' || spec.table === 'INPUT_REGISTERS') {
      // Kura's driver: discrete inputs and input registers cannot be written.
      return { ok: false, error: `${spec.table} cannot be written (${what})` };
    }
    if (isBitTable(spec.table)) {
      if (value.type !== 'BOOLEAN') return { ok: false, error: `a ${value.type} value cannot be written to ${what}` };
      req = { fc: 5, address: spec.address, value: value.value };
    } else {
      const data = encodeRegisters(value, spec, spec.arrayLength);
      if (!Buffer.isBuffer(data)) return { ok: false, error: `${what}: ${data.error}` };
      if (data.length / 2 > MAX_WRITE_REGISTERS) return { ok: false, error: `${what}: more than ${MAX_WRITE_REGISTERS} registers in one write` };
      // One register: FC6; more: FC16 (Kura's HOLDING_REGISTERS write codes).
      req = data.length === 2 ? { fc: 6, address: spec.address, value: data.readUInt16BE(0) } : { fc: 16, address: spec.address, data };
    }
    try {
      const res = await this.client.request(spec.unitId, req, this.opts);
      if ('exception' in res) return { ok: false, error: exceptionMessage(res.exception, `writing ${what}`, spec.unitId) };
      return { ok: true, value, timestamp: Date.now() };
    } catch (err) {
      return { ok: false, error: (err as Error).message };
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.release();
  }
}

function singleBlock(block: ReadBlock, item: ReadItem): ReadBlock {
  return { ...block, address: item.spec.address, quantity: item.spec.count, items: [item] };
}
