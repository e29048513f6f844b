// Sparkplug B payload fixtures: (object, bytes) pairs for the codec's parse/generate/round-trip
// tests, the Tahu cross-check and the fuzz file's seeds. Bytes are hex with spaces between
// fields for reading; `tahu: 'same bytes'` marks fixtures whose bytes Eclipse Tahu's encoder also
// writes for the object (checked in test/mqtt/sparkplug-payload.test.ts), `'decodes'` those its
// decoder also reads back to the object. The array fixtures are the examples of the Sparkplug 3.0
// specification ("Datatype Details", "Array Types"), which Tahu's JavaScript codec does not support.

import type { SparkplugPayload } from './sparkplug-codec/payload.js';

export const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');

export interface PayloadFixture {
  name: string;
  payload: SparkplugPayload;
  bytes: string;
  /** 'both': Tahu writes these bytes and reads them back to the object; 'encodes': only writes them. */
  tahu: 'both' | 'encodes' | 'no';
}

const T = 1700000000000n; // 2023-11-14T22:13:20Z
const TV = '80d095ffbc31'; // T as a varint

/** A metric's bytes: tag 0x12 (Payload.metrics), its length as a varint, its fields. */
const metric = (fields: string): string => {
  const n = hex(fields).length;
  const len = n < 128 ? [n] : [(n & 0x7f) | 0x80, n >> 7];
  return `12 ${Buffer.from(len).toString('hex')} ${fields}`;
};

