// Channel values as Sparkplug metrics and a command's metric as the write it asks for
// (test/helpers/sparkplug-codec/channel-values.ts), checked against the daemon's own value parse
// (docs/architecture.md "Asset values: one conversion"): the text a DCMD metric becomes parses back
// to exactly its value, and what the parse refuses for REST it refuses here with the same message.

import t from 'tap';
import { parseValueText } from '../../src/channels/values.js';
import { VALUE_TYPES, type TypedValue } from '../../src/channels/types.js';
import { DATATYPES } from '../helpers/sparkplug-codec/datatypes.js';
import { channelTypeOf, DATATYPE_OF_CHANNEL, metricDescription, metricValueOf, writeTextOf, type ChannelValue } from '../helpers/sparkplug-codec/channel-values.js';
import { decodeSparkplugPayload, encodeSparkplugPayload, type SparkplugMetric } from '../helpers/sparkplug-codec/payload.js';
import { canon, tahuDecode } from '../helpers/tahu.js';

t.test('each channel value type has one datatype, and it is written back as that type', async (t) => {
  t.same(Object.keys(DATATYPE_OF_CHANNEL).sort(), [...VALUE_TYPES].sort(), 'every value type of the channel model is mapped');
  t.same({ ...DATATYPE_OF_CHANNEL }, { BOOLEAN: 'Boolean', INTEGER: 'Int32', LONG: 'Int64', FLOAT: 'Float', DOUBLE: 'Double', STRING: 'String', BYTE_ARRAY: 'Bytes' });
  for (const [type, datatype] of Object.entries(DATATYPE_OF_CHANNEL)) t.equal(channelTypeOf(datatype), type, `${datatype} is written as ${type}`);
});

t.test('which datatypes a command may write, and as what', async (t) => {
  const want: Record<string, string | undefined> = {
    Int8: 'INTEGER', Int16: 'INTEGER', Int32: 'INTEGER', UInt8: 'INTEGER', UInt16: 'INTEGER',
    UInt32: 'LONG', Int64: 'LONG', UInt64: 'LONG', DateTime: 'LONG',
    Float: 'FLOAT', Double: 'DOUBLE', Boolean: 'BOOLEAN', String: 'STRING', Text: 'STRING', UUID: 'STRING', Bytes: 'BYTE_ARRAY', File: 'BYTE_ARRAY',
  };
  for (const d of DATATYPES) t.equal(channelTypeOf(d), want[d], `${d}: ${want[d] ?? 'not writable'}`);
});

t.test('channel values as DBIRTH/DDATA metrics: exact on the wire, also as Tahu reads them', async (t) => {
  const values: ChannelValue[] = [
    { type: 'BOOLEAN', value: true },
    { type: 'INTEGER', value: -2147483648 },
    { type: 'LONG', value: -(2n ** 63n) },
    { type: 'LONG', value: 2n ** 63n - 1n },
    { type: 'FLOAT', value: Math.fround(-23.7) },
    { type: 'DOUBLE', value: -23.726753928870977 },
    { type: 'STRING', value: 'Grüße' },
    { type: 'BYTE_ARRAY', value: Buffer.from([0, 1, 0xff]) },
  ];
  const metrics = values.map((v, i): SparkplugMetric => ({ name: `c${i}`, alias: BigInt(i), timestamp: 1700000000000n, ...metricValueOf(v) }) as SparkplugMetric);
  const bytes = encodeSparkplugPayload({ timestamp: 1700000000000n, seq: 0n, metrics });
  t.same(canon(decodeSparkplugPayload(bytes).metrics.map((m) => m.value)), canon(values.map((v) => v.value)), 'our decoder');
  t.same(canon(tahuDecode(bytes).metrics.map((m) => [m.datatype, m.value])), canon(metrics.map((m) => [m.datatype, m.value])), "Tahu's decoder");
});

/** What a DCMD metric writes: its text through the daemon's parse, as REST `_write` does. */
function written(m: SparkplugMetric): TypedValue | string {
  const w = writeTextOf(m);
  return w.ok ? parseValueText(w.type, w.text) : w.error;
}

