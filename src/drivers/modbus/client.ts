// A Modbus master on one line: a FIFO of transactions run one at a time over a transport, with
// timeouts and retries. FIFO means fairness: an on-demand read or a write waits at most for what
// was queued before it, so polling can never starve it. Identical reads queued while an earlier
// one has not been answered share that one bus transaction, unless a write was queued in between.

import { decodeResponse, encodeRequest, isDecodeError, type ModbusRequest, type ModbusResponse } from './pdu.js';
import { TimeoutError, type LineStats, type Transport } from './transport.js';

export interface RequestOptions {
  timeout: number;
  /** Retries after the first attempt (`modbus.transaction.retry`). */
  retries: number;
}

interface Job {
  unitId: number;
  pdu: Buffer;
  opts: RequestOptions;
  resolve(r: ModbusResponse): void;
  reject(e: Error): void;
}

export class ModbusClient {
  private readonly queue: Job[] = [];
  private running = false;
  private readonly shared = new Map<string, Promise<ModbusResponse>>();
  private closed = false;

  constructor(readonly transport: Transport) {}

  get label(): string {
    return this.transport.label;
  }

  get stats(): LineStats {
    return this.transport.stats;
  }

  /** Resolves with the response (an exception response too); rejects on timeout or a dead line. */
  request(unitId: number, req: ModbusRequest, opts: RequestOptions): Promise<ModbusResponse> {
    const pdu = encodeRequest(req);
    const isRead = req.fc <= 4;
    if (!isRead) {
      // Reads queued after this write must see its effect: no joining earlier reads.
      this.shared.clear();
      return this.enqueue(unitId, pdu, opts);
    }
    const key = `${unitId}:${pdu.toString('hex')}`;
    const existing = this.shared.get(key);
    if (existing) return existing;
    const p = this.enqueue(unitId, pdu, opts);
    this.shared.set(key, p);
    const forget = () => {
      if (this.shared.get(key) === p) this.shared.delete(key);
    };
    p.then(forget, forget);
    return p;
  }

  private enqueue(unitId: number, pdu: Buffer, opts: RequestOptions): Promise<ModbusResponse> {
    if (this.closed) return Promise.reject(new Error(`${this.label}: driver closed`));
    return new Promise((resolve, reject) => {
      this.queue.push({ unitId, pdu, opts, resolve, reject });
      if (!this.running) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.running = true;
    for (let job = this.queue.shift(); job; job = this.queue.shift()) {
      try {
        job.resolve(await this.attempt(job));
      } catch (err) {
        job.reject(err instanceof Error ? err : new Error(String(err)));
      }
    }
    this.running = false;
  }

  private async attempt(job: Job): Promise<ModbusResponse> {
    const attempts = 1 + job.opts.retries;
    let last: Error = new Error(`${this.label}: no attempt made`);
    for (let i = 0; i < attempts; i++) {
      if (this.closed) throw new Error(`${this.label}: driver closed`);
      if (i > 0) this.stats.retries++;
      let pdu: Buffer;
      try {
        pdu = await this.transport.exchange(job.unitId, job.pdu, job.opts.timeout);
      } catch (err) {
        last = err as Error;
        continue;
      }
      const res = decodeResponse(pdu);
      if (isDecodeError(res)) {
        this.stats.discardedFrames++;
        last = new Error(`${this.label}: malformed response from unit ${job.unitId}: ${res.error}`);
        continue;
      }
      if (res.fc !== job.pdu[0]) {
        this.stats.discardedFrames++;
        last = new Error(`${this.label}: unit ${job.unitId} answered function ${res.fc} to function ${job.pdu[0]}`);
        continue;
      }
      if ('exception' in res) this.stats.exceptions++;
      return res;
    }
    if (last instanceof TimeoutError && attempts > 1) {
      throw new TimeoutError(`${last.message} (${attempts} attempts)`);
    }
    throw last;
  }

  /** Fails what is queued and releases the line. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const job of this.queue.splice(0)) job.reject(new Error(`${this.label}: driver closed`));
    await this.transport.close();
  }
}
