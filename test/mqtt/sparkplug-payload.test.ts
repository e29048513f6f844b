// Sparkplug B payload codec (test/helpers/sparkplug-codec/payload.ts, the tests' reference codec): (object, bytes) fixtures give parse,
// generate and round-trip tests; Eclipse Tahu's `sparkplug-payload` (npm) writes the same bytes
// and reads our payloads back to the same values; what Tahu encodes in its own idioms we decode to
// the values meant; the decoder's other accepted forms, its refusals and bounds, and the encoder's
// refusals, each with the message a user sees.

import t, { type Test } from 'tap';
import { decodeSparkplugPayload, encodeSparkplugPayload, SPARKPLUG_DECODE_LIMITS, type SparkplugMetric, type SparkplugPayload } from '../helpers/sparkplug-codec/payload.js';
import { SparkplugError } from '../helpers/sparkplug-codec/datatypes.js';
import { FIXTURES, hex } from '../helpers/sparkplug-fixtures.js';
import { canon, Long, tahu, tahuDecode, tahuEncode } from '../helpers/tahu.js';

// ---- protobuf bytes for hand-made inputs ------------------------------------------------------

function varint(v: bigint | number): string {
  let x = BigInt.asUintN(64, BigInt(v));
  const out: number[] = [];
  while (x >= 0x80n) {
    out.push(Number(x & 0x7fn) | 0x80);
    x >>= 7n;
  }
  out.push(Number(x));
  return Buffer.from(out).toString('hex');
}
const key = (field: number, wire: number) => varint(field * 8 + wire);
/** A varint field. */
const vf = (field: number, v: bigint | number) => key(field, 0) + varint(v);
/** A length-delimited field around `content` (hex). */
const lf = (field: number, content: string) => key(field, 2) + varint(hex(content).length) + content.replace(/\s+/g, '');
const sf = (field: number, s: string) => lf(field, Buffer.from(s).toString('hex'));
/** A payload of one metric made of `fields`. */
const oneMetric = (fields: string) => hex(lf(2, fields));

const decode = (b: Buffer | string, opts = {}) => decodeSparkplugPayload(typeof b === 'string' ? hex(b) : b, opts);
const valueOf = (fields: string, opts = {}) => decode(oneMetric(fields), opts).metrics[0]!.value;

function refuses(t: Test, bytes: Buffer, message: RegExp, what: string, opts = {}): void {
  try {
    decodeSparkplugPayload(bytes, opts);
    t.fail(`${what}: decoded`);
  } catch (err) {
    t.ok(err instanceof SparkplugError, `${what}: a SparkplugError`);
    t.match((err as Error).message, message, what);
  }
}

function encodeRefuses(t: Test, p: SparkplugPayload, message: RegExp, what: string): void {
  try {
    encodeSparkplugPayload(p);
    t.fail(`${what}: encoded`);
  } catch (err) {
    t.ok(err instanceof SparkplugError, `${what}: a SparkplugError`);
    t.match((err as Error).message, message, what);
  }
}

/**
 * `levels` Template metrics inside one another, a Boolean at the bottom: built outside in from the
 * lengths computed inside out, in linear time.
 */
function nestedTemplates(levels: number): Buffer {
  const core = hex('20 0b 70 01');
  const metricLen: number[] = [core.length];
  const tplLen: number[] = [];
  for (let i = 0; i < levels; i++) {
    tplLen.push(1 + hex(varint(metricLen[i]!)).length + metricLen[i]!);
    metricLen.push(2 + 2 + hex(varint(tplLen[i]!)).length + tplLen[i]!);
  }
  const parts: Buffer[] = [hex(`12 ${varint(metricLen[levels]!)}`)];
  for (let i = levels - 1; i >= 0; i--) parts.push(hex(`20 13  9201 ${varint(tplLen[i]!)}  12 ${varint(metricLen[i]!)}`));
  parts.push(core);
  return Buffer.concat(parts);
}

const m1 = (m: Partial<SparkplugMetric> & Pick<SparkplugMetric, 'datatype' | 'value'>): SparkplugPayload => ({ metrics: [{ name: 'a', ...m } as SparkplugMetric] });

// ---- fixtures ---------------------------------------------------------------------------------

for (const f of FIXTURES) {
  t.test(f.name, async (t) => {
    const bytes = hex(f.bytes);
    t.equal(encodeSparkplugPayload(f.payload).toString('hex'), bytes.toString('hex'), 'generate');
    t.same(canon(decodeSparkplugPayload(bytes)), canon(f.payload), 'parse');
    t.ok(encodeSparkplugPayload(decodeSparkplugPayload(bytes)).equals(bytes), 'round trip');
    if (f.tahu !== 'no') t.equal(tahuEncode(f.payload).toString('hex'), bytes.toString('hex'), "Tahu's encoder writes the same bytes");
    if (f.tahu === 'both') t.same(canon(tahuDecode(bytes)), canon(f.payload), "Tahu's decoder reads the same values");
  });
}

