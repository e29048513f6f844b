// Seeded fuzzing of the channel CSV codec (docs/configuration.md "Channels as CSV"): random
// channels survive export and import unchanged; random and mutated files (text and bytes) never
// make the reader throw, and its answer is always well formed and bounded.

import t from 'tap';
import v8 from 'node:v8';
import vm from 'node:vm';
import {
  channelsToCsv,
  parseChannelsCsv,
  MAX_CSV_PROBLEMS,
  type ChannelPropertyDefinition,
  type ChannelsCsvResult,
  type CsvChannel,
} from '../../src/assets/channels-csv.js';
import { ALL_TYPES, LIMITS, MODBUS, generator } from './channels-csv-fixtures.js';

type Rand = ReturnType<typeof generator>;

// Characters that matter to CSV, spreadsheets and Java's trim, and some that do not.
const TEXT_CHARS = [',', '"', '\r', '\n', ' ', '\t', "'", '=', '+', '-', '@', '#', '!', 'a', 'Z', '0', '9', 'é', '°', '\u00a0', '\u0001', '\u2028', '😀', ';', '.', '_'];
const NAME_CHARS = ['a', 'b', 'Z', '0', '9', '_', '-', '.', '=', '@', "'", '"', 'é', '°', 'Ö', '😀', '(', ')', '!', '$', '%', '&', '*', ';', ':'];
const string = (r: Rand, chars: readonly string[], max: number) => Array.from({ length: r.int(max + 1) }, () => r.pick(chars)).join('');

const VALUE_TYPES = ['BOOLEAN', 'DOUBLE', 'INTEGER', 'LONG', 'FLOAT', 'STRING'] as const;

function value(r: Rand, def: ChannelPropertyDefinition, valueType: string): CsvChannel['props'][string] | undefined {
  if (def.options) return r.pick(def.options);
  const type = def.valueTyped ? (valueType === 'STRING' ? 'STRING' : valueType) : def.type;
  const lo = def.min ?? -1e6;
  const hi = def.max ?? 1e6;
  switch (type) {
    case 'BOOLEAN':
      return r.next() < 0.5;
    case 'BYTE':
      return r.int(256) - 128;
    case 'SHORT':
      return Math.max(lo, r.int(65536) - 32768);
    case 'INTEGER':
      return Math.floor(lo + r.next() * (hi - lo + 1));
    case 'LONG': {
      const big = BigInt(r.int(2 ** 31)) * BigInt(r.int(2 ** 31)) * BigInt(r.int(4)) - 2n ** 62n;
      return r.next() < 0.5 ? r.int(1e9) - 5e8 : Number.isSafeInteger(Number(big)) && BigInt(Number(big)) === big ? Number(big) : big;
    }
    case 'FLOAT':
    case 'DOUBLE': {
      const v = r.pick([0, 1, -1, 0.1, 1e-5, 1e7, 123.456, -40, 3.4e38, 5e-324]) * (r.next() < 0.5 ? 1 : r.next() * 1000);
      return Math.min(type === 'FLOAT' ? 3.4e38 : Infinity, Math.max(def.min ?? -Infinity, v));
    }
    case 'CHAR':
      return r.pick(['a', ';', '°', '😀', '"', ',']);
    case 'PASSWORD':
      return undefined;
    default:
      return string(r, TEXT_CHARS, 12).slice(0, def.max ?? 12);
  }
}

function randomChannels(r: Rand, defs: ChannelPropertyDefinition[], count: number): CsvChannel[] {
  const names = new Set<string>();
  const out: CsvChannel[] = [];
  while (out.length < count) {
    const name = string(r, NAME_CHARS, 10) || 'n';
    if (names.has(name)) continue;
    names.add(name);
    const valueType = r.pick(VALUE_TYPES);
    const props: CsvChannel['props'] = { enabled: r.next() < 0.5, type: r.pick(['READ', 'WRITE', 'READ_WRITE']), 'value.type': valueType };
    for (const def of defs) {
      const key = def.id.replace(/^\+/, '');
      if (key in props || key === 'name' || (!def.required && r.next() < 0.3)) continue;
      const v = value(r, def, valueType);
      if (v !== undefined) props[key] = v;
    }
    out.push({ name, props });
  }
  return out;
}

// Exact comparison, key order aside: bigint and number, -0 and 0 stay apart.
const canonical = (x: unknown): string =>
  JSON.stringify(x, (_, v) =>
    typeof v === 'bigint' ? `${v}n` : Object.is(v, -0) ? '-0' : v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : 1))) : v,
  );
const channelsOf = (res: ChannelsCsvResult) => (res.ok ? res.channels.map(({ name, props }) => ({ name, props })) : res.problems);

t.test('random channels go through export and import unchanged', async (t) => {
  const r = generator(0x5eed);
  let checked = 0;
  for (let i = 0; i < 300; i++) {
    const defs = i % 2 ? ALL_TYPES : MODBUS;
    const channels = randomChannels(r, defs, 1 + r.int(12));
    const text = channelsToCsv(channels, defs);
    const back = parseChannelsCsv(text, defs, LIMITS);
    if (!back.ok) {
      t.fail(`iteration ${i}: ${JSON.stringify(back.problems)} for ${JSON.stringify(text)}`);
      continue;
    }
    if (canonical(channelsOf(back)) !== canonical(channels)) t.fail(`iteration ${i}: ${canonical(channelsOf(back))} is not ${canonical(channels)}`);
    if (channelsToCsv(back.channels, defs) !== text) t.fail(`iteration ${i}: written differently the second time`);
    // As bytes too (the body of an upload).
    if (!parseChannelsCsv(Buffer.from(text), defs, LIMITS).ok) t.fail(`iteration ${i}: as bytes`);
    checked++;
  }
  t.equal(checked, 300);
});

