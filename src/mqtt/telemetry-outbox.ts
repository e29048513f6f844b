// The QoS 1 outbox: telemetry waiting for a PUBACK, kept in dataDir so it survives broker outages
// and restarts of the daemon (docs/mqtt.md "Telemetry").
//
// Flash-friendly: while the broker is connected and acknowledging (`setOnline(true)`), a message
// lives only in memory; if its PUBACK comes within `ackLagMs` it is never written at all. What is
// not acknowledged by then, and everything pending when the connection drops (`setOnline(false)`),
// while offline, or at close, is written: batched, one write and one fsync per batch (a batch is
// written after `flushDelayMs`, or at once when FLUSH_BYTES wait). `enqueue()` resolves once the
// message is safe: on disk, or acknowledged by the broker. So a power cut loses nothing that
// `enqueue()` reported safe; it may lose messages of the last `ackLagMs` that were in flight to a
// connected broker and reported to nobody.
//
// Storage: an append-only log of framed records
//   [u32 length][u32 crc32 of the body][body]
//   body = ADD  0x01 seq:u64 qos:u8 topicLength:u16 topic payload
//        | DONE 0x02 seq:u64            (acknowledged by the broker, or dropped)
// in segments: `outbox.log` is appended to; once it holds a segment's worth (an eighth of
// `maxBytes`) it is renamed `outbox.log.<n>` and a new one is started. A segment whose messages
// are all done is deleted, oldest first, so nothing is ever rewritten in normal operation. At start
// the segments are read in order, record by record, each up to its first torn or corrupt record,
// where the file is cut: everything that was fsynced is kept, nothing half-written is ever taken
// for data.
//
// Bounded (docs/mqtt.md "Telemetry"):
// - on disk: the segments never take more than `maxBytes`. Room for a batch is made by deleting
//   the oldest segments, whose pending messages are the oldest and are dropped (and counted);
// - in number: with more than `maxMessages` pending, the oldest are dropped (a DONE record each);
// - in memory: only the oldest pending messages, the send window (WINDOW_MESSAGES, WINDOW_BYTES),
//   and the newest ones not yet written keep their payloads. The others are on disk only and read
//   back in order as the window moves on (`take()`); each pending message costs a small entry
//   besides. Messages that cannot be written (a full or failing data partition) wait in memory up
//   to UNWRITTEN_BYTES; beyond, the oldest of them are dropped;
// - at start: the log is read in chunks, and a log over the bounds (an older version's, or bounds
//   made smaller) is cut to them, oldest segments first.

import fsp from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../log.js';
import { ensurePrivateDir, syncDir } from '../store/atomic.js';
import { checkSpace } from '../store/reserve.js';
import { crc32 } from '../store/crc32.js';
import { DEFAULT_OUTBOX_MAX_BYTES } from './config.js';

export interface OutboxMessage {
  seq: bigint;
  topic: string;
  payload: Buffer;
  qos: 0 | 1;
}

/** Only in memory; its ADD record waiting for the next batch; being written; on disk. */
type State = 'memory' | 'buffered' | 'writing' | 'written';

interface Segment {
  file: string;
  size: number;
  /** Pending messages whose ADD record is in this segment. */
  live: number;
}

interface Entry {
  readonly seq: bigint;
  readonly qos: 0 | 1;
  /** Bytes of its ADD record. */
  readonly len: number;
  readonly since: number;
  state: State;
  /** In memory while not yet written or in the send window; otherwise read back from `seg`. */
  topic?: string;
  payload?: Buffer;
  seg?: Segment;
  off?: number;
  done?: boolean;
  handed?: boolean;
  inWindow?: boolean;
  /** The payload is the outbox's alone (enqueue's `owned`): its memory is let go at the PUBACK. */
  owned?: boolean;
  safe?: { resolve: () => void; reject: (e: Error) => void };
}