t.test('a DCMD metric becomes text that parses back to exactly its value', async (t) => {
  const cases: [SparkplugMetric, TypedValue][] = [
    [{ alias: 1n, datatype: 'Int8', value: -128 }, { type: 'INTEGER', value: -128 }],
    [{ alias: 1n, datatype: 'Int16', value: 32767 }, { type: 'INTEGER', value: 32767 }],
    [{ alias: 1n, datatype: 'Int32', value: -2147483648 }, { type: 'INTEGER', value: -2147483648 }],
    [{ alias: 1n, datatype: 'UInt8', value: 255 }, { type: 'INTEGER', value: 255 }],
    [{ alias: 1n, datatype: 'UInt16', value: 65535 }, { type: 'INTEGER', value: 65535 }],
    [{ alias: 1n, datatype: 'UInt32', value: 4294967295 }, { type: 'LONG', value: 4294967295n }],
    [{ alias: 1n, datatype: 'Int64', value: -(2n ** 63n) }, { type: 'LONG', value: -(2n ** 63n) }],
    [{ alias: 1n, datatype: 'UInt64', value: 2n ** 63n - 1n }, { type: 'LONG', value: 2n ** 63n - 1n }],
    [{ alias: 1n, datatype: 'DateTime', value: 1700000000000n }, { type: 'LONG', value: 1700000000000n }],
    [{ alias: 1n, datatype: 'Float', value: Math.fround(0.1) }, { type: 'FLOAT', value: Math.fround(0.1) }],
    [{ alias: 1n, datatype: 'Float', value: 3.4028234663852886e38 }, { type: 'FLOAT', value: 3.4028234663852886e38 }],
    [{ alias: 1n, datatype: 'Float', value: 1.401298464324817e-45 }, { type: 'FLOAT', value: 1.401298464324817e-45 }],
    [{ alias: 1n, datatype: 'Float', value: -0 }, { type: 'FLOAT', value: -0 }],
    [{ alias: 1n, datatype: 'Double', value: 0.1 }, { type: 'DOUBLE', value: 0.1 }],
    [{ alias: 1n, datatype: 'Double', value: -0 }, { type: 'DOUBLE', value: -0 }],
    [{ alias: 1n, datatype: 'Double', value: 5e-324 }, { type: 'DOUBLE', value: 5e-324 }],
    [{ alias: 1n, datatype: 'Double', value: Number.MAX_VALUE }, { type: 'DOUBLE', value: Number.MAX_VALUE }],
    [{ alias: 1n, datatype: 'Double', value: 1e21 }, { type: 'DOUBLE', value: 1e21 }],
    [{ alias: 1n, datatype: 'Boolean', value: false }, { type: 'BOOLEAN', value: false }],
    [{ alias: 1n, datatype: 'String', value: '' }, { type: 'STRING', value: '' }],
    [{ alias: 1n, datatype: 'Text', value: ' 12 ' }, { type: 'STRING', value: ' 12 ' }],
    [{ alias: 1n, datatype: 'UUID', value: '123e4567-e89b-12d3-a456-426614174000' }, { type: 'STRING', value: '123e4567-e89b-12d3-a456-426614174000' }],
    [{ alias: 1n, datatype: 'Bytes', value: Buffer.from([0, 0xfb, 0xff]) }, { type: 'BYTE_ARRAY', value: Buffer.from([0, 0xfb, 0xff]) }],
    [{ alias: 1n, datatype: 'Bytes', value: Buffer.alloc(0) }, { type: 'BYTE_ARRAY', value: Buffer.alloc(0) }],
    [{ alias: 1n, datatype: 'File', value: Buffer.from('x') }, { type: 'BYTE_ARRAY', value: Buffer.from('x') }],
  ];
  for (const [m, want] of cases) t.same(canon(written(m)), canon(want), `${m.datatype} ${canon(m.value)}`);
  t.same(writeTextOf({ alias: 1n, datatype: 'Float', value: Math.fround(0.1) }), { ok: true, type: 'FLOAT', text: '0.1' }, 'a Float in its shortest digits');
});

