// An asset's channels as CSV, in the format of Kura's web UI asset channel download and upload
// (docs/configuration.md "Channels as CSV"): a header row of channel property keys, one row per
// channel, RFC 4180 quoting as Apache Commons CSV writes it (CSVFormat.RFC4180: comma, double quote,
// CRLF after every row). One writer (`channelsToCsv`) and one reader (`parseChannelsCsv`); the
// reader does bounded work whatever it is given and reports every problem by row and column.
//
// Kura's rules kept here: the generic channel keys are written without their `+` (`value.type`), a
// driver's as they are (`unit.id`); a column maps to the key of its header whatever the order;
// values are trimmed; an option-valued key must be one of its options; a missing column takes the
// default of a required key; in a name, space, `#` and `+` become `_`. Where Kura is silent or
// lossy, gatewayd refuses instead (each in COMPATIBILITY.md "Channels as CSV"): a duplicate name, a
// row with an empty required value (Kura skips the row), a BOOLEAN other than true/false; and any
// problem at all applies nothing.

import { Buffer } from 'node:buffer';

/** A channel property value as the configuration holds it (bigint: a LONG beyond 2^53). */
export type ChannelPropertyValue = string | number | boolean | bigint;

/** One channel: its name and its properties by key (`type`, `value.type`, `unit.id`, …, no `+`). */
export interface CsvChannel {
  name: string;
  props: Record<string, ChannelPropertyValue>;
}

/** A channel read from a file, with the row it came from (for later checks' messages). */
export interface ParsedCsvChannel extends CsvChannel {
  row: number;
}

/**
 * What the caller knows of one channel property, shaped like a configuration definition's AD
 * (docs/configuration-v2.md), so an asset definition's channel ADs can be passed as they are.
 */
export interface ChannelPropertyDefinition {
  /** Kura's property id: the generic channel keys carry a `+` (`+type`), a driver's do not (`unit.id`). */
  readonly id: string;
  readonly type: 'STRING' | 'PASSWORD' | 'BOOLEAN' | 'INTEGER' | 'LONG' | 'SHORT' | 'BYTE' | 'DOUBLE' | 'FLOAT' | 'CHAR';
  readonly required?: boolean;
  readonly default?: unknown;
  readonly options?: readonly string[];
  /** Numbers: the range; STRING: the length (Kura's AD min/max). */
  readonly min?: number;
  readonly max?: number;
  /** A gatewayd key Kura does not have: its column comes after the driver's. */
  readonly extension?: boolean;
  /**
   * The key holds a channel value (the simulator's `initial`): its type is the row's `value.type`
   * (BOOLEAN, INTEGER, LONG, FLOAT, DOUBLE; text for STRING and BYTE_ARRAY), not `type`.
   */
  readonly valueTyped?: boolean;
}

export interface ChannelsCsvLimits {
  /** Channels (data rows) at most. */
  maxRows: number;
  /** Size of the file in UTF-8 bytes at most. */
  maxBytes: number;
}

/**
 * One problem of a file. `row` is the spreadsheet's row (the header is row 1; a quoted value over
 * several lines is one row), absent for the file as a whole; `columnIndex` is 1-based (column A).
 */
export interface ChannelsCsvProblem {
  row?: number;
  column?: string;
  columnIndex?: number;
  message: string;
}

export type ChannelsCsvResult =
  | { ok: true; channels: ParsedCsvChannel[]; columns: string[] }
  | { ok: false; problems: ChannelsCsvProblem[] };

export type ChannelsMergeMode = 'replace' | 'merge';
export const CHANNELS_MERGE_MODES: readonly ChannelsMergeMode[] = Object.freeze(['replace', 'merge']);