export const FIXTURES: PayloadFixture[] = [
  { name: 'empty payload', payload: { metrics: [] }, bytes: '', tahu: 'both' },
  {
    name: 'timestamp, seq, uuid and body',
    payload: { timestamp: T, metrics: [], seq: 255n, uuid: 'u-1', body: Buffer.from([0, 0xff]) },
    bytes: `08 ${TV}  18 ff01  22 03 752d31  2a 02 00ff`,
    tahu: 'both',
  },
  {
    name: 'NBIRTH-shaped: bdSeq Int64 and Node Control/Rebirth false, names, aliases and timestamps',
    payload: {
      timestamp: T,
      seq: 0n,
      metrics: [
        { name: 'bdSeq', timestamp: T, datatype: 'Int64', value: 0n },
        { name: 'Node Control/Rebirth', alias: 1n, timestamp: T, datatype: 'Boolean', value: false },
      ],
    },
    bytes: `08 ${TV}
      ${metric(`0a 05 6264536571  18 ${TV}  20 04  58 00`)}
      ${metric(`0a 14 4e6f646520436f6e74726f6c2f52656269727468  10 01  18 ${TV}  20 0b  70 00`)}
      18 00`,
    tahu: 'both',
  },
  {
    name: 'Int8 -1 in int_value as its 32-bit two\'s complement (5-byte varint)',
    payload: { metrics: [{ name: 'a', datatype: 'Int8', value: -1 }] },
    bytes: metric('0a 01 61  20 01  50 ffffffff0f'),
    tahu: 'both',
  },
  {
    name: 'Int8, Int16, Int32 extremes',
    payload: {
      metrics: [
        { name: 'a', datatype: 'Int8', value: -128 },
        { name: 'b', datatype: 'Int8', value: 127 },
        { name: 'c', datatype: 'Int16', value: -32768 },
        { name: 'd', datatype: 'Int16', value: 32767 },
        { name: 'e', datatype: 'Int32', value: -2147483648 },
        { name: 'f', datatype: 'Int32', value: 2147483647 },
      ],
    },
    bytes: [
      metric('0a 01 61  20 01  50 80ffffff0f'),
      metric('0a 01 62  20 01  50 7f'),
      metric('0a 01 63  20 02  50 8080feff0f'),
      metric('0a 01 64  20 02  50 ffff01'),
      metric('0a 01 65  20 03  50 8080808008'),
      metric('0a 01 66  20 03  50 ffffffff07'),
    ].join(' '),
    tahu: 'both',
  },
  {
    name: 'Int64 minimum and maximum in long_value',
    payload: {
      metrics: [
        { name: 'a', datatype: 'Int64', value: -(2n ** 63n) },
        { name: 'b', datatype: 'Int64', value: 2n ** 63n - 1n },
        { name: 'c', datatype: 'Int64', value: -1n },
      ],
    },
    bytes: [
      metric('0a 01 61  20 04  58 80808080808080808001'),
      metric('0a 01 62  20 04  58 ffffffffffffffff7f'),
      metric('0a 01 63  20 04  58 ffffffffffffffffff01'),
    ].join(' '),
    tahu: 'both',
  },
  {
    name: 'unsigned extremes: UInt8 255, UInt16 65535, UInt32 4294967295 (long_value), UInt64 2^64-1',
    payload: {
      metrics: [
        { name: 'a', datatype: 'UInt8', value: 255 },
        { name: 'b', datatype: 'UInt16', value: 65535 },
        { name: 'c', datatype: 'UInt32', value: 4294967295 },
        { name: 'd', datatype: 'UInt64', value: 2n ** 64n - 1n },
        { name: 'e', datatype: 'UInt8', value: 0 },
      ],
    },
    bytes: [
      metric('0a 01 61  20 05  50 ff01'),
      metric('0a 01 62  20 06  50 ffff03'),
      metric('0a 01 63  20 07  58 ffffffff0f'),
      metric('0a 01 64  20 08  58 ffffffffffffffffff01'),
      metric('0a 01 65  20 05  50 00'),
    ].join(' '),
    tahu: 'both',
  },
  {
    name: 'Float and Double: finite, NaN, infinities, negative zero, the smallest subnormal',
    payload: {
      metrics: [
        { name: 'a', datatype: 'Float', value: 0.5 },
        { name: 'b', datatype: 'Float', value: NaN },
        { name: 'c', datatype: 'Float', value: Infinity },
        { name: 'd', datatype: 'Float', value: -0 },
        { name: 'e', datatype: 'Double', value: 1.5 },
        { name: 'f', datatype: 'Double', value: -Infinity },
        { name: 'g', datatype: 'Double', value: 5e-324 },
        { name: 'h', datatype: 'Double', value: NaN },
      ],
    },
    bytes: [
      metric('0a 01 61  20 09  65 0000003f'),
      metric('0a 01 62  20 09  65 0000c07f'),
      metric('0a 01 63  20 09  65 0000807f'),
      metric('0a 01 64  20 09  65 00000080'),
      metric('0a 01 65  20 0a  69 000000000000f83f'),
      metric('0a 01 66  20 0a  69 000000000000f0ff'),
      metric('0a 01 67  20 0a  69 0100000000000000'),
      metric('0a 01 68  20 0a  69 000000000000f87f'),
    ].join(' '),
    tahu: 'both',
  },
  {
    name: 'Boolean, String (empty and UTF-8), Text, UUID, DateTime',
    payload: {
      metrics: [
        { name: 'a', datatype: 'Boolean', value: true },
        { name: 'b', datatype: 'String', value: '' },
        { name: 'c', datatype: 'String', value: 'Grüße ✓' },
        { name: 'd', datatype: 'Text', value: 'line 1\nline 2' },
        { name: 'e', datatype: 'UUID', value: '123e4567-e89b-12d3-a456-426614174000' },
        { name: 'f', datatype: 'DateTime', value: T },
      ],
    },
    bytes: [
      metric('0a 01 61  20 0b  70 01'),
      metric('0a 01 62  20 0c  7a 00'),
      metric('0a 01 63  20 0c  7a 0b 4772c3bc c39f6520 e29c93'),
      metric('0a 01 64  20 0e  7a 0d 6c696e652031 0a 6c696e652032'),
      metric('0a 01 65  20 0f  7a 24 31323365343536372d653839622d313264332d613435362d343236363134313734303030'),
      metric(`0a 01 66  20 0d  58 ${TV}`),
    ].join(' '),
    tahu: 'both',
  },
  {
    name: 'Bytes (empty and two bytes) and a File with all metadata',
    payload: {
      metrics: [
        { name: 'a', datatype: 'Bytes', value: Buffer.alloc(0) },
        { name: 'b', datatype: 'Bytes', value: Buffer.from([0, 0xff]) },
        {
          name: 'c',
          datatype: 'File',
          metadata: { isMultiPart: false, contentType: 'text/plain', size: 2n, seq: 0n, fileName: 'a.txt', fileType: 'txt', md5: 'x', description: 'd' },
          value: Buffer.from('hi'),
        },
      ],
    },
    bytes: [
      metric('0a 01 61  20 11  8201 00'),
      metric('0a 01 62  20 11  8201 02 00ff'),
      metric('0a 01 63  20 12  42 24 0800 120a 746578742f706c61696e 1802 2000 2a05 612e747874 3203 747874 3a01 78 4201 64  8201 02 6869'),
    ].join(' '),
    tahu: 'both',
  },
  {
    name: 'DDATA-shaped: aliases without names, is_null, is_historical, is_transient',
    payload: {
      timestamp: T,
      seq: 7n,
      metrics: [
        { alias: 7n, timestamp: T, datatype: 'Double', value: 22.5 },
        { alias: 8n, timestamp: T, datatype: 'Int32', value: null },
        { alias: 9n, timestamp: T, datatype: 'String', isHistorical: true, isTransient: false, value: 'x' },
      ],
    },
    bytes: `08 ${TV}
      ${metric(`10 07  18 ${TV}  20 0a  69 0000000000803640`)}
      ${metric(`10 08  18 ${TV}  20 03  38 01`)}
      ${metric(`10 09  18 ${TV}  20 0c  28 01  30 00  7a 01 78`)}
      18 07`,
    tahu: 'both',
  },
  {
    name: 'DCMD-shaped: a write by alias, an NCMD rebirth by name',
    payload: {
      timestamp: T,
      metrics: [
        { alias: 3n, datatype: 'Int32', value: -5 },
        { name: 'Node Control/Rebirth', datatype: 'Boolean', value: true },
      ],
    },
    bytes: `08 ${TV}
      ${metric('10 03  20 03  50 fbffffff0f')}
      ${metric('0a 14 4e6f646520436f6e74726f6c2f52656269727468  20 0b  70 01')}`,
    tahu: 'both',
  },
  {
    name: 'properties: Quality, engineering unit, a null, a nested PropertySet and a PropertySetList',
    payload: {
      metrics: [
        {
          name: 't',
          datatype: 'Float',
          properties: new Map([
            ['Quality', { type: 'Int32', value: 192 }],
            ['engUnit', { type: 'String', value: '°C' }],
            ['none', { type: 'Double', value: null }],
            ['limits', { type: 'PropertySet', value: new Map([['hi', { type: 'Int64', value: -2n }]]) }],
            ['list', { type: 'PropertySetList', value: [new Map([['k', { type: 'Boolean', value: true }]]), new Map()] }],
          ]),
          value: 21.5,
        },
      ],
    },
    bytes: metric(`0a 01 74  20 09
      4a 68
        0a 07 5175616c697479  0a 07 656e67556e6974  0a 04 6e6f6e65  0a 06 6c696d697473  0a 04 6c697374
        12 05 0803 18c001
        12 07 080c 4203 c2b043
        12 04 080a 1001
        12 17 0814 4a13 0a02 6869 120d 0804 20feffffffffffffffff01
        12 11 0815 520d 0a09 0a016b 1204 080b 3801 0a00
      65 0000ac41`),
    tahu: 'both',
  },
  {
    name: 'DataSet of the column types Tahu reads (UInt32, Float, Double, Boolean, String), two rows',
    payload: {
      metrics: [
        {
          name: 'ds',
          datatype: 'DataSet',
          value: {
            columns: ['u', 'f', 'd', 'b', 's'],
            types: ['UInt32', 'Float', 'Double', 'Boolean', 'String'],
            rows: [
              [4294967295, 0.5, -1.5, true, 'x'],
              [0, -0.25, 1e300, false, ''],
            ],
          },
        },
      ],
    },
    bytes: metric(`0a 02 6473  20 10
      8a01 60
        0805  1201 75 1201 66 1201 64 1201 62 1201 73  1807 1809 180a 180b 180c
        22 23  0a06 10ffffffff0f  0a05 1d0000003f  0a09 21000000000000f8bf  0a02 2801  0a03 320178
        22 1e  0a02 1000  0a05 1d000080be  0a09 219c7500883ce4377e  0a02 2800  0a02 3200`),
    tahu: 'both',
  },
  {
    name: 'DataSet of every other basic type (Tahu writes it but cannot read it back), with a null cell',
    payload: {
      metrics: [
        {
          name: 'ds',
          datatype: 'DataSet',
          value: {
            columns: ['i8', 'i16', 'i32', 'i64', 'u8', 'u16', 'u64', 'dt', 'tx'],
            types: ['Int8', 'Int16', 'Int32', 'Int64', 'UInt8', 'UInt16', 'UInt64', 'DateTime', 'Text'],
            rows: [[-1, -300, 70000, -(2n ** 63n), 200, 60000, 2n ** 64n - 1n, T, 't'], [0, 0, 0, 0n, 0, 0, 0n, 0n, null]],
          },
        },
      ],
    },
    bytes: metric(`0a 02 6473  20 10
      8a01 ac01
        0809
        1202 6938 1203 693136 1203 693332 1203 693634 1202 7538 1203 753136 1203 753634 1202 6474 1202 7478
        1801 1802 1803 1804 1805 1806 1808 180d 180e
        22 49  0a06 08ffffffff0f  0a06 08d4fdffff0f  0a04 08f0a204  0a0b 1080808080808080808001  0a03 08c801  0a04 08e0d403
               0a0b 10ffffffffffffffffff01  0a07 10${TV}  0a03 320174
        22 22  0a02 0800  0a02 0800  0a02 0800  0a02 1000  0a02 0800  0a02 0800  0a02 1000  0a02 1000  0a00`),
    tahu: 'encodes',
  },
  {
    name: 'Template definition (version, parameters, members) and an instance that refers to it',
    payload: {
      metrics: [
        {
          name: 'Motor',
          datatype: 'Template',
          value: {
            version: 'v1',
            isDefinition: true,
            metrics: [
              { name: 'rpm', datatype: 'UInt32', value: 0 },
              { name: 'on', datatype: 'Boolean', value: false },
            ],
            parameters: [
              { name: 'max', type: 'Double', value: 3000 },
              { name: 'tag', type: 'String', value: null },
            ],
          },
        },
        {
          name: 'Motor 1',
          datatype: 'Template',
          value: {
            templateRef: 'Motor',
            isDefinition: false,
            metrics: [{ name: 'rpm', datatype: 'UInt32', value: 1500 }],
            parameters: [{ name: 'tag', type: 'String', value: 'M1' }],
          },
        },
      ],
    },
    bytes: [
      metric(`0a 05 4d6f746f72  20 13
        9201 36  0a02 7631
          12 09 0a03 72706d 2007 5800
          12 08 0a02 6f6e 200b 7000
          1a 10 0a03 6d6178 100a 31 00000000 0070a740
          1a 07 0a03 746167 100c
          2801`),
      metric(`0a 07 4d6f746f722031  20 13
        9201 22
          12 0a 0a03 72706d 2007 58dc0b
          1a 0b 0a03 746167 100c 4202 4d31
          22 05 4d6f746f72
          2800`),
    ].join(' '),
    tahu: 'encodes',
  },
  {
    name: 'the specification\'s array examples, packed little-endian in bytes_value',
    payload: {
      metrics: [
        // -23 is 0xE9 (the example prints 0xEF, which is -17).
        { name: 'a', datatype: 'Int8Array', value: [-23, 123] },
        { name: 'b', datatype: 'Int16Array', value: [-30000, 30000] },
        { name: 'c', datatype: 'Int32Array', value: [-1, 315338746] },
        { name: 'd', datatype: 'Int64Array', value: [-4270929666821191986n, -3601064768563266876n] },
        { name: 'e', datatype: 'UInt8Array', value: [23, 250] },
        { name: 'f', datatype: 'UInt16Array', value: [30, 52360] },
        { name: 'g', datatype: 'UInt32Array', value: [52, 3293969225] },
        { name: 'h', datatype: 'UInt64Array', value: [52n, 16444743074749521625n] },
        // The specification's Float and Double examples print each element most significant byte
        // first (0x3F9D70A4 is 1.23f), against its own text and Tahu's Java codec: little-endian here.
        { name: 'i', datatype: 'FloatArray', value: [Math.fround(1.23), Math.fround(89.341)] },
        { name: 'j', datatype: 'DoubleArray', value: [12.354213, 1022.9123213] },
        // [F, F, T, T, F, T, F, F, T, T, F, T] → count 12, then 0x34 0xDX with the unused bits 0.
        { name: 'k', datatype: 'BooleanArray', value: [false, false, true, true, false, true, false, false, true, true, false, true] },
        { name: 'l', datatype: 'StringArray', value: ['ABC', 'hello'] },
        // The example's bytes leave out the two high zero bytes of each 8-byte element.
        { name: 'm', datatype: 'DateTimeArray', value: [1256102875335n, 1656107875000n] },
        { name: 'n', datatype: 'StringArray', value: [] },
      ],
    },
    bytes: [
      metric('0a 01 61  20 16  8201 02 e97b'),
      metric('0a 01 62  20 17  8201 04 d08a3075'),
      metric('0a 01 63  20 18  8201 08 fffffffffaafcb12'),
      metric('0a 01 64  20 19  8201 10 ce0672ac189cbac4c4ba9c18ac7206ce'),
      metric('0a 01 65  20 1a  8201 02 17fa'),
      metric('0a 01 66  20 1b  8201 04 1e0088cc'),
      metric('0a 01 67  20 1c  8201 08 3400000049fb55c4'),
      metric('0a 01 68  20 1d  8201 10 3400000000000000d99e02d1b27637e4'),
      metric('0a 01 69  20 1e  8201 08 a4709d3f 98aeb242'),
      metric('0a 01 6a  20 1f  8201 10 d7a205685bb52840 8e171c6f4cf78f40'),
      metric('0a 01 6b  20 20  8201 06 0c000000 34d0'),
      metric('0a 01 6c  20 21  8201 0a 41424300 68656c6c6f00'),
      metric('0a 01 6d  20 22  8201 10 c7d0907524010000 b8bab89781010000'),
      metric('0a 01 6e  20 21  8201 00'),
    ].join(' '),
    tahu: 'no',
  },
];
