// Request coalescing: a read of many channels becomes the fewest requests. Like Kura's block
// optimiser (Kura's Modbus driver; docs/drivers.md "How it talks to the device"): one domain per
// unit id and table, sorted by start address, ranges merged when they overlap, touch, or are at
// most `maxGap` apart, never crossing the protocol's limit of 125 registers / 2000 bits per request
// (Modbus Application Protocol V1.1b3 §6.1–6.4).

import { MAX_READ_BITS, MAX_READ_REGISTERS, READ_FC, isBitTable, type Table } from './constants.js';
import type { ModbusChannelSpec } from './config.js';

export interface ReadItem {
  /** Position of the channel in the caller's list (results go back there). */
  index: number;
  spec: ModbusChannelSpec;
}

export interface ReadBlock {
  unitId: number;
  table: Table;
  fc: 1 | 2 | 3 | 4;
  /** PDU start address and quantity of registers or bits. */
  address: number;
  quantity: number;
  items: ReadItem[];
}

export function planReads(items: ReadItem[], maxGap: number): ReadBlock[] {
  const domains = new Map<string, ReadItem[]>();
  for (const item of items) {
    const key = `${item.spec.unitId}:${item.spec.table}`;
    let list = domains.get(key);
    if (!list) domains.set(key, (list = []));
    list.push(item);
  }
  const blocks: ReadBlock[] = [];
  for (const list of domains.values()) {
    list.sort((a, b) => a.spec.address - b.spec.address || b.spec.count - a.spec.count);
    const { unitId, table } = list[0].spec;
    const limit = isBitTable(table) ? MAX_READ_BITS : MAX_READ_REGISTERS;
    let current: ReadBlock | undefined;
    for (const item of list) {
      const start = item.spec.address;
      const end = start + item.spec.count;
      if (current) {
        const currentEnd = current.address + current.quantity;
        const newEnd = Math.max(currentEnd, end);
        if (start <= currentEnd + maxGap && newEnd - current.address <= limit) {
          current.quantity = newEnd - current.address;
          current.items.push(item);
          continue;
        }
      }
      current = { unitId, table, fc: READ_FC[table], address: start, quantity: item.spec.count, items: [item] };
      blocks.push(current);
    }
  }
  return blocks;
}
