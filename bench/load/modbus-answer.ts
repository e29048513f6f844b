// The scale benchmark's device logic (bench/load/modbus-farm.ts), pure so that it is tested
// (test/bench/scale.test.ts): the answer to one Modbus TCP request frame (MBAP header + PDU,
// Modbus Messaging on TCP/IP Implementation Guide V1.0b §3.1.3).

/** Value of register `address` at clock step `tick`: changes with every step. */
export const registerValue = (address: number, tick: number): number => (address * 7 + tick) & 0x7fff;

/**
 * The response to `frame` (a whole MBAP frame): FC 3 / FC 4 with quantity 1..125 and the range
 * inside 0..65535 are answered with `registerValue`s; a bad quantity or range is exception 3 / 2,
 * any other function code exception 1 (Modbus Application Protocol V1.1b3 §6.3, §6.4, §7).
 * Undefined for a frame too short to carry a function code.
 */
export function answer(frame: Buffer, tick: number): Buffer | undefined {
  if (frame.length < 8) return undefined;
  const fc = frame[7];
  const reply = (pdu: Buffer): Buffer => {
    const out = Buffer.allocUnsafe(7 + pdu.length);
    frame.copy(out, 0, 0, 4); // transaction id and protocol id
    out.writeUInt16BE(pdu.length + 1, 4);
    out[6] = frame[6]; // unit id
    pdu.copy(out, 7);
    return out;
  };
  const exception = (code: number) => reply(Buffer.from([fc | 0x80, code]));
  if (fc !== 3 && fc !== 4) return exception(1);
  if (frame.length < 12) return exception(3);
  const address = frame.readUInt16BE(8);
  const quantity = frame.readUInt16BE(10);
  if (quantity < 1 || quantity > 125) return exception(3);
  if (address + quantity > 0x10000) return exception(2);
  const pdu = Buffer.allocUnsafe(2 + quantity * 2);
  pdu[0] = fc;
  pdu[1] = quantity * 2;
  for (let i = 0; i < quantity; i++) pdu.writeUInt16BE(registerValue(address + i, tick), 2 + i * 2);
  return reply(pdu);
}