const ADD = 1;
const DONE = 2;
const DONE_BYTES = 17;
const FILE = 'outbox.log';
const ARCHIVE = /^outbox\.log\.(\d+)$/;
/** A record larger than this is taken as corruption (MQTT's own limit is 256 MB; telemetry is small). */
const MAX_RECORD = 16 * 1024 * 1024;
/** The send window: the oldest pending messages, whose payloads are kept in memory. */
const WINDOW_MESSAGES = 64;
const WINDOW_BYTES = 4 * 1024 * 1024;
/** Records waiting to be written beyond this are written at once rather than after the delay. */
const FLUSH_BYTES = 4 * 1024 * 1024;
/** Payloads of messages not yet on disk kept in memory at most (the disk cannot keep up, or is full). */
const UNWRITTEN_BYTES = 16 * 1024 * 1024;
/** A log holding only acknowledged records is emptied once it is this large. */
const DEAD_BYTES_KEPT = 64 * 1024;
/** Read size when the log is loaded at start. */
const SCAN_CHUNK = 256 * 1024;

const recordLength = (topic: string, payload: Buffer) => 20 + Buffer.byteLength(topic) + payload.length;

/**
 * Frees the memory of a Buffer that has its ArrayBuffer to itself, now rather than at the
 * collection of the Buffer object: the ArrayBuffer is transferred to a new one that nothing keeps,
 * which the next young-generation collection frees, and the Buffer is left empty. A telemetry
 * payload (75 KB at 1,000 channels) is acknowledged within milliseconds, but a collection in those
 * milliseconds had moved its Buffer to the old generation, and its memory stayed taken until the
 * next full collection, seconds later: megabytes of RSS at ten payloads a second (make bench's
 * scale section).
 */
function releaseBytes(b: Buffer): void {
  const ab = b.buffer;
  if (b.byteOffset !== 0 || b.byteLength !== ab.byteLength || !(ab instanceof ArrayBuffer)) return;
  try {
    structuredClone(ab, { transfer: [ab] });
  } catch {
    // Not detachable: it is freed with its Buffer.
  }
}

/** An ADD record as two buffers (the payload is not copied). */
function addRecord(seq: bigint, qos: 0 | 1, topic: string, payload: Buffer): Buffer[] {
  const tlen = Buffer.byteLength(topic);
  const head = Buffer.allocUnsafe(20 + tlen);
  head.writeUInt32BE(12 + tlen + payload.length, 0);
  head[8] = ADD;
  head.writeBigUInt64BE(seq, 9);
  head[17] = qos;
  head.writeUInt16BE(tlen, 18);
  head.write(topic, 20, 'utf8');
  head.writeUInt32BE(crc32(payload, crc32(head.subarray(8))), 4);
  return [head, payload];
}

function doneRecord(seq: bigint): Buffer {
  const rec = Buffer.alloc(DONE_BYTES);
  rec.writeUInt32BE(9, 0);
  rec[8] = DONE;
  rec.writeBigUInt64BE(seq, 9);
  rec.writeUInt32BE(crc32(rec.subarray(8)), 4);
  return rec;
}

/** The topic and payload of a whole ADD record read back, checked against what was written. */
function parseAdd(rec: Buffer, seq: bigint): { topic: string; payload: Buffer } {
  const body = rec.subarray(8);
  if (rec.readUInt32BE(0) !== body.length || crc32(body) !== rec.readUInt32BE(4) || body[0] !== ADD || body.readBigUInt64BE(1) !== seq) {
    throw new Error('the record on disk is not the message written there');
  }
  const tlen = body.readUInt16BE(10);
  return { topic: body.toString('utf8', 12, 12 + tlen), payload: body.subarray(12 + tlen) };
}

export interface OutboxOptions {
  dir: string;
  maxMessages: number;
  /** Bytes the log's segments may take (default: the `outbox.max.bytes` default). */
  maxBytes?: number;
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
  /** Bytes the log's segments take on disk now. */
  bytes: number;
  /** Pending messages with an ADD record (written, or about to be). */
  stored: number;
  /** Bytes of pending payloads held in memory. */
  memoryBytes: number;
}

