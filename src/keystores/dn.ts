// Distinguished names: Kura's text form to DER and DER back to the two texts Kura's keystore DTOs
// show. The text is what Java's X500Principal reads (RFC 2253, with RFC 1779's `;` separators and
// quoted values): `CN=device-1, O=Example, C=IT`, the most specific name first; `\,` `\+` `\"` `\\`
// and `\XX` (hex) escape, `"…"` quotes. In DER the order is reversed: the first RDN is the least
// specific (RFC 5280 §4.1.2.4). A keyword may also be given as its dotted OID (`2.5.4.3=…`).

import { DerError, TAG, children, content, expect, oid, readOid, sequence, set, tlv, type Tlv } from './der.js';

export class DnError extends Error {
  override readonly name = 'DnError';
}

/** DN text bound; a Name of a few RDNs is a hundred characters. */
export const MAX_DN_TEXT = 1024;
const MAX_AVAS = 32;
const MAX_VALUE = 256;

interface Keyword {
  name: string;
  oid: string;
  /** How the value is encoded (RFC 5280 Appendix A: DirectoryString, or a fixed string type). */
  type: 'printable' | 'ia5' | 'utf8';
  /** RFC 2253 §2.3 names only these by keyword; the others are written as dotted OIDs. */
  rfc2253?: boolean;
}

const KEYWORDS: readonly Keyword[] = [
  { name: 'CN', oid: '2.5.4.3', type: 'utf8', rfc2253: true },
  { name: 'SURNAME', oid: '2.5.4.4', type: 'utf8' },
  { name: 'SERIALNUMBER', oid: '2.5.4.5', type: 'printable' },
  { name: 'C', oid: '2.5.4.6', type: 'printable', rfc2253: true },
  { name: 'L', oid: '2.5.4.7', type: 'utf8', rfc2253: true },
  { name: 'ST', oid: '2.5.4.8', type: 'utf8', rfc2253: true },
  { name: 'STREET', oid: '2.5.4.9', type: 'utf8', rfc2253: true },
  { name: 'O', oid: '2.5.4.10', type: 'utf8', rfc2253: true },
  { name: 'OU', oid: '2.5.4.11', type: 'utf8', rfc2253: true },
  { name: 'T', oid: '2.5.4.12', type: 'utf8' },
  { name: 'GIVENNAME', oid: '2.5.4.42', type: 'utf8' },
  { name: 'INITIALS', oid: '2.5.4.43', type: 'utf8' },
  { name: 'GENERATION', oid: '2.5.4.44', type: 'utf8' },
  { name: 'DNQUALIFIER', oid: '2.5.4.46', type: 'printable' },
  { name: 'DC', oid: '0.9.2342.19200300.100.1.25', type: 'ia5', rfc2253: true },
  { name: 'UID', oid: '0.9.2342.19200300.100.1.1', type: 'utf8', rfc2253: true },
  { name: 'EMAILADDRESS', oid: '1.2.840.113549.1.9.1', type: 'ia5' },
];
const ALIASES: Record<string, string> = { S: 'ST', EMAIL: 'EMAILADDRESS', DNQ: 'DNQUALIFIER' };

const byName = (n: string) => KEYWORDS.find((k) => k.name === (ALIASES[n] ?? n));
const byOid = (o: string) => KEYWORDS.find((k) => k.oid === o);

export interface Ava {
  oid: string;
  value: string;
}

