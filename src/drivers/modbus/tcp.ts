// Modbus over a TCP connection, opened on demand and reopened with backoff after it fails.
// Framing `mbap` (Modbus TCP): a response is matched by transaction id (Messaging on TCP/IP
// Implementation Guide §3.1.3); one with another id (e.g. the late answer to a request that timed
// out) is discarded and counted. Framing `rtu` (RTU over TCP, as serial-to-Ethernet converters pass
// it): RTU frames with CRC (Modbus over Serial Line §2.5.1), matched like on a serial line.

import net from 'node:net';
import { timerDelay } from '../../core/timers.js';
import type { Logger } from '../../log.js';
import { MbapDecoder, encodeMbap } from './mbap.js';
import { RtuReceiver, encodeRtu } from './rtu-frame.js';
import { BACKOFF_MAX_MS, BACKOFF_MIN_MS, ResponseTimer, TimeoutError, emptyStats, type LineStats, type Transport } from './transport.js';

interface Pending {
  transactionId: number;
  unitId: number;
  fc: number;
  timeoutMs: number;
  resolve(pdu: Buffer): void;
  reject(err: Error): void;
}

export class TcpTransport implements Transport {
  readonly label: string;
  readonly stats: LineStats = emptyStats();
  private socket: net.Socket | undefined;
  private connecting: Promise<net.Socket> | undefined;
  private readonly decoder = new MbapDecoder();
  private readonly rtu = new RtuReceiver(this.stats);
  private pending: Pending | undefined;
  private transactionId = 0;
  private backoff = 0;
  private retryAt = 0;
  private lastError = '';
  private closed = false;
  /** The response timeout, one timer for every exchange of the connection. */
  private readonly timeout = new ResponseTimer(() => {
    const p = this.pending;
    if (!p) return;
    this.pending = undefined;
    this.stats.timeouts++;
    p.reject(new TimeoutError(`${this.label}: no response from unit ${p.unitId} within ${p.timeoutMs} ms`));
  });

  constructor(private readonly host: string, private readonly port: number, private readonly log: Logger, private readonly framing: 'mbap' | 'rtu' = 'mbap') {
    this.label = `Modbus ${framing === 'rtu' ? 'RTU over TCP' : 'TCP'} ${host}:${port}`;
  }

  exchange(unitId: number, pdu: Buffer, timeoutMs: number): Promise<Buffer> {
    // Connected: straight to the line, no promise in between (a poll makes one exchange per block).
    const socket = this.socket;
    if (socket && !this.closed) return this.send(socket, unitId, pdu, timeoutMs);
    return this.connect(timeoutMs).then((s) => {
      if (this.socket !== s) throw new Error(`${this.label}: connection lost`);
      return this.send(s, unitId, pdu, timeoutMs);
    });
  }

  private send(socket: net.Socket, unitId: number, pdu: Buffer, timeoutMs: number): Promise<Buffer> {
    // Transaction ids run 1..65535 and wrap; 0 is skipped so a zeroed frame never matches.
    this.transactionId = (this.transactionId % 0xffff) + 1;
    const transactionId = this.transactionId;
    let frame: Buffer;
    try {
      frame = this.framing === 'rtu' ? encodeRtu({ unitId, pdu }) : encodeMbap({ transactionId, protocolId: 0, unitId, pdu });
    } catch (err) {
      return Promise.reject(err);
    }
    this.rtu.drop();
    return new Promise<Buffer>((resolve, reject) => {
      this.pending = { transactionId, unitId, fc: pdu[0], timeoutMs, resolve, reject };
      this.timeout.arm(timeoutMs);
      this.stats.requests++;
      this.stats.bytesSent += frame.length;
      socket.write(frame);
    });
  }