const NAME = 'name';
// The WireAsset's `listen` flag: Kura's UI writes it, gatewayd has no wire graph. Accepted and
// dropped, as the configuration accepts `+listen` (docs/configuration-v2.md).
const KURA_ONLY_COLUMNS: readonly string[] = Object.freeze(['listen']);
// The channel name rule of the configuration (docs/configuration.md "assets"): 1-255 characters,
// none of / # + , nor whitespace or control characters.
const CHANNEL_NAME_RULE = /^[^/#+,\s\u0000-\u001f\u007f]{1,255}$/;
/** Problems listed at most; the rest of the file is not read. */
export const MAX_CSV_PROBLEMS = 100;
/** Characters of one value at most (a unit, a driver address): a longer one is refused. */
export const MAX_CSV_VALUE_CHARS = 65_536;
const CR = 13;
const LF = 10;
const COMMA = 44;
const QUOTE = 34;

// ---- writing --------------------------------------------------------------------------------------

interface Column {
  name: string;
  def: ChannelPropertyDefinition | undefined;
}

const columnOf = (id: string) => (id.startsWith('+') ? id.slice(1) : id);

/** The file's columns: name, Kura's generic keys, the driver's, gatewayd's extensions, in the order given. */
function columnsOf(definitions: readonly ChannelPropertyDefinition[]): Column[] {
  const generic: Column[] = [];
  const driver: Column[] = [];
  const extension: Column[] = [];
  const seen = new Set<string>([NAME]);
  for (const def of definitions) {
    const name = columnOf(def.id);
    if (def.id === `+${NAME}`) continue;
    // Kura tells a driver key `x` from a generic `+x` by column position; the configuration file
    // cannot (both are `x` there), so such a pair is a caller's mistake.
    if (seen.has(name)) throw new TypeError(`two channel definitions for the column ${name}`);
    seen.add(name);
    (def.id.startsWith('+') ? generic : def.extension ? extension : driver).push({ name, def });
  }
  return [{ name: NAME, def: definitions.find((d) => d.id === `+${NAME}`) }, ...generic, ...driver, ...extension];
}

// Commons CSV 1.4's minimal quoting (CSVFormat.printAndQuote, the version Kura ships): a value is
// quoted when it holds a comma, quote, CR or LF, starts with a character up to `#` or ends with one
// up to space, and, first in its row, starts with anything but an ASCII letter or digit. An empty
// string is written `""` wherever it is (Commons does so first in a row only), so that it reads
// back as an empty string where an empty cell is a key not set.
function quoted(value: string, first: boolean): string {
  if (value === '') return '""';
  const c = value.charCodeAt(0);
  const alnum = (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
  const quote = (first && !alnum) || c <= 35 || value.charCodeAt(value.length - 1) <= 32 || /[",\r\n]/.test(value);
  return quote ? `"${value.replaceAll('"', '""')}"` : value;
}

// Spreadsheets run a cell that starts with = + - @ (or a tab or CR before one) as a formula
// (OWASP "CSV Injection"). Free text (names, STRING values) that starts so is written with a `'`
// before it, and one such `'` is taken off when read, so every text goes through unchanged; a text
// that already starts with `'`s before such a character gets one more. Numbers and option values
// are never prefixed. Kura has no such guard: its import keeps the `'`.
const FORMULA_START = /^'*[=+\-@\t\r]/;
const GUARDED_FORMULA = /^'+[=+\-@\t\r]/;
const guardFormula = (text: string) => (FORMULA_START.test(text) ? `'${text}` : text);
const unguardFormula = (text: string) => (GUARDED_FORMULA.test(text) ? text.slice(1) : text);
const isFreeText = (def: ChannelPropertyDefinition | undefined) =>
  !def || ((def.type === 'STRING' || def.type === 'PASSWORD' || def.type === 'CHAR') && !def.options?.length);

/** Java's Double.toString: plain decimal in [1e-3, 1e7) with a fraction digit, else `d.dddE±n`. */
function javaDouble(d: number): string {
  if (!Number.isFinite(d)) return Number.isNaN(d) ? 'NaN' : d > 0 ? 'Infinity' : '-Infinity';
  if (d === 0) return Object.is(d, -0) ? '-0.0' : '0.0';
  const abs = Math.abs(d);
  if (abs >= 1e-3 && abs < 1e7) {
    const s = String(d);
    return s.includes('.') ? s : `${s}.0`;
  }
  const [mantissa, exponent] = d.toExponential().split('e') as [string, string];
  return `${mantissa.includes('.') ? mantissa : `${mantissa}.0`}E${exponent.replace('+', '')}`;
}

const VALUE_TYPED: Readonly<Record<string, ChannelPropertyDefinition['type']>> = Object.freeze({
  BOOLEAN: 'BOOLEAN',
  INTEGER: 'INTEGER',
  LONG: 'LONG',
  FLOAT: 'FLOAT',
  DOUBLE: 'DOUBLE',
});

/** The definition that types a key in this channel: a value-typed key takes the channel's value.type. */
function definitionIn(def: ChannelPropertyDefinition, props: Record<string, ChannelPropertyValue>): ChannelPropertyDefinition {
  if (!def.valueTyped) return def;
  const vt = props['value.type'];
  return { id: def.id, type: (typeof vt === 'string' && VALUE_TYPED[vt]) || 'STRING', required: def.required };
}

/** A value's text as Kura's export writes it (Java's `toString` of the typed value). */
function valueText(value: ChannelPropertyValue, def: ChannelPropertyDefinition | undefined): string {
  if (typeof value === 'number' && (def?.type === 'DOUBLE' || def?.type === 'FLOAT')) return javaDouble(value);
  const text = typeof value === 'number' ? javaNumber(value) : String(value);
  return isFreeText(def) && typeof value === 'string' ? guardFormula(text) : text;
}

// A number in a key that is no DOUBLE: integers as digits, anything else as Java writes a double.
const javaNumber = (n: number) => (Number.isSafeInteger(n) ? String(n) : javaDouble(n));

/**
 * The channels as Kura's CSV: the header (`name`, Kura's generic keys without `+`, the driver's
 * keys, gatewayd's extensions, then any key a channel has that no definition names, so nothing is
 * lost), then one row per channel in the order given, each line ended by CRLF. A key a channel does
 * not set is an empty cell; a PASSWORD value is never written. `bom` puts a UTF-8 byte order mark
 * first, for spreadsheets that otherwise read the file as their local code page (Kura writes none,
 * and its import does not skip one).
 */
export function channelsToCsv(
  channels: readonly CsvChannel[],
  definitions: readonly ChannelPropertyDefinition[],
  options: { bom?: boolean } = {},
): string {
  const columns = columnsOf(definitions);
  const known = new Set(columns.map((c) => c.name));
  for (const ch of channels) {
    for (const key of Object.keys(ch.props)) {
      if (!known.has(key)) {
        known.add(key);
        columns.push({ name: key, def: undefined });
      }
    }
  }
  const lines: string[] = [columns.map((c, i) => quoted(c.name, i === 0)).join(',')];
  for (const ch of channels) {
    let line = quoted(guardFormula(ch.name), true);
    for (let i = 1; i < columns.length; i++) {
      const { name, def } = columns[i];
      // A required key is always written, its default when the channel leaves it to the daemon:
      // an empty cell there is a problem when the file is read (Kura's rule).
      const value = Object.hasOwn(ch.props, name) ? ch.props[name] : def?.required ? defaultOf(def) : undefined;
      line += ',';
      if (value != null && def?.type !== 'PASSWORD') line += quoted(valueText(value, def && definitionIn(def, ch.props)), false);
    }
    lines.push(line);
  }
  return `${options.bom ? '\uFEFF' : ''}${lines.join('\r\n')}\r\n`;
}

// ---- reading --------------------------------------------------------------------------------------

/** Text in a message, cut short: a problem must not echo a megabyte back. */
const clip = (text: string) => (text.length > 40 ? `${text.slice(0, 40)}…` : text);
const shown = (text: string) => JSON.stringify(clip(text));

/** The spreadsheet's letter of a 1-based column: 1 → A, 27 → AA. */
export function columnLetter(index: number): string {
  let out = '';
  for (let n = index; n > 0; n = Math.floor((n - 1) / 26)) out = String.fromCharCode(65 + ((n - 1) % 26)) + out;
  return out;
}

/** A problem as one line: `row 4, column D (unit.id): …`. */
export function describeCsvProblem(p: ChannelsCsvProblem): string {
  const where: string[] = [];
  if (p.row !== undefined) where.push(`row ${p.row}`);
  if (p.columnIndex !== undefined) where.push(`column ${columnLetter(p.columnIndex)}${p.column ? ` (${clip(p.column)})` : ''}`);
  else if (p.column !== undefined) where.push(`column ${clip(p.column)}`);
  return where.length ? `${where.join(', ')}: ${p.message}` : p.message;
}

// Java's String.trim: code points up to U+0020 at either end (not Unicode spaces such as U+00A0).
function javaTrim(s: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && s.charCodeAt(a) <= 32) a++;
  while (b > a && s.charCodeAt(b - 1) <= 32) b--;
  return a === 0 && b === s.length ? s : s.slice(a, b);
}

class TooManyProblems extends Error {}

class Problems {
  readonly list: ChannelsCsvProblem[] = [];

  add(p: ChannelsCsvProblem): void {
    if (this.list.length === MAX_CSV_PROBLEMS) {
      this.list.push({ row: p.row, message: `more than ${MAX_CSV_PROBLEMS} problems; the rest of the file was not read` });
      throw new TooManyProblems();
    }
    this.list.push(p);
  }
}

interface CsvRecord {
  row: number;
  cells: string[];
  /** Per cell: it was written in quotes (then an empty cell is an empty string, and it is not trimmed). */
  quoted: boolean[];
  /** Cells beyond `maxCells`, counted but not kept. */
  extra: number;
  /** A value of this record is not closed or too long (already a problem): nothing more is checked. */
  broken: boolean;
}

/**
 * RFC 4180 records, read the way Commons CSV reads them: a field is quoted when it starts with `"`,
 * `""` in it is one quote, spaces may follow the closing quote; an unquoted field takes a quote
 * literally; CRLF, LF and CR all end a record. At most `maxCells` cells of a record are kept.
 */
class CsvRecordReader {
  private pos = 0;
  private row = 0;

  constructor(
    private readonly text: string,
    private readonly problems: Problems,
    private readonly columnName: (index: number) => string | undefined,
  ) {}

  /** The next record, or undefined at the end of the text. */
  next(maxCells: number): CsvRecord | undefined {
    const { text } = this;
    if (this.pos >= text.length) return undefined;
    const rec: CsvRecord = { row: ++this.row, cells: [], quoted: [], extra: 0, broken: false };
    for (;;) {
      const index = rec.cells.length + rec.extra + 1;
      const keep = rec.cells.length < maxCells;
      let value: string;
      let isQuoted = false;
      if (text.charCodeAt(this.pos) === QUOTE) {
        isQuoted = true;
        value = this.quotedField(rec, index, keep);
      } else {
        const start = this.pos;
        let c = text.charCodeAt(this.pos);
        while (this.pos < text.length && c !== COMMA && c !== CR && c !== LF) c = text.charCodeAt(++this.pos);
        value = keep ? text.slice(start, this.pos) : '';
      }
      if (keep && value.length > MAX_CSV_VALUE_CHARS) {
        this.problem(rec.row, index, `a value of ${value.length} characters; at most ${MAX_CSV_VALUE_CHARS} are read`);
        rec.broken = true;
        value = '';
      }
      if (keep) {
        rec.cells.push(value);
        rec.quoted.push(isQuoted);
      } else rec.extra++;
      const c = text.charCodeAt(this.pos);
      this.pos++;
      if (c === COMMA) {
        if (this.pos >= text.length) {
          // `a,b,` at the very end: one more, empty, cell.
          if (rec.cells.length < maxCells) rec.cells.push(''), rec.quoted.push(false);
          else rec.extra++;
          return rec;
        }
        continue;
      }
      if (c === CR && text.charCodeAt(this.pos) === LF) this.pos++;
      return rec;
    }
  }

  private problem(row: number, index: number, message: string): void {
    this.problems.add({ row, column: this.columnName(index), columnIndex: index, message });
  }

  // From the opening quote to just after the closing one (and any spaces after it). The value is
  // one slice of the text (no copy) with `""` made `"`, done only for a value short enough to keep.
  private quotedField(rec: CsvRecord, index: number, keep: boolean): string {
    const { row } = rec;
    const { text } = this;
    const start = ++this.pos;
    let q = text.indexOf('"', start);
    while (q >= 0 && text.charCodeAt(q + 1) === QUOTE) q = text.indexOf('"', q + 2);
    if (q < 0) {
      this.pos = text.length;
      rec.broken = true;
      this.problem(row, index, 'a quoted value is not closed: the file ends inside it (a quote inside a quoted value is written twice: "")');
      return '';
    }
    this.pos = q + 1;
    const raw = keep ? text.slice(start, q) : '';
    const out = raw.length <= MAX_CSV_VALUE_CHARS && raw.includes('"') ? raw.replaceAll('""', '"') : raw;
    let c = text.charCodeAt(this.pos);
    while (c === 32 || c === 9) c = text.charCodeAt(++this.pos);
    if (this.pos < text.length && c !== COMMA && c !== CR && c !== LF) {
      this.problem(row, index, 'text after the closing quote (a quote inside a quoted value is written twice: "")');
      while (this.pos < text.length && c !== COMMA && c !== CR && c !== LF) c = text.charCodeAt(++this.pos);
    }
    return out;
  }
}

/** The text of a file given as bytes: strict UTF-8 (a file saved in a local code page is refused, not garbled). */
function decodeUtf8(bytes: Uint8Array): string | ChannelsCsvProblem {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    // Where: the first replacement character of a lenient decode that the bytes do not spell.
    const loose = new TextDecoder('utf-8', { ignoreBOM: true }).decode(bytes);
    let offset = 0;
    let from = 0;
    for (let i = loose.indexOf('\uFFFD'); i >= 0; i = loose.indexOf('\uFFFD', i + 1)) {
      offset += Buffer.byteLength(loose.slice(from, i));
      if (bytes[offset] !== 0xef || bytes[offset + 1] !== 0xbf || bytes[offset + 2] !== 0xbd) break;
      offset += 3;
      from = i + 1;
    }
    let line = 1;
    for (let i = 0; i < offset && i < bytes.length; i++) if (bytes[i] === LF) line++;
    const byte = (bytes[offset] ?? 0).toString(16).toUpperCase().padStart(2, '0');
    return { message: `the file is not UTF-8 text: byte 0x${byte} at offset ${offset} (line ${line}); save it as "CSV UTF-8"` };
  }
}

const INTEGER_RANGES = {
  BYTE: [-128n, 127n],
  SHORT: [-32768n, 32767n],
  INTEGER: [-2147483648n, 2147483647n],
  LONG: [-9223372036854775808n, 9223372036854775807n],
} as const;
// Double.parseDouble's decimal syntax (optional exponent and f/d suffix); NaN, Infinity and
// hexadecimal are refused, as for a written value (docs/rest-api.md "Writing values").
const JAVA_DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?[fFdD]?$/;
// Integer.parseInt's syntax, ASCII digits only; at most 19 significant digits reach BigInt.
const JAVA_INTEGER = /^[+-]?\d+$/;
const FLOAT_MAX = 3.4028234663852886e38;

/** A cell's text as the definition's type: the value, or what is wrong with it. */
function typedValue(text: string, def: ChannelPropertyDefinition): ChannelPropertyValue | { wrong: string } {
  if (def.options?.length && !def.options.includes(text)) {
    return { wrong: `${shown(text)} is not one of ${def.options.join(', ')}` };
  }
  const range = (v: number | bigint, what: string) => {
    if (def.min !== undefined && v < def.min) return { wrong: `${what} is below the minimum ${def.min}` };
    if (def.max !== undefined && v > def.max) return { wrong: `${what} is above the maximum ${def.max}` };
    return undefined;
  };
  switch (def.type) {
    case 'BOOLEAN': {
      // Kura's Boolean.parseBoolean reads any other text as false; a typo must not switch a channel off.
      const lower = text.length <= 5 ? text.toLowerCase() : '';
      if (lower === 'true' || lower === 'false') return lower === 'true';
      return { wrong: `${shown(text)} is not true or false` };
    }
    case 'BYTE':
    case 'SHORT':
    case 'INTEGER':
    case 'LONG': {
      const [lo, hi] = INTEGER_RANGES[def.type];
      if (!JAVA_INTEGER.test(text)) return { wrong: `${shown(text)} is not an integer` };
      if (text.replace(/^[+-]?0*/, '').length > 19) return { wrong: `${shown(text)} is outside the range of ${def.type} (${lo} to ${hi})` };
      const n = BigInt(text);
      if (n < lo || n > hi) return { wrong: `${shown(text)} is outside the range of ${def.type} (${lo} to ${hi})` };
      const v = n >= BigInt(Number.MIN_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n;
      return range(v, text) ?? v;
    }
    case 'FLOAT':
    case 'DOUBLE': {
      if (!JAVA_DECIMAL.test(text)) return { wrong: `${shown(text)} is not a number` };
      const v = Number(text.replace(/[fFdD]$/, ''));
      if (!Number.isFinite(v) || (def.type === 'FLOAT' && Math.abs(v) > FLOAT_MAX)) return { wrong: `${shown(text)} is outside the range of ${def.type}` };
      return range(v, text) ?? v;
    }
    case 'CHAR':
      return [...text].length === 1 ? text : { wrong: `${shown(text)} is not one character` };
    default: {
      const length = range(text.length, `${text.length} characters`);
      return length ?? text;
    }
  }
}

/** A missing column's value: a required key's default (Kura fills it in), else nothing. */
function defaultOf(def: ChannelPropertyDefinition): ChannelPropertyValue | undefined {
  if (!def.required || def.default === undefined || def.default === null || def.default === '') return undefined;
  const parsed = typedValue(String(def.default), def);
  return typeof parsed === 'object' ? undefined : parsed;
}

/**
 * Channels from Kura's channel CSV, or every problem (at most MAX_CSV_PROBLEMS) by row and column,
 * in file order; any problem and no channel is returned. `text` may be the file's bytes (then it
 * must be UTF-8). A UTF-8 byte order mark is skipped; blank rows (no text, or only empty cells) are
 * skipped. Header: `name` is required, every other column must be a definition's key (without its
 * `+`) or Kura's `listen`, at most once, in any order; a column the file lacks takes the default of
 * a required key and is unset otherwise (a required key with no default is a problem). Cells: a
 * value is trimmed unless quoted; an empty cell leaves the key unset, a quoted empty one (`""`) is
 * an empty string for a text key; a required key must have a value. `columns` lists the keys the
 * file had.
 */
export function parseChannelsCsv(
  input: string | Uint8Array,
  definitions: readonly ChannelPropertyDefinition[],
  limits: ChannelsCsvLimits,
): ChannelsCsvResult {
  const problems = new Problems();
  try {
    const channels = readChannels(input, definitions, limits, problems);
    return problems.list.length || !channels ? { ok: false, problems: problems.list } : channels;
  } catch (err) {
    if (err instanceof TooManyProblems) return { ok: false, problems: problems.list };
    throw err;
  }
}

function readChannels(
  input: string | Uint8Array,
  definitions: readonly ChannelPropertyDefinition[],
  limits: ChannelsCsvLimits,
  problems: Problems,
): { ok: true; channels: ParsedCsvChannel[]; columns: string[] } | undefined {
  const tooBig = { message: `the file is larger than ${limits.maxBytes} bytes` };
  let text: string;
  if (typeof input === 'string') {
    // A UTF-16 unit is at least one UTF-8 byte: the length alone refuses most oversized texts.
    if (input.length > limits.maxBytes || Buffer.byteLength(input) > limits.maxBytes) return void problems.add(tooBig);
    text = input;
  } else {
    if (input.length > limits.maxBytes) return void problems.add(tooBig);
    const decoded = decodeUtf8(input);
    if (typeof decoded !== 'string') return void problems.add(decoded);
    text = decoded;
  }
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);

  const all = columnsOf(definitions);
  const byName = new Map(all.map((c) => [c.name, c]));
  const header: (Column | undefined)[] = [];
  const headerNames: string[] = [];
  const reader = new CsvRecordReader(text, problems, (i) => headerNames[i - 1]);
  // Every column must be a different known one: one more than there are is already a problem.
  const maxColumns = all.length + KURA_ONLY_COLUMNS.length;
  let first = reader.next(maxColumns + 1);
  while (first && !first.broken && isBlank(first)) first = reader.next(maxColumns + 1);
  if (first?.broken) return undefined;
  if (!first) return void problems.add({ message: 'the file is empty: the first row must name the columns (name, type, value.type, …)' });

  const seenAt = new Map<string, number>();
  first.cells.forEach((cell, i) => {
    const name = first.quoted[i] ? cell : javaTrim(cell);
    headerNames.push(name);
    const at = { row: first.row, column: name, columnIndex: i + 1 };
    if (name === '') return problems.add({ ...at, message: 'a column without a name' });
    const before = seenAt.get(name);
    if (before !== undefined) return problems.add({ ...at, message: `the column ${shown(name)} is also column ${columnLetter(before)}` });
    seenAt.set(name, i + 1);
    const col = byName.get(name);
    if (col) header[i] = col;
    else if (!KURA_ONLY_COLUMNS.includes(name)) problems.add({ ...at, message: `unknown column ${shown(name)}; the columns are ${all.map((c) => c.name).join(', ')}` });
  });
  if (first.extra > 0) problems.add({ row: first.row, message: `${first.cells.length + first.extra} columns; this asset's channels have ${all.length}` });
  if (!seenAt.has(NAME)) problems.add({ row: first.row, message: 'no name column: each row needs the channel name' });
  const defaults: [string, ChannelPropertyValue][] = [];
  for (const col of all) {
    if (col.name === NAME || seenAt.has(col.name) || !col.def) continue;
    const d = defaultOf(col.def);
    if (d !== undefined) defaults.push([col.name, d]);
    else if (col.def.required) problems.add({ row: first.row, column: col.name, message: `no ${col.name} column: each channel needs a value there` });
  }
  if (problems.list.length) return undefined;

  const width = first.cells.length;
  const nameAt = header.findIndex((c) => c?.name === NAME);
  const order = [...header.keys()].filter((i) => header[i] && i !== nameAt);
  order.sort((a, b) => Number(!!header[a]!.def!.valueTyped) - Number(!!header[b]!.def!.valueTyped));
  const rowOf = new Map<string, number>();
  const channels: ParsedCsvChannel[] = [];
  let dataRows = 0;
  for (let rec = reader.next(width); rec; rec = reader.next(width)) {
    if (rec.broken || isBlank(rec)) continue;
    if (++dataRows > limits.maxRows) {
      problems.add({ row: rec.row, message: `more than ${limits.maxRows} channels; the rest of the file was not read` });
      return undefined;
    }
    const count = rec.cells.length + rec.extra;
    if (count !== width) {
      problems.add({ row: rec.row, message: `${count} values; the header has ${width} columns` });
      continue;
    }
    const name = channelName(rec, nameAt, problems, rowOf);
    const props: Record<string, ChannelPropertyValue> = {};
    let ok = name !== undefined;
    // Value-typed keys last: their type is the row's value.type.
    for (let k = 0; k < order.length; k++) {
      const i = order[k];
      const col = header[i]!;
      const raw = rec.cells[i];
      const def = definitionIn(col.def!, props);
      const text = isFreeText(def) ? unguardFormula(rec.quoted[i] ? raw : javaTrim(raw)) : javaTrim(raw);
      const at = { row: rec.row, column: col.name, columnIndex: i + 1 };
      // `""` is an empty text; an empty cell, or spaces only, sets nothing.
      if (text === '' && (def.required || !(rec.quoted[i] && isFreeText(def) && raw === ''))) {
        if (def.required) ok = false, problems.add({ ...at, message: 'a value is required' });
        continue;
      }
      const v = typedValue(text, def);
      if (typeof v === 'object') ok = false, problems.add({ ...at, message: v.wrong });
      else props[col.name] = v;
    }
    if (!ok) continue;
    for (const [k, v] of defaults) props[k] = v;
    channels.push({ name: name!, props, row: rec.row });
  }
  return { ok: true, channels, columns: header.filter((c): c is Column => c !== undefined && c.name !== NAME).map((c) => c.name) };
}

// A row the file has but that holds nothing: an empty line, or empty cells only (spreadsheets
// write those below a formatted range).
const isBlank = (rec: CsvRecord) => rec.extra === 0 && rec.cells.every((c, i) => c === '' && !rec.quoted[i]);

function channelName(rec: CsvRecord, at: number, problems: Problems, rowOf: Map<string, number>): string | undefined {
  const where = { row: rec.row, column: NAME, columnIndex: at + 1 };
  const raw = rec.cells[at];
  // Kura's import turns space, `#` and `+` into `_` (names cannot hold them), then trims.
  const replaced = raw.replace(/[ #+]/g, '_');
  const name = unguardFormula(javaTrim(replaced));
  if (name === '') return void problems.add({ ...where, message: 'a channel name is required' });
  if (!CHANNEL_NAME_RULE.test(name)) {
    return void problems.add({ ...where, message: `${shown(name)}: channel names are 1-255 characters without spaces, # / + , or control characters` });
  }
  const before = rowOf.get(name);
  if (before !== undefined) {
    const same = raw === name ? '' : ` (${shown(raw)} reads as ${shown(name)})`;
    return void problems.add({ ...where, message: `the channel ${shown(name)} is also on row ${before}${same}` });
  }
  rowOf.set(name, rec.row);
  return name;
}

/**
 * The asset's channels after an import. `replace`: the file's channels, in its order. `merge`
 * (Kura's upload without "Replace current channels"): the existing ones in their order, each the
 * file names replaced whole by its row (a column the file lacks is then unset or its default, as
 * in Kura), then the file's new channels in its order.
 */
export function mergeChannels(existing: readonly CsvChannel[], imported: readonly CsvChannel[], mode: ChannelsMergeMode): CsvChannel[] {
  const strip = (c: CsvChannel): CsvChannel => ({ name: c.name, props: { ...c.props } });
  if (mode === 'replace') return imported.map(strip);
  if (mode !== 'merge') throw new TypeError(`unknown merge mode ${String(mode)}; the modes are ${CHANNELS_MERGE_MODES.join(', ')}`);
  const byName = new Map(imported.map((c) => [c.name, c]));
  const out = existing.map((c) => strip(byName.get(c.name) ?? c));
  const had = new Set(existing.map((c) => c.name));
  for (const c of imported) if (!had.has(c.name)) out.push(strip(c));
  return out;
}
