// The request log of one Modbus line (docs/drivers.md "Commissioning tools"): the last exchanges on
// the wire, newest last, in a ring of fixed size, so memory stays bounded whatever the poll rate.
// Each entry keeps the request and response PDUs (at most 253 bytes each, Modbus Application
// Protocol §4.1), shown only when asked for.

import type { LineSettings } from './config.js';

/** Exchanges a line remembers. */
export const REQUEST_LOG_SIZE = 200;

export type ExchangeResult = 'ok' | 'exception' | 'timeout' | 'error';

export interface LoggedExchange {
  /** When the request was sent, ms since the epoch. */
  time: number;
  unit: number;
  function: number;
  /** The first address, 1-based as `memory.address`; absent for functions without one (43). */
  address?: number;
  /** Registers or bits asked for or written; absent for functions without a quantity. */
  count?: number;
  result: ExchangeResult;
  latencyMs: number;
  /** The exception code of an exception response. */
  exception?: number;
  /** Why a timeout or error happened. */
  error?: string;
  /** The rate and parity of an exchange a scan's sweep made at other settings than the line's. */
  baudRate?: number;
  parity?: string;
  request: Buffer;
  response?: Buffer;
}

/** Address and quantity of a request PDU (§6): reads and multiple writes carry both, single writes one. */
function addressing(pdu: Buffer): { address?: number; count?: number } {
  const fc = pdu[0];
  if (pdu.length < 5 || fc === undefined) return {};
  const address = pdu.readUInt16BE(1) + 1;
  if (fc === 5 || fc === 6) return { address, count: 1 };
  if ((fc >= 1 && fc <= 4) || fc === 15 || fc === 16) return { address, count: pdu.readUInt16BE(3) };
  return {};
}

export class RequestLog {
  private readonly ring: (LoggedExchange | undefined)[] = new Array(REQUEST_LOG_SIZE);
  private next = 0;

  /** Records one exchange; the response PDU is copied (it may be a view of a larger buffer). */
  add(unit: number, request: Buffer, at: LineSettings | undefined, time: number, latencyMs: number, outcome: { result: ExchangeResult; response?: Buffer; exception?: number; error?: string }): void {
    const entry: LoggedExchange = { time, unit, function: request[0] ?? 0, ...addressing(request), result: outcome.result, latencyMs: Math.round(latencyMs * 10) / 10, request };
    if (outcome.exception !== undefined) entry.exception = outcome.exception;
    if (outcome.error !== undefined) entry.error = outcome.error;
    if (at) {
      entry.baudRate = at.baudrate;
      entry.parity = at.parity;
    }
    if (outcome.response) entry.response = Buffer.from(outcome.response);
    this.ring[this.next] = entry;
    this.next = (this.next + 1) % REQUEST_LOG_SIZE;
  }

  /** The exchanges remembered, oldest first, as JSON objects; `frames` adds the PDUs in hex. */
  entries(frames: boolean): Record<string, unknown>[] {
    const out: Record<string, unknown>[] = [];
    for (let i = 0; i < REQUEST_LOG_SIZE; i++) {
      const e = this.ring[(this.next + i) % REQUEST_LOG_SIZE];
      if (!e) continue;
      const { request, response, ...shown } = e;
      out.push(frames ? { ...shown, request: request.toString('hex'), ...(response && { response: response.toString('hex') }) } : shown);
    }
    return out;
  }
}
