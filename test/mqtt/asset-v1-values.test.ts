// ASSET-V1 value text: Java's toString forms out, Java's parsers in with the refusals every front end
// shares (docs/mqtt.md "ASSET-V1", docs/rest-api.md "Writing values"), as tables.

import t from 'tap';
import { javaDoubleText, javaFloatText, parseValueText, parseValueType, valueText } from '../../src/api/asset-v1/value-text.js';
import type { TypedValue, ValueType } from '../../src/channels/types.js';
import { convertValue } from '../../src/channels/values.js';
import { CHANNELS, WRITE_CASES } from '../assets/write-cases.js';

t.test('Double.toString', async (t) => {
  const table: [number, string][] = [
    [0, '0.0'],
    [-0, '-0.0'],
    [1, '1.0'],
    [432, '432.0'],
    [12.34, '12.34'],
    [0.001, '0.001'],
    [0.0001, '1.0E-4'],
    [1.234e-4, '1.234E-4'],
    [9999999, '9999999.0'],
    [1e7, '1.0E7'],
    [12345678.9, '1.23456789E7'],
    [-1.5e10, '-1.5E10'],
    [1e21, '1.0E21'],
    [Number.MAX_VALUE, '1.7976931348623157E308'],
    [NaN, 'NaN'],
    [Infinity, 'Infinity'],
    [-Infinity, '-Infinity'],
  ];
  for (const [v, s] of table) t.equal(javaDoubleText(v), s, String(v));
});

t.test('Float.toString (shortest digits of the float32)', async (t) => {
  const table: [number, string][] = [
    [Math.fround(0.1), '0.1'],
    [Math.fround(12.34), '12.34'],
    [Math.fround(1.1), '1.1'],
    [Math.fround(3.4028234663852886e38), '3.4028235E38'],
    [Math.fround(1e7), '1.0E7'],
    [Math.fround(16777216), '1.6777216E7'],
    [Math.fround(-2.5), '-2.5'],
    [0, '0.0'],
  ];
  for (const [v, s] of table) t.equal(javaFloatText(v), s, String(v));
});

t.test('valueText per type', async (t) => {
  const table: [TypedValue, string][] = [
    [{ type: 'BOOLEAN', value: true }, 'true'],
    [{ type: 'INTEGER', value: -5 }, '-5'],
    [{ type: 'LONG', value: 9223372036854775807n }, '9223372036854775807'],
    [{ type: 'FLOAT', value: Math.fround(0.1) }, '0.1'],
    [{ type: 'DOUBLE', value: 2 }, '2.0'],
    [{ type: 'STRING', value: 'a b' }, 'a b'],
    [{ type: 'BYTE_ARRAY', value: Buffer.from([1, 2, 3]) }, 'AQID'],
  ];
  for (const [v, s] of table) t.equal(valueText(v), s, v.type);
});

t.test('parseValueText: Java parsers', async (t) => {
  const ok: [ValueType, string, unknown][] = [
    ['INTEGER', '10', 10],
    ['INTEGER', '+10', 10],
    ['INTEGER', '-2147483648', -2147483648],
    ['LONG', '-9223372036854775808', -9223372036854775808n],
    ['DOUBLE', '1e3', 1000],
    ['DOUBLE', ' 2.5 ', 2.5],
    ['DOUBLE', '.5', 0.5],
    ['DOUBLE', '5.', 5],
    ['DOUBLE', '1.5d', 1.5],
    ['FLOAT', '0.1', Math.fround(0.1)],
    ['FLOAT', '2f', 2],
    ['BOOLEAN', 'TRUE', true],
    ['BOOLEAN', 'false', false],
    ['BOOLEAN', '1', true],
    ['BOOLEAN', '0', false],
    ['STRING', '', ''],
    ['BYTE_ARRAY', 'AQID', Buffer.from([1, 2, 3])],
    ['BYTE_ARRAY', 'AQI', Buffer.from([1, 2])],
    ['BYTE_ARRAY', 'AQI=', Buffer.from([1, 2])],
    ['BYTE_ARRAY', '', Buffer.alloc(0)],
  ];
  for (const [type, text, want] of ok) {
    const v = parseValueText(type, text);
    t.not(typeof v, 'string', `${type} ${JSON.stringify(text)} parses`);
    if (typeof v !== 'string') t.same(v.value, want, `${type} ${JSON.stringify(text)}`);
  }
  const bad: [ValueType, string][] = [
    ['INTEGER', '10.0'],
    ['INTEGER', '1e3'],
    ['INTEGER', ' 1'],
    ['INTEGER', '2147483648'],
    ['INTEGER', ''],
    ['LONG', '9223372036854775808'],
    ['LONG', '0x10'],
    ['DOUBLE', 'abc'],
    ['DOUBLE', '1e'],
    ['DOUBLE', ''],
    ['FLOAT', '1,5'],
    ['DOUBLE', 'NaN'],
    ['DOUBLE', '-Infinity'],
    ['DOUBLE', '1e999'],
    ['FLOAT', '3.5e38'],
    ['DOUBLE', '0x1p3'],
    ['BOOLEAN', 'yes'],
    ['BOOLEAN', ''],
    ['BYTE_ARRAY', 'A'],
    ['BYTE_ARRAY', 'AQ=D'],
    ['BYTE_ARRAY', 'AQ I'],
    ['BYTE_ARRAY', 'AQ-_'],
    ['BYTE_ARRAY', 'AQ='],
  ];
  for (const [type, text] of bad) {
    t.equal(parseValueText(type, text), `${text} cannot be converted into a TypedValue of type ${type}`, `${type} ${JSON.stringify(text)} refused`);
  }
});

t.test('the write cases every front end shares: parsed as the requested type, converted to the channel', async (t) => {
  // The same table test/assets/write-conversion.test.ts sends through the daemon; here the parse
  // and the conversion alone, so a difference shows which of the two decided.
  for (const c of WRITE_CASES) {
    const what = `${c.type} ${JSON.stringify(c.value)} to ${c.channel}`;
    const parsed = parseValueText(c.type, c.value);
    if ('refused' in c.outcome) {
      t.equal(parsed, c.outcome.refused, `${what}: refused`);
      continue;
    }
    if (typeof parsed === 'string') {
      t.fail(`${what}: parses (${parsed})`);
      continue;
    }
    const converted = convertValue(parsed, CHANNELS[c.channel]);
    if ('fails' in c.outcome) t.equal(converted, c.outcome.fails, `${what}: that channel fails`);
    else t.equal(typeof converted === 'string' ? converted : valueText(converted), c.outcome.written, `${what}: ${c.outcome.written}`);
  }
});

t.test('type names are case-insensitive in ASSET-V1', async (t) => {
  t.equal(parseValueType('integer'), 'INTEGER');
  t.equal(parseValueType('Byte_Array'), 'BYTE_ARRAY');
  t.equal(parseValueType('NUMBER'), undefined);
});
