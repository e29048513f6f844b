// Seeded fuzz of the Sparkplug B payload codec (test/helpers/sparkplug-codec/payload.ts, the tests' reference codec): random bytes and
// mutated fixtures decode or throw SparkplugError, nothing else, and what decodes stays within the
// decoder's bounds (elements, nesting, string sizes); random valid payloads of every datatype
// round-trip exactly, and in the part Eclipse Tahu's codec covers Tahu writes the same bytes and
// reads back the same values. SPARKPLUG_FUZZ_SEED=<n> replays another run.

import t, { type Test } from 'tap';
import v8 from 'node:v8';
import vm from 'node:vm';
import { SparkplugError, type BasicDataType } from '../helpers/sparkplug-codec/datatypes.js';
import {
  decodeSparkplugPayload,
  encodeSparkplugPayload,
  SPARKPLUG_DECODE_LIMITS,
  type MetricDataType,
  type SparkplugMetric,
  type SparkplugPayload,
  type SparkplugPropertySet,
  type SparkplugPropertyValue,
  type SparkplugTemplate,
} from '../helpers/sparkplug-codec/payload.js';
import { FIXTURES, hex } from '../helpers/sparkplug-fixtures.js';
import { canon, tahuDecode, tahuEncode } from '../helpers/tahu.js';

const SEED = Number(process.env.SPARKPLUG_FUZZ_SEED ?? 20231114);

/** mulberry32: a small seeded generator, so a failure can be replayed. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

class Gen {
  constructor(readonly rnd: () => number) {}
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.rnd() * (hi - lo + 1));
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(0, xs.length - 1)]!;
  }
  chance(p: number): boolean {
    return this.rnd() < p;
  }
  u64(): bigint {
    return (BigInt(this.int(0, 0xffffffff)) << 32n) | BigInt(this.int(0, 0xffffffff));
  }
  bytes(n: number): Buffer {
    return Buffer.from(Array.from({ length: n }, () => this.int(0, 255)));
  }
  /** Text with ASCII, two- and three-byte characters and an astral one (no lone surrogates). */
  text(max = 12): string {
    const parts = ['a', 'Z', '0', ' ', '/', 'é', 'ß', '°', '✓', '€', '😀', '\n', ''];
    return Array.from({ length: this.int(0, max) }, () => this.pick(parts)).join('');
  }
}

// ---- random valid payloads --------------------------------------------------------------------

interface Mode {
  arrays: boolean;
  /** A null DataSet, Template, PropertySet or PropertySetList (Tahu's encoder fails on or misencodes them). */
  nullStructures: boolean;
  /** Only what Tahu's decoder reads back exactly (see test/helpers/tahu.ts). */
  tahuReadable: boolean;
}

const FULL: Mode = { arrays: true, nullStructures: true, tahuReadable: false };
const TAHU_BYTES: Mode = { arrays: false, nullStructures: false, tahuReadable: false };
const TAHU_VALUES: Mode = { arrays: false, nullStructures: false, tahuReadable: true };

const BASIC: BasicDataType[] = ['Int8', 'Int16', 'Int32', 'Int64', 'UInt8', 'UInt16', 'UInt32', 'UInt64', 'Float', 'Double', 'Boolean', 'String', 'DateTime', 'Text'];
const TAHU_CELL: BasicDataType[] = ['UInt32', 'Float', 'Double', 'Boolean', 'String'];
const TAHU_PARAM: BasicDataType[] = ['Int64', 'UInt32', 'Float', 'Double', 'Boolean', 'String'];
const ARRAYS = ['Int8Array', 'Int16Array', 'Int32Array', 'Int64Array', 'UInt8Array', 'UInt16Array', 'UInt32Array', 'UInt64Array', 'FloatArray', 'DoubleArray', 'BooleanArray', 'StringArray', 'DateTimeArray'] as const;

const RANGES: Record<string, [number, number]> = {
  Int8: [-128, 127], Int16: [-32768, 32767], Int32: [-2147483648, 2147483647],
  UInt8: [0, 255], UInt16: [0, 65535], UInt32: [0, 4294967295],
};

