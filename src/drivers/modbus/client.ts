// A Modbus master on one line: a FIFO of transactions run one at a time over a transport, with
// timeouts and retries. FIFO means fairness: an on-demand read or a write waits at most for what
// was queued before it, so polling can never starve it. Identical reads queued while an earlier
// one has not been answered share that one bus transaction, unless a write was queued in between.
//
// Per-unit back-off: on a shared line one unit that stopped answering would make every poll wait
// for its timeouts. A unit whose request timed out (after its retries) is backed off: its requests
// fail at once, with the same message as the timeout, first for ten timeouts (at least 1 s), so
// probing a dead unit costs the line at most a tenth of its time, then twice as long each time up
// to `backoffMax` (the driver's `unit.backoff.max`); then one request probes it again. Any answer
// ends the back-off.
//
// Every exchange on the wire is recorded in the line's request log (request-log.ts), and
// `inter.request.delay` keeps that much silence between the end of one exchange and the next
// request, for converters and devices that need it (docs/drivers.md "Instance properties").

import type { DeviceStatus } from '../driver.js';
import { decodeResponse, encodeRequest, isDecodeError, type ModbusRequest, type ModbusResponse } from './pdu.js';
import { TimeoutError, type LineStats, type Transport } from './transport.js';
import type { LineSettings } from './config.js';
import { RequestLog } from './request-log.js';
import { monotonicNow } from '../../core/clock.js';

export interface RequestOptions {
  timeout: number;
  /** Retries after the first attempt (`modbus.transaction.retry`). */
  retries: number;
  /** Longest back-off of a unit that stopped answering, ms; 0 disables it. */
  backoffMax: number;
  /**
   * A request a technician asked for (a probe, a scan): sent even while its unit is backed off, so
   * that it tells whether the unit answers now.
   */
  attended?: boolean;
  /** A serial line's rate and parity for this request only (a scan's sweep; Transport.exchange). */
  line?: LineSettings;
}

/** Counters of one unit (device) on a line, for the poll status. */
export type UnitStats = DeviceStatus;


interface UnitState extends UnitStats {
  connectionFailures: number;
  backoff: number;
  error: string;
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
  /** When each response arrived: the timestamp of every read that shares it (joined requests). */
  readonly receivedAt = new WeakMap<ModbusResponse, number>();
  private readonly units = new Map<number, UnitState>();
  private closed = false;
  /** The last exchanges on this line (docs/drivers.md "Commissioning tools"). */
  readonly log = new RequestLog();
  /** The scan running on this line, if any: one at a time per line (docs/drivers.md "Commissioning tools"). */
  activeScan: string | undefined;
  /** monotonicNow() when the last exchange ended. */
  private lastEnd = -Infinity;
  private readonly interRequestDelay: number;

  constructor(
    readonly transport: Transport,
    opts: { interRequestDelay?: number } = {},
  ) {
    this.interRequestDelay = opts.interRequestDelay ?? 0;
  }

  get label(): string {
    return this.transport.label;
  }

  get stats(): LineStats {
    return this.transport.stats;
  }

  private unit(id: number): UnitState {
    let u = this.units.get(id);
    if (!u) this.units.set(id, (u = { unit: id, requests: 0, responses: 0, timeouts: 0, exceptions: 0, connectionFailures: 0, backoffUntil: 0, backoff: 0, error: '' }));
    return u;
  }

