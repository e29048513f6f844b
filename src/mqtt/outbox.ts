// The QoS 1 outbox: telemetry waiting for a PUBACK, kept in dataDir so it survives broker outages
// and restarts of the daemon (docs/mqtt.md "Telemetry").
//
// Flash-friendly: while the broker is connected and acknowledging (`setOnline(true)`), a message
// lives only in memory; if its PUBACK comes within `ackLagMs` it is never written at all. What is
// not acknowledged by then, and everything pending when the connection drops (`setOnline(false)`),
// while offline, or at close, is written: batched, one write and one fsync per batch. `enqueue()`
// resolves once the message is safe: on disk, or acknowledged by the broker. So a power cut loses
// nothing that `enqueue()` reported safe; it may lose messages of the last `ackLagMs` that were in
// flight to a connected broker and reported to nobody.
//
// Storage: one append-only log, `outbox.log`, of framed records
//   [u32 length][u32 crc32 of the body][body]
//   body = ADD  0x01 seq:u64 qos:u8 topicLength:u16 topic payload
//        | DONE 0x02 seq:u64            (acknowledged by the broker, or dropped)
// After a power cut the log is read up to the first torn or corrupt record, and the file is
// truncated there: everything that was fsynced is kept, nothing half-written is ever taken for data.
// When most of the log is dead weight it is rewritten atomically (temp file, fsync, rename, fsync of
// the folder) with only the pending messages that were on disk.
//
// Bounded: with more than `maxMessages` pending, the oldest are dropped first and counted.

import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../log.js';
import { ensurePrivateDir, writeFileAtomic } from '../store/atomic.js';
import { checkSpace } from '../store/reserve.js';
import { crc32 } from '../store/crc32.js';

export interface OutboxMessage {
  seq: bigint;
  topic: string;
  payload: Buffer;
  qos: 0 | 1;
}

interface Entry extends OutboxMessage {
  /** Its ADD record is written (or buffered to be): acknowledging it then costs a DONE record. */
  stored?: boolean;
  since?: number;
  safe?: { resolve: () => void; reject: (e: Error) => void };
}

const ADD = 1;
const DONE = 2;
const FILE = 'outbox.log';
/** A record larger than this is taken as corruption (MQTT's own limit is 256 MB; telemetry is small). */
const MAX_RECORD = 16 * 1024 * 1024;

function frame(body: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(body.length, 0);
  head.writeUInt32BE(crc32(body), 4);
  return Buffer.concat([head, body]);
}

function addRecord(m: OutboxMessage): Buffer {
  const topic = Buffer.from(m.topic, 'utf8');
  const body = Buffer.alloc(1 + 8 + 1 + 2 + topic.length + m.payload.length);
  body[0] = ADD;
  body.writeBigUInt64BE(m.seq, 1);
  body[9] = m.qos;
  body.writeUInt16BE(topic.length, 10);
  topic.copy(body, 12);
  m.payload.copy(body, 12 + topic.length);
  return frame(body);
}

function doneRecord(seq: bigint): Buffer {
  const body = Buffer.alloc(9);
  body[0] = DONE;
  body.writeBigUInt64BE(seq, 1);
  return frame(body);
}

export interface OutboxOptions {
  dir: string;
  maxMessages: number;
  log: Logger;
  /** How long records collect before one write + fsync (ms, default 1000: at most one fsync a second). */
  flushDelayMs?: number;
  /** Online: a message not acknowledged within this time is written after all (ms, default 2000). */
  ackLagMs?: number;
}

export interface OutboxStats {
  pending: number;
  dropped: number;
  recoveredBytesDiscarded: number;
  /** fsyncs of the log so far (batching keeps this far below the message count). */
  syncs: number;
  /** Bytes written to the log so far (0 while connected and acknowledged in time). */
  bytesWritten: number;
}

export class Outbox {
  private readonly file: string;
  private pending = new Map<bigint, Entry>();
  private nextSeq = 1n;
  private buffered: Buffer[] = [];
  /** Messages whose ADD record is in `buffered`: safe once it is written. */
  private waiters: Entry[] = [];
  private online = false;
  private lagTimer?: NodeJS.Timeout;
  private bytesWritten = 0;
  private flushTimer?: NodeJS.Timeout;
  private chain: Promise<void> = Promise.resolve();
  private fh?: fsp.FileHandle;
  /** Records in the file, and how many of them are still live (ADDs not DONE). */
  private fileRecords = 0;
  private dropped = 0;
  private discarded = 0;
  private syncs = 0;
  private closed = false;
  /** A failed append may have left a partial record mid-file: the next flush rewrites the log. */
  private needsRewrite = false;
  private listeners = new Set<() => void>();