function basicValue(g: Gen, type: BasicDataType | 'UUID'): unknown {
  const r = RANGES[type];
  if (r) return g.chance(0.3) ? g.pick([r[0], r[1], 0, -1 >= r[0] ? -1 : 1]) : g.int(r[0], r[1]);
  switch (type) {
    case 'Int64': return g.chance(0.3) ? g.pick([-(2n ** 63n), 2n ** 63n - 1n, -1n, 0n]) : BigInt.asIntN(64, g.u64());
    case 'UInt64': return g.chance(0.3) ? g.pick([0n, 2n ** 64n - 1n]) : g.u64();
    case 'DateTime': return g.chance(0.5) ? BigInt(1700000000000 + g.int(0, 1e9)) : g.u64();
    case 'Float': return g.chance(0.3) ? g.pick([NaN, Infinity, -Infinity, -0, 3.4028234663852886e38, 1.401298464324817e-45]) : Math.fround((g.rnd() - 0.5) * 10 ** g.int(-10, 30));
    case 'Double': return g.chance(0.3) ? g.pick([NaN, Infinity, -Infinity, -0, Number.MAX_VALUE, 5e-324]) : (g.rnd() - 0.5) * 10 ** g.int(-300, 300);
    case 'Boolean': return g.chance(0.5);
    default: return g.text(); // String, Text, UUID
  }
}

function arrayValue(g: Gen, type: (typeof ARRAYS)[number]): unknown[] {
  const n = g.int(0, 9);
  const element = type.slice(0, -5) as BasicDataType;
  return Array.from({ length: n }, () => (type === 'StringArray' ? g.text().replace(/\u0000/g, '') : basicValue(g, element)));
}

function propertySet(g: Gen, mode: Mode, depth: number): SparkplugPropertySet {
  const set: SparkplugPropertySet = new Map();
  const n = g.int(0, 4);
  for (let i = 0; i < n; i++) {
    const nested = depth < 2 && g.chance(0.2);
    let pv: SparkplugPropertyValue;
    if (nested && g.chance(0.5)) pv = { type: 'PropertySet', value: mode.nullStructures && g.chance(0.2) ? null : propertySet(g, mode, depth + 1) };
    else if (nested) pv = { type: 'PropertySetList', value: mode.nullStructures && g.chance(0.2) ? null : Array.from({ length: g.int(0, 2) }, () => propertySet(g, mode, depth + 1)) };
    else {
      const type = g.pick(BASIC);
      pv = { type, value: g.chance(0.1) ? null : basicValue(g, type) } as SparkplugPropertyValue;
    }
    // Keys that look like array indexes would be reordered by the plain object Tahu decodes to.
    set.set(`k${i}${g.text(3)}`, pv);
  }
  return set;
}

function metric(g: Gen, mode: Mode, depth: number): SparkplugMetric {
  const types: MetricDataType[] = [...BASIC, 'UUID', 'Bytes', 'File', 'DataSet', ...(depth < 2 ? (['Template'] as const) : []), ...(mode.arrays ? ARRAYS : [])];
  const datatype = g.pick(types);
  const m: Record<string, unknown> = {};
  if (g.chance(0.8)) m.name = g.text(20);
  if (g.chance(0.6)) m.alias = g.chance(0.8) ? BigInt(g.int(0, 5000)) : g.u64();
  if (g.chance(0.6)) m.timestamp = BigInt(1700000000000 + g.int(0, 1e9));
  if (g.chance(0.1)) m.isHistorical = g.chance(0.5);
  if (g.chance(0.1)) m.isTransient = g.chance(0.5);
  // Tahu's decoder gives an absent metadata field its protobuf default: complete metadata there.
  const all = mode.tahuReadable;
  if (g.chance(0.1)) m.metadata = { contentType: g.text(), size: g.u64(), ...(all || g.chance(0.5) ? { isMultiPart: g.chance(0.5), seq: BigInt(g.int(0, 9)) } : {}), ...(all || g.chance(0.5) ? { fileName: g.text(), fileType: 'txt', md5: g.text(), description: g.text() } : {}) };
  if (g.chance(0.2)) m.properties = propertySet(g, mode, 0);
  m.datatype = datatype;
  const structure = datatype === 'DataSet' || datatype === 'Template';
  if (g.chance(0.1) && (mode.nullStructures || !structure)) m.value = null;
  else if (datatype === 'Bytes' || datatype === 'File') m.value = g.bytes(g.int(0, 12));
  else if (datatype === 'DataSet') {
    const cols = g.int(0, 4);
    const types = Array.from({ length: cols }, () => g.pick(mode.tahuReadable ? TAHU_CELL : BASIC));
    m.value = {
      columns: types.map((_, j) => `c${j}${g.text(3)}`),
      types,
      rows: Array.from({ length: g.int(0, 3) }, () => types.map((ty) => (!mode.tahuReadable && g.chance(0.1) ? null : basicValue(g, ty)))),
    };
  } else if (datatype === 'Template') {
    const tpl: SparkplugTemplate = {
      isDefinition: g.chance(0.5),
      metrics: Array.from({ length: g.int(0, 3) }, () => metric(g, mode, depth + 1)),
      parameters: Array.from({ length: g.int(0, 2) }, (_, i) => {
        const type = g.pick(mode.tahuReadable ? TAHU_PARAM : BASIC);
        return { name: `p${i}${g.text(3)}`, type, value: !mode.tahuReadable && g.chance(0.2) ? null : basicValue(g, type) } as SparkplugTemplate['parameters'][number];
      }),
    };
    if (g.chance(0.5)) tpl.version = `v${g.int(1, 9)}`;
    if (!tpl.isDefinition && g.chance(0.8)) tpl.templateRef = `T${g.int(0, 9)}`;
    m.value = tpl;
  } else if ((ARRAYS as readonly string[]).includes(datatype)) m.value = arrayValue(g, datatype as (typeof ARRAYS)[number]);
  else m.value = basicValue(g, datatype as BasicDataType);
  return m as unknown as SparkplugMetric;
}