  /** Counters of the given units, in that order. */
  unitStats(ids: Iterable<number>): UnitStats[] {
    return [...ids].map((id) => {
      const { unit, requests, responses, timeouts, exceptions, connectionFailures, backoffUntil } = this.unit(id);
      return { unit, requests, responses, timeouts, exceptions, connectionFailures, backoffUntil: backoffUntil > Date.now() ? backoffUntil : 0 };
    });
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
    // A read at other line settings (a sweep) is another transaction, never joined with a poll's.
    const key = opts.line ? `${unitId}:${pdu.toString('hex')}@${opts.line.baudrate}/${opts.line.parity}` : `${unitId}:${pdu.toString('hex')}`;
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
      const unit = this.unit(job.unitId);
      // Checked when the job's turn comes: a unit found dead by an earlier job of the same poll
      // must not cost a timeout per queued request.
      if (unit.backoffUntil > Date.now() && !job.opts.attended) {
        job.reject(new TimeoutError(unit.error));
        continue;
      }
      try {
        const res = await this.attempt(job, unit);
        this.receivedAt.set(res, Date.now());
        job.resolve(res);
        unit.backoff = unit.backoffUntil = 0;
      } catch (err) {
        if (err instanceof TimeoutError && job.opts.backoffMax > 0) {
          unit.backoff = Math.min(job.opts.backoffMax, unit.backoff ? unit.backoff * 2 : Math.max(1000, 10 * job.opts.timeout));
          unit.backoffUntil = Date.now() + unit.backoff;
          unit.error = err.message;
        }
        job.reject(err instanceof Error ? err : new Error(String(err)));
      }
    }
    this.running = false;
  }

  private async attempt(job: Job, unit: UnitState): Promise<ModbusResponse> {
    const attempts = 1 + job.opts.retries;
    // Made only when an attempt fails: an Error captures a stack trace, which was a tenth of the
    // main thread's instructions per poll when it was made up front (bench/profile-poll --callgrind).
    let last: Error | undefined;
    for (let i = 0; i < attempts; i++) {
      if (this.closed) throw new Error(`${this.label}: driver closed`);
      if (i > 0) this.stats.retries++;
      let pdu: Buffer;
      if (this.interRequestDelay > 0) {
        const quiet = this.lastEnd + this.interRequestDelay - monotonicNow();
        if (quiet > 0) await new Promise((r) => setTimeout(r, Math.ceil(quiet)));
        if (this.closed) throw new Error(`${this.label}: driver closed`);
      }
      unit.requests++;
      const sentAt = Date.now();
      const started = monotonicNow();
      try {
        pdu = await this.transport.exchange(job.unitId, job.pdu, job.opts.timeout, job.opts.line);
      } catch (err) {
        this.lastEnd = monotonicNow();
        const timeout = err instanceof TimeoutError;
        // A line that cannot carry the request (connection refused or lost, port unusable) is
        // counted apart from a unit that does not answer.
        if (timeout) unit.timeouts++;
        else unit.connectionFailures++;
        this.log.add(job.unitId, job.pdu, job.opts.line, sentAt, this.lastEnd - started, { result: timeout ? 'timeout' : 'error', error: (err as Error).message });
        last = err as Error;
        continue;
      }
      this.lastEnd = monotonicNow();
      const latency = this.lastEnd - started;
      unit.responses++;
      const res = decodeResponse(pdu);
      if (isDecodeError(res)) {
        this.stats.discardedFrames++;
        last = new Error(`${this.label}: malformed response from unit ${job.unitId}: ${res.error}`);
        this.log.add(job.unitId, job.pdu, job.opts.line, sentAt, latency, { result: 'error', response: pdu, error: last.message });
        continue;
      }
      if (res.fc !== job.pdu[0]) {
        this.stats.discardedFrames++;
        last = new Error(`${this.label}: unit ${job.unitId} answered function ${res.fc} to function ${job.pdu[0]}`);
        this.log.add(job.unitId, job.pdu, job.opts.line, sentAt, latency, { result: 'error', response: pdu, error: last.message });
        continue;
      }
      if ('exception' in res) {
        this.stats.exceptions++;
        unit.exceptions++;
        this.log.add(job.unitId, job.pdu, job.opts.line, sentAt, latency, { result: 'exception', response: pdu, exception: res.exception });
      } else this.log.add(job.unitId, job.pdu, job.opts.line, sentAt, latency, { result: 'ok', response: pdu });
      return res;
    }
    if (last instanceof TimeoutError && attempts > 1) {
      throw new TimeoutError(`${last.message} (${attempts} attempts)`);
    }
    throw last ?? new Error(`${this.label}: no attempt made`);
  }

  /** Fails what is queued and releases the line. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const job of this.queue.splice(0)) job.reject(new Error(`${this.label}: driver closed`));
    await this.transport.close();
  }
}
