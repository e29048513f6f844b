// What a Modbus line (TCP connection or serial port) offers the client: one exchange at a time.
// The client (client.ts) serialises exchanges, so a transport never sees two at once.

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
   */
  exchange(unitId: number, pdu: Buffer, timeoutMs: number): Promise<Buffer>;
  close(): Promise<void>;
}

export class TimeoutError extends Error {}

/** Reconnect backoff: first retry after 100 ms, doubling, at most 2 s (a dead device costs little). */
export const BACKOFF_MIN_MS = 100;
export const BACKOFF_MAX_MS = 2000;