export class TelemetryOutbox {
  readonly #dir: string;
  /** Oldest first; the last is `outbox.log`, being appended to. */
  #segments: Segment[] = [];
  #lastArchive = 0;
  #diskBytes = 0;
  #fh?: fsp.FileHandle;
  #reader?: { seg: Segment; fh: fsp.FileHandle };
  /**
   * Pending messages oldest first (and done ones not yet shifted out), in four runs:
   * [head, cursor) handed to the client; [cursor, windowEnd) the rest of the send window;
   * [windowEnd, tailStart) on disk only; [tailStart, length) the newest, in memory.
   */
  #queue: Entry[] = [];
  #head = 0;
  #cursor = 0;
  #windowEnd = 0;
  #tailStart = 0;
  /** Entries from here on are only in memory (online, waiting for a PUBACK). */
  #memoryStart = 0;
  readonly #bySeq = new Map<bigint, Entry>();
  #windowCount = 0;
  #windowBytes = 0;
  #pendingBytes = 0;
  #unwrittenBytes = 0;
  #memoryBytes = 0;
  #storedCount = 0;
  #nextSeq = 1n;
  /** ADD entries and DONE sequence numbers for the next batch. */
  #buffered: (Entry | bigint)[] = [];
  #bufferedBytes = 0;
  #online = false;
  #lagTimer?: NodeJS.Timeout;
  #flushTimer?: NodeJS.Timeout;
  /** Every file operation, one after the other. */
  #chain: Promise<void> = Promise.resolve();
  #reading = false;
  #writeFailing = false;
  /** A failed append could not be cut back: the next batch starts a new segment. */
  #rotateFirst = false;
  #bytesWritten = 0;
  #dropped = 0;
  #discarded = 0;
  #syncs = 0;
  #closed = false;
  #listeners = new Set<() => void>();

  readonly #opts: OutboxOptions;

  constructor(opts: OutboxOptions) {
    this.#opts = opts;
    this.#dir = opts.dir;
  }

  get maxMessages(): number {
    return this.#opts.maxMessages;
  }

  set maxMessages(n: number) {
    this.#opts.maxMessages = n;
    this.#enforceBound();
  }

  get maxBytes(): number {
    return this.#opts.maxBytes ?? DEFAULT_OUTBOX_MAX_BYTES;
  }

  set maxBytes(n: number) {
    this.#opts.maxBytes = n;
    if (this.#fh) this.#onChain(() => this.#makeRoom(0));
  }

  get #active(): Segment {
    return this.#segments[this.#segments.length - 1]!;
  }