t.test("what Tahu's encoder writes in its own idioms decodes to the values meant", async (t) => {
  const now = 1700000000123;
  const cases: [string, unknown, SparkplugPayload][] = [
    [
      'NBIRTH with numbers for uint64 fields and a Long bdSeq',
      {
        timestamp: now,
        seq: 0,
        metrics: [
          { name: 'bdSeq', timestamp: now, type: 'Int64', value: Long.fromNumber(41) },
          { name: 'Node Control/Rebirth', timestamp: now, type: 'Boolean', value: false },
          { name: 'Properties/Hardware', alias: 2, timestamp: now, type: 'String', value: 'armv7l', properties: { Quality: { type: 'Int32', value: 192 } } },
        ],
      },
      {
        timestamp: BigInt(now),
        seq: 0n,
        metrics: [
          { name: 'bdSeq', timestamp: BigInt(now), datatype: 'Int64', value: 41n },
          { name: 'Node Control/Rebirth', timestamp: BigInt(now), datatype: 'Boolean', value: false },
          { name: 'Properties/Hardware', alias: 2n, timestamp: BigInt(now), datatype: 'String', value: 'armv7l', properties: new Map([['Quality', { type: 'Int32', value: 192 }]]) },
        ],
      },
    ],
    [
      'DBIRTH with every scalar type Tahu has, type names in any case',
      {
        timestamp: now,
        seq: 1,
        metrics: [
          { name: 'i8', alias: 10, type: 'int8', value: -128 },
          { name: 'i16', alias: 11, type: 'INT16', value: -32768 },
          { name: 'i32', alias: 12, type: 'Int32', value: -2147483648 },
          { name: 'i64', alias: 13, type: 'Int64', value: Long.MIN_VALUE },
          { name: 'u8', alias: 14, type: 'UInt8', value: 255 },
          { name: 'u16', alias: 15, type: 'UInt16', value: 65535 },
          { name: 'u32', alias: 16, type: 'UInt32', value: 4294967295 },
          { name: 'u64', alias: 17, type: 'UInt64', value: Long.MAX_UNSIGNED_VALUE },
          { name: 'f', alias: 18, type: 'Float', value: NaN },
          { name: 'f2', alias: 19, type: 'Float', value: -Infinity },
          { name: 'd', alias: 20, type: 'Double', value: Number.MAX_VALUE },
          { name: 'b', alias: 21, type: 'Boolean', value: true },
          { name: 's', alias: 22, type: 'String', value: '' },
          { name: 'dt', alias: 23, type: 'DateTime', value: now },
          { name: 'tx', alias: 24, type: 'Text', value: 'ü' },
          { name: 'id', alias: 25, type: 'UUID', value: 'x' },
          { name: 'by', alias: 26, type: 'Bytes', value: new Uint8Array([1, 2, 3]) },
          { name: 'n', alias: 27, type: 'Int32', value: null },
          { name: 'i64max', alias: 28, type: 'Int64', value: Long.MAX_VALUE },
        ],
      },
      {
        timestamp: BigInt(now),
        seq: 1n,
        metrics: [
          { name: 'i8', alias: 10n, datatype: 'Int8', value: -128 },
          { name: 'i16', alias: 11n, datatype: 'Int16', value: -32768 },
          { name: 'i32', alias: 12n, datatype: 'Int32', value: -2147483648 },
          { name: 'i64', alias: 13n, datatype: 'Int64', value: -(2n ** 63n) },
          { name: 'u8', alias: 14n, datatype: 'UInt8', value: 255 },
          { name: 'u16', alias: 15n, datatype: 'UInt16', value: 65535 },
          { name: 'u32', alias: 16n, datatype: 'UInt32', value: 4294967295 },
          { name: 'u64', alias: 17n, datatype: 'UInt64', value: 2n ** 64n - 1n },
          { name: 'f', alias: 18n, datatype: 'Float', value: NaN },
          { name: 'f2', alias: 19n, datatype: 'Float', value: -Infinity },
          { name: 'd', alias: 20n, datatype: 'Double', value: Number.MAX_VALUE },
          { name: 'b', alias: 21n, datatype: 'Boolean', value: true },
          { name: 's', alias: 22n, datatype: 'String', value: '' },
          { name: 'dt', alias: 23n, datatype: 'DateTime', value: BigInt(now) },
          { name: 'tx', alias: 24n, datatype: 'Text', value: 'ü' },
          { name: 'id', alias: 25n, datatype: 'UUID', value: 'x' },
          { name: 'by', alias: 26n, datatype: 'Bytes', value: Buffer.from([1, 2, 3]) },
          { name: 'n', alias: 27n, datatype: 'Int32', value: null },
          { name: 'i64max', alias: 28n, datatype: 'Int64', value: 2n ** 63n - 1n },
        ],
      },
    ],
    [
      'DDATA by alias only, with a Float that is not a float32 (Tahu rounds it on the wire)',
      { timestamp: now, seq: 2, metrics: [{ alias: 12, timestamp: now, type: 'Int32', value: -1 }, { alias: 18, timestamp: now, type: 'Float', value: 0.1 }] },
      {
        timestamp: BigInt(now),
        seq: 2n,
        metrics: [
          { alias: 12n, timestamp: BigInt(now), datatype: 'Int32', value: -1 },
          { alias: 18n, timestamp: BigInt(now), datatype: 'Float', value: Math.fround(0.1) },
        ],
      },
    ],
    ['NCMD rebirth', { timestamp: now, metrics: [{ name: 'Node Control/Rebirth', type: 'Boolean', value: true }] }, { timestamp: BigInt(now), metrics: [{ name: 'Node Control/Rebirth', datatype: 'Boolean', value: true }] }],
    [
      'DCMD writes by alias, negative small integers and 64-bit extremes',
      {
        timestamp: now,
        metrics: [
          { alias: 10, type: 'Int8', value: -1 },
          { alias: 11, type: 'Int16', value: -2 },
          { alias: 17, type: 'UInt64', value: Long.fromString('18446744073709551615', true) },
          { alias: 13, type: 'Int64', value: Long.fromString('-9223372036854775808') },
          { alias: 22, type: 'String', value: '' },
        ],
      },
      {
        timestamp: BigInt(now),
        metrics: [
          { alias: 10n, datatype: 'Int8', value: -1 },
          { alias: 11n, datatype: 'Int16', value: -2 },
          { alias: 17n, datatype: 'UInt64', value: 2n ** 64n - 1n },
          { alias: 13n, datatype: 'Int64', value: -(2n ** 63n) },
          { alias: 22n, datatype: 'String', value: '' },
        ],
      },
    ],
    ['NDEATH: bdSeq only, no seq', { timestamp: now, metrics: [{ name: 'bdSeq', type: 'Int64', value: 41 }] }, { timestamp: BigInt(now), metrics: [{ name: 'bdSeq', datatype: 'Int64', value: 41n }] }],
  ];
  for (const [what, input, want] of cases) {
    const bytes = Buffer.from(tahu.encodePayload(input));
    t.same(canon(decodeSparkplugPayload(bytes)), canon(want), what);
    t.equal(encodeSparkplugPayload(want).toString('hex'), bytes.toString('hex'), `${what}: we write the same bytes`);
  }
});

