// Modbus protocol constants (Modbus Application Protocol Specification V1.1b3, "MBAP" = §4.1,
// function codes = §6, exception codes = §7; RTU framing = Modbus over Serial Line V1.02 §2.5).

/** Quantity limits of one request (§6.1–6.4, §6.11, §6.12). */
export const MAX_READ_BITS = 2000;
export const MAX_READ_REGISTERS = 125;
export const MAX_WRITE_BITS = 1968;
export const MAX_WRITE_REGISTERS = 123;

/** A function code with this bit set is an exception response (§7). */
export const EXCEPTION_BIT = 0x80;

export const EXCEPTION_NAMES: Record<number, string> = {
  1: 'ILLEGAL FUNCTION',
  2: 'ILLEGAL DATA ADDRESS',
  3: 'ILLEGAL DATA VALUE',
  4: 'SERVER DEVICE FAILURE',
  5: 'ACKNOWLEDGE',
  6: 'SERVER DEVICE BUSY',
  8: 'MEMORY PARITY ERROR',
  10: 'GATEWAY PATH UNAVAILABLE',
  11: 'GATEWAY TARGET DEVICE FAILED TO RESPOND',
};

export function exceptionName(code: number): string {
  return EXCEPTION_NAMES[code] ?? 'UNKNOWN EXCEPTION';
}

/** MBAP header: transaction id, protocol id (0 = Modbus), length, unit id (§4.1). */
export const MBAP_HEADER_LENGTH = 7;
/** Largest PDU: 253 bytes (§4.1), so the MBAP length field (unit id + PDU) is at most 254. */
export const MAX_PDU_LENGTH = 253;

export const TABLES = ['COILS', 'DISCRETE_INPUTS', 'INPUT_REGISTERS', 'HOLDING_REGISTERS'] as const;
export type Table = (typeof TABLES)[number];

export const READ_FC: Record<Table, 1 | 2 | 3 | 4> = {
  COILS: 1,
  DISCRETE_INPUTS: 2,
  HOLDING_REGISTERS: 3,
  INPUT_REGISTERS: 4,
};

export function isBitTable(table: Table): boolean {
  return table === 'COILS' || table === 'DISCRETE_INPUTS';
}
