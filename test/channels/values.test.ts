// The channel model's value conversions, as tables: exact JSON, Kura's text parsing, REST output
// text, scale/offset with Kura's truncation, and write conversions.
import t from 'tap';
import { JsonNumber, parseExactJson } from '../../src/core/json.js';
import {
  convertValue, fromJsonValue, javaDoubleText, javaFloatText, parseValueText, valueText, valueToJson,
} from '../../src/channels/values.js';
import { applyScaleOffset } from '../../src/channels/scaling.js';
import type { TypedValue, ValueType } from '../../src/channels/types.js';

const show = (v: TypedValue | string): string => {
  if (typeof v === 'string') return `error: ${v}`;
  if (typeof v.value === 'bigint') return `${v.type}:${v.value}n`;
  if (Buffer.isBuffer(v.value)) return `${v.type}:0x${v.value.toString('hex')}`;
  return `${v.type}:${Object.is(v.value, -0) ? '-0' : JSON.stringify(v.value)}`;
};

t.test('exact JSON keeps number text and refuses what RFC 8259 refuses', async (t) => {
  const v = parseExactJson('{"a":[9223372036854775807, -1.50e3, true, null, "x\\u00e9\\n"], "__proto__": 1}') as any;
  t.ok(v.a[0] instanceof JsonNumber);
  t.equal(v.a[0].text, '9223372036854775807', 'no rounding through a double');
  t.equal(v.a[1].text, '-1.50e3', 'literal text kept (Gson gives "1.50" for 1.50)');
  t.same(v.a.slice(2), [true, null, 'x\u00e9\n']);
  t.equal(Object.getPrototypeOf(v), null, 'null-prototype objects');
  t.ok(Object.keys(v).includes('__proto__'), '__proto__ is an ordinary key');
  const bad = [
    '', '{', '{"a":1,}', "{'url':'x'}", '[1 2]', '01', '1.', '.5', '+1', '"\t"', '"\\x"', '"\\u12"', 'tru', 'NaN',
    '{"a":1}x', '\ufeff{}', '[' .repeat(100) + ']'.repeat(100),
  ];
  for (const text of bad) t.throws(() => parseExactJson(text), { name: 'JsonSyntaxError' }, `refuses ${JSON.stringify(text.slice(0, 20))}`);
  t.match((() => { try { parseExactJson('{"a":}'); } catch (e) { return (e as Error).message; } })(), /position 5/, 'says where');
  t.same(parseExactJson(' [ ] '), []);
  t.equal((parseExactJson('-0') as JsonNumber).text, '-0');
});

t.test("Kura's text parsing (TypedValues.parseTypedValue)", async (t) => {
  const rows: [ValueType, string, string][] = [
    ['INTEGER', '12', 'INTEGER:12'],
    ['INTEGER', '+7', 'INTEGER:7'],
    ['INTEGER', '-2147483648', 'INTEGER:-2147483648'],
    ['INTEGER', '2147483648', 'error: 2147483648 cannot be converted into a TypedValue of type INTEGER'],
    ['INTEGER', '10.0', 'error: 10.0 cannot be converted into a TypedValue of type INTEGER'],
    ['INTEGER', '1e3', 'error: 1e3 cannot be converted into a TypedValue of type INTEGER'],
    ['INTEGER', 'abc', 'error: abc cannot be converted into a TypedValue of type INTEGER'],
    ['LONG', '1234', 'LONG:1234n'],
    ['LONG', '9223372036854775807', 'LONG:9223372036854775807n'],
    ['LONG', '-9223372036854775808', 'LONG:-9223372036854775808n'],
    ['LONG', '9007199254740993', 'LONG:9007199254740993n'],
    ['LONG', '-0009223372036854775808', 'LONG:-9223372036854775808n'],
    ['LONG', '99999999999999999999', 'error: 99999999999999999999 cannot be converted into a TypedValue of type LONG'],
    ['LONG', '9223372036854775808', 'error: 9223372036854775808 cannot be converted into a TypedValue of type LONG'],
    ['DOUBLE', '1.234', 'DOUBLE:1.234'],
    ['DOUBLE', ' 2.5d ', 'DOUBLE:2.5'],
    ['DOUBLE', '1e400', 'error: 1e400 cannot be converted into a TypedValue of type DOUBLE'],
    ['DOUBLE', 'NaN', 'error: NaN cannot be converted into a TypedValue of type DOUBLE'],
    ['DOUBLE', '1,5', 'error: 1,5 cannot be converted into a TypedValue of type DOUBLE'],
    ['FLOAT', '12.34', `FLOAT:${Math.fround(12.34)}`],
    ['FLOAT', '1e39', 'error: 1e39 cannot be converted into a TypedValue of type FLOAT'],
    ['BOOLEAN', 'true', 'BOOLEAN:true'],
    ['BOOLEAN', 'TRUE', 'BOOLEAN:true'],
    ['BOOLEAN', 'false', 'BOOLEAN:false'],
    ['BOOLEAN', '1', 'BOOLEAN:true'],
    ['BOOLEAN', '0', 'BOOLEAN:false'],
    ['BOOLEAN', 'yes', 'error: yes cannot be converted into a TypedValue of type BOOLEAN'],
    ['BOOLEAN', 'on', 'error: on cannot be converted into a TypedValue of type BOOLEAN'],
    ['BOOLEAN', '', 'error:  cannot be converted into a TypedValue of type BOOLEAN'],
    ['STRING', 'val', 'STRING:"val"'],
    ['BYTE_ARRAY', 'AQID', 'BYTE_ARRAY:0x010203'],
    ['BYTE_ARRAY', 'AQI', 'BYTE_ARRAY:0x0102'],
    ['BYTE_ARRAY', 'AQI=', 'BYTE_ARRAY:0x0102'],
    ['BYTE_ARRAY', 'AQ=', 'error: AQ= cannot be converted into a TypedValue of type BYTE_ARRAY'],
    ['BYTE_ARRAY', 'A', 'error: A cannot be converted into a TypedValue of type BYTE_ARRAY'],
    ['BYTE_ARRAY', 'AQ-_', 'error: AQ-_ cannot be converted into a TypedValue of type BYTE_ARRAY'],
  ];
  for (const [type, text, want] of rows) t.equal(show(parseValueText(type, text)), want, `${type} ${JSON.stringify(text)}`);
  t.equal(show(parseValueText('DOUBLE', 'Infinity')), 'error: Infinity cannot be converted into a TypedValue of type DOUBLE', 'an infinity is no written value');
});

