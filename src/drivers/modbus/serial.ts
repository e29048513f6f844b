// Modbus RTU transport over a serial line opened as a file and configured with `stty`
// (Modbus over Serial Line V1.02 §2.5). The port is opened on first use and reopened with backoff
// after an I/O error (e.g. a USB adapter unplugged). The 3.5-character silence is kept before each
// request; a response is recognised by its unit, function, implied length and CRC rather than by
// timing alone, because a user-space process cannot time a 1.75 ms silence reliably (a pty, a USB
// adapter and the event loop all batch bytes). Bytes that form no valid response (noise, late
// answers, bad CRCs) are discarded and counted.

import type { execFile as ExecFile } from 'node:child_process';
import fs from 'node:fs';
import type tty from 'node:tty';
import { lazyBuiltin } from '../../core/builtin.js';
import type { Logger } from '../../log.js';
import type { LineSettings, SerialSettings } from './config.js';
import { RtuReceiver, encodeRtu, interFrameGapMs } from './rtu-frame.js';
import { BACKOFF_MAX_MS, BACKOFF_MIN_MS, ResponseTimer, SettingsError, TimeoutError, emptyStats, type LineStats, type Transport } from './transport.js';
import { monotonicNow } from '../../core/clock.js';

// Loaded when a serial line first opens: most configurations have none.
const ttyMod = lazyBuiltin<typeof tty>('node:tty');
const execFile = lazyBuiltin<{ execFile: typeof ExecFile }>('node:child_process');
/** execFile as a promise; a failure carries the command's stderr, as util.promisify's does. */
const run = (cmd: string, args: string[], opts: { timeout: number }): Promise<void> =>
  new Promise((resolve, reject) => execFile().execFile(cmd, args, opts, (err, _out, stderr) => (err ? reject(Object.assign(err, { stderr })) : resolve())));

export function sttyArgs(s: SerialSettings): string[] {
  return [
    '-F', s.portName, String(s.baudrate), `cs${s.databits}`,
    s.stopbits === 2 ? 'cstopb' : '-cstopb',
    s.parity === 'none' ? '-parenb' : 'parenb',
    ...(s.parity === 'odd' ? ['parodd'] : s.parity === 'even' ? ['-parodd'] : []),
    // Raw bytes, no echo, no modem control or flow control: a two-wire RS-485 or RS-232 line.
    'raw', '-echo', 'clocal', '-crtscts', '-ixon', '-ixoff',
  ];
}

/** What a failed command or system call says: stty's own message when it printed one. */
function commandError(err: unknown): string {
  const e = err as NodeJS.ErrnoException & { stderr?: string };
  return (e.stderr && String(e.stderr).trim()) || e.code || e.message;
}

interface Pending {
  unitId: number;
  fc: number;
  timeoutMs: number;
  resolve(pdu: Buffer): void;
  reject(err: Error): void;
}

export class SerialTransport implements Transport {
  readonly label: string;
  readonly stats: LineStats = emptyStats();
  private stream: tty.ReadStream | undefined;
  private opening: Promise<tty.ReadStream> | undefined;
  private readonly rx = new RtuReceiver(this.stats);
  private pending: Pending | undefined;
  private lastActivity = 0;
  private backoff = 0;
  private retryAt = 0;
  private lastError = '';
  private closed = false;
  private readonly gapMs: number;
  /** The response timeout, one timer for every exchange on the port. */
  private readonly timeout = new ResponseTimer(() => {
    const p = this.pending;
    if (!p) return;
    this.pending = undefined;
    this.stats.timeouts++;
    this.rx.drop();
    p.reject(new TimeoutError(`${this.label}: no response from unit ${p.unitId} within ${p.timeoutMs} ms`));
  });

  constructor(private readonly settings: SerialSettings, private readonly log: Logger) {
    this.label = `Modbus RTU ${settings.portName}`;
    this.gapMs = interFrameGapMs(settings.baudrate);
  }

  async exchange(unitId: number, pdu: Buffer, timeoutMs: number, at?: LineSettings): Promise<Buffer> {
    const stream = await this.open();
    if (!at || (at.baudrate === this.settings.baudrate && at.parity === this.settings.parity)) return this.send(stream, unitId, pdu, timeoutMs, this.gapMs);
    // A sweep's exchange (docs/drivers.md "Commissioning tools"): the port is set to the rate and
    // parity asked for, the one request is sent, and the port is set back before the next exchange
    // (the caller's queue holds the line meanwhile). stty sets the terminal by its path, which
    // changes the open port (termios belongs to the device, not to one file descriptor).
    const other: SerialSettings = { ...this.settings, baudrate: at.baudrate, parity: at.parity };
    try {
      await run('stty', sttyArgs(other), { timeout: 5000 });
    } catch (err) {
      await this.restore(stream);
      throw new SettingsError(`${this.label}: cannot set ${at.baudrate} baud, parity ${at.parity}: ${commandError(err)}`);
    }
    try {
      return await this.send(stream, unitId, pdu, timeoutMs, interFrameGapMs(at.baudrate));
    } finally {
      await this.restore(stream);
    }
  }

