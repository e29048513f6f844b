// KuraPayload codec: (object, bytes) fixtures give parse, generate and round-trip tests; gzip on
// the wire; simple-json; fuzzed garbage never throws out of a decoder.

import t from 'tap';
import zlib from 'node:zlib';
import {
  decodeKuraPayload,
  decodeKuraPayloadRaw,
  encodeKuraPayload,
  encodeKuraPayloadForWire,
  isGzip,
  MAX_METRICS,
  type KuraMetric,
  type KuraPayload,
} from '../../src/mqtt/kura-payload.js';
import { decodeSimpleJsonPayload, encodeSimpleJsonPayload } from '../../src/mqtt/simple-json-payload.js';

const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ''), 'hex');
// Field 5000 (metric), wire type 2: tag varint 40002 = c2 b8 02. Field 5001 (body): 40010 = ca b8 02.
const METRIC = 'c2b802';
const BODY = 'cab802';

const fixtures: [string, KuraPayload, Buffer][] = [
  ['empty payload', { metrics: [] }, hex('')],
  ['timestamp only', { timestamp: 1700000000000n, metrics: [] }, hex('08 80 d0 95 ff bc 31')],
  ['INT32 metric', { metrics: [{ name: 'a', type: 'INT32', value: 5 }] }, hex(`${METRIC} 07 0a0161 1003 3005`)],
  [
    'negative INT32 is sign-extended to 10 bytes',
    { metrics: [{ name: 'a', type: 'INT32', value: -1 }] },
    hex(`${METRIC} 10 0a0161 1003 30 ffffffffffffffffff01`),
  ],
  ['DOUBLE metric', { metrics: [{ name: 'd', type: 'DOUBLE', value: 1.5 }] }, hex(`${METRIC} 0e 0a0164 1000 19 000000000000f83f`)],
  ['FLOAT metric', { metrics: [{ name: 'f', type: 'FLOAT', value: 0.5 }] }, hex(`${METRIC} 0a 0a0166 1001 25 0000003f`)],
  ['INT64 metric', { metrics: [{ name: 'l', type: 'INT64', value: 300n }] }, hex(`${METRIC} 08 0a016c 1002 28ac02`)],
  [
    'INT64 negative',
    { metrics: [{ name: 'l', type: 'INT64', value: -2n }] },
    hex(`${METRIC} 10 0a016c 1002 28 feffffffffffffffff01`),
  ],
  ['BOOL metric', { metrics: [{ name: 'b', type: 'BOOL', value: true }] }, hex(`${METRIC} 07 0a0162 1004 3801`)],
  [
    'STRING metric (request.id)',
    { metrics: [{ name: 'request.id', type: 'STRING', value: 'R1' }] },
    hex(`${METRIC} 12 0a0a 726571756573742e6964 1005 4202 5231`),
  ],
  ['BYTES metric', { metrics: [{ name: 'x', type: 'BYTES', value: Buffer.from([1, 2]) }] }, hex(`${METRIC} 09 0a0178 1006 4a020102`)],
  ['body', { metrics: [], body: Buffer.from('[]') }, hex(`${BODY} 02 5b5d`)],
  [
    'timestamp, two metrics and a body, in field order',
    {
      timestamp: 1n,
      metrics: [
        { name: 'a', type: 'INT32', value: 200 },
        { name: 's', type: 'STRING', value: '' },
      ],
      body: Buffer.alloc(0),
    },
    hex(`0801 ${METRIC} 08 0a0161 1003 30c801 ${METRIC} 07 0a0173 1005 4200 ${BODY} 00`),
  ],
  [
    'position',
    { position: { latitude: 1, longitude: 2, satellites: 3 }, metrics: [] },
    hex('12 14 09 000000000000f03f 11 0000000000000040 4003'),
  ],
];

const norm = (p: KuraPayload) => JSON.parse(JSON.stringify(p, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v)));

for (const [name, obj, bytes] of fixtures) {
  t.test(name, async (t) => {
    t.equal(encodeKuraPayload(obj).toString('hex'), bytes.toString('hex'), 'generate');
    const d = decodeKuraPayloadRaw(bytes);
    t.ok(d.ok, 'parse');
    if (d.ok) t.same(norm(d.value), norm(obj), 'parsed object');
    const rt = decodeKuraPayload(encodeKuraPayload(obj));
    t.ok(rt.ok && encodeKuraPayload(rt.value).equals(bytes), 'round trip');
  });
}

