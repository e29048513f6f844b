// Modbus RTU framing (Modbus over Serial Line V1.02 §2.5.1): unit id, PDU, CRC-16 low byte first.
// One encoder, one decoder. The decoder works on whatever bytes arrived and says what it found;
// it never throws, so line noise is counted and skipped rather than fatal.

import { pduLength } from './pdu.js';

/** CRC-16/MODBUS: polynomial 0xA001 (reflected 0x8005), initial 0xFFFF (§6.2.2). */
export function crc16(bytes: Buffer, start = 0, end = bytes.length): number {
  let crc = 0xffff;
  for (let i = start; i < end; i++) {
    crc ^= bytes[i];
    for (let b = 0; b < 8; b++) crc = crc & 1 ? (crc >>> 1) ^ 0xa001 : crc >>> 1;
  }
  return crc;
}

export interface RtuFrame {
  unitId: number;
  pdu: Buffer;
}

export function encodeRtu(frame: RtuFrame): Buffer {
  const out = Buffer.alloc(frame.pdu.length + 3);
  out[0] = frame.unitId & 0xff;
  frame.pdu.copy(out, 1);
  out.writeUInt16LE(crc16(out, 0, out.length - 2), out.length - 2);
  return out;
}

export type RtuDecodeResult =
  /** A whole frame with a good CRC occupying `length` bytes from the offset. */
  | { status: 'frame'; frame: RtuFrame; length: number }
  /** Could be the start of a frame; more bytes are needed. */
  | { status: 'incomplete' }
  /** Looked like a frame of `length` bytes but the CRC is wrong (§2.5.1.2: discard it). */
  | { status: 'crc'; length: number }
  /** Cannot start a frame here (unknown function code). */
  | { status: 'invalid' };

/** Decodes the frame starting at `offset`; `kind` says whether requests or responses are expected. */
export function decodeRtu(buf: Buffer, kind: 'request' | 'response', offset = 0): RtuDecodeResult {
  if (buf.length - offset < 2) return { status: 'incomplete' };
  const pduLen = pduLength(buf.subarray(offset + 1), kind);
  if (pduLen === -1) return { status: 'invalid' };
  if (pduLen === undefined) return { status: 'incomplete' };
  const length = 1 + pduLen + 2;
  if (buf.length - offset < length) return { status: 'incomplete' };
  const crc = buf.readUInt16LE(offset + length - 2);
  if (crc !== crc16(buf, offset, offset + length - 2)) return { status: 'crc', length };
  return {
    status: 'frame',
    frame: { unitId: buf[offset], pdu: Buffer.from(buf.subarray(offset + 1, offset + length - 2)) },
    length,
  };
}

/**
 * Silence that ends an RTU frame: 3.5 character times, fixed at 1.75 ms above 19200 baud
 * (§2.5.1.1). A character is 11 bits on the wire (start, 8 data, parity or second stop, stop).
 */
export function interFrameGapMs(baudrate: number): number {
  if (baudrate > 19200) return 1.75;
  return (3.5 * 11 * 1000) / baudrate;
}

/** Longest RTU frame (§2.5.1: 256 bytes); more unparsed bytes than this are noise. */
const MAX_RTU_FRAME = 256;

/** What a receiver counts (a transport's LineStats has these fields). */
export interface RtuCounters {
  discardedFrames: number;
  crcErrors: number;
}

/**
 * Finds the response to the one outstanding request in a byte stream (a serial line, or a TCP
 * connection to a serial-to-Ethernet converter): a CRC-valid frame from the addressed unit to the
 * request's function, at any offset. Noise before it is skipped and counted once; a bad CRC is
 * counted once and the search goes on (§2.5.1.2).
 */
export class RtuReceiver {
  private rx: Buffer = Buffer.alloc(0);
  private crcSeen = new Set<number>();

  constructor(private readonly stats: RtuCounters) {}

  /** Forgets buffered bytes (counted as one discarded frame when there were any). */
  drop(): void {
    if (this.rx.length) this.stats.discardedFrames++;
    this.rx = Buffer.alloc(0);
    this.crcSeen.clear();
  }

  /** Adds bytes; returns the response PDU once it is complete. */
  push(chunk: Buffer, unitId: number, fc: number): Buffer | undefined {
    this.rx = this.rx.length ? Buffer.concat([this.rx, chunk]) : chunk;
    for (let i = 0; i + 4 <= this.rx.length; i++) {
      if (this.rx[i] !== unitId || (this.rx[i + 1] & 0x7f) !== fc) continue;
      const r = decodeRtu(this.rx, 'response', i);
      if (r.status === 'frame') {
        if (i > 0) this.stats.discardedFrames++;
        this.rx = this.rx.subarray(i + r.length);
        this.drop();
        return r.frame.pdu;
      }
      if (r.status === 'crc' && !this.crcSeen.has(i)) {
        this.crcSeen.add(i);
        this.stats.crcErrors++;
      }
    }
    if (this.rx.length > MAX_RTU_FRAME * 2) {
      this.stats.discardedFrames++;
      this.rx = this.rx.subarray(this.rx.length - MAX_RTU_FRAME);
      this.crcSeen.clear();
    }
    return undefined;
  }
}
