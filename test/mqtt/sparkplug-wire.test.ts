// The edge node's compact Sparkplug codec (src/mqtt/sparkplug/wire.ts) against the full codec
// (test/helpers/sparkplug-codec/payload.ts) and Eclipse Tahu's: the same bytes for the same metrics, seq appended as the last
// field reads back as Tahu reads it, and commands encoded by Tahu become the write text the full
// codec's decode and channel-values.ts writeTextOf give (or are refused, with the same reasons for
// what no channel can hold); malformed commands throw and never hang.

import t from 'tap';
import { commandWriteText, decodeCommand, encodePayload, withSeq, type OutMetric } from '../../src/mqtt/sparkplug/wire.js';
import { decodeSparkplugPayload, encodeSparkplugPayload, type SparkplugMetric } from '../helpers/sparkplug-codec/payload.js';
import { DATATYPE_OF_CHANNEL, writeTextOf } from '../helpers/sparkplug-codec/channel-values.js';
import { parseValueText } from '../../src/channels/values.js';
import { tahuDecode, tahuEncode } from '../helpers/tahu.js';
import { DecodeError } from '../../src/mqtt/kura-payload.js';
import type { TypedValue } from '../../src/channels/types.js';

const T = 1700000000000;

t.test('encodePayload writes the bytes payload.ts writes, seq appended reads back in Tahu', async (t) => {
  const values: TypedValue[] = [
    { type: 'BOOLEAN', value: true },
    { type: 'INTEGER', value: -2147483648 },
    { type: 'INTEGER', value: 7 },
    { type: 'LONG', value: -9223372036854775808n },
    { type: 'LONG', value: 9223372036854775807n },
    { type: 'FLOAT', value: Math.fround(0.1) },
    { type: 'DOUBLE', value: -0 },
    { type: 'STRING', value: 'héllo ✓' },
    { type: 'BYTE_ARRAY', value: Buffer.from([0, 255]) },
  ];
  const ours: OutMetric[] = [
    { name: 'bdSeq', timestamp: T, value: 255n },
    { name: 'Node Control/Rebirth', alias: 1n, timestamp: T, value: false },
    ...values.map((v, i): OutMetric => ({ name: `m${i}`, alias: BigInt(i + 2), timestamp: T + i, value: v })),
    { alias: 99n, timestamp: T, type: 'DOUBLE', value: null, historical: true },
  ];
  const full: SparkplugMetric[] = [
    { name: 'bdSeq', timestamp: BigInt(T), datatype: 'Int64', value: 255n },
    { name: 'Node Control/Rebirth', alias: 1n, timestamp: BigInt(T), datatype: 'Boolean', value: false },
    ...values.map((v, i) => ({ name: `m${i}`, alias: BigInt(i + 2), timestamp: BigInt(T + i), datatype: DATATYPE_OF_CHANNEL[v.type], value: v.value }) as SparkplugMetric),
    { alias: 99n, timestamp: BigInt(T), datatype: 'Double', value: null, isHistorical: true },
  ];
  for (const seq of [0, 127, 128, 255]) {
    const bytes = withSeq(encodePayload(T, ours), seq);
    t.same(bytes.toString('hex'), encodeSparkplugPayload({ timestamp: BigInt(T), metrics: full, seq: BigInt(seq) }).toString('hex'), `the same bytes as payload.ts, seq ${seq}`);
    const back = tahuDecode(bytes);
    t.equal(back.seq, BigInt(seq), 'Tahu reads the seq');
  }
  const back = tahuDecode(encodePayload(T, ours));
  t.same(back.metrics.map((m) => m.datatype), full.map((m) => m.datatype), 'Tahu reads the datatypes');
  t.equal(back.metrics.at(-1)?.isHistorical, true);
});

/** What the full codec and writeTextOf make of a command's metric (the reference). */
function reference(bytes: Buffer, birth: keyof typeof DATATYPE_OF_CHANNEL): string {
  const m = decodeSparkplugPayload(bytes, { datatypeOf: () => DATATYPE_OF_CHANNEL[birth] }).metrics[0]!;
  const w = writeTextOf(m);
  return w.ok ? `${w.type} ${w.text}` : 'refused';
}

