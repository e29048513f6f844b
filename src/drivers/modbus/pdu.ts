// Modbus PDU codec: one encoder and one decoder for requests, one of each for responses.
// Clauses cited are from the Modbus Application Protocol Specification V1.1b3.
// Decoders never throw: bad input yields `{ error }` so a garbage frame is counted, not fatal.

import { EXCEPTION_BIT, MAX_PDU_LENGTH, MAX_READ_BITS, MAX_READ_REGISTERS, MAX_WRITE_BITS, MAX_WRITE_REGISTERS } from './constants.js';

export type ReadFunction = 1 | 2 | 3 | 4;

export type ModbusRequest =
  | { fc: ReadFunction; address: number; quantity: number }
  | { fc: 5; address: number; value: boolean }
  | { fc: 6; address: number; value: number }
  | { fc: 15; address: number; values: boolean[] }
  /** `data`: the register bytes, two per register, big-endian as on the wire. */
  | { fc: 16; address: number; data: Buffer }
  /** Read Device Identification (§6.21, MEI type 14): `readCode` 1 basic, 2 regular, 3 extended, 4 one object. */
  | { fc: 43; readCode: number; objectId: number };

/** One object of a Read Device Identification response (§6.21): its id and its bytes. */
export interface DeviceObject {
  id: number;
  value: Buffer;
}

export type ModbusResponse =
  /** `bits`: byteCount × 8 bits, LSB of the first byte first (§6.1); the caller keeps what it asked for. */
  | { fc: 1 | 2; bits: boolean[] }
  | { fc: 3 | 4; data: Buffer }
  | { fc: 5; address: number; value: boolean }
  | { fc: 6; address: number; value: number }
  | { fc: 15 | 16; address: number; quantity: number }
  | { fc: 43; readCode: number; conformity: number; moreFollows: boolean; nextObjectId: number; objects: DeviceObject[] }
  /** An exception response (§7): `fc` is the function code of the request (without 0x80). */
  | { fc: number; exception: number };

export interface DecodeError {
  error: string;
}

export function isDecodeError<T extends object>(v: T | DecodeError): v is DecodeError {
  return 'error' in v;
}

export function isException(r: ModbusResponse): r is { fc: number; exception: number } {
  return 'exception' in r;
}

// ---- encoders -------------------------------------------------------------------------------

function packBits(bits: boolean[]): Buffer {
  const out = Buffer.alloc(Math.ceil(bits.length / 8));
  bits.forEach((b, i) => {
    if (b) out[i >> 3] |= 1 << (i & 7);
  });
  return out;
}

function unpackBits(bytes: Buffer): boolean[] {
  const bits: boolean[] = [];
  for (let i = 0; i < bytes.length * 8; i++) bits.push((bytes[i >> 3] & (1 << (i & 7))) !== 0);
  return bits;
}

function header(fc: number, a: number, b: number): Buffer {
  const out = Buffer.alloc(5);
  out[0] = fc;
  out.writeUInt16BE(a, 1);
  out.writeUInt16BE(b, 3);
  return out;
}

/** The MEI type of Read Device Identification within function 43 (§6.21). */
export const MEI_DEVICE_IDENTIFICATION = 0x0e;

export function encodeRequest(req: ModbusRequest): Buffer {
  switch (req.fc) {
    case 43:
      return Buffer.from([43, MEI_DEVICE_IDENTIFICATION, req.readCode & 0xff, req.objectId & 0xff]);
    case 1:
    case 2:
    case 3:
    case 4:
      return header(req.fc, req.address, req.quantity);
    case 5:
      // §6.5: ON is 0xFF00, OFF is 0x0000; nothing else is valid.
      return header(5, req.address, req.value ? 0xff00 : 0);
    case 6:
      return header(6, req.address, req.value & 0xffff);
    case 15: {
      const bytes = packBits(req.values);
      return Buffer.concat([header(15, req.address, req.values.length), Buffer.from([bytes.length]), bytes]);
    }
    case 16:
      return Buffer.concat([header(16, req.address, req.data.length >> 1), Buffer.from([req.data.length]), req.data]);
  }
}

export function encodeResponse(res: ModbusResponse): Buffer {
  if (isException(res)) return Buffer.from([(res.fc | EXCEPTION_BIT) & 0xff, res.exception]);
  if ('objects' in res) {
    const head = Buffer.from([43, MEI_DEVICE_IDENTIFICATION, res.readCode, res.conformity, res.moreFollows ? 0xff : 0, res.nextObjectId, res.objects.length]);
    return Buffer.concat([head, ...res.objects.map((o) => Buffer.concat([Buffer.from([o.id, o.value.length]), o.value]))]);
  }
  switch (res.fc) {
    case 1:
    case 2: {
      const bytes = packBits((res as { bits: boolean[] }).bits);
      return Buffer.concat([Buffer.from([res.fc, bytes.length]), bytes]);
    }
    case 3:
    case 4: {
      const data = (res as { data: Buffer }).data;
      return Buffer.concat([Buffer.from([res.fc, data.length]), data]);
    }
    case 5: {
      const r = res as { address: number; value: boolean };
      return header(5, r.address, r.value ? 0xff00 : 0);
    }
    case 6: {
      const r = res as { address: number; value: number };
      return header(6, r.address, r.value & 0xffff);
    }
    default: {
      const r = res as { fc: 15 | 16; address: number; quantity: number };
      return header(r.fc, r.address, r.quantity);
    }
  }
}

// ---- lengths (for RTU framing, where the PDU length is implied by its content) --------------

/**
 * The PDU length implied by the first bytes of `pdu`: a number, `undefined` when more bytes are
 * needed to tell, or -1 for a function code this codec does not speak.
 */