// ---- decoder: the other forms it accepts ------------------------------------------------------

t.test('decoder: integers in the forms other encoders write', async (t) => {
  t.equal(valueOf(vf(4, 1) + vf(10, 0xff)), -1, 'Int8 in its own width: 0xFF is -1');
  t.equal(valueOf(vf(4, 1) + vf(10, 0x80)), -128, 'Int8 0x80 is -128');
  t.equal(valueOf(vf(4, 2) + vf(10, 0xffff)), -1, 'Int16 in its own width');
  t.equal(valueOf(vf(4, 1) + vf(10, -1n)), -1, 'Int8 sign-extended to 64 bits (a 10-byte varint)');
  t.equal(valueOf(vf(4, 3) + vf(10, -2147483648n)), -2147483648, 'Int32 sign-extended to 64 bits');
  t.equal(valueOf(vf(4, 7) + vf(10, 0xffffffff)), 4294967295, "UInt32 in int_value, as the specification's table (and Tahu's Python codec) has it");
  t.equal(valueOf(vf(4, 3) + vf(11, -5n)), -5, 'Int32 in long_value');
  t.equal(valueOf(vf(4, 5) + vf(11, 200)), 200, 'UInt8 in long_value');
  t.equal(valueOf(vf(4, 4) + vf(11, 2n ** 64n - 1n)), -1n, 'Int64 reads long_value as signed');
  t.equal(valueOf(vf(4, 13) + vf(11, 2n ** 64n - 1n)), 2n ** 64n - 1n, 'DateTime is unsigned');
});

t.test('decoder: field order, packed types, unknown fields, repeated oneof, absent values', async (t) => {
  t.same(canon(decode(oneMetric(vf(10, 5) + vf(4, 3) + sf(1, 'late')))), canon({ metrics: [{ name: 'late', datatype: 'Int32', value: 5 }] }), 'value and name before datatype');
  const packed = lf(17, vf(1, 2) + sf(2, 'a') + sf(2, 'b') + lf(3, '03 0b') + lf(4, lf(1, vf(1, 7)) + lf(1, vf(5, 1))));
  t.same(canon(valueOf(vf(4, 16) + packed)), canon({ columns: ['a', 'b'], types: ['Int32', 'Boolean'], rows: [[7, true]] }), 'DataSet types packed');
  const noisy = vf(99, 1) + lf(2, vf(4, 3) + vf(10, 1) + lf(19, vf(1, 1)) + vf(200, 7)) + lf(6, '0102') + key(7, 5) + '00000000';
  t.same(canon(decode(noisy)), canon({ metrics: [{ datatype: 'Int32', value: 1 }] }), 'unknown fields, extension_value and payload extensions skipped');
  t.equal(valueOf(vf(4, 3) + vf(10, 1) + vf(10, 2)), 2, 'a oneof field twice: the last wins');
  t.equal(valueOf(vf(4, 10) + vf(10, 1) + key(13, 1) + '000000000000f03f'), 1, 'another oneof field after: the last wins');
  t.equal(valueOf(vf(4, 3)), null, 'no value and no is_null: null');
  t.equal(valueOf(vf(4, 3) + vf(7, 1) + vf(10, 9)), null, 'is_null with a value: null');
  t.same(canon(decode(oneMetric(vf(4, 19) + lf(18, '')))), canon({ metrics: [{ datatype: 'Template', value: { isDefinition: false, metrics: [], parameters: [] } }] }), 'an empty template');
});