function payload(g: Gen, mode: Mode): SparkplugPayload {
  const p: SparkplugPayload = { metrics: Array.from({ length: g.int(0, 8) }, () => metric(g, mode, 0)) };
  if (g.chance(0.8)) p.timestamp = BigInt(1700000000000 + g.int(0, 1e9));
  if (g.chance(0.7)) p.seq = BigInt(g.int(0, 255));
  if (g.chance(0.1)) p.uuid = g.text();
  if (g.chance(0.1)) p.body = g.bytes(g.int(0, 8));
  return p;
}

// ---- what a decoded payload holds -------------------------------------------------------------

interface Size {
  elements: number;
  depth: number;
  longestString: number;
}

/** Elements as the decoder counts them, the deepest nesting, the longest string (in UTF-8 bytes). */
function sizeOf(p: SparkplugPayload): Size {
  const s: Size = { elements: 0, depth: 0, longestString: 0 };
  const str = (x: unknown) => {
    if (typeof x === 'string') s.longestString = Math.max(s.longestString, Buffer.byteLength(x));
  };
  const props = (set: SparkplugPropertySet, depth: number) => {
    s.depth = Math.max(s.depth, depth);
    for (const [k, pv] of set) {
      s.elements += 2;
      str(k);
      if (pv.type === 'PropertySet' && pv.value) props(pv.value, depth + 1);
      else if (pv.type === 'PropertySetList' && pv.value) {
        s.depth = Math.max(s.depth, depth + 1);
        for (const x of pv.value) {
          s.elements++;
          props(x, depth + 2);
        }
      } else str(pv.value);
    }
  };
  const metrics = (ms: SparkplugMetric[], depth: number) => {
    for (const m of ms) {
      s.elements++;
      str(m.name);
      if (m.properties) props(m.properties, depth + 1);
      const v = m.value as unknown;
      if (Array.isArray(v)) {
        s.elements += v.length;
        v.forEach(str);
      } else if (m.datatype === 'DataSet' && v) {
        const ds = v as { columns: string[]; types: unknown[]; rows: unknown[][] };
        s.depth = Math.max(s.depth, depth + 1);
        s.elements += ds.columns.length + ds.types.length + ds.rows.length + ds.rows.reduce((n, r) => n + r.length, 0);
        ds.columns.forEach(str);
        ds.rows.forEach((r) => r.forEach(str));
      } else if (m.datatype === 'Template' && v) {
        const tpl = v as SparkplugTemplate;
        s.depth = Math.max(s.depth, depth + 1);
        s.elements += tpl.parameters.length;
        metrics(tpl.metrics, depth + 1);
      } else str(v);
    }
  };
  metrics(p.metrics, 0);
  return s;
}

/** Decodes, returning the payload or the SparkplugError; anything else thrown fails the caller. */
function tryDecode(bytes: Buffer, opts = {}): SparkplugPayload | SparkplugError {
  try {
    return decodeSparkplugPayload(bytes, opts);
  } catch (err) {
    if (err instanceof SparkplugError) return err;
    throw err;
  }
}