t.test('commands Tahu encodes: the write text of the full codec, or refused', async (t) => {
  const cases: [string, unknown, keyof typeof DATATYPE_OF_CHANNEL][] = [
    ['Int8', -128, 'INTEGER'],
    ['Int8', 127, 'INTEGER'],
    ['Int16', -300, 'INTEGER'],
    ['Int32', -2147483648, 'INTEGER'],
    ['UInt8', 255, 'INTEGER'],
    ['UInt16', 65535, 'INTEGER'],
    ['UInt32', 4294967295, 'LONG'],
    ['Int64', -9223372036854775808n, 'LONG'],
    ['UInt64', 18446744073709551615n, 'LONG'],
    ['UInt64', 9223372036854775808n, 'LONG'],
    ['DateTime', 1700000000000n, 'LONG'],
    ['Float', Math.fround(3.4e38), 'FLOAT'],
    ['Float', Math.fround(0.1), 'DOUBLE'],
    ['Double', Number.NaN, 'DOUBLE'],
    ['Double', -0, 'DOUBLE'],
    ['Double', 1e-300, 'DOUBLE'],
    ['Boolean', true, 'BOOLEAN'],
    ['String', 'ünï', 'STRING'],
    ['Text', 'text', 'STRING'],
    ['Bytes', Buffer.from([1, 2, 3]), 'BYTE_ARRAY'],
  ];
  for (const [datatype, value, birth] of cases) {
    const bytes = tahuEncode({ timestamp: BigInt(T), metrics: [{ alias: 5n, datatype, value } as SparkplugMetric] });
    const [m] = decodeCommand(bytes);
    const w = commandWriteText(m!, birth);
    const ours = w.ok ? `${w.type} ${w.text}` : 'refused';
    const ref = reference(bytes, birth);
    // The texts may differ in digits (a Float as its double, 0.10000000149011612, not 0.1); what the one parse makes of them may not.
    const parsed = (s: string) => {
      if (s === 'refused') return s;
      const [type, ...rest] = s.split(' ');
      const v = parseValueText(type as never, rest.join(' '));
      return typeof v === 'string' ? `refused: ${v}` : `${v.type} ${Buffer.isBuffer(v.value) ? v.value.toString('hex') : Object.is(v.value, -0) ? '-0' : String(v.value)}`;
    };
    t.equal(parsed(ours), parsed(ref), `${datatype} ${String(value)}: ${ours}`);
  }
  // Without a datatype on the wire: the channel's (birth) type.
  const noType = Buffer.from('12 04 10 05 50 07'.replace(/ /g, ''), 'hex'); // metric { alias 5, int_value 7 }
  t.same(commandWriteText(decodeCommand(noType)[0]!, 'INTEGER'), { ok: true, type: 'INTEGER', text: '7' });
  // Out of a datatype's range: refused by the range check.
  const wide = Buffer.from('12 07 10 05 20 01 50 c8 01'.replace(/ /g, ''), 'hex'); // Int8, int_value 200
  t.match(commandWriteText(decodeCommand(wide)[0]!, 'INTEGER'), { ok: false, error: /out of range/ });
});

t.test('what no channel can hold is refused; malformed commands throw DecodeError', async (t) => {
  for (const m of [
    { name: 'n', datatype: 'Int32', value: null },
    { name: 'ds', datatype: 'DataSet', value: { columns: ['a'], types: ['Int32'], rows: [[1]] } },
    { name: 'arr', datatype: 'Int32Array', value: [1, 2] },
  ]) {
    const bytes = tahuEncode({ metrics: [m as SparkplugMetric] });
    const w = commandWriteText(decodeCommand(bytes)[0]!, 'INTEGER');
    t.equal(w.ok, false, `${m.datatype} ${m.value === null ? 'null' : ''} refused`);
  }
  const wrongWire = Buffer.from('12 06 10 05 20 09 60 01'.replace(/ /g, ''), 'hex'); // Float in a varint
  t.match(commandWriteText(decodeCommand(wrongWire)[0]!, 'FLOAT'), { ok: false });
  // Truncated, a varint of 11 bytes.
  for (const hex of ['12 05 0a', '12 02 0a ff', 'ff ff ff ff ff ff ff ff ff ff ff']) {
    let err: unknown;
    try {
      decodeCommand(Buffer.from(hex.replace(/ /g, ''), 'hex'));
    } catch (e) {
      err = e;
    }
    t.ok(err instanceof DecodeError, `malformed ${hex}: ${(err as Error)?.message}`);
  }
  const many = Buffer.concat(Array.from({ length: 1001 }, () => Buffer.from('1200', 'hex')));
  t.throws(() => decodeCommand(many), /more than 1000 metrics/);
});
