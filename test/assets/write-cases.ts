// The written values every front end must decide alike (docs/rest-api.md "Writing values", docs/mqtt.md
// "ASSET-V1", docs/architecture.md "Asset values: one conversion"): each range's limits and one
// past them, overflow, NaN and Infinity as text, hexadecimal, empty text, whitespace, booleans, and
// values of another type than the channel's. Used through the real daemon by
// test/assets/write-conversion.test.ts and as a table of the parse by test/mqtt/asset-v1-values.test.ts.

import type { ValueType } from '../../src/channels/types.js';

/** The test asset's channels (simulator `memory`), by name. */
export const CHANNELS = { flag: 'BOOLEAN', n: 'INTEGER', l: 'LONG', f: 'FLOAT', x: 'DOUBLE', s: 'STRING', b: 'BYTE_ARRAY' } as const satisfies Record<string, ValueType>;
export type ChannelName = keyof typeof CHANNELS;

export interface WriteCase {
  type: ValueType;
  value: string;
  channel: ChannelName;
  /**
   * `written`: the value text read back and reported (Java's text, as the REST JSON and an
   * ASSET-V1 entry show it); `refused`: the whole request is refused with this message;
   * `fails`: the request is served and this channel fails with this message.
   */
  outcome: { written: string } | { refused: string } | { fails: string };
}

const sameType: Record<ValueType, ChannelName> = { BOOLEAN: 'flag', INTEGER: 'n', LONG: 'l', FLOAT: 'f', DOUBLE: 'x', STRING: 's', BYTE_ARRAY: 'b' };
const ok = (type: ValueType, value: string, written: string, channel = sameType[type]): WriteCase => ({ type, value, channel, outcome: { written } });
const refused = (type: ValueType, value: string): WriteCase => ({
  type,
  value,
  channel: sameType[type],
  outcome: { refused: `${value} cannot be converted into a TypedValue of type ${type}` },
});
const fails = (type: ValueType, value: string, channel: ChannelName, message: string): WriteCase => ({ type, value, channel, outcome: { fails: message } });

export const WRITE_CASES: WriteCase[] = [
  // BOOLEAN: true/false in any letter case, and 1/0; nothing else.
  ok('BOOLEAN', 'true', 'true'),
  ok('BOOLEAN', 'TRUE', 'true'),
  ok('BOOLEAN', 'tRuE', 'true'),
  ok('BOOLEAN', 'false', 'false'),
  ok('BOOLEAN', 'False', 'false'),
  ok('BOOLEAN', '1', 'true'),
  ok('BOOLEAN', '0', 'false'),
  ...['yes', 'no', 'on', 'off', 'y', 't', '', ' ', ' true', 'true ', '2', '-1', '+1', '01', '1.0', '0x1', 'truefalse'].map((v) => refused('BOOLEAN', v)),
  // INTEGER: the 32-bit range, its limits and one past them; Java's parseInt syntax.
  ok('INTEGER', '2147483647', '2147483647'),
  ok('INTEGER', '-2147483648', '-2147483648'),
  ok('INTEGER', '+7', '7'),
  ok('INTEGER', '007', '7'),
  ...['2147483648', '-2147483649', '0x10', '1e3', '10.0', '', ' ', ' 5', '5 ', 'NaN', 'Infinity'].map((v) => refused('INTEGER', v)),
  // LONG: the 64-bit range, exact.
  ok('LONG', '9223372036854775807', '9223372036854775807'),
  ok('LONG', '-9223372036854775808', '-9223372036854775808'),
  ok('LONG', '9007199254740993', '9007199254740993'),
  ...['9223372036854775808', '-9223372036854775809', '0x7fffffffffffffff', '', ' 1', '1.5'].map((v) => refused('LONG', v)),
  // FLOAT: rounded to float32 as Java rounds; a value that rounds to an infinity is an overflow.
  ok('FLOAT', '3.4028235E38', '3.4028235E38'),
  ok('FLOAT', '-3.4028235E38', '-3.4028235E38'),
  ok('FLOAT', ' 2.5 ', '2.5'),
  ok('FLOAT', '1.5f', '1.5'),
  ok('FLOAT', '0.1', '0.1'),
  ...['3.5e38', '-3.5e38', '1e39', '1e999', 'NaN', 'Infinity', '-Infinity', '0x1p3', '0x10', '', ' '].map((v) => refused('FLOAT', v)),
  // DOUBLE: finite values only.
  ok('DOUBLE', '1.7976931348623157E308', '1.7976931348623157E308'),
  ok('DOUBLE', '-1.7976931348623157E308', '-1.7976931348623157E308'),
  ok('DOUBLE', '2.2250738585072014E-308', '2.2250738585072014E-308'),
  ok('DOUBLE', '\t2.5\n', '2.5'),
  ok('DOUBLE', '-23.726753928870977', '-23.726753928870977'),
  ok('DOUBLE', '1e3', '1000.0'),
  ...['1e999', '-1e999', '1.8e308', 'NaN', 'Infinity', '-Infinity', '+Infinity', '0x10', '0x1p3', '', '   ', '1,5', 'abc'].map((v) => refused('DOUBLE', v)),
  // STRING and BYTE_ARRAY: empty text is a value.
  ok('STRING', '', ''),
  ok('STRING', '  ', '  '),
  ok('BYTE_ARRAY', '', ''),
  ok('BYTE_ARRAY', 'AQID', 'AQID'),
  ...['A', 'AQ=', 'AQ-_', ' AQID'].map((v) => refused('BYTE_ARRAY', v)),
  // Another type than the channel's: converted by the asset runtime, or that channel fails.
  ok('STRING', '1', 'true', 'flag'),
  ok('STRING', 'FALSE', 'false', 'flag'),
  fails('STRING', 'yes', 'flag', 'yes cannot be converted into a TypedValue of type BOOLEAN'),
  fails('STRING', 'on', 'flag', 'on cannot be converted into a TypedValue of type BOOLEAN'),
  ok('INTEGER', '5', 'true', 'flag'),
  ok('INTEGER', '0', 'false', 'flag'),
  ok('BOOLEAN', 'true', '1.0', 'x'),
  ok('STRING', '7', '7', 'n'),
  fails('STRING', 'seven', 'n', 'seven cannot be converted into a TypedValue of type INTEGER'),
  fails('STRING', '2147483648', 'n', '2147483648 cannot be converted into a TypedValue of type INTEGER'),
  fails('STRING', '1e999', 'x', '1e999 cannot be converted into a TypedValue of type DOUBLE'),
  fails('STRING', 'NaN', 'x', 'NaN cannot be converted into a TypedValue of type DOUBLE'),
  ok('DOUBLE', '2.0', '2', 'n'),
  fails('DOUBLE', '2.5', 'n', '2.5 does not fit a INTEGER channel'),
  fails('LONG', '2147483648', 'n', '2147483648 does not fit a INTEGER channel'),
  ok('LONG', '-2147483648', '-2147483648', 'n'),
  fails('LONG', '9007199254740993', 'n', '9007199254740993 does not fit a INTEGER channel'),
  ok('DOUBLE', '3.4028235E38', '3.4028235E38', 'f'),
  fails('DOUBLE', '3.5e38', 'f', '3.5E38 does not fit a FLOAT channel'),
  ok('INTEGER', '-3', '-3', 's'),
  ok('INTEGER', '12', '12.0', 'x'),
];