/** Parses DN text into RDNs, most specific first (as written). */
export function parseDn(text: string): Ava[][] {
  if (typeof text !== 'string' || text.trim() === '') throw new DnError('the distinguished name is empty');
  if (text.length > MAX_DN_TEXT) throw new DnError(`the distinguished name is longer than ${MAX_DN_TEXT} characters`);
  const rdns: Ava[][] = [[]];
  let avas = 0;
  let i = 0;
  const skipSpace = () => {
    while (text[i] === ' ') i++;
  };
  for (;;) {
    skipSpace();
    const eq = text.indexOf('=', i);
    if (eq < 0) throw new DnError(`expected keyword=value at character ${i + 1}`);
    const key = text.slice(i, eq).trim();
    const kw = byName(key.toUpperCase());
    let keyOid: string;
    if (kw) keyOid = kw.oid;
    else if (/^(OID\.)?[0-2](\.\d{1,9}){1,20}$/i.test(key)) keyOid = key.replace(/^OID\./i, '');
    else throw new DnError(`unknown attribute keyword "${key.slice(0, 40)}"`);
    i = eq + 1;
    skipSpace();
    let value = '';
    if (text[i] === '"') {
      i++;
      for (;;) {
        if (i >= text.length) throw new DnError('unterminated quoted value');
        const c = text[i];
        if (c === '"') break;
        if (c === '\\') {
          value += text[i + 1] ?? '';
          i += 2;
        } else {
          value += c;
          i++;
        }
      }
      i++;
      skipSpace();
    } else if (text[i] === '#') throw new DnError('BER-encoded (#hex) attribute values are not supported');
    else {
      const bytes: number[] = [];
      let trailing = 0;
      const flush = () => {
        if (bytes.length) value += Buffer.from(bytes).toString('utf8');
        bytes.length = 0;
      };
      while (i < text.length && !',;+'.includes(text[i])) {
        const c = text[i];
        if (c === '\\') {
          const h = text.slice(i + 1, i + 3);
          if (/^[0-9A-Fa-f]{2}$/.test(h)) {
            bytes.push(parseInt(h, 16));
            i += 3;
          } else if (i + 1 < text.length && ',=+<>#;\\" '.includes(text[i + 1])) {
            flush();
            value += text[i + 1];
            i += 2;
          } else throw new DnError(`bad escape at character ${i + 1}`);
          trailing = 0;
        } else {
          flush();
          if ('<>"='.includes(c)) throw new DnError(`character '${c}' must be escaped at character ${i + 1}`);
          value += c;
          trailing = c === ' ' ? trailing + 1 : 0;
          i++;
        }
      }
      flush();
      if (trailing) value = value.slice(0, -trailing);
    }
    if (value.length === 0) throw new DnError(`empty value for ${key}`);
    if (value.length > MAX_VALUE) throw new DnError(`the value of ${key} is longer than ${MAX_VALUE} characters`);
    if (++avas > MAX_AVAS) throw new DnError(`more than ${MAX_AVAS} attributes`);
    checkValue(keyOid, key, value);
    rdns[rdns.length - 1].push({ oid: keyOid, value });
    if (i >= text.length) break;
    const sep = text[i++];
    if (sep === '+') continue;
    if (sep !== ',' && sep !== ';') throw new DnError(`expected , or + at character ${i}`);
    rdns.push([]);
  }
  return rdns;
}