t.test('random values of every writable type come back exactly', async (t) => {
  let seed = 7;
  const rnd = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296);
  const bits = () => (BigInt(Math.floor(rnd() * 2 ** 32)) << 32n) | BigInt(Math.floor(rnd() * 2 ** 32));
  let n = 0;
  for (let i = 0; i < 2000; i++) {
    const buf = Buffer.alloc(8);
    buf.writeBigUInt64LE(bits());
    const cases: [SparkplugMetric, unknown][] = [
      [{ datatype: 'Int64', value: BigInt.asIntN(64, bits()) }, undefined],
      [{ datatype: 'UInt32', value: Math.floor(rnd() * 2 ** 32) }, undefined],
      [{ datatype: 'Int32', value: Math.floor(rnd() * 2 ** 32) - 2 ** 31 }, undefined],
      [{ datatype: 'Double', value: buf.readDoubleLE(0) }, undefined],
      [{ datatype: 'Float', value: buf.readFloatLE(0) }, undefined],
    ];
    for (const [m] of cases) {
      if (typeof m.value === 'number' && !Number.isFinite(m.value)) continue;
      const got = written(m);
      const v = typeof got === 'string' ? got : got.value;
      const want = m.datatype === 'UInt32' ? BigInt(m.value as number) : m.value;
      if (!Object.is(v, want) && v !== want) t.fail(`${m.datatype} ${String(m.value)} came back as ${String(v)}`);
      n++;
    }
  }
  t.ok(n > 9000, `${n} values`);
});

t.test('what the parse refuses for REST it refuses for a command, with the same message', async (t) => {
  t.equal(written({ alias: 1n, datatype: 'UInt64', value: 2n ** 64n - 1n }), '18446744073709551615 cannot be converted into a TypedValue of type LONG', 'a UInt64 beyond a LONG');
  t.equal(written({ alias: 1n, datatype: 'Float', value: NaN }), 'NaN cannot be converted into a TypedValue of type FLOAT', 'a Float NaN');
  t.equal(written({ alias: 1n, datatype: 'Double', value: -Infinity }), '-Infinity cannot be converted into a TypedValue of type DOUBLE', 'a Double -Infinity');
  t.equal(parseValueText('DOUBLE', '-Infinity'), written({ alias: 1n, datatype: 'Double', value: -Infinity }), 'the same answer as the REST text');
});

t.test('what no channel can hold is refused, naming the metric', async (t) => {
  const refusal = (m: SparkplugMetric) => {
    const w = writeTextOf(m);
    return w.ok ? `wrote ${w.text}` : w.error;
  };
  t.equal(refusal({ name: 'setpoint', datatype: 'Double', value: null }), 'metric "setpoint": a null value cannot be written');
  t.equal(refusal({ alias: 7n, datatype: 'DataSet', value: { columns: [], types: [], rows: [] } }), 'metric with alias 7: DataSet value cannot be written to a channel');
  t.equal(refusal({ alias: 7n, datatype: 'Template', value: { isDefinition: false, metrics: [], parameters: [] } }), 'metric with alias 7: Template value cannot be written to a channel');
  t.equal(refusal({ alias: 7n, datatype: 'Int16Array', value: [1] }), 'metric with alias 7: Int16Array value cannot be written to a channel');
  t.equal(refusal({ alias: 7n, datatype: 'Unknown', value: 5 }), 'metric with alias 7: no datatype, and none known for it from the birth');
  t.equal(metricDescription({}), 'a metric without name or alias');
  t.equal(metricDescription({ name: 'x'.repeat(100) }), `metric "${'x'.repeat(64)}…"`, 'a long name is cut');
});

t.test('a DCMD as a host sends it, without datatype: typed by the birth, then written exactly', async (t) => {
  // The birth said alias 3 is a LONG channel (Int64), alias 4 a FLOAT one.
  const birth = new Map<bigint, SparkplugMetric['datatype']>([[3n, 'Int64'], [4n, 'Float']]);
  const wire = Buffer.from('12 0d 10 03 58 80 80 80 80 80 80 80 80 80 01  12 07 10 04 65 cd cc cc 3d'.replace(/\s+/g, ''), 'hex');
  const dcmd = decodeSparkplugPayload(wire, { datatypeOf: (m) => (m.alias === undefined ? undefined : birth.get(m.alias)) });
  t.same(canon(dcmd.metrics.map(written)), canon([{ type: 'LONG', value: -(2n ** 63n) }, { type: 'FLOAT', value: Math.fround(0.1) }]));
});