function mutate(g: Gen, b: Buffer): Buffer {
  const out = Buffer.from(b);
  switch (g.int(0, 6)) {
    case 0: // flip bits
      for (let i = g.int(1, 4); i > 0 && out.length; i--) out[g.int(0, out.length - 1)]! ^= 1 << g.int(0, 7);
      return out;
    case 1: // a random byte, often a length or tag
      if (out.length) out[g.int(0, out.length - 1)] = g.pick([0, 0x7f, 0x80, 0xff, g.int(0, 255)]);
      return out;
    case 2: // cut short
      return out.subarray(0, g.int(0, out.length));
    case 3: // random bytes inserted
      { const at = g.int(0, out.length); return Buffer.concat([out.subarray(0, at), g.bytes(g.int(1, 6)), out.subarray(at)]); }
    case 4: // a slice repeated
      { const a = g.int(0, out.length); const z = g.int(a, out.length); return Buffer.concat([out.subarray(0, z), out.subarray(a, z), out.subarray(z)]); }
    case 5: // a length made huge: a varint of ten 0xff bytes at a random place
      { const at = g.int(0, out.length); return Buffer.concat([out.subarray(0, at), Buffer.from('ffffffffffffffffff01', 'hex'), out.subarray(at)]); }
    default: // bytes removed
      { const a = g.int(0, out.length); return Buffer.concat([out.subarray(0, a), out.subarray(Math.min(out.length, a + g.int(1, 4)))]); }
  }
}

// ---- the tests --------------------------------------------------------------------------------

function withinBounds(t: Test, p: SparkplugPayload, opts: { maxElements?: number; maxDepth?: number; maxStringBytes?: number }, what: string): boolean {
  const s = sizeOf(p);
  const L = { ...SPARKPLUG_DECODE_LIMITS, ...opts };
  const ok = s.elements <= L.maxElements && s.depth <= L.maxDepth && s.longestString <= L.maxStringBytes;
  if (!ok) t.fail(`${what}: decoded beyond a bound: ${JSON.stringify(s)}`);
  return ok;
}

t.test(`random bytes decode or throw SparkplugError, within the bounds (seed ${SEED})`, async (t) => {
  const g = new Gen(prng(SEED));
  let decoded = 0;
  let refused = 0;
  let bad = 0;
  for (let i = 0; i < 4000; i++) {
    const b = g.bytes(g.int(0, 160));
    const r = tryDecode(b);
    if (r instanceof SparkplugError) refused++;
    else {
      decoded++;
      if (!withinBounds(t, r, {}, `random input ${b.toString('hex')}`)) bad++;
    }
  }
  t.equal(bad, 0, 'nothing decoded beyond a bound');
  t.ok(decoded > 0 && refused > 0, `both outcomes seen (${decoded} decoded, ${refused} refused)`);
});

t.test(`mutated fixtures decode or throw SparkplugError, within tight bounds (seed ${SEED})`, async (t) => {
  const g = new Gen(prng(SEED + 1));
  const tight = { maxElements: 40, maxDepth: 3, maxStringBytes: 24, maxMetrics: 10, maxBytes: 64 };
  let decoded = 0;
  let refused = 0;
  let bad = 0;
  for (const f of FIXTURES) {
    const bytes = hex(f.bytes);
    for (let i = 0; i < 250; i++) {
      let b = bytes;
      for (let k = g.int(1, 3); k > 0; k--) b = mutate(g, b);
      for (const opts of [{}, tight]) {
        const r = tryDecode(b, opts);
        if (r instanceof SparkplugError) refused++;
        else {
          decoded++;
          if (!withinBounds(t, r, opts, `${f.name} mutated to ${b.toString('hex')}`)) bad++;
          // Whatever decodes encodes again (unless it holds a metric of unknown datatype).
          if (!r.metrics.some((m) => m.datatype === 'Unknown')) {
            try {
              encodeSparkplugPayload(r);
            } catch (err) {
              if (!(err instanceof SparkplugError)) throw err;
            }
          }
        }
      }
    }
  }
  t.equal(bad, 0, 'nothing decoded beyond a bound');
  t.ok(decoded > 100 && refused > 100, `both outcomes seen (${decoded} decoded, ${refused} refused)`);
});

