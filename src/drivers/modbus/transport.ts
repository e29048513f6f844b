// What a Modbus line (TCP connection or serial port) offers the client: one exchange at a time.
// The client (client.ts) serialises exchanges, so a transport never sees two at once.

import { monotonicNow } from '../../core/clock.js';
import { timerDelay } from '../../core/timers.js';
import type { LineSettings } from './config.js';

export interface LineStats {
  /** Request frames written (each attempt counts). */
  requests: number;
  /** Response frames accepted. */
  responses: number;
  bytesSent: number;
  bytesReceived: number;
  /** Attempts that got no response in time. */
  timeouts: number;
  /** Attempts repeated after a timeout or a broken connection. */
  retries: number;
  /** Frames or bytes thrown away: wrong transaction id, late or unsolicited responses, line noise. */
  discardedFrames: number;
  /** RTU frames whose CRC-16 did not match. */
  crcErrors: number;
  /** Exception responses received. */
  exceptions: number;
  /** Connections (TCP) or port openings (RTU) made. */
  connects: number;
}

export function emptyStats(): LineStats {
  return {
    requests: 0, responses: 0, bytesSent: 0, bytesReceived: 0, timeouts: 0, retries: 0,
    discardedFrames: 0, crcErrors: 0, exceptions: 0, connects: 0,
  };
}

export interface Transport {
  /** For messages: `Modbus TCP 10.0.0.5:502`, `Modbus RTU /dev/ttyS1`. */
  readonly label: string;
  readonly stats: LineStats;
  /**
   * Sends one request PDU to a unit and resolves with the response PDU (possibly an exception
   * response). Rejects with a TimeoutError, or an Error saying why the line is unusable.
   * `at`: a serial line sends this one exchange at that rate and parity, then returns to its own
   * (a scan's sweep); a SettingsError when the port refuses them. Other transports never get it.
   */
  exchange(unitId: number, pdu: Buffer, timeoutMs: number, at?: LineSettings): Promise<Buffer>;
  close(): Promise<void>;
}

export class TimeoutError extends Error {}

/** The port refused a rate or parity asked for one exchange (nothing was sent). */
export class SettingsError extends Error {}

/** Reconnect backoff: first retry after 100 ms, doubling, at most 2 s (a dead device costs little). */
export const BACKOFF_MIN_MS = 100;
export const BACKOFF_MAX_MS = 2000;

/**
 * The response timeout of a line: one timer, pushed back (refresh) by each exchange rather than a
 * timer made and cleared per exchange (a poll makes one exchange per block, ten times a second).
 * After an answer it may still fire and then finds nothing armed; it is cleared at once when
 * exchanges come further apart than the timeout, so a slow poll is not woken twice per cycle.
 * `expired` runs once the armed exchange has had its whole timeout.
 */
export class ResponseTimer {
  private timer: NodeJS.Timeout | undefined;
  private timerMs = 0;
  private armed = false;
  /** monotonicNow() when the armed exchange times out. */
  private deadline = 0;
  private armedAt = -Infinity;
  private armedBefore = -Infinity;

  constructor(private readonly expired: () => void) {}

  arm(ms: number): void {
    const now = monotonicNow();
    this.armed = true;
    this.deadline = now + ms;
    this.armedBefore = this.armedAt;
    this.armedAt = now;
    if (this.timer && this.timerMs === ms) this.timer.refresh();
    else {
      clearTimeout(this.timer);
      this.timerMs = ms;
      this.timer = setTimeout(this.onTimer, timerDelay(ms));
    }
  }

  /** The exchange is over (answered or failed). */
  disarm(): void {
    this.armed = false;
    if (this.armedAt - this.armedBefore > this.timerMs) this.stop();
  }

  /** No more exchanges (the line is closed). */
  stop(): void {
    this.armed = false;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private readonly onTimer = (): void => {
    if (!this.armed) return;
    const left = this.deadline - monotonicNow();
    if (left > 0) {
      // Fired a little early (the loop's clock is in whole milliseconds), or in steps of what a
      // timer honours (src/core/timers.ts): wait for the rest.
      this.timerMs = NaN;
      this.timer = setTimeout(this.onTimer, timerDelay(Math.ceil(left)));
      return;
    }
    this.armed = false;
    this.expired();
  };
}