t.test('REST JSON text of values (Gson with Java number text)', async (t) => {
  const rows: [TypedValue, string][] = [
    [{ type: 'INTEGER', value: 1 }, '1'],
    [{ type: 'LONG', value: 9223372036854775807n }, '9223372036854775807'],
    [{ type: 'LONG', value: -(2n ** 63n) }, '-9223372036854775808'],
    [{ type: 'LONG', value: 2n ** 53n + 1n }, '9007199254740993'],
    [{ type: 'DOUBLE', value: 1.234 }, '1.234'],
    [{ type: 'DOUBLE', value: 1 }, '1.0'],
    [{ type: 'DOUBLE', value: 1e7 }, '1.0E7'],
    [{ type: 'DOUBLE', value: 12345678.9 }, '1.23456789E7'],
    [{ type: 'DOUBLE', value: 0.0001 }, '1.0E-4'],
    [{ type: 'DOUBLE', value: 0.001 }, '0.001'],
    [{ type: 'DOUBLE', value: -0 }, '-0.0'],
    [{ type: 'DOUBLE', value: NaN }, '"NaN"'],
    [{ type: 'FLOAT', value: Math.fround(12.34) }, '12.34'],
    [{ type: 'FLOAT', value: Math.fround(0.1) }, '0.1'],
    [{ type: 'FLOAT', value: Math.fround(3.4028234663852886e38) }, '3.4028235E38'],
    [{ type: 'FLOAT', value: Math.fround(16777216) }, '1.6777216E7'],
    [{ type: 'BOOLEAN', value: true }, 'true'],
    [{ type: 'STRING', value: 'a"b' }, '"a\\"b"'],
    [{ type: 'BYTE_ARRAY', value: Buffer.from([1, 2, 3]) }, '"AQID"'],
    [{ type: 'BYTE_ARRAY', value: Buffer.from([1, 2]) }, '"AQI="'],
  ];
  for (const [v, want] of rows) {
    const got = valueToJson(v);
    t.equal(got, want, show(v));
    if (!want.startsWith('"') && v.type !== 'LONG') t.doesNotThrow(() => JSON.parse(got), 'valid JSON');
  }
  t.equal(javaDoubleText(100), '100.0');
  t.equal(javaDoubleText(1.0e-3), '0.001');
  t.equal(javaDoubleText(9999999.999), '9999999.999');
  t.equal(javaFloatText(Math.fround(1.1)), '1.1');
  t.equal(valueText({ type: 'LONG', value: 2n ** 62n }), '4611686018427387904');
});