  #segmentBytes(): number {
    return Math.max(8192, Math.floor(this.maxBytes / 8));
  }

  /** Loads the log (recovering from a torn tail, cutting it to the bounds) and opens it for appending. */
  async open(): Promise<void> {
    ensurePrivateDir(this.#dir);
    const archives = (await fsp.readdir(this.#dir)).flatMap((n) => ARCHIVE.exec(n)?.[1] ?? []).map(Number).sort((a, b) => a - b);
    this.#lastArchive = archives.at(-1) ?? 0;
    const seg = (name: string): Segment => ({ file: path.join(this.#dir, name), size: 0, live: 0 });
    this.#segments = [...archives.map((n) => seg(`${FILE}.${n}`)), seg(FILE)];
    for (const s of this.#segments) await this.#scan(s);
    this.#tailStart = this.#memoryStart = this.#queue.length;
    this.#fh = await fsp.open(this.#active.file, 'a', 0o600);
    // A log over the bounds (an older version's, or bounds made smaller): whole segments go, oldest
    // first, as when room is made for a batch.
    await this.#makeRoom(0);
    await this.#dropDeadSegments();
    if (this.#bySeq.size > 0) this.#opts.log.info('mqtt outbox: messages waiting from before the restart', { pending: this.#bySeq.size, bytes: this.#diskBytes });
    this.#fill();
  }

  /** Reads one segment record by record, in chunks; cuts it at the first torn or corrupt record. */
  async #scan(seg: Segment): Promise<void> {
    let fh: fsp.FileHandle;
    try {
      fh = await fsp.open(seg.file, 'r');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw err;
    }
    let pos = 0;
    let size = 0;
    try {
      size = (await fh.stat()).size;
      let buf = Buffer.allocUnsafe(SCAN_CHUNK);
      let bufAt = 0;
      let bufLen = 0;
      const have = async (n: number): Promise<boolean> => {
        if (pos + n > size) return false;
        if (pos >= bufAt && pos + n <= bufAt + bufLen) return true;
        if (n > buf.length) buf = Buffer.allocUnsafe(n);
        bufAt = pos;
        bufLen = (await fh.read(buf, 0, Math.min(buf.length, size - pos), pos)).bytesRead;
        return pos + n <= bufAt + bufLen;
      };
      while (await have(8)) {
        const len = buf.readUInt32BE(pos - bufAt);
        const crc = buf.readUInt32BE(pos - bufAt + 4);
        if (len < 9 || len > MAX_RECORD || !(await have(8 + len))) break;
        const body = buf.subarray(pos - bufAt + 8, pos - bufAt + 8 + len);
        if (crc32(body) !== crc) break;
        const seq = body.readBigUInt64BE(1);
        if (body[0] === ADD && len >= 12) {
          if (12 + body.readUInt16BE(10) > len) break;
          this.#recover(seg, pos, 8 + len, seq, body[9] === 0 ? 0 : 1);
        } else if (body[0] === DONE) {
          const e = this.#bySeq.get(seq);
          if (e) this.#finish(e);
        } else {
          break;
        }
        if (seq >= this.#nextSeq) this.#nextSeq = seq + 1n;
        pos += 8 + len;
      }
    } finally {
      await fh.close();
    }
    if (pos < size) {
      // A torn or corrupt tail: a write that never completed its fsync. Cut it off so appends
      // continue from a clean record boundary.
      this.#discarded += size - pos;
      this.#opts.log.warn('mqtt outbox: discarded an incomplete tail after an unclean stop', { file: path.basename(seg.file), bytes: size - pos });
      await fsp.truncate(seg.file, pos);
    }
    seg.size = pos;
    this.#diskBytes += pos;
  }

  /**
   * A message found in the log at start. Beyond the bounds the oldest are dropped as reading goes
   * on (what is kept in memory stays bounded); without a DONE record, so one that stays on disk is
   * dropped again at the next start.
   */
  #recover(seg: Segment, off: number, len: number, seq: bigint, qos: 0 | 1): void {
    // Records are appended in sequence order; an older one is a message already dropped.
    if (seq < this.#nextSeq) return;
    const e: Entry = { seq, qos, len, since: Date.now(), state: 'written', seg, off };
    seg.live++;
    this.#queue.push(e);
    this.#bySeq.set(seq, e);
    this.#pendingBytes += len;
    this.#storedCount++;
    while (this.#bySeq.size > this.#opts.maxMessages || this.#pendingBytes > this.maxBytes) this.#drop(this.#queue[this.#head]!, false);
  }

  /**
   * Adds a message; resolves when it is safe (on disk, or acknowledged by the broker). `owned`: the
   * caller keeps no reference to `payload` and hands it over (a telemetry payload made for this
   * message): acknowledged before it was ever written, its memory is freed at once (releaseBytes).
   */
  enqueue(topic: string, payload: Buffer, qos: 0 | 1 = 1, owned = false): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('outbox closed'));
    this.#compactQueue();
    const e: Entry = { seq: this.#nextSeq++, qos, len: recordLength(topic, payload), since: Date.now(), state: 'memory' };
    if (owned) e.owned = true;
    this.#hold(e, topic, payload);
    this.#queue.push(e);
    this.#bySeq.set(e.seq, e);
    this.#pendingBytes += e.len;
    this.#unwrittenBytes += e.len;
    const p = new Promise<void>((resolve, reject) => (e.safe = { resolve, reject }));
    if (this.#online) this.#scheduleLagCheck();
    else this.#storeMemory(() => true);
    this.#enforceBound();
    this.#fill();
    this.#notify();
    return p;
  }

  /** Marks a message delivered (PUBACK received). */
  ack(seq: bigint): void {
    const e = this.#bySeq.get(seq);
    if (!e) return;
    const onDisk = e.state === 'writing' || e.state === 'written';
    // Never written nor waiting to be: nothing but the outbox holds an owned payload now.
    const free = e.owned && e.state === 'memory' ? e.payload : undefined;
    this.#finish(e);
    if (free) releaseBytes(free);
    if (onDisk) this.#buffer(seq, DONE_BYTES);
    this.#settle(e);
    this.#fill();
  }

  /**
   * The oldest pending message not handed out yet, now handed out; undefined when there is none in
   * memory yet (it is being read back from disk: `onEnqueue` listeners are called when it is there).
   */
  take(): OutboxMessage | undefined {
    for (let i = this.#cursor; i < this.#windowEnd; i++) {
      const e = this.#queue[i]!;
      if (e.done || e.handed) continue;
      if (!e.payload) break;
      e.handed = true;
      this.#cursor = i + 1;
      return e as OutboxMessage;
    }
    this.#fill();
    return undefined;
  }

  /** Every message handed out and not acknowledged is pending again (the client that had them stopped). */
  untakeAll(): void {
    for (let i = this.#head; i < this.#cursor; i++) this.#queue[i]!.handed = false;
    this.#cursor = this.#head;
  }

  /**
   * Connected to a broker that acknowledges (true), or not (false: whatever is only in memory is
   * written now, and later messages as they come).
   */
  setOnline(online: boolean): void {
    this.#online = online;
    if (online) return this.#scheduleLagCheck();
    clearTimeout(this.#lagTimer);
    this.#lagTimer = undefined;
    if (this.#storeMemory(() => true)) void this.flush();
  }

  /** Every pending message with its payload, oldest first, read back from disk as needed (tests, diagnostics). */
  async readPending(): Promise<OutboxMessage[]> {
    const out: OutboxMessage[] = [];
    await this.#onChain(async () => {
      for (const e of this.#queue.slice(this.#head)) {
        if (e.done) continue;
        const m = e.payload ? { topic: e.topic!, payload: e.payload } : parseAdd(await this.#readRecord(e), e.seq);
        out.push({ seq: e.seq, qos: e.qos, ...m });
      }
    });
    return out;
  }

  /** Called after each enqueue, and when messages read back from disk are ready to be taken. */
  onEnqueue(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  stats(): OutboxStats {
    return {
      pending: this.#bySeq.size,
      dropped: this.#dropped,
      recoveredBytesDiscarded: this.#discarded,
      syncs: this.#syncs,
      bytesWritten: this.#bytesWritten,
      bytes: this.#diskBytes,
      stored: this.#storedCount,
      memoryBytes: this.#memoryBytes,
    };
  }

  /** Bytes the log's segments take on disk. */
  fileSize(): number {
    return this.#diskBytes;
  }

  /** Flushes and closes the file. Pending messages stay on disk for the next start. */
  async close(): Promise<void> {
    if (this.#closed) return;
    clearTimeout(this.#lagTimer);
    this.#lagTimer = undefined;
    // What is only in memory goes to disk for the next start.
    this.#storeMemory(() => true);
    await this.flush();
    this.#closed = true;
    await this.#chain;
    await this.#closeReader();
    await this.#fh?.close();
    this.#fh = undefined;
  }

  /** Writes everything buffered with one write and one fsync. */
  flush(): Promise<void> {
    clearTimeout(this.#flushTimer);
    this.#flushTimer = undefined;
    const items = this.#buffered;
    this.#buffered = [];
    this.#bufferedBytes = 0;
    return this.#onChain(() => this.#write(items));
  }

  // ---- internals -------------------------------------------------------------------------------

  /** Runs `op` after every file operation before it; the chain itself never rejects. */
  #onChain(op: () => Promise<void>): Promise<void> {
    const run = this.#chain.then(op);
    this.#chain = run.catch((err) => this.#opts.log.error('mqtt outbox: file operation failed', { dir: this.#dir, error: (err as Error).message }));
    return run;
  }

  #notify(): void {
    for (const l of this.#listeners) l();
  }

  #settle(e: Entry, err?: Error): void {
    const s = e.safe;
    e.safe = undefined;
    if (err) s?.reject(err);
    else s?.resolve();
  }

  #hold(e: Entry, topic: string, payload: Buffer): void {
    e.topic = topic;
    e.payload = payload;
    this.#memoryBytes += payload.length;
  }

  #release(e: Entry): void {
    if (e.payload) this.#memoryBytes -= e.payload.length;
    e.topic = e.payload = undefined;
  }

  #enterWindow(e: Entry): void {
    e.inWindow = true;
    this.#windowCount++;
    this.#windowBytes += e.len;
  }

  #windowHasRoom(): boolean {
    return this.#windowCount < WINDOW_MESSAGES && (this.#windowCount === 0 || this.#windowBytes < WINDOW_BYTES);
  }

  /** Acknowledged or dropped: out of every count, its payload let go. */
  #finish(e: Entry): void {
    e.done = true;
    e.handed = false;
    this.#bySeq.delete(e.seq);
    this.#pendingBytes -= e.len;
    if (e.inWindow) {
      e.inWindow = false;
      this.#windowCount--;
      this.#windowBytes -= e.len;
    }
    if (e.state !== 'written') this.#unwrittenBytes -= e.len;
    if (e.state !== 'memory') this.#storedCount--;
    if (e.seg) e.seg.live--;
    this.#release(e);
    const q = this.#queue;
    while (this.#head < q.length && q[this.#head]!.done) this.#head++;
    this.#cursor = Math.max(this.#cursor, this.#head);
    this.#windowEnd = Math.max(this.#windowEnd, this.#head);
    this.#tailStart = Math.max(this.#tailStart, this.#head);
    this.#memoryStart = Math.max(this.#memoryStart, this.#head);
  }

  /** Drops a pending message (a bound); `persist`: a DONE record says so (not needed when its segment goes). */
  #drop(e: Entry, persist = true): void {
    const onDisk = e.state === 'writing' || e.state === 'written';
    // Never written nor waiting to be: nothing but the outbox holds an owned payload now.
    const free = e.owned && e.state === 'memory' ? e.payload : undefined;
    this.#finish(e);
    if (free) releaseBytes(free);
    if (persist && onDisk) this.#buffer(e.seq, DONE_BYTES);
    this.#settle(e);
    // Log the first drop of a run and then every thousandth, not every message.
    if (this.#dropped++ % 1000 === 0) this.#opts.log.warn('mqtt outbox full: dropped the oldest messages', { dropped: this.#dropped, max: this.#opts.maxMessages, maxBytes: this.maxBytes });
  }

  /** Shifts out the done entries before `head` once they are most of the queue. */
  #compactQueue(): void {
    const h = this.#head;
    if (h < 1024 || h * 2 < this.#queue.length) return;
    this.#queue.splice(0, h);
    this.#head = 0;
    this.#cursor -= h;
    this.#windowEnd -= h;
    this.#tailStart -= h;
    this.#memoryStart -= h;
  }

  /** Grows the send window: from disk while older messages are there only, else from the newest. */
  #fill(): void {
    if (this.#closed) return;
    if (this.#windowEnd < this.#tailStart) return this.#readBack();
    while (this.#windowEnd < this.#queue.length && this.#windowHasRoom()) {
      const e = this.#queue[this.#windowEnd++]!;
      if (!e.done) this.#enterWindow(e);
    }
    this.#tailStart = this.#windowEnd;
  }

  /** Reads the next messages that are on disk only into the window, one batch at a time. */
  #readBack(): void {
    if (this.#reading) return;
    const batch: Entry[] = [];
    while (this.#windowEnd < this.#tailStart && this.#windowHasRoom()) {
      const e = this.#queue[this.#windowEnd++]!;
      if (e.done) continue;
      this.#enterWindow(e);
      batch.push(e);
    }
    if (batch.length === 0) return;
    this.#reading = true;
    void this.#onChain(async () => {
      try {
        for (const e of batch) {
          if (e.done) continue;
          try {
            const m = parseAdd(await this.#readRecord(e), e.seq);
            if (!e.done) this.#hold(e, m.topic, m.payload);
          } catch (err) {
            this.#opts.log.error('mqtt outbox: a stored message could not be read back; dropped', { seq: String(e.seq), error: (err as Error).message });
            this.#drop(e);
          }
        }
      } finally {
        this.#reading = false;
      }
      this.#notify();
      this.#fill();
    });
  }

  /** Newest messages now on disk give up their payloads, unless they are next in the window. */
  #evict(): void {
    this.#fill();
    while (this.#tailStart < this.#queue.length) {
      const e = this.#queue[this.#tailStart]!;
      if (!e.done) {
        if (e.state !== 'written') break;
        this.#release(e);
      }
      this.#tailStart++;
    }
  }

  async #readRecord(e: Entry): Promise<Buffer> {
    const seg = e.seg!;
    if (this.#reader?.seg !== seg) {
      await this.#closeReader();
      this.#reader = { seg, fh: await fsp.open(seg.file, 'r') };
    }
    const rec = Buffer.allocUnsafe(e.len);
    const { bytesRead } = await this.#reader.fh.read(rec, 0, e.len, e.off!);
    if (bytesRead !== e.len) throw new Error(`${path.basename(seg.file)} ends within the record`);
    return rec;
  }

  async #closeReader(): Promise<void> {
    const r = this.#reader;
    this.#reader = undefined;
    await r?.fh.close().catch(() => {});
  }

  #buffer(item: Entry | bigint, bytes: number): void {
    this.#buffered.push(item);
    this.#bufferedBytes += bytes;
    // A batch is at most half a segment, so a segment holds a few and the oldest go a few at a time.
    if (this.#bufferedBytes >= Math.min(FLUSH_BYTES, this.#segmentBytes() / 2)) void this.flush();
    else this.#scheduleFlush();
  }

  /** Buffers the ADD records of the messages only in memory, oldest first, while `which` says so. */
  #storeMemory(which: (e: Entry) => boolean): boolean {
    let n = 0;
    for (; this.#memoryStart < this.#queue.length; this.#memoryStart++) {
      const e = this.#queue[this.#memoryStart]!;
      if (e.done) continue;
      if (!which(e)) break;
      e.state = 'buffered';
      this.#storedCount++;
      this.#buffer(e, e.len);
      n++;
    }
    return n > 0;
  }

  /**
   * While online: writes what waited for its PUBACK longer than ackLagMs, in one batch. The timer
   * fires when the oldest message not on disk reaches that age and is armed again for the next such
   * message, if any: with telemetry acknowledged at once it wakes the process about once per
   * ackLagMs, not on a fixed period (every wake from idle costs CPU on a small device).
   */
  #scheduleLagCheck(): void {
    if (this.#lagTimer || this.#closed) return;
    let oldest: Entry | undefined;
    for (let i = this.#memoryStart; i < this.#queue.length && !oldest; i++) if (!this.#queue[i]!.done) oldest = this.#queue[i];
    if (!oldest) return;
    const lag = this.#opts.ackLagMs ?? 2000;
    this.#lagTimer = setTimeout(() => {
      this.#lagTimer = undefined;
      const old = Date.now() - lag;
      this.#storeMemory((e) => e.since <= old);
      this.#scheduleLagCheck();
    }, Math.max(10, oldest.since + lag - Date.now()));
  }

  #enforceBound(): void {
    while (this.#bySeq.size > this.#opts.maxMessages) this.#drop(this.#queue[this.#head]!);
    // Messages that cannot be written fast enough (or at all) wait in memory only up to a bound.
    while (this.#unwrittenBytes > UNWRITTEN_BYTES) {
      const e = this.#oldestUnwritten();
      if (!e) break;
      this.#drop(e);
    }
  }

  /** The oldest message not on disk whose record is not being written, unless it is the newest. */
  #oldestUnwritten(): Entry | undefined {
    let e = this.#buffered.find((x): x is Entry => typeof x !== 'bigint' && !x.done);
    for (let i = this.#memoryStart; !e && i < this.#queue.length; i++) if (!this.#queue[i]!.done) e = this.#queue[i];
    return e === this.#queue[this.#queue.length - 1] ? undefined : e;
  }

  #scheduleFlush(): void {
    if (this.#flushTimer || this.#closed) return;
    this.#flushTimer = setTimeout(() => {
      this.#flushTimer = undefined;
      void this.flush();
    }, this.#opts.flushDelayMs ?? 1000);
  }

  /** One batch: room made within maxBytes, one write, one fsync. Never rejects; what fails is tried again. */
  async #write(items: (Entry | bigint)[]): Promise<void> {
    let adds = items.filter((x): x is Entry => typeof x !== 'bigint' && !x.done);
    const dones = items.filter((x): x is bigint => typeof x === 'bigint');
    if (adds.length === 0 && dones.length === 0) return;
    for (const e of adds) e.state = 'writing';
    let seg = this.#active;
    try {
      let bytes = dones.length * DONE_BYTES;
      for (const e of adds) bytes += e.len;
      await this.#makeRoom(bytes, adds);
      adds = adds.filter((e) => !e.done);
      seg = this.#active;
      const parts: Buffer[] = [];
      for (const e of adds) parts.push(...addRecord(e.seq, e.qos, e.topic!, e.payload!));
      for (const s of dones) parts.push(doneRecord(s));
      let total = 0;
      for (const p of parts) total += p.length;
      // Telemetry stops at the data partition's reserve (src/store/reserve.ts), as on a full disk.
      if (adds.length > 0) checkSpace(this.#dir, total);
      this.#fh ??= await fsp.open(seg.file, 'a', 0o600);
      const { bytesWritten } = await this.#fh.writev(parts);
      if (bytesWritten !== total) throw new Error(`wrote ${bytesWritten} of ${total} bytes (no space left on the device?)`);
      await this.#fh.sync();
      let off = seg.size;
      for (const e of adds) {
        if (!e.done) {
          e.seg = seg;
          e.off = off;
          seg.live++;
          this.#unwrittenBytes -= e.len;
          this.#settle(e);
        }
        e.state = 'written';
        off += e.len;
      }
      seg.size += total;
      this.#diskBytes += total;
      this.#bytesWritten += total;
      this.#syncs++;
      if (this.#writeFailing) this.#opts.log.info('mqtt outbox: writing to dataDir again', { file: seg.file });
      this.#writeFailing = false;
      this.#evict();
      await this.#dropDeadSegments();
    } catch (err) {
      // The file may now end in part of a record: cut it back, or start a new segment next time.
      await this.#fh?.truncate(seg.size).catch(() => (this.#rotateFirst = true));
      if (!this.#writeFailing) this.#opts.log.error('mqtt outbox: cannot write to dataDir', { file: seg.file, error: (err as Error).message });
      this.#writeFailing = true;
      const retry = adds.filter((e) => !e.done);
      for (const e of retry) {
        e.state = 'buffered';
        this.#settle(e, err as Error);
        this.#bufferedBytes += e.len;
      }
      this.#buffered.unshift(...retry, ...dones);
      this.#bufferedBytes += dones.length * DONE_BYTES;
      this.#enforceBound();
      this.#scheduleFlush();
    }
  }

  /**
   * Room for `bytes` more: a new segment when they do not fit in this one, then the oldest segments
   * deleted while the whole would exceed maxBytes, their pending messages dropped (the oldest of
   * all; the segment being appended to is closed first when it is the only one). A batch larger
   * than the whole bound loses its own oldest messages.
   */
  async #makeRoom(bytes: number, adds: Entry[] = []): Promise<void> {
    if (this.#rotateFirst || (this.#active.size > 0 && this.#active.size + bytes > this.#segmentBytes())) await this.#rotate();
    let removed = 0;
    while (this.#diskBytes + bytes > this.maxBytes) {
      if (this.#segments.length === 1) {
        if (this.#active.size === 0) break;
        await this.#rotate();
      }
      const s = this.#segments[0]!;
      for (let i = this.#head; s.live > 0 && i < this.#queue.length; i++) {
        const e = this.#queue[i]!;
        if (!e.done && e.seg === s) this.#drop(e, false);
      }
      await this.#removeOldestSegment();
      removed++;
    }
    if (removed > 0) await syncDir(this.#dir);
    for (const e of adds) {
      if (this.#diskBytes + bytes <= this.maxBytes) break;
      if (!e.done) this.#drop(e, false);
      bytes -= e.len;
    }
    this.#fill();
  }

  /** `outbox.log` becomes the newest archived segment; a new one is started. */
  async #rotate(): Promise<void> {
    const seg = this.#active;
    await this.#fh?.close();
    this.#fh = undefined;
    const file = path.join(this.#dir, `${FILE}.${this.#lastArchive + 1}`);
    await fsp.rename(seg.file, file);
    this.#lastArchive++;
    seg.file = file;
    const next: Segment = { file: path.join(this.#dir, FILE), size: 0, live: 0 };
    this.#fh = await fsp.open(next.file, 'a', 0o600);
    this.#segments.push(next);
    await syncDir(this.#dir);
    this.#rotateFirst = false;
  }

  async #removeOldestSegment(): Promise<void> {
    const s = this.#segments.shift()!;
    if (this.#reader?.seg === s) await this.#closeReader();
    await fsp.rm(s.file, { force: true });
    this.#diskBytes -= s.size;
  }

  /**
   * Deletes the oldest segments while nothing in them is pending; the one being appended to is
   * emptied instead once nothing on disk is pending at all (and it is worth a system call).
   */
  async #dropDeadSegments(): Promise<void> {
    let removed = 0;
    while (this.#segments.length > 1 && this.#segments[0]!.live === 0) {
      await this.#removeOldestSegment();
      removed++;
    }
    if (removed > 0) await syncDir(this.#dir);
    const a = this.#active;
    if (this.#segments.length === 1 && a.live === 0 && a.size >= DEAD_BYTES_KEPT) {
      this.#fh ??= await fsp.open(a.file, 'a', 0o600);
      await this.#fh.truncate(0);
      this.#diskBytes -= a.size;
      a.size = 0;
    }
  }
}