  /** Sets the port back to the line's own settings; a port that refuses is closed and reopened (with them) by the next exchange. */
  private async restore(stream: tty.ReadStream): Promise<void> {
    try {
      await run('stty', sttyArgs(this.settings), { timeout: 5000 });
    } catch (err) {
      if (this.stream === stream) this.fail(new Error(`cannot set the line's own settings again: ${commandError(err)}`));
    }
    this.lastActivity = monotonicNow();
  }

  private async send(stream: tty.ReadStream, unitId: number, pdu: Buffer, timeoutMs: number, gapMs: number): Promise<Buffer> {
    // §2.5.1.1: at least 3.5 character times of silence before a new frame.
    const quiet = this.lastActivity + gapMs - monotonicNow();
    if (quiet > 0) await new Promise((r) => setTimeout(r, Math.ceil(quiet)));
    if (this.stream !== stream) throw new Error(`${this.label}: port closed`);
    this.rx.drop();
    const frame = encodeRtu({ unitId, pdu });
    return new Promise<Buffer>((resolve, reject) => {
      this.pending = { unitId, fc: pdu[0], timeoutMs, resolve, reject };
      this.timeout.arm(timeoutMs);
      this.stats.requests++;
      this.stats.bytesSent += frame.length;
      this.lastActivity = monotonicNow();
      stream.write(frame, (err) => {
        if (err) this.fail(err);
      });
    });
  }

  private onData(chunk: Buffer): void {
    this.stats.bytesReceived += chunk.length;
    this.lastActivity = monotonicNow();
    const p = this.pending;
    if (!p) {
      // Bytes nobody asked for (noise, a late answer): one discarded frame.
      this.stats.discardedFrames++;
      return;
    }
    const pdu = this.rx.push(chunk, p.unitId, p.fc);
    if (!pdu) return;
    this.pending = undefined;
    this.timeout.disarm();
    this.stats.responses++;
    p.resolve(pdu);
  }

  private open(): Promise<tty.ReadStream> {
    if (this.closed) return Promise.reject(new Error(`${this.label}: driver closed`));
    if (this.stream) return Promise.resolve(this.stream);
    if (this.opening) return this.opening;
    // While backing off, the last failure is repeated word for word: a stable text lets
    // report-by-exception telemetry treat it as unchanged.
    if (Date.now() < this.retryAt) return Promise.reject(new Error(`${this.label}: ${this.lastError}`));
    this.opening = (async () => {
      let fd: number | undefined;
      try {
        await run('stty', sttyArgs(this.settings), { timeout: 5000 });
        const { O_RDWR, O_NOCTTY, O_NONBLOCK } = fs.constants;
        fd = await new Promise<number>((res, rej) =>
          fs.open(this.settings.portName, O_RDWR | O_NOCTTY | O_NONBLOCK, (e, f) => (e ? rej(e) : res(f))));
        if (!ttyMod().isatty(fd)) throw new Error('not a terminal device');
        // A TTY handle reads without blocking a libuv thread, and close() cancels it.
        const stream = new (ttyMod().ReadStream)(fd);
        fd = undefined;
        if (this.closed) {
          stream.destroy();
          throw new Error('driver closed');
        }
        // Events of a stream already replaced must not touch its successor.
        stream.on('data', (chunk: Buffer) => this.stream === stream && this.onData(chunk));
        stream.on('error', (err) => this.stream === stream && this.fail(err));
        stream.on('close', () => this.stream === stream && this.fail(new Error('port closed')));
        this.stream = stream;
        this.stats.connects++;
        if (this.lastError) this.log.info('modbus serial port usable again', { device: this.label });
        this.backoff = 0;
        this.lastError = '';
        return stream;
      } catch (err) {
        if (fd !== undefined) fs.close(fd, () => {});
        const message = commandError(err);
        this.backoff = Math.min(BACKOFF_MAX_MS, this.backoff ? this.backoff * 2 : BACKOFF_MIN_MS);
        this.retryAt = Date.now() + this.backoff;
        if (!this.lastError) this.log.warn('modbus serial port unusable', { device: this.label, error: message });
        this.lastError = `cannot open: ${message}`;
        throw new Error(`${this.label}: ${this.lastError}`);
      } finally {
        this.opening = undefined;
      }
    })();
    return this.opening;
  }

  private fail(err: Error): void {
    const stream = this.stream;
    if (!stream) return;
    this.stream = undefined;
    stream.destroy();
    this.rx.drop();
    const p = this.pending;
    this.pending = undefined;
    if (p) this.timeout.disarm();
    const why = (err as NodeJS.ErrnoException).code ?? err.message;
    if (!this.closed) this.log.warn('modbus serial port failed', { device: this.label, error: why });
    p?.reject(new Error(`${this.label}: ${why}`));
  }

  async close(): Promise<void> {
    this.closed = true;
    this.timeout.stop();
    this.fail(new Error('driver closed'));
  }
}