t.test('decoder: a metric without datatype', async (t) => {
  const data = hex(lf(2, vf(2, 7) + vf(10, 0xffffffff)) + lf(2, vf(2, 8) + vf(11, 5)) + lf(2, sf(1, 'x') + key(13, 1) + '000000000000f83f'));
  t.same(
    canon(decodeSparkplugPayload(data)),
    canon({ metrics: [{ alias: 7n, datatype: 'Unknown', value: 4294967295 }, { alias: 8n, datatype: 'Unknown', value: 5n }, { name: 'x', datatype: 'Unknown', value: 1.5 }] }),
    "without datatypeOf: 'Unknown' with each field's own value",
  );
  const birth = new Map<bigint | string, SparkplugMetric['datatype']>([[7n, 'Int8'], [8n, 'UInt64'], ['x', 'Double']]);
  const asked: unknown[] = [];
  const typed = decodeSparkplugPayload(data, {
    datatypeOf: (m) => {
      asked.push(m.alias ?? m.name);
      return birth.get(m.alias ?? m.name!);
    },
  });
  t.same(canon(typed.metrics.map((m) => [m.datatype, m.value])), canon([['Int8', -1], ['UInt64', 5n], ['Double', 1.5]]), 'with datatypeOf: typed by the birth');
  t.same(asked, [7n, 8n, 'x'], 'datatypeOf asked once per metric without datatype');
  t.equal(decodeSparkplugPayload(hex(lf(2, vf(2, 9) + vf(10, 1))), { datatypeOf: () => undefined }).metrics[0]!.datatype, 'Unknown', 'datatypeOf without an answer');
  t.equal(decodeSparkplugPayload(hex(lf(2, vf(2, 9) + vf(4, 0) + vf(10, 1))), { datatypeOf: () => 'Int32' }).metrics[0]!.datatype, 'Int32', 'datatype 0 (Unknown) is resolved too');
  refuses(t, hex(lf(2, vf(2, 9) + vf(10, 300))), /metric 0 \(alias 9\): Int8 value 300 in int_value is out of range/, "the birth's type is checked like the wire's", { datatypeOf: () => 'Int8' });
  refuses(t, hex(lf(2, vf(2, 9) + vf(10, 1))), /datatypeOf answered "PropertySet"/, 'a datatypeOf answer that is no metric type', { datatypeOf: () => 'PropertySet' as never });
});

t.test('decoder: inputs that are views', async (t) => {
  const bytes = hex(FIXTURES[2]!.bytes);
  const arena = Buffer.concat([Buffer.alloc(13, 0xee), bytes, Buffer.alloc(5, 0xee)]);
  const view = arena.subarray(13, 13 + bytes.length);
  t.same(canon(decodeSparkplugPayload(view)), canon(FIXTURES[2]!.payload), 'a Buffer inside a larger one');
  t.same(canon(decodeSparkplugPayload(new Uint8Array(bytes))), canon(FIXTURES[2]!.payload), 'a Uint8Array');
  const bad = Buffer.concat([Buffer.alloc(7), oneMetric(vf(4, 1) + vf(10, 300))]).subarray(7);
  refuses(t, bad, /\(at byte 4\)$/, 'offsets count from the payload, not the underlying buffer');
  const withBytes = hex(FIXTURES[9]!.bytes);
  const decoded = decodeSparkplugPayload(withBytes);
  withBytes.fill(0);
  t.equal((decoded.metrics[1]!.value as Buffer).toString('hex'), '00ff', 'a decoded Bytes value is a copy, not a view of the input');
});

// ---- decoder: refusals ------------------------------------------------------------------------

t.test('decoder refuses values that do not fit their datatype, naming the metric', async (t) => {
  const name = sf(1, 'temp') + vf(2, 4);
  refuses(t, oneMetric(name + vf(4, 1) + vf(10, 0x100)), /^metric 0 "temp" \(alias 4\): Int8 value 256 in int_value is out of range \(at byte \d+\)$/, 'Int8 256');
  refuses(t, oneMetric(vf(4, 1) + vf(10, 0xffffff7f)), /Int8 value 4294967167 in int_value is out of range/, 'Int8 neither sign-extended nor in its width');
  refuses(t, oneMetric(vf(4, 2) + vf(10, 0x10000)), /Int16 value 65536/, 'Int16 65536');
  refuses(t, oneMetric(vf(4, 5) + vf(10, 0xffffffff)), /UInt8 value 4294967295/, 'UInt8 -1 (sign-extended)');
  refuses(t, oneMetric(vf(4, 6) + vf(10, 65536)), /UInt16 value 65536/, 'UInt16 65536');
  refuses(t, oneMetric(vf(4, 3) + vf(11, 2n ** 40n)), /Int32 value 1099511627776 in long_value is out of range/, 'Int32 beyond 32 bits in long_value');
  refuses(t, oneMetric(vf(4, 7) + vf(11, -1n)), /UInt32 value 18446744073709551615 in long_value is out of range/, 'UInt32 -1 in long_value');
  refuses(t, oneMetric(vf(4, 4) + vf(10, 5)), /Int64 value in int_value, expected long_value/, 'Int64 in int_value');
  refuses(t, oneMetric(vf(4, 11) + sf(15, 'true')), /Boolean value in string_value, expected boolean_value/, 'Boolean in string_value');
  refuses(t, oneMetric(vf(4, 9) + key(13, 1) + '0000000000000000'), /Float value in double_value, expected float_value/, 'Float in double_value');
  refuses(t, oneMetric(vf(4, 17) + sf(15, 'x')), /Bytes value in string_value/, 'Bytes in string_value');
  refuses(t, oneMetric(vf(4, 16) + lf(16, '')), /DataSet value in bytes_value/, 'DataSet in bytes_value');
  refuses(t, oneMetric(vf(4, 99) + vf(10, 1)), /unknown datatype 99/, 'datatype 99');
  refuses(t, oneMetric(vf(4, 20) + vf(10, 1)), /datatype PropertySet is for property values, not metrics/, 'a metric of datatype PropertySet');
});

