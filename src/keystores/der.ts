// A minimal ASN.1 DER reader and writer (ITU-T X.690, sections 8 and 10): only what certificates, names and
// certification requests need. The reader is bounded: it refuses a length past the end of its
// input, an indefinite length (not DER, X.690 10.1), a length of more than four octets, a tag of
// the high-tag-number form, and nesting deeper than MAX_DEPTH, each with the offset of the fault.

/** Nesting a certificate never needs (a Name is four levels, an extension about six). */
export const MAX_DEPTH = 32;

export class DerError extends Error {
  override readonly name = 'DerError';
}

export interface Tlv {
  /** The identifier octet (class, constructed bit, tag number below 31). */
  tag: number;
  /** Offset of the identifier octet in the input. */
  start: number;
  /** Offset of the first content octet. */
  contentStart: number;
  /** Offset past the last content octet. */
  end: number;
}

export const TAG = {
  BOOLEAN: 0x01,
  INTEGER: 0x02,
  BIT_STRING: 0x03,
  OCTET_STRING: 0x04,
  NULL: 0x05,
  OID: 0x06,
  UTF8_STRING: 0x0c,
  PRINTABLE_STRING: 0x13,
  T61_STRING: 0x14,
  IA5_STRING: 0x16,
  UTC_TIME: 0x17,
  GENERALIZED_TIME: 0x18,
  UNIVERSAL_STRING: 0x1c,
  BMP_STRING: 0x1e,
  SEQUENCE: 0x30,
  SET: 0x31,
} as const;

/** Reads the element at `at`; its content must end by `limit`. */
export function readTlv(buf: Buffer, at: number, limit = buf.length): Tlv {
  if (at + 2 > limit) throw new DerError(`truncated element at offset ${at}`);
  const tag = buf[at];
  if ((tag & 0x1f) === 0x1f) throw new DerError(`unsupported high tag number at offset ${at}`);
  let len = buf[at + 1];
  let p = at + 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n === 0) throw new DerError(`indefinite length at offset ${at} (not DER)`);
    if (n > 4) throw new DerError(`length of ${n} octets at offset ${at}`);
    if (p + n > limit) throw new DerError(`truncated length at offset ${at}`);
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + buf[p + i];
    // X.690 10.1: the definite form in the fewest octets.
    if (len < 0x80 || buf[p] === 0) throw new DerError(`non-minimal length at offset ${at}`);
    p += n;
  }
  if (p + len > limit) throw new DerError(`length ${len} at offset ${at} runs past the end of its container`);
  return { tag, start: at, contentStart: p, end: p + len };
}

/** The elements inside a constructed element (or in `buf` between `from` and `to`). */
export function children(buf: Buffer, el: Tlv): Tlv[] {
  const out: Tlv[] = [];
  for (let p = el.contentStart; p < el.end; ) {
    const c = readTlv(buf, p, el.end);
    out.push(c);
    p = c.end;
  }
  return out;
}

/** Reads one whole DER value: exactly one element, nothing after it, nesting bounded. */
export function readDer(buf: Buffer): Tlv {
  const top = readTlv(buf, 0);
  if (top.end !== buf.length) throw new DerError(`${buf.length - top.end} bytes after the end of the value`);
  checkNesting(buf, top, 0);
  return top;
}

function checkNesting(buf: Buffer, el: Tlv, depth: number): void {
  if (depth > MAX_DEPTH) throw new DerError(`nesting deeper than ${MAX_DEPTH} at offset ${el.start}`);
  if (el.tag & 0x20) for (const c of children(buf, el)) checkNesting(buf, c, depth + 1);
}

export const content = (buf: Buffer, el: Tlv): Buffer => buf.subarray(el.contentStart, el.end);

/** Expects `el` to carry `tag`, naming `what` otherwise. */
export function expect(el: Tlv, tag: number, what: string): Tlv {
  if (el.tag !== tag) throw new DerError(`${what}: expected tag 0x${tag.toString(16)} at offset ${el.start}, found 0x${el.tag.toString(16)}`);
  return el;
}

export function readOid(b: Buffer): string {
  if (b.length === 0 || b.length > 64) throw new DerError('malformed object identifier');
  const parts: number[] = [];
  let v = 0;
  for (let i = 0; i < b.length; i++) {
    v = v * 128 + (b[i] & 0x7f);
    if (v > Number.MAX_SAFE_INTEGER / 128) throw new DerError('object identifier arc too large');
    if ((b[i] & 0x80) === 0) {
      if (parts.length === 0) parts.push(v < 80 ? Math.floor(v / 40) : 2, v < 80 ? v % 40 : v - 80);
      else parts.push(v);
      v = 0;
    } else if (i === b.length - 1) throw new DerError('truncated object identifier');
  }
  return parts.join('.');
}

// ---- writer ----------------------------------------------------------------------------------

function lengthOctets(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

export function tlv(tag: number, ...parts: Buffer[]): Buffer {
  const body = Buffer.concat(parts);
  return Buffer.concat([Buffer.from([tag]), lengthOctets(body.length), body]);
}

export const sequence = (...parts: Buffer[]): Buffer => tlv(TAG.SEQUENCE, ...parts);
export const set = (...parts: Buffer[]): Buffer => tlv(TAG.SET, ...parts);
export const nullValue = (): Buffer => Buffer.from([TAG.NULL, 0]);
export const bitString = (bytes: Buffer): Buffer => tlv(TAG.BIT_STRING, Buffer.from([0]), bytes);
export const explicit = (n: number, ...parts: Buffer[]): Buffer => tlv(0xa0 | n, ...parts);

export function oid(dotted: string): Buffer {
  const parts = dotted.split('.').map(Number);
  const out = [parts[0] * 40 + parts[1]];
  for (const p of parts.slice(2)) {
    const enc = [p & 0x7f];
    for (let v = Math.floor(p / 128); v > 0; v = Math.floor(v / 128)) enc.unshift(0x80 | (v & 0x7f));
    out.push(...enc);
  }
  return tlv(TAG.OID, Buffer.from(out));
}

/** A non-negative INTEGER from its big-endian magnitude (X.690 8.3: minimal, sign bit clear). */
export function unsignedInteger(magnitude: Buffer): Buffer {
  let b = magnitude;
  while (b.length > 1 && b[0] === 0 && b[1] < 0x80) b = b.subarray(1);
  if (b.length === 0) b = Buffer.from([0]);
  if (b[0] >= 0x80) b = Buffer.concat([Buffer.from([0]), b]);
  return tlv(TAG.INTEGER, b);
}

export const smallInteger = (n: number): Buffer => unsignedInteger(Buffer.from([n]));

/** RFC 5280 §4.1.2.5: UTCTime through 2049, GeneralizedTime from 2050. */
export function time(d: Date): Buffer {
  const iso = d.toISOString().replace(/[-:T]/g, '').slice(0, 14) + 'Z';
  return d.getUTCFullYear() < 2050 ? tlv(TAG.UTC_TIME, Buffer.from(iso.slice(2))) : tlv(TAG.GENERALIZED_TIME, Buffer.from(iso));
}
