// Modbus TCP framing: the MBAP header (Modbus Messaging on TCP/IP Implementation Guide V1.0b §3.1.3).
// One encoder, one streaming decoder. The decoder never throws; a frame whose header cannot be
// Modbus is reported as an error so the caller can drop the connection (TCP has no resync point).

import { MAX_PDU_LENGTH, MBAP_HEADER_LENGTH } from './constants.js';

export interface MbapFrame {
  transactionId: number;
  /** Always 0 for Modbus; kept so a decoder test can see what arrived. */
  protocolId: number;
  unitId: number;
  pdu: Buffer;
}

export function encodeMbap(frame: MbapFrame): Buffer {
  const out = Buffer.alloc(MBAP_HEADER_LENGTH + frame.pdu.length);
  out.writeUInt16BE(frame.transactionId & 0xffff, 0);
  out.writeUInt16BE(frame.protocolId & 0xffff, 2);
  // The length field counts the unit id and the PDU (§3.1.3).
  out.writeUInt16BE(frame.pdu.length + 1, 4);
  out[6] = frame.unitId & 0xff;
  frame.pdu.copy(out, MBAP_HEADER_LENGTH);
  return out;
}

export type MbapResult = { frame: MbapFrame } | { error: string };

/**
 * Accumulates stream chunks and yields whole frames (or one error, after which it is reset). Keeps no
 * reference to a chunk's memory after push() returns (frames and a partial frame are copies), so the
 * caller may reuse its read buffer.
 */
export class MbapDecoder {
  private buf: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): MbapResult[] {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    const out: MbapResult[] = [];
    while (this.buf.length >= MBAP_HEADER_LENGTH) {
      const protocolId = this.buf.readUInt16BE(2);
      const length = this.buf.readUInt16BE(4);
      if (protocolId !== 0 || length < 2 || length > MAX_PDU_LENGTH + 1) {
        out.push({ error: `MBAP header with protocol id ${protocolId} and length ${length} is not Modbus (§3.1.3)` });
        this.buf = Buffer.alloc(0);
        break;
      }
      const total = MBAP_HEADER_LENGTH - 1 + length;
      if (this.buf.length < total) break;
      out.push({
        frame: {
          transactionId: this.buf.readUInt16BE(0),
          protocolId,
          unitId: this.buf[6],
          pdu: Buffer.from(this.buf.subarray(MBAP_HEADER_LENGTH, total)),
        },
      });
      this.buf = this.buf.subarray(total);
    }
    if (this.buf.length > 0 && this.buf.buffer === chunk.buffer) this.buf = Buffer.from(this.buf);
    return out;
  }

  reset(): void {
    this.buf = Buffer.alloc(0);
  }

  /** Bytes held waiting for the rest of a frame. */
  get pending(): number {
    return this.buf.length;
  }
}