t.test('decoder refuses malformed protobuf and strings', async (t) => {
  refuses(t, oneMetric(lf(1, 'c328')), /^metric 0: name is not valid UTF-8/, 'a name that is not UTF-8');
  refuses(t, oneMetric(vf(4, 12) + lf(15, 'ff')), /String value is not valid UTF-8/, 'a string value that is not UTF-8');
  refuses(t, hex(lf(4, 'ed a0 80')), /^uuid is not valid UTF-8/, 'a uuid with a UTF-16 surrogate');
  refuses(t, hex('12 05 0a 01'), /overruns the message \(at byte 2\)/, 'a metric cut short');
  refuses(t, hex('08 80'), /truncated varint/, 'a timestamp cut short');
  refuses(t, hex('08 ffffffffffffffffffff01'), /varint longer than 10 bytes/, 'an 11-byte varint');
  refuses(t, oneMetric(vf(1, 5)), /^metric 0: name has wire type 0, expected 2/, 'a name as a varint');
  refuses(t, hex('7b'), /^unsupported wire type 3 \(at byte 1\)$/, 'a group (wire type 3) in an unknown field');
  refuses(t, hex('00 00'), /field number 0/, 'field number 0');
  refuses(t, hex(lf(2, '') + lf(2, vf(4, 3) + key(10, 2) + '00')), /^metric 1: int_value has wire type 2, expected 0 \(at byte \d+\)$/, 'the second metric is named by its index');
});

t.test('decoder refuses property sets, data sets and templates that break their rules', async (t) => {
  const withProps = (set: string) => oneMetric(sf(1, 'm') + vf(4, 3) + lf(9, set) + vf(10, 1));
  const pv = (fields: string) => lf(2, fields);
  refuses(t, withProps(sf(1, 'a') + sf(1, 'b') + pv(vf(1, 3) + vf(3, 1))), /metric 0 "m": properties: a property set of 2 keys and 1 values/, 'keys without values');
  refuses(t, withProps(sf(1, 'a') + sf(1, 'a') + pv(vf(1, 3) + vf(3, 1)) + pv(vf(1, 3) + vf(3, 2))), /property key "a" appears twice/, 'a key twice');
  refuses(t, withProps(sf(1, 'a') + pv(vf(3, 1))), /properties: property "a": a property value without a type/, 'a property value without a type');
  refuses(t, withProps(sf(1, 'a') + pv(vf(1, 17) + vf(3, 1))), /property type 17 is not a basic type, PropertySet or PropertySetList/, 'a property of type Bytes');
  refuses(t, withProps(sf(1, 'a') + pv(vf(1, 20) + vf(3, 1))), /PropertySet value in int_value/, 'a PropertySet in int_value');
  refuses(t, withProps(sf(1, 'Quality') + pv(vf(1, 3) + sf(8, '192'))), /property "Quality": Int32 value in string_value, expected int_value/, 'Quality as a string');
  const ds = (content: string) => oneMetric(sf(1, 'd') + vf(4, 16) + lf(17, content));
  refuses(t, ds(vf(1, 2) + sf(2, 'a') + vf(3, 3)), /data set: a DataSet of num_of_columns 2 with 1 column names and 1 types/, 'num_of_columns that is not the number of types');
  refuses(t, ds(sf(2, 'a') + vf(3, 3)), /a DataSet without num_of_columns/, 'no num_of_columns');
  refuses(t, ds(vf(1, 1) + sf(2, 'a') + sf(2, 'b') + vf(3, 3)), /with 2 column names and 1 types/, 'more names than types');
  refuses(t, ds(vf(1, 1) + sf(2, 'a') + vf(3, 17)), /column 0 has type 17, not a basic type/, 'a Bytes column');
  refuses(t, ds(vf(1, 2) + sf(2, 'a') + sf(2, 'b') + vf(3, 3) + vf(3, 3) + lf(4, lf(1, vf(1, 1)))), /data set: row 0: 1 cells for 2 columns/, 'a row one cell short');
  refuses(t, ds(vf(1, 1) + sf(2, 'a') + vf(3, 3) + lf(4, lf(1, vf(1, 1)) + lf(1, vf(1, 1)))), /row 0: more cells than the 1 columns/, 'a row one cell long');
  refuses(t, ds(vf(1, 1) + sf(2, 'a') + vf(3, 11) + lf(4, lf(1, vf(1, 1)))), /row 0: column 0: Boolean value in int_value, expected boolean_value/, 'a cell in the wrong field');
  const tpl = (content: string) => oneMetric(sf(1, 't') + vf(4, 19) + lf(18, content));
  refuses(t, tpl(lf(3, vf(2, 3) + vf(3, 1))), /template: parameter 0: a template parameter without a name/, 'a parameter without a name');
  refuses(t, tpl(lf(3, sf(1, 'p') + vf(2, 16))), /parameter 0 "p": parameter type 16 is not a basic type/, 'a DataSet parameter');
  refuses(t, tpl(lf(2, sf(1, 'inner') + vf(4, 1) + vf(10, 999))), /metric 0 "t": template: metric 0 "inner": Int8 value 999/, 'a bad member metric is named by its path');
});