/** Every answer of the reader, whatever it read, is one of its two well-formed shapes. */
function wellFormed(res: ChannelsCsvResult, maxRows: number): string | undefined {
  if (res.ok) {
    if (res.channels.length > maxRows) return `${res.channels.length} channels`;
    const names = new Set(res.channels.map((c) => c.name));
    if (names.size !== res.channels.length) return 'duplicate names';
    if (res.channels.some((c) => !/^[^/#+,\s\u0000-\u001f\u007f]{1,255}$/.test(c.name))) return 'a bad name';
    return undefined;
  }
  if (res.problems.length < 1 || res.problems.length > MAX_CSV_PROBLEMS + 1) return `${res.problems.length} problems`;
  for (const p of res.problems) {
    if (typeof p.message !== 'string' || p.message === '') return 'a problem without a message';
    if (p.row !== undefined && !(Number.isInteger(p.row) && p.row >= 1)) return `row ${p.row}`;
    if (p.message.length > 400) return 'a problem too long';
  }
  return undefined;
}

function mutate(r: Rand, text: string): string {
  let s = text;
  for (let n = 1 + r.int(6); n > 0; n--) {
    const at = r.int(s.length + 1);
    switch (r.int(5)) {
      case 0: s = s.slice(0, at) + r.pick(TEXT_CHARS) + s.slice(at); break;
      case 1: s = s.slice(0, at) + s.slice(at + 1 + r.int(4)); break;
      case 2: s = s.slice(0, at) + r.pick(TEXT_CHARS) + s.slice(at + 1); break;
      case 3: s = s.slice(0, at) + s.slice(at, at + r.int(30)).repeat(1 + r.int(3)) + s.slice(at); break;
      default: s = s.slice(0, at) + r.pick(['"', '""', '\r\n', ',', '\uFEFF', 'name', ',,,,']) + s.slice(at);
    }
  }
  return s;
}

t.test('random and mutated files never throw and always answer well formed', async (t) => {
  const r = generator(0xc5a11);
  const small = { maxRows: 20, maxBytes: 4096 };
  const header = channelsToCsv([], MODBUS).trimEnd();
  let n = 0;
  const check = (input: string | Uint8Array, what: string, limits = small) => {
    n++;
    let res: ChannelsCsvResult;
    try {
      res = parseChannelsCsv(input, MODBUS, limits);
    } catch (err) {
      t.fail(`${what}: threw ${(err as Error).stack}`);
      return;
    }
    const bad = wellFormed(res, limits.maxRows);
    if (bad) t.fail(`${what}: ${bad} for ${JSON.stringify(typeof input === 'string' ? input : [...input])}`);
  };
  for (let i = 0; i < 1500; i++) check(string(r, TEXT_CHARS, 200), `random text ${i}`);
  for (let i = 0; i < 1500; i++) check(`${header}\r\n${string(r, TEXT_CHARS, 300)}`, `random rows ${i}`);
  for (let i = 0; i < 1500; i++) {
    const text = channelsToCsv(randomChannels(r, MODBUS, 1 + r.int(8)), MODBUS);
    check(mutate(r, text), `mutated export ${i}`);
  }
  for (let i = 0; i < 1000; i++) {
    const bytes = Buffer.from(channelsToCsv(randomChannels(r, MODBUS, 1 + r.int(4)), MODBUS));
    for (let k = 1 + r.int(3); k > 0; k--) bytes[r.int(bytes.length)] = r.int(256);
    check(bytes, `flipped bytes ${i}`, { maxRows: 20, maxBytes: 1 << 16 });
  }
  for (let i = 0; i < 300; i++) check(Buffer.from(Array.from({ length: r.int(300) }, () => r.int(256))), `random bytes ${i}`);
  t.equal(n, 5800);
});

t.test('hostile files: what the reader keeps stays bounded', async (t) => {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  const limits = { maxRows: 1000, maxBytes: 16 * 1024 * 1024 };
  const hostile: [string, () => string][] = [
    ['a 16 MB quoted value never closed', () => `name,unit\r\nx,"${'a'.repeat(limits.maxBytes - 20)}`],
    ['a million columns', () => `name,${'c,'.repeat(1e6)}`],
    ['a million values in a row', () => `name,type,value.type\r\nx,READ,INTEGER${',1'.repeat(1e6)}`],
    ['a million rows beyond maxRows', () => `name,type,value.type\r\n${Array.from({ length: 1e6 }, (_, i) => `c${i},READ,INTEGER`).join('\n')}`.slice(0, limits.maxBytes)],
    ['a million bad rows', () => `name,type,value.type\r\n${'x,RD,INTEGER\n'.repeat(1e6)}`],
    ['a million quotes', () => `name,unit\r\nx,${'"'.repeat(1e6)}`],
    ['a million blank lines', () => `${'\r\n'.repeat(1e6)}name,colour`],
  ];
  for (const [what, make] of hostile) {
    let text: string | undefined = make();
    // Flat before the count: V8 builds repeat() and + as ropes, which the reader's first look flattens.
    text.indexOf('\u0000');
    gc();
    const before = process.memoryUsage().heapUsed;
    const res = parseChannelsCsv(text, MODBUS, limits);
    text = undefined;
    gc();
    const kept = process.memoryUsage().heapUsed - before;
    t.equal(res.ok, false, `${what}: refused`);
    t.notOk(wellFormed(res, limits.maxRows), `${what}: well formed`);
    t.ok(kept < 2 * 1024 * 1024, `${what}: ${(kept / 1024).toFixed(0)} KiB kept with the answer`);
  }
});