t.test("scale and offset on reads, with Kura's integer truncation", async (t) => {
  const rows: [TypedValue, number, number, string][] = [
    [{ type: 'INTEGER', value: 10 }, 0.5, 0, 'INTEGER:0'], // Kura truncates an INTEGER channel's scaled value: (int)0.5 = 0
    [{ type: 'DOUBLE', value: 10 }, 0.5, 0, 'DOUBLE:5'],
    [{ type: 'INTEGER', value: 10 }, 2.9, 1.9, 'INTEGER:21'],
    [{ type: 'INTEGER', value: 10 }, -1.5, -0.5, 'INTEGER:-10'],
    [{ type: 'INTEGER', value: 2147483647 }, 2, 0, 'INTEGER:-2'], // Java int arithmetic wraps
    [{ type: 'LONG', value: 2n ** 62n }, 2, 1, 'LONG:-9223372036854775807n'],
    [{ type: 'LONG', value: 9007199254740993n }, 1, 2.7, 'LONG:9007199254740995n'],
    [{ type: 'FLOAT', value: Math.fround(1.5) }, 0.1, 0, `FLOAT:${Math.fround(Math.fround(1.5) * Math.fround(0.1))}`],
    [{ type: 'DOUBLE', value: 3 }, 1, 0, 'DOUBLE:3'],
    [{ type: 'STRING', value: '7' }, 2, 3, 'STRING:"7"'],
    [{ type: 'BOOLEAN', value: true }, 2, 3, 'BOOLEAN:true'],
  ];
  for (const [v, scale, offset, want] of rows) t.equal(show(applyScaleOffset(v, { scale, offset })), want, `${show(v)} *${scale} +${offset}`);
});

t.test('write conversions to the channel type are exact or fail', async (t) => {
  const rows: [TypedValue, ValueType, string][] = [
    [{ type: 'INTEGER', value: 10 }, 'DOUBLE', 'DOUBLE:10'],
    [{ type: 'DOUBLE', value: 10 }, 'INTEGER', 'INTEGER:10'],
    [{ type: 'DOUBLE', value: 10.5 }, 'INTEGER', 'error: 10.5 does not fit a INTEGER channel'],
    [{ type: 'LONG', value: 2n ** 40n }, 'INTEGER', 'error: 1099511627776 does not fit a INTEGER channel'],
    [{ type: 'LONG', value: 2n ** 60n + 1n }, 'LONG', 'LONG:1152921504606846977n'],
    [{ type: 'INTEGER', value: 5 }, 'LONG', 'LONG:5n'],
    [{ type: 'STRING', value: '9223372036854775807' }, 'LONG', 'LONG:9223372036854775807n'],
    [{ type: 'STRING', value: 'x' }, 'INTEGER', 'error: x cannot be converted into a TypedValue of type INTEGER'],
    [{ type: 'INTEGER', value: 2 }, 'BOOLEAN', 'BOOLEAN:true'],
    [{ type: 'INTEGER', value: 0 }, 'BOOLEAN', 'BOOLEAN:false'],
    [{ type: 'LONG', value: -1n }, 'BOOLEAN', 'BOOLEAN:false'],
    [{ type: 'BYTE_ARRAY', value: Buffer.from([0, 4]) }, 'BOOLEAN', 'BOOLEAN:true'],
    [{ type: 'BOOLEAN', value: true }, 'INTEGER', 'INTEGER:1'],
    [{ type: 'DOUBLE', value: 1e7 }, 'STRING', 'STRING:"1.0E7"'],
    [{ type: 'BYTE_ARRAY', value: Buffer.from([1]) }, 'INTEGER', 'error: a BYTE_ARRAY value cannot be written to a INTEGER channel'],
    [{ type: 'DOUBLE', value: 1e300 }, 'FLOAT', 'error: 1.0E300 does not fit a FLOAT channel'],
    // A DOUBLE fits a FLOAT channel when its float32 rounding is finite, as FLOAT text does.
    [{ type: 'DOUBLE', value: 3.4028235e38 }, 'FLOAT', `FLOAT:${3.4028234663852886e38}`],
    [{ type: 'DOUBLE', value: 3.5e38 }, 'FLOAT', 'error: 3.5E38 does not fit a FLOAT channel'],
    [{ type: 'STRING', value: '1' }, 'BOOLEAN', 'BOOLEAN:true'],
    [{ type: 'STRING', value: 'yes' }, 'BOOLEAN', 'error: yes cannot be converted into a TypedValue of type BOOLEAN'],
  ];
  for (const [v, target, want] of rows) t.equal(show(convertValue(v, target)), want, `${show(v)} → ${target}`);
});

t.test('configuration values (simulator initial)', async (t) => {
  t.equal(show(fromJsonValue('LONG', '9223372036854775807')), 'LONG:9223372036854775807n', 'LONG as a decimal string stays exact');
  t.equal(show(fromJsonValue('LONG', 2 ** 53 + 2)), 'error: expected a 64-bit integer for LONG (a JSON number up to 2^53, or a decimal string)');
  t.equal(show(fromJsonValue('FLOAT', 0.1)), `FLOAT:${Math.fround(0.1)}`);
  t.equal(show(fromJsonValue('BYTE_ARRAY', 'AQID')), 'BYTE_ARRAY:0x010203');
  t.equal(show(fromJsonValue('INTEGER', 1.5)), 'error: expected a 32-bit integer for INTEGER');
});