t.test('decoder refuses arrays whose bytes are not whole elements', async (t) => {
  const arr = (type: number, bytes: string) => oneMetric(sf(1, 'a') + vf(4, type) + lf(16, bytes));
  refuses(t, arr(23, '010203'), /Int16Array of 3 bytes is not a whole number of 2-byte elements/, 'Int16Array of 3 bytes');
  refuses(t, arr(25, '01'), /Int64Array of 1 bytes/, 'Int64Array of 1 byte');
  refuses(t, arr(32, '0100'), /BooleanArray of 2 bytes has no 4-byte count/, 'BooleanArray without a count');
  refuses(t, arr(32, '09000000 ff'), /BooleanArray of 9 values needs 6 bytes, not 5/, 'BooleanArray shorter than its count');
  refuses(t, arr(32, '01000000 80 00'), /BooleanArray of 1 values needs 5 bytes, not 6/, 'BooleanArray longer than its count');
  refuses(t, arr(33, '4142'), /StringArray does not end with a NUL/, 'StringArray unterminated');
  refuses(t, arr(33, 'ff00'), /StringArray is not valid UTF-8/, 'StringArray not UTF-8');
  t.same(valueOf(vf(4, 33) + lf(16, '00 00')), ['', ''], 'StringArray of two empty strings');
  t.same(valueOf(vf(4, 32) + lf(16, '00000000')), [], 'BooleanArray of none');
});

// ---- decoder: bounds --------------------------------------------------------------------------

t.test('decoder bounds: metrics, elements, nesting, string and bytes sizes (the maximum passes, one more is refused)', async (t) => {
  const L = SPARKPLUG_DECODE_LIMITS;
  const metrics = (n: number) => Buffer.concat(Array.from({ length: n }, () => hex(lf(2, vf(4, 11) + vf(14, 1)))));
  t.equal(decodeSparkplugPayload(metrics(L.maxMetrics)).metrics.length, L.maxMetrics, `${L.maxMetrics} metrics`);
  refuses(t, metrics(L.maxMetrics + 1), new RegExp(`^more than ${L.maxMetrics} metrics`), `${L.maxMetrics + 1} metrics`);
  t.equal(decodeSparkplugPayload(metrics(3), { maxMetrics: 3 }).metrics.length, 3, 'maxMetrics given: 3');
  refuses(t, metrics(4), /more than 3 metrics/, 'maxMetrics given: 4', { maxMetrics: 3 });
  const tplOf = (n: number) => oneMetric(vf(4, 19) + lf(18, Array.from({ length: n }, () => lf(2, vf(4, 11) + vf(14, 0))).join('')));
  t.equal((decodeSparkplugPayload(tplOf(5), { maxMetrics: 5 }).metrics[0]!.value as { metrics: unknown[] }).metrics.length, 5, '5 template members with maxMetrics 5');
  refuses(t, tplOf(6), /template: more than 5 metrics in a template/, '6 template members with maxMetrics 5', { maxMetrics: 5 });

  // Elements: the metric is one, each key and each value one more.
  const props = (n: number) => oneMetric(vf(4, 3) + lf(9, Array.from({ length: n }, (_, i) => sf(1, `k${i}`)).join('') + Array.from({ length: n }, () => lf(2, vf(1, 11) + vf(7, 1))).join('')) + vf(10, 1));
  const budget = L.maxElements;
  const fits = Math.floor((budget - 1) / 2);
  t.equal(decodeSparkplugPayload(props(fits)).metrics[0]!.properties!.size, fits, `${fits} properties (${2 * fits + 1} elements)`);
  refuses(t, props(fits + 1), new RegExp(`more than ${budget} elements`), 'one property more');
  const i8 = (n: number) => oneMetric(vf(4, 22) + lf(16, '00'.repeat(n)));
  t.equal((decodeSparkplugPayload(i8(budget - 1)).metrics[0]!.value as number[]).length, budget - 1, 'an Int8Array as long as the remaining bound');
  refuses(t, i8(budget), new RegExp(`Int8Array of ${budget} elements is over the payload's remaining bound of ${budget - 1} elements`), 'one element more');
  const bools = oneMetric(vf(4, 32) + lf(16, 'ffffffff' + 'ff'.repeat(4)));
  refuses(t, bools, /BooleanArray of 4294967295 values needs/, 'a BooleanArray count of 2^32-1 over 4 bytes is refused before allocating');

  // Nesting: properties are level 1, each PropertySet inside one more.
  const nested = (levels: number) => {
    let set = sf(1, 'v') + lf(2, vf(1, 3) + vf(3, 1));
    for (let i = 1; i < levels; i++) set = sf(1, 'n') + lf(2, vf(1, 20) + lf(9, set));
    return oneMetric(vf(4, 3) + lf(9, set) + vf(10, 1));
  };
  t.ok(decodeSparkplugPayload(nested(L.maxDepth)), `${L.maxDepth} levels`);
  refuses(t, nested(L.maxDepth + 1), new RegExp(`nested deeper than ${L.maxDepth} levels`), `${L.maxDepth + 1} levels`);
  // 20,000 templates inside one another: refused by the bound, never a stack overflow.
  refuses(t, nestedTemplates(20000), /nested deeper than 8 levels/, '20,000 nested templates');

  const longName = (n: number) => oneMetric(sf(1, 'x'.repeat(n)) + vf(4, 11) + vf(14, 1));
  t.equal(decodeSparkplugPayload(longName(L.maxStringBytes)).metrics[0]!.name!.length, L.maxStringBytes, `a name of ${L.maxStringBytes} bytes`);
  refuses(t, longName(L.maxStringBytes + 1), new RegExp(`name of ${L.maxStringBytes + 1} bytes is over the bound of ${L.maxStringBytes}`), 'one byte more');
  const bytesOf = (n: number) => oneMetric(vf(4, 17) + lf(16, '00'.repeat(n)));
  t.equal((decodeSparkplugPayload(bytesOf(1000), { maxBytes: 1000 }).metrics[0]!.value as Buffer).length, 1000, 'Bytes of maxBytes');
  refuses(t, bytesOf(1001), /Bytes value of 1001 bytes is over the bound of 1000/, 'one byte more', { maxBytes: 1000 });
  refuses(t, hex(lf(5, '00'.repeat(1001))), /body of 1001 bytes is over the bound of 1000/, 'a body over maxBytes', { maxBytes: 1000 });
});