const PRINTABLE = /^[A-Za-z0-9 '()+,\-./:=?]*$/;

function checkValue(o: string, key: string, value: string): void {
  const kw = byOid(o);
  if (kw?.name === 'C' && !/^[A-Za-z]{2}$/.test(value)) throw new DnError(`C must be a two-letter country code, not "${value.slice(0, 20)}"`);
  if (kw?.type === 'printable' && !PRINTABLE.test(value)) throw new DnError(`${key} allows only PrintableString characters`);
  if (kw?.type === 'ia5' && !/^[\x00-\x7f]*$/.test(value)) throw new DnError(`${key} allows only ASCII characters`);
}

/** The DER Name of parsed RDNs (RFC 5280 §4.1.2.4: least specific first). */
export function encodeDn(rdns: Ava[][]): Buffer {
  return sequence(
    ...[...rdns].reverse().map((rdn) =>
      set(
        // X.690 11.6: the members of a SET OF in DER are in the order of their encodings.
        ...rdn
          .map((a) => {
            const type = byOid(a.oid)?.type ?? 'utf8';
            const tag = type === 'printable' ? TAG.PRINTABLE_STRING : type === 'ia5' ? TAG.IA5_STRING : TAG.UTF8_STRING;
            return sequence(oid(a.oid), tlv(tag, Buffer.from(a.value, 'utf8')));
          })
          .sort(Buffer.compare),
      ),
    ),
  );
}

export const dnFromText = (text: string): Buffer => encodeDn(parseDn(text));

interface DecodedAva {
  oid: string;
  /** Undefined when the value is not a string type (shown as #hex). */
  text: string | undefined;
  der: Buffer;
}

/** Reads a DER Name (`name` inside `buf`) as RDNs in DER order. */
export function decodeName(buf: Buffer, name: Tlv): DecodedAva[][] {
  expect(name, TAG.SEQUENCE, 'Name');
  return children(buf, name).map((rdn) => {
    expect(rdn, TAG.SET, 'RelativeDistinguishedName');
    return children(buf, rdn).map((ava) => {
      const [type, value] = children(buf, expect(ava, TAG.SEQUENCE, 'AttributeTypeAndValue'));
      if (!type || !value) throw new DerError('AttributeTypeAndValue: missing type or value');
      const v = content(buf, value);
      let text: string | undefined;
      if (value.tag === TAG.BMP_STRING) text = v.length % 2 ? undefined : Buffer.from(v).swap16().toString('utf16le');
      else if (value.tag === TAG.UNIVERSAL_STRING) text = undefined;
      else if ([TAG.UTF8_STRING, TAG.PRINTABLE_STRING, TAG.IA5_STRING, TAG.T61_STRING].includes(value.tag as never)) text = v.toString(value.tag === TAG.T61_STRING ? 'latin1' : 'utf8');
      return { oid: readOid(content(buf, expect(type, TAG.OID, 'attribute type'))), text, der: buf.subarray(value.start, value.end) };
    });
  });
}

function escape2253(v: string): string {
  let out = v.replace(/[,+"\\<>;]/g, (c) => `\\${c}`);
  if (out.startsWith('#') || out.startsWith(' ')) out = `\\${out}`;
  if (out.endsWith(' ')) out = `${out.slice(0, -1)}\\ `;
  return out;
}

/** A name's RDNs most specific first (as Java writes them), each AVA written by `ava`. */
function nameText(rdns: DecodedAva[][], ava: (a: DecodedAva) => string, plus: string, comma: string): string {
  return [...rdns]
    .reverse()
    .map((rdn) => rdn.map(ava).join(plus))
    .join(comma);
}

/** RFC 2253 text, as X500Principal.getName() writes it (Kura's `issuer`): most specific first, `,` between RDNs. */
export function rfc2253(rdns: DecodedAva[][]): string {
  return nameText(
    rdns,
    (a) => {
      const kw = byOid(a.oid);
      if (kw?.rfc2253 && a.text !== undefined) return `${kw.name}=${escape2253(a.text)}`;
      return `${a.oid}=#${a.der.toString('hex')}`;
    },
    '+',
    ',',
  );
}

/** The text Java's Principal.getName() gives a certificate's subject (Kura's `subjectDN`): `, ` between RDNs, quoted where needed. */
export function subjectText(rdns: DecodedAva[][]): string {
  return nameText(
    rdns,
    (a) => {
      const kw = byOid(a.oid);
      const key = kw?.name ?? `OID.${a.oid}`;
      if (a.text === undefined) return `${key}=#${a.der.toString('hex')}`;
      const quote = /[,=\n+<>#;\\"]/.test(a.text) || a.text !== a.text.trim();
      return `${key}=${quote ? `"${a.text.replace(/["\\]/g, (c) => `\\${c}`)}"` : a.text}`;
    },
    ' + ',
    ', ',
  );
}