t.test('decoder details', async (t) => {
  // A metric with its value field absent reads the type's default, as Java protobuf does.
  const d = decodeKuraPayloadRaw(hex(`${METRIC} 05 0a0161 1003`));
  t.ok(d.ok && d.value.metrics[0]!.value === 0);
  // Unknown fields (an extension, number 10, varint) are skipped.
  const u = decodeKuraPayloadRaw(hex('5005 0801'));
  t.ok(u.ok && u.value.timestamp === 1n);
  // Missing required name / type, unknown type, wrong wire type, truncation: errors, not throws.
  for (const [what, b] of [
    ['no name', `${METRIC} 02 1003`],
    ['no type', `${METRIC} 03 0a0161`],
    ['unknown type 9', `${METRIC} 05 0a0161 1009`],
    ['timestamp as bytes', '0a0100'],
    ['truncated body', `${BODY} 05 01`],
    ['group wire type', '0b'],
    ['field 0', '0001'],
    ['endless varint', '08 ffffffffffffffffffffff'],
  ] as const) {
    const r = decodeKuraPayloadRaw(hex(b));
    t.equal(r.ok, false, what);
    if (!r.ok) t.match(r.error, /^invalid KuraPayload/, `${what}: message`);
  }
});

t.test('gzip on the wire', async (t) => {
  const long: KuraPayload = { metrics: [{ name: 'response.code', type: 'INT32', value: 200 }], body: Buffer.from('x'.repeat(500)) };
  const wire = encodeKuraPayloadForWire(long, true);
  t.ok(isGzip(wire), 'long payload gzipped (1f 8b)');
  t.ok(wire.length < encodeKuraPayload(long).length);
  const back = decodeKuraPayload(wire);
  t.ok(back.ok && back.value.body!.toString() === 'x'.repeat(500), 'gunzipped on decode');
  const short: KuraPayload = { metrics: [{ name: 'response.code', type: 'INT32', value: 200 }] };
  t.notOk(isGzip(encodeKuraPayloadForWire(short, true)), 'short payload sent plain (gzip not shorter)');
  t.notOk(isGzip(encodeKuraPayloadForWire(long, false)), 'gzip off');
  t.equal(decodeKuraPayload(hex('1f8b0000')).ok, false, 'broken gzip is an error');
  const gzReq = zlib.gzipSync(encodeKuraPayload(short));
  t.ok(decodeKuraPayload(gzReq).ok, 'gzipped request accepted');
});

t.test('simple-json', async (t) => {
  const p = decodeSimpleJsonPayload(
    Buffer.from(JSON.stringify({ sentOn: 5, metrics: { 'request.id': '1', n: 3, d: 1.5, b: true }, body: Buffer.from('[]').toString('base64') })),
  );
  t.equal(p.timestamp, 5n);
  t.same(
    p.metrics.map((m) => [m.name, m.type, typeof m.value === 'bigint' ? Number(m.value) : m.value]),
    [
      ['request.id', 'STRING', '1'],
      ['n', 'INT64', 3],
      ['d', 'DOUBLE', 1.5],
      ['b', 'BOOL', true],
    ],
  );
  t.equal(p.body!.toString(), '[]');
  // Unknown top-level key or invalid JSON: the whole text is the body, with no metrics.
  for (const raw of ['{"metrics":{"request.id":"1"},"extra":1}', '{bad', '[1]', '{"metrics":{"x":null}}']) {
    const q = decodeSimpleJsonPayload(Buffer.from(raw));
    t.equal(q.metrics.length, 0, raw);
    t.equal(q.body!.toString(), raw);
  }
  const enc = encodeSimpleJsonPayload({
    timestamp: 7n,
    metrics: [
      { name: 'response.code', type: 'INT32', value: 200 },
      { name: 'big', type: 'INT64', value: 9007199254740993n },
    ],
    body: Buffer.from('[]'),
  });
  t.equal(enc.toString(), '{"sentOn":7,"metrics":{"response.code":200,"big":9007199254740993},"body":"W10="}');
});