// ---- encoder: refusals ------------------------------------------------------------------------

t.test('encoder refuses values that do not fit their datatype, naming the metric', async (t) => {
  encodeRefuses(t, m1({ datatype: 'Int8', value: 128 }), /^metric 0 "a": Int8 value must be an integer from -128 to 127, not 128$/, 'Int8 128');
  encodeRefuses(t, m1({ datatype: 'Int8', value: -129 }), /not -129/, 'Int8 -129');
  encodeRefuses(t, m1({ datatype: 'UInt16', value: 65536 }), /UInt16 value must be an integer from 0 to 65535/, 'UInt16 65536');
  encodeRefuses(t, m1({ datatype: 'Int32', value: 2.5 }), /not 2.5/, 'Int32 2.5');
  encodeRefuses(t, m1({ datatype: 'Int32', value: NaN }), /not NaN/, 'Int32 NaN');
  encodeRefuses(t, m1({ datatype: 'UInt32', value: -1 }), /UInt32 value must be an integer from 0 to 4294967295, not -1/, 'UInt32 -1');
  encodeRefuses(t, m1({ datatype: 'UInt32', value: 4294967296 }), /not 4294967296/, 'UInt32 2^32');
  encodeRefuses(t, m1({ datatype: 'UInt64', value: 5 as never }), /UInt64 value must be a bigint from 0 to 18446744073709551615, not 5/, 'UInt64 as a number');
  encodeRefuses(t, m1({ datatype: 'UInt64', value: 2n ** 64n }), /not 18446744073709551616n/, 'UInt64 2^64');
  encodeRefuses(t, m1({ datatype: 'Int64', value: 2n ** 63n }), /Int64 value must be a bigint from -9223372036854775808/, 'Int64 2^63');
  encodeRefuses(t, m1({ datatype: 'DateTime', value: -1n }), /DateTime value must be a bigint from 0/, 'DateTime before the epoch');
  encodeRefuses(t, m1({ datatype: 'Float', value: '1' as never }), /Float value must be a number, not "1"/, 'Float as text');
  encodeRefuses(t, m1({ datatype: 'Boolean', value: 1 as never }), /Boolean value must be a boolean, not 1/, 'Boolean 1');
  encodeRefuses(t, m1({ datatype: 'String', value: 5 as never }), /String value must be a string, not 5/, 'String 5');
  encodeRefuses(t, m1({ datatype: 'Bytes', value: 'AAE=' as never }), /Bytes value must be a Buffer/, 'Bytes as base64 text');
  encodeRefuses(t, m1({ datatype: 'Unknown', value: 1 }), /datatype "Unknown" cannot be encoded here/, 'datatype Unknown');
  encodeRefuses(t, m1({ datatype: 'PropertySet' as never, value: 1 as never }), /datatype "PropertySet" cannot be encoded here/, 'datatype PropertySet');
  encodeRefuses(t, m1({ datatype: 'Int33' as never, value: 1 as never }), /datatype "Int33" cannot be encoded here/, 'a datatype that is none');
  encodeRefuses(t, m1({ datatype: 'Int32', value: undefined as never }), /a metric needs a value \(null for none\)/, 'no value');
  encodeRefuses(t, { metrics: [{ alias: -1n, datatype: 'Int32', value: 1 }] }, /^metric 0 \(alias -1\): alias must be a bigint from 0/, 'a negative alias');
  encodeRefuses(t, { metrics: [{ name: 'a', datatype: 'Int32', value: 1 }], seq: 1 as never }, /^seq must be a bigint/, 'seq as a number');
  encodeRefuses(t, { metrics: [{ name: 'ok', datatype: 'Int32', value: 1 }, { name: 'b', datatype: 'Int8', value: 300 }] }, /^metric 1 "b": /, 'the second metric is named');
});