t.test(`random valid payloads of every datatype round-trip exactly (seed ${SEED})`, async (t) => {
  const g = new Gen(prng(SEED + 2));
  let failures = 0;
  const seen = new Set<string>();
  for (let i = 0; i < 600 && failures < 5; i++) {
    const p = payload(g, FULL);
    p.metrics.forEach((m) => seen.add(m.datatype));
    const bytes = encodeSparkplugPayload(p);
    const back = decodeSparkplugPayload(bytes);
    if (JSON.stringify(canon(back)) !== JSON.stringify(canon(p)) || !encodeSparkplugPayload(back).equals(bytes)) {
      failures++;
      t.same(canon(back), canon(p), `payload ${i} round trip`);
    }
  }
  t.equal(failures, 0, 'every payload decodes to itself and encodes to the same bytes');
  t.equal(seen.size, 35 - 3, 'every metric datatype generated (all but Unknown, PropertySet, PropertySetList)');
});

t.test(`random payloads: Tahu writes the same bytes, and reads back the same values (seed ${SEED})`, async (t) => {
  const g = new Gen(prng(SEED + 3));
  let sameBytes = 0;
  let sameValues = 0;
  for (let i = 0; i < 300; i++) {
    const p = payload(g, TAHU_BYTES);
    const ours = encodeSparkplugPayload(p);
    if (tahuEncode(p).equals(ours)) sameBytes++;
    else t.equal(tahuEncode(p).toString('hex'), ours.toString('hex'), `payload ${i}: ${JSON.stringify(canon(p))}`);
  }
  for (let i = 0; i < 300; i++) {
    const p = payload(g, TAHU_VALUES);
    const theirs = tahuDecode(encodeSparkplugPayload(p));
    if (JSON.stringify(canon(theirs)) === JSON.stringify(canon(p))) sameValues++;
    else t.same(canon(theirs), canon(p), `payload ${i} as Tahu reads it`);
  }
  t.equal(sameBytes, 300, 'same bytes for 300 payloads');
  t.equal(sameValues, 300, 'same values for 300 payloads');
});

t.test('memory: the largest payload the default bounds let through, and hostile ones', async (t) => {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc') as () => void;
  const L = SPARKPLUG_DECODE_LIMITS;
  const lenOf = (len: number) => {
    const out: number[] = [];
    for (; len >= 0x80; len >>>= 7) out.push((len & 0x7f) | 0x80);
    out.push(len);
    return Buffer.from(out);
  };
  // The most objects per byte: as many properties as the element bound lets through, each a short
  // distinct key and a null Boolean (PropertyValue type 11, is_null).
  const n = Math.floor((L.maxElements - 1) / 2);
  const keys = Buffer.concat(Array.from({ length: n }, (_, i) => Buffer.concat([Buffer.from([0x0a, String(i).length]), Buffer.from(String(i))])));
  const values = Buffer.alloc(n * 6);
  for (let i = 0; i < n; i++) values.set([0x12, 0x04, 0x08, 0x0b, 0x10, 0x01], i * 6);
  const set = Buffer.concat([keys, values]);
  const body = Buffer.concat([Buffer.from([0x20, 0x03, 0x4a]), lenOf(set.length), set, Buffer.from([0x50, 0x01])]);
  const bytes = Buffer.concat([Buffer.from([0x12]), lenOf(body.length), body]);
  gc();
  const before = process.memoryUsage().heapUsed;
  const decoded = decodeSparkplugPayload(bytes);
  gc();
  const retained = process.memoryUsage().heapUsed - before;
  t.equal(decoded.metrics[0]!.properties!.size, n, `${n} properties decoded from ${bytes.length} bytes`);
  t.ok(retained < 8 * 1024 * 1024, `the decoded payload holds ${(retained / 1024 / 1024).toFixed(2)} MB (bound 8 MB)`);

  // Hostile inputs far over the bounds are refused at the bound, whatever their size.
  const empties = Buffer.alloc(4 * 1024 * 1024);
  for (let i = 0; i + 1 < empties.length; i += 2) empties.set([0x12, 0x00], i);
  t.match((tryDecode(empties) as Error).message, /^more than 4096 metrics/, '2 million empty metrics in 4 MiB');
  const boolArray = Buffer.concat([Buffer.from([0x20, 0x20, 0x82, 0x01]), lenOf(4 + 131072), Buffer.from([0x00, 0x00, 0x10, 0x00]), Buffer.alloc(131072)]);
  const bits = Buffer.concat([Buffer.from([0x12]), lenOf(boolArray.length), boolArray]);
  t.match((tryDecode(bits) as Error).message, /BooleanArray of 1048576 elements is over the payload's remaining bound of 16383 elements/, 'a BooleanArray of a million values in 128 KiB');
});