  private connect(timeoutMs: number): Promise<net.Socket> {
    if (this.closed) return Promise.reject(new Error(`${this.label}: driver closed`));
    if (this.socket) return Promise.resolve(this.socket);
    if (this.connecting) return this.connecting;
    // While backing off, the last failure is repeated word for word: a stable text lets
    // report-by-exception telemetry treat it as unchanged.
    if (Date.now() < this.retryAt) return Promise.reject(new Error(`${this.label}: ${this.lastError}`));
    this.connecting = new Promise<net.Socket>((resolve, reject) => {
      // One read buffer per connection, reused for every read (no 64 KB allocation and no stream
      // machinery per response); the decoders copy what they keep.
      const rb = Buffer.allocUnsafe(4096);
      const socket: net.Socket = net.connect({
        host: this.host,
        port: this.port,
        onread: { buffer: rb, callback: (n: number) => (this.socket === socket && this.onData(rb.subarray(0, n)), true) },
      });
      const timer = setTimeout(() => fail(new Error(`connect timed out after ${timeoutMs} ms`)), timerDelay(timeoutMs));
      const fail = (err: Error) => {
        clearTimeout(timer);
        socket.destroy();
        this.connecting = undefined;
        this.backoff = Math.min(BACKOFF_MAX_MS, this.backoff ? this.backoff * 2 : BACKOFF_MIN_MS);
        this.retryAt = Date.now() + this.backoff;
        const message = (err as NodeJS.ErrnoException).code ?? err.message;
        if (!this.lastError) this.log.warn('modbus device unreachable', { device: this.label, error: message });
        this.lastError = `connect failed: ${message}`;
        reject(new Error(`${this.label}: ${this.lastError}`));
      };
      socket.once('error', fail);
      socket.once('connect', () => {
        clearTimeout(timer);
        socket.removeListener('error', fail);
        if (this.closed) {
          socket.destroy();
          return reject(new Error(`${this.label}: driver closed`));
        }
        // Requests are small and latency matters more than packet count.
        socket.setNoDelay(true);
        socket.setKeepAlive(true, 10_000);
        this.stats.connects++;
        if (this.lastError) this.log.info('modbus device reachable again', { device: this.label });
        this.backoff = 0;
        this.lastError = '';
        this.decoder.reset();
        this.socket = socket;
        this.connecting = undefined;
        // Events of a socket already replaced must not touch its successor.
        socket.on('error', (err) => this.socket === socket && this.onClose(err));
        socket.on('close', () => this.socket === socket && this.onClose());
        resolve(socket);
      });
    });
    return this.connecting;
  }

  private onData(chunk: Buffer): void {
    this.stats.bytesReceived += chunk.length;
    if (this.framing === 'rtu') {
      const p = this.pending;
      // The RTU receiver keeps unparsed bytes: it gets its own copy of the reused read buffer.
      const pdu = p ? this.rtu.push(Buffer.from(chunk), p.unitId, p.fc) : undefined;
      if (!p) this.stats.discardedFrames++;
      if (!p || !pdu) return;
      this.pending = undefined;
      this.timeout.disarm();
      this.stats.responses++;
      return p.resolve(pdu);
    }
    for (const result of this.decoder.push(chunk)) {
      if ('error' in result) {
        // No resynchronisation point in a TCP stream: start over on a fresh connection.
        this.stats.discardedFrames++;
        this.log.warn('modbus framing error, reconnecting', { device: this.label, error: result.error });
        this.socket?.destroy();
        this.onClose(new Error(result.error));
        return;
      }
      const { frame } = result;
      const p = this.pending;
      if (!p || frame.transactionId !== p.transactionId || frame.unitId !== p.unitId) {
        this.stats.discardedFrames++;
        continue;
      }
      this.pending = undefined;
      this.timeout.disarm();
      this.stats.responses++;
      p.resolve(frame.pdu);
    }
  }

  private onClose(err?: Error): void {
    if (!this.socket) return;
    this.socket.destroy();
    this.socket = undefined;
    this.decoder.reset();
    this.rtu.drop();
    const p = this.pending;
    this.pending = undefined;
    if (p) this.timeout.disarm();
    const why = err ? ((err as NodeJS.ErrnoException).code ?? err.message) : 'closed by the device';
    p?.reject(new Error(`${this.label}: connection lost (${why})`));
  }

  async close(): Promise<void> {
    this.closed = true;
    this.timeout.stop();
    const socket = this.socket;
    this.onClose(new Error('driver closed'));
    socket?.destroy();
  }
}