export function pduLength(pdu: Buffer, kind: 'request' | 'response'): number | undefined {
  if (pdu.length < 1) return undefined;
  const fc = pdu[0];
  if (kind === 'response' && fc & EXCEPTION_BIT) return 2;
  switch (fc) {
    case 1: case 2: case 3: case 4:
      if (kind === 'request') return 5;
      return pdu.length < 2 ? undefined : 2 + pdu[1];
    case 5: case 6:
      return 5;
    case 15: case 16:
      if (kind === 'response') return 5;
      return pdu.length < 6 ? undefined : 6 + pdu[5];
    case 43:
      return deviceIdLength(pdu, kind);
    default:
      return -1;
  }
}

/** §6.21: a request is 4 bytes; a response 7 plus, per object, its id, length and value. */
function deviceIdLength(pdu: Buffer, kind: 'request' | 'response'): number | undefined {
  if (pdu.length < 2) return undefined;
  if (pdu[1] !== MEI_DEVICE_IDENTIFICATION) return -1;
  if (kind === 'request') return 4;
  if (pdu.length < 7) return undefined;
  let at = 7;
  for (let i = 0; i < pdu[6]!; i++) {
    if (pdu.length < at + 2) return undefined;
    at += 2 + pdu[at + 1]!;
  }
  return at;
}

// ---- decoders -------------------------------------------------------------------------------

export function decodeRequest(pdu: Buffer): ModbusRequest | DecodeError {
  if (pdu.length < 1) return { error: 'empty PDU' };
  if (pdu.length > MAX_PDU_LENGTH) return { error: `PDU of ${pdu.length} bytes exceeds ${MAX_PDU_LENGTH} (§4.1)` };
  const fc = pdu[0];
  const expected = pduLength(pdu, 'request');
  if (expected === -1) return { error: `unsupported function code ${fc}` };
  if (expected === undefined || pdu.length !== expected) {
    return { error: `function ${fc}: PDU of ${pdu.length} bytes, expected ${expected ?? 'more'}` };
  }
  if (fc === 43) return { fc: 43, readCode: pdu[2]!, objectId: pdu[3]! };
  const address = pdu.readUInt16BE(1);
  const n = pdu.readUInt16BE(3);
  switch (fc) {
    case 1: case 2: case 3: case 4: {
      const max = fc <= 2 ? MAX_READ_BITS : MAX_READ_REGISTERS;
      if (n < 1 || n > max) return { error: `function ${fc}: quantity ${n} outside 1..${max} (§6.${fc})` };
      return { fc: fc as ReadFunction, address, quantity: n };
    }
    case 5:
      if (n !== 0 && n !== 0xff00) return { error: `function 5: value 0x${n.toString(16)} is neither 0xFF00 nor 0x0000 (§6.5)` };
      return { fc: 5, address, value: n === 0xff00 };
    case 6:
      return { fc: 6, address, value: n };
    case 15: {
      const bytes = pdu.subarray(6);
      if (n < 1 || n > MAX_WRITE_BITS || bytes.length !== Math.ceil(n / 8)) {
        return { error: `function 15: quantity ${n} does not match byte count ${bytes.length} (§6.11)` };
      }
      return { fc: 15, address, values: unpackBits(bytes).slice(0, n) };
    }
    default: {
      const data = pdu.subarray(6);
      if (n < 1 || n > MAX_WRITE_REGISTERS || data.length !== n * 2) {
        return { error: `function 16: quantity ${n} does not match byte count ${data.length} (§6.12)` };
      }
      return { fc: 16, address, data: Buffer.from(data) };
    }
  }
}

export function decodeResponse(pdu: Buffer): ModbusResponse | DecodeError {
  if (pdu.length < 1) return { error: 'empty PDU' };
  if (pdu.length > MAX_PDU_LENGTH) return { error: `PDU of ${pdu.length} bytes exceeds ${MAX_PDU_LENGTH} (§4.1)` };
  const fc = pdu[0];
  const expected = pduLength(pdu, 'response');
  if (expected === -1) return { error: `unsupported function code ${fc}` };
  if (expected === undefined || pdu.length !== expected) {
    return { error: `function ${fc & 0x7f}: PDU of ${pdu.length} bytes, expected ${expected ?? 'more'}` };
  }
  if (fc & EXCEPTION_BIT) return { fc: fc & 0x7f, exception: pdu[1] };
  if (fc === 43) {
    const objects: DeviceObject[] = [];
    for (let at = 7; at < pdu.length; at += 2 + pdu[at + 1]!) objects.push({ id: pdu[at]!, value: Buffer.from(pdu.subarray(at + 2, at + 2 + pdu[at + 1]!)) });
    return { fc: 43, readCode: pdu[2]!, conformity: pdu[3]!, moreFollows: pdu[4] === 0xff, nextObjectId: pdu[5]!, objects };
  }
  switch (fc) {
    case 1: case 2:
      return { fc: fc as 1 | 2, bits: unpackBits(pdu.subarray(2)) };
    case 3: case 4:
      if (pdu[1] % 2 !== 0) return { error: `function ${fc}: odd byte count ${pdu[1]} (§6.${fc})` };
      return { fc: fc as 3 | 4, data: Buffer.from(pdu.subarray(2)) };
    case 5: {
      const v = pdu.readUInt16BE(3);
      if (v !== 0 && v !== 0xff00) return { error: `function 5: value 0x${v.toString(16)} is neither 0xFF00 nor 0x0000 (§6.5)` };
      return { fc: 5, address: pdu.readUInt16BE(1), value: v === 0xff00 };
    }
    case 6:
      return { fc: 6, address: pdu.readUInt16BE(1), value: pdu.readUInt16BE(3) };
    default:
      return { fc: fc as 15 | 16, address: pdu.readUInt16BE(1), quantity: pdu.readUInt16BE(3) };
  }
}