  constructor(private readonly opts: OutboxOptions) {
    this.file = path.join(opts.dir, FILE);
  }

  get maxMessages(): number {
    return this.opts.maxMessages;
  }

  set maxMessages(n: number) {
    this.opts.maxMessages = n;
    this.enforceBound();
  }

  /** Loads the log (recovering from a torn tail) and opens it for appending. */
  async open(): Promise<void> {
    ensurePrivateDir(this.opts.dir);
    let data: Buffer;
    try {
      data = await fsp.readFile(this.file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
      data = Buffer.alloc(0);
    }
    let pos = 0;
    let records = 0;
    while (pos + 8 <= data.length) {
      const len = data.readUInt32BE(pos);
      const crc = data.readUInt32BE(pos + 4);
      if (len < 9 || len > MAX_RECORD || pos + 8 + len > data.length) break;
      const body = data.subarray(pos + 8, pos + 8 + len);
      if (crc32(body) !== crc) break;
      const seq = body.readBigUInt64BE(1);
      if (body[0] === ADD && len >= 12) {
        const tlen = body.readUInt16BE(10);
        if (12 + tlen > len) break;
        const qos = body[9] === 0 ? 0 : 1;
        this.pending.set(seq, { seq, qos, topic: body.subarray(12, 12 + tlen).toString('utf8'), payload: Buffer.from(body.subarray(12 + tlen)), stored: true });
      } else if (body[0] === DONE) {
        this.pending.delete(seq);
      } else {
        break;
      }
      if (seq >= this.nextSeq) this.nextSeq = seq + 1n;
      records++;
      pos += 8 + len;
    }
    this.fileRecords = records;
    if (pos < data.length) {
      // A torn or corrupt tail: a write that never completed its fsync. Cut it off so appends
      // continue from a clean record boundary.
      this.discarded = data.length - pos;
      this.opts.log.warn('mqtt outbox: discarded an incomplete tail after an unclean stop', { bytes: this.discarded });
      await fsp.truncate(this.file, pos);
    }
    this.fh = await fsp.open(this.file, 'a', 0o600);
    if (this.pending.size > 0) this.opts.log.info('mqtt outbox: messages waiting from before the restart', { pending: this.pending.size });
    this.enforceBound();
  }

  /** Adds a message; resolves when it is safe (on disk, or acknowledged by the broker). */
  enqueue(topic: string, payload: Buffer, qos: 0 | 1 = 1): Promise<void> {
    if (this.closed) return Promise.reject(new Error('outbox closed'));
    const m: Entry = { seq: this.nextSeq++, topic, payload, qos, since: Date.now() };
    this.pending.set(m.seq, m);
    const p = new Promise<void>((resolve, reject) => (m.safe = { resolve, reject }));
    if (this.online) this.scheduleLagCheck();
    else this.store(m);
    this.enforceBound();
    for (const l of this.listeners) l();
    return p;
  }

  /** Marks a message delivered (PUBACK received). */
  ack(seq: bigint): void {
    const m = this.pending.get(seq);
    if (!m) return;
    this.pending.delete(seq);
    if (m.stored) {
      this.buffered.push(doneRecord(seq));
      this.scheduleFlush();
    } else this.settle(m);
  }

  /**
   * Connected to a broker that acknowledges (true), or not (false: whatever is only in memory is
   * written now, and later messages as they come).
   */
  setOnline(online: boolean): void {
    this.online = online;
    if (online) return this.scheduleLagCheck();
    clearTimeout(this.lagTimer);
    this.lagTimer = undefined;
    if (this.storeAll((m) => !m.stored)) void this.flush();
  }

  private settle(m: Entry, err?: Error): void {
    const s = m.safe;
    m.safe = undefined;
    if (err) s?.reject(err);
    else s?.resolve();
  }

  /** Buffers the message's ADD record for the next batch. */
  private store(m: Entry): void {
    if (m.stored) return;
    m.stored = true;
    this.buffered.push(addRecord(m));
    this.waiters.push(m);
    this.scheduleFlush();
  }

  private storeAll(which: (m: Entry) => boolean): boolean {
    let n = 0;
    for (const m of this.pending.values()) if (which(m)) (this.store(m), n++);
    return n > 0;
  }

  /**
   * While online: writes what waited for its PUBACK longer than ackLagMs, in one batch. The timer
   * fires when the oldest message not on disk reaches that age and is armed again for the next such
   * message, if any: with telemetry acknowledged at once it wakes the process about once per
   * ackLagMs, not on a fixed period (every wake from idle costs CPU on a small device).
   */
  private scheduleLagCheck(): void {
    if (this.lagTimer || this.closed) return;
    let oldest: Entry | undefined;
    for (const m of this.pending.values()) {
      if (!m.stored) {
        oldest = m;
        break;
      }
    }
    if (!oldest) return;
    const lag = this.opts.ackLagMs ?? 2000;
    this.lagTimer = setTimeout(() => {
      this.lagTimer = undefined;
      const old = Date.now() - lag;
      this.storeAll((m) => !m.stored && m.since! <= old);
      this.scheduleLagCheck();
    }, Math.max(10, oldest.since! + lag - Date.now()));
  }

  /** Pending messages, oldest first (a live iterator over the queue). */
  messages(): IterableIterator<OutboxMessage> {
    return this.pending.values();
  }

  /** Called after each enqueue, so a sender can start pumping. */
  onEnqueue(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  stats(): OutboxStats {
    return { pending: this.pending.size, dropped: this.dropped, recoveredBytesDiscarded: this.discarded, syncs: this.syncs, bytesWritten: this.bytesWritten };
  }

  private enforceBound(): void {
    const over = this.pending.size - this.opts.maxMessages;
    if (over <= 0) return;
    let n = 0;
    for (const m of this.pending.values()) {
      if (n >= over) break;
      this.pending.delete(m.seq);
      if (m.stored) this.buffered.push(doneRecord(m.seq));
      else this.settle(m);
      n++;
    }
    // Log the first drop of a run and then every thousandth, not every message.
    const before = this.dropped;
    this.dropped += n;
    if (before === 0 || Math.floor(before / 1000) !== Math.floor(this.dropped / 1000)) {
      this.opts.log.warn('mqtt outbox full: dropped the oldest messages', { dropped: this.dropped, max: this.opts.maxMessages });
    }
    this.scheduleFlush();
  }

  private scheduleFlush(): void {
    if (this.flushTimer || this.closed) return;
    this.flushTimer = setTimeout(() => {
      this.flushTimer = undefined;
      void this.flush();
    }, this.opts.flushDelayMs ?? 1000);
  }

  /** Writes everything buffered with one write and one fsync. */
  flush(): Promise<void> {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const records = this.buffered;
    const waiters = this.waiters;
    this.buffered = [];
    this.waiters = [];
    this.chain = this.chain.then(async () => {
      try {
        if (records.length > 0) {
          if (this.needsRewrite || this.shouldCompact(records.length)) await this.compact();
          else await this.append(records);
        }
        this.needsRewrite = false;
        for (const w of waiters) this.settle(w);
      } catch (err) {
        this.needsRewrite = true;
        this.opts.log.error('mqtt outbox: cannot write to dataDir', { file: this.file, error: (err as Error).message });
        for (const w of waiters) this.settle(w, err as Error);
      }
    });
    return this.chain;
  }

  private async append(records: Buffer[]): Promise<void> {
    if (!this.fh) throw new Error('outbox not open');
    const buf = Buffer.concat(records);
    // Telemetry stops at the data partition's reserve (src/store/reserve.ts), as a full disk.
    checkSpace(this.opts.dir, buf.length);
    await this.fh.write(buf);
    await this.fh.sync();
    this.bytesWritten += buf.length;
    this.syncs++;
    this.fileRecords += records.length;
  }

  // Rewrite when the log holds far more records than live messages (and is not tiny).
  private shouldCompact(adding: number): boolean {
    const total = this.fileRecords + adding;
    return total > 1000 && total > 4 * (this.pending.size + 1);
  }

  private async compact(): Promise<void> {
    const live = [...this.pending.values()].filter((m) => m.stored).map(addRecord);
    await this.fh?.close();
    this.fh = undefined;
    const buf = Buffer.concat(live);
    await writeFileAtomic(this.file, buf);
    this.bytesWritten += buf.length;
    this.syncs++;
    this.fh = await fsp.open(this.file, 'a', 0o600);
    this.fileRecords = live.length;
  }

  /** Flushes and closes the file. Pending messages stay on disk for the next start. */
  async close(): Promise<void> {
    if (this.closed) return;
    clearTimeout(this.lagTimer);
    this.lagTimer = undefined;
    // What is only in memory goes to disk for the next start.
    this.storeAll((m) => !m.stored);
    await this.flush();
    this.closed = true;
    await this.chain;
    await this.fh?.close();
    this.fh = undefined;
  }

  /** Size of the log on disk (for tests and diagnostics). */
  fileSize(): number {
    try {
      return fs.statSync(this.file).size;
    } catch {
      return 0;
    }
  }
}