t.test('encoder refuses structures that break their rules', async (t) => {
  const ds = (value: unknown) => m1({ datatype: 'DataSet', value: value as never });
  encodeRefuses(t, ds({ columns: ['a', 'b'], types: ['Int32'], rows: [] }), /a DataSet has 2 columns and 1 types/, 'types and columns differ');
  encodeRefuses(t, ds({ columns: ['a'], types: ['Int32'], rows: [[1, 2]] }), /row 0 has 2 cells for 1 columns/, 'a row too long');
  encodeRefuses(t, ds({ columns: ['a'], types: ['Bytes'], rows: [] }), /column 0 type "Bytes" cannot be encoded here/, 'a Bytes column');
  encodeRefuses(t, ds({ columns: ['a'], types: ['Int64'], rows: [[1]] }), /data set: row 0: column 0: Int64 value must be a bigint/, 'an Int64 cell as a number');
  encodeRefuses(t, ds({ columns: ['a'] }), /a DataSet value must be an object \{columns, types, rows\}/, 'not a DataSet');
  const self: { isDefinition: boolean; metrics: unknown[]; parameters: unknown[] } = { isDefinition: true, metrics: [], parameters: [] };
  self.metrics.push({ name: 'me', datatype: 'Template', value: self });
  encodeRefuses(t, m1({ datatype: 'Template', value: self as never }), /templates nested deeper than 32 levels/, 'a template that contains itself');
  encodeRefuses(t, m1({ datatype: 'Template', value: { isDefinition: true, metrics: [], parameters: [{ name: 'p', type: 'Template', value: null }] } as never }), /parameter 0 "p": type "Template" cannot be encoded here/, 'a Template parameter');
  encodeRefuses(t, m1({ datatype: 'Template', value: { metrics: [], parameters: [] } as never }), /is_definition must be a boolean/, 'a template without isDefinition');
  encodeRefuses(t, m1({ datatype: 'Int32', value: 1, properties: { Quality: 192 } as never }), /properties: a property set must be a Map/, 'properties as a plain object');
  encodeRefuses(t, m1({ datatype: 'Int32', value: 1, properties: new Map([['x', { type: 'Bytes', value: null }]]) as never }), /property "x": property type "Bytes" cannot be encoded here/, 'a Bytes property');
  encodeRefuses(t, m1({ datatype: 'Int32', value: 1, properties: new Map([['Quality', { type: 'Int32', value: 2 ** 31 }]]) }), /property "Quality": Int32 value must be an integer/, 'a property out of range');
  const loop = new Map();
  loop.set('me', { type: 'PropertySet', value: loop });
  encodeRefuses(t, m1({ datatype: 'Int32', value: 1, properties: loop }), /property sets nested deeper than 32 levels/, 'a property set that contains itself');
  encodeRefuses(t, m1({ datatype: 'StringArray', value: ['a\u0000b'] }), /StringArray element 0 cannot be "a\\u0000b"/, 'a NUL inside a StringArray element');
  encodeRefuses(t, m1({ datatype: 'Int16Array', value: [1, 40000] }), /Int16Array element 1 cannot be 40000/, 'an Int16Array element out of range');
  encodeRefuses(t, m1({ datatype: 'UInt64Array', value: [1 as never] }), /UInt64Array element 0 cannot be 1 /, 'a UInt64Array element as a number');
  encodeRefuses(t, m1({ datatype: 'BooleanArray', value: [true, 1 as never] }), /BooleanArray element 1 cannot be 1/, 'a BooleanArray element that is no boolean');
  encodeRefuses(t, m1({ datatype: 'FloatArray', value: 'x' as never }), /FloatArray value must be an array/, 'an array that is none');
});

t.test('an encoded payload is what was asked for, also after a refusal', async (t) => {
  // The encoder keeps nothing between calls: a refused payload leaves no trace in the next one.
  encodeRefuses(t, { metrics: [{ name: 'x', datatype: 'Int8', value: 1000 }] }, /Int8/, 'refused');
  t.equal(encodeSparkplugPayload({ metrics: [] }).length, 0, 'the next payload is empty');
  const big = { metrics: Array.from({ length: 300 }, (_, i): SparkplugMetric => ({ name: `m${i}`, alias: BigInt(i), datatype: 'String', value: 'é'.repeat(i) })) };
  t.same(canon(decodeSparkplugPayload(encodeSparkplugPayload(big))), canon(big), 'metrics of 128 bytes and more (lengths widened in place) round-trip');
});