t.test('fuzz: random and mutated input never throws out of a decoder', async (t) => {
  let seed = 12345;
  const rnd = () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed / 0x7fffffff;
  };
  const samples = fixtures.map((f) => f[2]).filter((b) => b.length > 0);
  let decoded = 0;
  for (let i = 0; i < 5000; i++) {
    let buf: Buffer;
    if (i % 2 === 0) {
      buf = Buffer.from(Array.from({ length: Math.floor(rnd() * 64) }, () => Math.floor(rnd() * 256)));
    } else {
      buf = Buffer.from(samples[i % samples.length]!);
      for (let k = 0; k < 3; k++) buf[Math.floor(rnd() * buf.length)] = Math.floor(rnd() * 256);
      if (rnd() < 0.3) buf = buf.subarray(0, Math.floor(rnd() * buf.length));
    }
    if (i % 7 === 0) buf = Buffer.concat([Buffer.from([0x1f, 0x8b]), buf]);
    const r = decodeKuraPayload(buf);
    if (r.ok) decoded++;
    decodeSimpleJsonPayload(buf);
  }
  t.ok(decoded > 0 && decoded < 5000, `decoded ${decoded} of 5000 without a throw`);
});

t.test('bounds: a gzip bomb and a metric flood are refused cheaply, keeping request.id', async (t) => {
  const ids: KuraMetric[] = [
    { name: 'request.id', type: 'STRING', value: '42' },
    { name: 'requester.client.id', type: 'STRING', value: 'cloud' },
  ];
  // ~1.9 M tiny metrics (name '', INT32, no value) after the two request metrics: 15 MB, ~22 KB gzipped.
  const one = hex(`${METRIC} 04 0a00 1003`);
  const raw = encodeKuraPayload({ metrics: ids });
  const flood = Buffer.concat([raw, Buffer.concat(Array(1_900_000 / 1000).fill(Buffer.concat(Array(1000).fill(one))))]);
  const bomb = zlib.gzipSync(flood, { level: 9 });
  t.ok(bomb.length <= 32 * 1024, `bomb is ${bomb.length} bytes, inflating to ${flood.length}`);
  const before = process.memoryUsage().heapUsed;
  const d = decodeKuraPayload(bomb);
  const grew = process.memoryUsage().heapUsed - before;
  t.ok(d.ok, 'decoded to a refusal, not an error');
  if (d.ok) {
    t.match(d.value.refused, /inflates to more than 4194304 bytes/);
    t.same(d.value.metrics.slice(0, 2), ids, 'request.id and requester.client.id kept for the reply');
    t.ok(d.value.metrics.length <= MAX_METRICS);
  }
  t.ok(grew < 64 * 1024 * 1024, `heap grew ${(grew / 1048576).toFixed(1)} MB`);

  // Under the inflated bound but over the metric bound (and the same as plain protobuf).
  const many = Buffer.concat([raw, ...Array(MAX_METRICS + 10).fill(one)]);
  for (const buf of [many, zlib.gzipSync(many)]) {
    const r = decodeKuraPayload(buf);
    t.ok(r.ok && r.value.refused === `more than ${MAX_METRICS} metrics` && r.value.metrics.length === MAX_METRICS && r.value.metrics[0]!.name === 'request.id');
  }
  // At the bound: accepted whole.
  const exact = decodeKuraPayload(Buffer.concat([raw, ...Array(MAX_METRICS - 2).fill(one)]));
  t.ok(exact.ok && exact.value.refused === undefined && exact.value.metrics.length === MAX_METRICS);

  const sj = decodeSimpleJsonPayload(
    Buffer.from(JSON.stringify({ metrics: { 'request.id': '7', 'requester.client.id': 'c', ...Object.fromEntries(Array.from({ length: 2000 }, (_, i) => [`m${i}`, i])) } })),
  );
  t.equal(sj.refused, `more than ${MAX_METRICS} metrics`, 'simple-json: refused');
  t.same(sj.metrics.map((m) => m.name), ['request.id', 'requester.client.id']);
});
