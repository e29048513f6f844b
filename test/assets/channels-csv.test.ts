// The asset channel CSV codec (docs/configuration.md "Channels as CSV"): fixtures as (channels,
// text) tables give a parse, a generate and a round-trip test each; Kura's own export read back;
// every problem with its row and column; merge modes; 1,000 channels; hostile files bounded.

import t from 'tap';
import { performance } from 'node:perf_hooks';
import {
  channelsToCsv,
  columnLetter,
  describeCsvProblem,
  mergeChannels,
  parseChannelsCsv,
  MAX_CSV_PROBLEMS,
  MAX_CSV_VALUE_CHARS,
  type ChannelPropertyDefinition,
  type ChannelsCsvProblem,
  type ChannelsCsvResult,
  type CsvChannel,
} from '../../src/assets/channels-csv.js';
import { ALL_TYPES, GENERIC, LIMITS, MODBUS } from './channels-csv-fixtures.js';

const withoutRows = (r: ChannelsCsvResult) => (r.ok ? r.channels.map(({ name, props }) => ({ name, props })) : r.problems);

function testParseGenerate(name: string, channels: CsvChannel[], text: string, defs: ChannelPropertyDefinition[]) {
  t.test(name, async (t) => {
    t.strictSame(withoutRows(parseChannelsCsv(text, defs, LIMITS)), channels, 'parse');
    t.equal(channelsToCsv(channels, defs), text, 'generate');
    t.strictSame(withoutRows(parseChannelsCsv(channelsToCsv(channels, defs), defs, LIMITS)), channels, 'round trip');
  });
}

const MODBUS_HEADER = 'name,enabled,type,value.type,scale,offset,unit,unit.id,primary.table,memory.address,data.type,data.order,array.data.length,scale.on.write,deadband';
const ch = (name: string, props: CsvChannel['props']): CsvChannel => ({ name, props });
const plain = (name: string, more: CsvChannel['props'] = {}) => ch(name, { enabled: true, type: 'READ', 'value.type': 'INTEGER', ...more });

const fixtures: [string, CsvChannel[], string, ChannelPropertyDefinition[]][] = [
  [
    'Modbus channels: name first, Kura generic keys, the driver keys, gatewayd deadband; CRLF after each row',
    [
      ch('tank_level', { enabled: true, type: 'READ', 'value.type': 'FLOAT', scale: 0.1, offset: 0, unit: 'm', 'unit.id': 1, 'primary.table': 'HOLDING_REGISTERS', 'memory.address': 100, 'data.type': 'FLOAT32', 'data.order': 'BIG_ENDIAN' }),
      ch('pump', { enabled: false, type: 'READ_WRITE', 'value.type': 'BOOLEAN', 'unit.id': 2, 'primary.table': 'COILS', 'memory.address': 1, 'scale.on.write': true, deadband: 0.5 }),
    ],
    `${MODBUS_HEADER}\r\n` +
      'tank_level,true,READ,FLOAT,0.1,0.0,m,1,HOLDING_REGISTERS,100,FLOAT32,BIG_ENDIAN,,,\r\n' +
      'pump,false,READ_WRITE,BOOLEAN,,,,2,COILS,1,,,,true,0.5\r\n',
    MODBUS,
  ],
  ['no channels: the header alone', [], `${MODBUS_HEADER}\r\n`, MODBUS],
  [
    'quoting as Commons CSV 1.4 does it: comma, quote, line break, leading/trailing space, # or ! first; "" is an empty text',
    [
      plain('a', { unit: 'kg, wet' }),
      plain('b', { unit: 'say "hi"' }),
      plain('c', { unit: 'two\r\nlines' }),
      plain('d', { unit: ' lead' }),
      plain('e', { unit: 'trail ' }),
      plain('f', { unit: '#1' }),
      plain('g', { unit: '' }),
      plain('h', { unit: '°C' }),
      plain('i', { unit: '!' }),
      plain('j', { unit: "it's" }),
      plain('k', { unit: 'tab\tinside' }),
    ],
    'name,enabled,type,value.type,scale,offset,unit,deadband\r\n' +
      'a,true,READ,INTEGER,,,"kg, wet",\r\n' +
      'b,true,READ,INTEGER,,,"say ""hi""",\r\n' +
      'c,true,READ,INTEGER,,,"two\r\nlines",\r\n' +
      'd,true,READ,INTEGER,,," lead",\r\n' +
      'e,true,READ,INTEGER,,,"trail ",\r\n' +
      'f,true,READ,INTEGER,,,"#1",\r\n' +
      'g,true,READ,INTEGER,,,"",\r\n' +
      'h,true,READ,INTEGER,,,°C,\r\n' +
      'i,true,READ,INTEGER,,,"!",\r\n' +
      "j,true,READ,INTEGER,,,it's,\r\n" +
      'k,true,READ,INTEGER,,,tab\tinside,\r\n',
    GENERIC,
  ],
  [
    "first in a row, Commons CSV 1.4 quotes anything that does not start with an ASCII letter or digit",
    [plain('_a'), plain('é'), plain('9lives'), plain('x.y'), plain('Ölstand')],
    'name,enabled,type,value.type,scale,offset,unit,deadband\r\n' +
      '"_a",true,READ,INTEGER,,,,\r\n' +
      '"é",true,READ,INTEGER,,,,\r\n' +
      '9lives,true,READ,INTEGER,,,,\r\n' +
      'x.y,true,READ,INTEGER,,,,\r\n' +
      '"Ölstand",true,READ,INTEGER,,,,\r\n',
    GENERIC,
  ],
  [
    "formula guard: free text starting with = + - @ gets a ' (taken off when read); numbers and options never",
    [
      plain('=x', { unit: '=HYPERLINK("http://example.com")' }),
      plain('-x', { unit: '+1', offset: -5 }),
      plain('at', { unit: '@SUM(A1)' }),
      plain('q', { unit: "'=already" }),
      plain('r', { unit: "'plain" }),
      plain('s', { unit: '\t=tab' }),
    ],
    'name,enabled,type,value.type,scale,offset,unit,deadband\r\n' +
      `"'=x",true,READ,INTEGER,,,"'=HYPERLINK(""http://example.com"")",\r\n` +
      `"'-x",true,READ,INTEGER,,-5.0,'+1,\r\n` +
      `at,true,READ,INTEGER,,,'@SUM(A1),\r\n` +
      `q,true,READ,INTEGER,,,''=already,\r\n` +
      `r,true,READ,INTEGER,,,'plain,\r\n` +
      `s,true,READ,INTEGER,,,'\t=tab,\r\n`,
    GENERIC,
  ],
  [
    "every type: Java's Double.toString, a LONG beyond 2^53, SHORT, BYTE, FLOAT, CHAR, a value-typed key",
    [
      ch('n', { enabled: true, type: 'READ', 'value.type': 'DOUBLE', scale: 1e-5, offset: 1e7, counter: 9007199254740993n, small: -100, tiny: 127, ratio: 0.1, sep: ';', label: 'x', initial: 22, address: 0 }),
      ch('m', { enabled: false, type: 'WRITE', 'value.type': 'STRING', label: '', initial: '=x', address: -5 }),
      ch('b', { enabled: true, type: 'READ_WRITE', 'value.type': 'BOOLEAN', counter: -9223372036854775808n, initial: true, address: 2147483647 }),
      ch('l', { enabled: true, type: 'READ', 'value.type': 'LONG', counter: 12, initial: 9223372036854775807n, address: 1 }),
    ],
    'name,enabled,type,value.type,scale,offset,unit,counter,small,tiny,ratio,sep,label,secret,initial,address,deadband\r\n' +
      'n,true,READ,DOUBLE,1.0E-5,1.0E7,,9007199254740993,-100,127,0.1,;,x,,22.0,0,\r\n' +
      `m,false,WRITE,STRING,,,,,,,,,"",,'=x,-5,\r\n` +
      'b,true,READ_WRITE,BOOLEAN,,,,-9223372036854775808,,,,,,,true,2147483647,\r\n' +
      'l,true,READ,LONG,,,,12,,,,,,,9223372036854775807,1,\r\n',
    ALL_TYPES,
  ],
];

for (const [name, channels, text, defs] of fixtures) testParseGenerate(name, channels, text, defs);

t.test("Kura's own export reads back: enabled first, the WireAsset's listen column, empty cells, any column order", async (t) => {
  // What Kura's GwtDriverAndAssetServiceImpl.convertToCsv writes for a Modbus asset: the
  // WireAssetChannelDescriptor keys without `+` (enabled, name, type, value.type, scale, offset,
  // unit, listen), then the driver's, channels sorted by name, nulls as empty cells, CRLF.
  const kura =
    'enabled,name,type,value.type,scale,offset,unit,listen,unit.id,primary.table,memory.address,data.type,data.order\r\n' +
    'true,Counter_3,READ,INTEGER,,,,false,1,INPUT_REGISTERS,515,INT16,BIG_ENDIAN\r\n' +
    'false,LED1,READ_WRITE,BOOLEAN,1.0,0.0,,true,1,COILS,2049,INT16,BIG_ENDIAN\r\n';
  const r = parseChannelsCsv(kura, MODBUS, LIMITS);
  t.strictSame(withoutRows(r), [
    ch('Counter_3', { enabled: true, type: 'READ', 'value.type': 'INTEGER', 'unit.id': 1, 'primary.table': 'INPUT_REGISTERS', 'memory.address': 515, 'data.type': 'INT16', 'data.order': 'BIG_ENDIAN' }),
    ch('LED1', { enabled: false, type: 'READ_WRITE', 'value.type': 'BOOLEAN', scale: 1, offset: 0, 'unit.id': 1, 'primary.table': 'COILS', 'memory.address': 2049, 'data.type': 'INT16', 'data.order': 'BIG_ENDIAN' }),
  ]);
  t.strictSame(r.ok && r.channels.map((c) => c.row), [2, 3], 'each channel knows its row');
  t.strictSame(r.ok && r.columns, ['enabled', 'type', 'value.type', 'scale', 'offset', 'unit', 'unit.id', 'primary.table', 'memory.address', 'data.type', 'data.order']);
  // Kura's names with spaces, # and + become _ on import (its AssetConfigValidator).
  const spaced = parseChannelsCsv('name,type,value.type\r\nTank Level #2+,READ,INTEGER\r\n', GENERIC, LIMITS);
  t.strictSame(withoutRows(spaced), [ch('Tank_Level__2_', { type: 'READ', 'value.type': 'INTEGER', enabled: true })]);
  // A quote after a space is part of an unquoted value, as Commons CSV reads it.
  const late = parseChannelsCsv('name,type,value.type,unit\r\nx,READ,INTEGER, "a"\r\n', GENERIC, LIMITS);
  t.equal(late.ok && late.channels[0].props.unit, '"a"');
});

t.test('what spreadsheets and editors write reads the same', async (t) => {
  const want = withoutRows(parseChannelsCsv('name,type,value.type,unit\r\na,READ,INTEGER,"x\r\ny"\r\nb,WRITE,BOOLEAN,\r\n', GENERIC, LIMITS));
  t.equal((want as CsvChannel[]).length, 2);
  const variants: [string, string | Uint8Array][] = [
    ['LF line ends', 'name,type,value.type,unit\na,READ,INTEGER,"x\r\ny"\nb,WRITE,BOOLEAN,\n'],
    ['CR line ends (old Mac)', 'name,type,value.type,unit\ra,READ,INTEGER,"x\r\ny"\rb,WRITE,BOOLEAN,\r'],
    ['no line end after the last row', 'name,type,value.type,unit\r\na,READ,INTEGER,"x\r\ny"\r\nb,WRITE,BOOLEAN,'],
    ['a UTF-8 BOM (Excel "CSV UTF-8")', '\uFEFFname,type,value.type,unit\r\na,READ,INTEGER,"x\r\ny"\r\nb,WRITE,BOOLEAN,\r\n'],
    ['the same as bytes, BOM included', Buffer.from('\uFEFFname,type,value.type,unit\r\na,READ,INTEGER,"x\r\ny"\r\nb,WRITE,BOOLEAN,\r\n')],
    ['blank lines and rows of empty cells', '\r\nname,type,value.type,unit\r\n\r\na,READ,INTEGER,"x\r\ny"\r\n,,,\r\nb,WRITE,BOOLEAN,\r\n\r\n\r\n'],
    ['quoted header and values, spaces around unquoted values and after a closing quote', '"name","type", value.type ,unit\r\n"a" ,READ , INTEGER,"x\r\ny"\r\nb,"WRITE", BOOLEAN ,\r\n'],
    ['columns in another order', 'unit,value.type,name,type\r\n"x\r\ny",INTEGER,a,READ\r\n,BOOLEAN,b,WRITE\r\n'],
  ];
  for (const [what, text] of variants) t.strictSame(withoutRows(parseChannelsCsv(text, GENERIC, LIMITS)), want, what);
  t.strictSame((withoutRows(parseChannelsCsv('name,type,value.type,enabled\r\nx,READ,INTEGER,TRUE\r\ny,READ,INTEGER,False\r\n', GENERIC, LIMITS)) as CsvChannel[]).map((c) => c.props.enabled), [true, false], 'TRUE/FALSE as Excel writes them');
  const blankRows = parseChannelsCsv('name,type,value.type\r\n\r\n\r\nx,REED,INTEGER\r\n', GENERIC, LIMITS);
  t.equal(!blankRows.ok && blankRows.problems[0].row, 4, 'blank rows are skipped but counted, as a spreadsheet shows them');
  const quotedLines = parseChannelsCsv('name,type,value.type,unit\r\na,READ,INTEGER,"1\n2\n3"\r\nb,REED,INTEGER,\r\n', GENERIC, LIMITS);
  t.equal(!quotedLines.ok && quotedLines.problems[0].row, 3, 'a value over several lines is one row');
});

t.test('a column the file lacks: the default of a required key, unset otherwise', async (t) => {
  const r = parseChannelsCsv('name,memory.address\r\nx,7\r\n', MODBUS, LIMITS);
  t.strictSame(withoutRows(r), [ch('x', { 'memory.address': 7, enabled: true, type: 'READ', 'value.type': 'INTEGER' })]);
  const needed = parseChannelsCsv('name,type,value.type\r\nx,READ,INTEGER\r\n', ALL_TYPES, LIMITS);
  t.strictSame(withoutRows(needed), [{ row: 1, column: 'address', message: 'no address column: each channel needs a value there' }]);
  t.strictSame(withoutRows(parseChannelsCsv('name,type,value.type,unit\r\nx,READ,INTEGER,\r\n', GENERIC, LIMITS)), [ch('x', { type: 'READ', 'value.type': 'INTEGER', enabled: true })], 'an empty cell leaves a key unset');
  t.strictSame(withoutRows(parseChannelsCsv('name,type,value.type,unit\r\nx,READ,INTEGER," "\r\n', GENERIC, LIMITS)), [ch('x', { type: 'READ', 'value.type': 'INTEGER', unit: ' ', enabled: true })], 'a quoted value is kept as written');
});

t.test('the export writes a required key the channel leaves to its default, and never a PASSWORD', async (t) => {
  const text = channelsToCsv([ch('x', { type: 'READ', 'value.type': 'INTEGER', address: 3, secret: 'hunter2' })], ALL_TYPES);
  t.notMatch(text, /hunter2/);
  const back = parseChannelsCsv(text, ALL_TYPES, LIMITS);
  t.strictSame(withoutRows(back), [ch('x', { enabled: true, type: 'READ', 'value.type': 'INTEGER', address: 3 })]);
  t.equal(channelsToCsv([ch('x', { type: 'READ', 'value.type': 'INTEGER', mystery: 'kept' })], GENERIC).split('\r\n')[0], 'name,enabled,type,value.type,scale,offset,unit,deadband,mystery', 'a key no definition names is written last, not lost');
  t.equal(channelsToCsv([], GENERIC, { bom: true }).charCodeAt(0), 0xfeff, 'bom: true starts with a byte order mark');
  t.throws(() => channelsToCsv([], [...GENERIC, { id: 'type', type: 'STRING' }]), TypeError, 'two definitions for one column are a caller mistake');
});

// Each problem with the row and column it names: [what, text, defs, expected problems].
const problemCases: [string, string | Uint8Array, ChannelPropertyDefinition[], Partial<ChannelsCsvProblem>[]][] = [
  ['unknown column', 'name,type,value.type,colour\r\nx,READ,INTEGER,red\r\n', GENERIC, [{ row: 1, column: 'colour', columnIndex: 4, message: 'unknown column "colour"; the columns are name, enabled, type, value.type, scale, offset, unit, deadband' }]],
  ['a column twice', 'name,type,value.type,type\r\n', GENERIC, [{ row: 1, column: 'type', columnIndex: 4, message: 'the column "type" is also column B' }]],
  ['a column without a name', 'name,,type,value.type\r\n', GENERIC, [{ row: 1, column: '', columnIndex: 2, message: 'a column without a name' }]],
  ['no name column', 'type,value.type\r\nREAD,INTEGER\r\n', GENERIC, [{ row: 1, message: 'no name column: each row needs the channel name' }]],
  ['the empty file', '', GENERIC, [{ message: 'the file is empty: the first row must name the columns (name, type, value.type, …)' }]],
  ['blank lines only', '\r\n\r\n', GENERIC, [{ message: 'the file is empty: the first row must name the columns (name, type, value.type, …)' }]],
  ['a row with fewer values', 'name,type,value.type\r\nx,READ\r\n', GENERIC, [{ row: 2, message: '2 values; the header has 3 columns' }]],
  ['a row with more values', 'name,type,value.type\r\nx,READ,INTEGER,1,2\r\n', GENERIC, [{ row: 2, message: '5 values; the header has 3 columns' }]],
  ['a required value missing', 'name,type,value.type\r\nx,,INTEGER\r\n', GENERIC, [{ row: 2, column: 'type', columnIndex: 2, message: 'a value is required' }]],
  ['an empty text is no required value', 'name,type,value.type,address\r\nx,READ,INTEGER,""\r\n', ALL_TYPES, [{ row: 2, column: 'address', columnIndex: 4, message: 'a value is required' }]],
  ['no name', 'name,type,value.type\r\n\t,READ,INTEGER\r\n', GENERIC, [{ row: 2, column: 'name', columnIndex: 1, message: 'a channel name is required' }]],
  ['an empty name', 'name,type,value.type\r\n"",READ,INTEGER\r\n', GENERIC, [{ row: 2, column: 'name', columnIndex: 1, message: 'a channel name is required' }]],
  ['a name with / or ,', 'name,type,value.type\r\na/b,READ,INTEGER\r\n"a,b",READ,INTEGER\r\n', GENERIC, [
    { row: 2, column: 'name', message: '"a/b": channel names are 1-255 characters without spaces, # / + , or control characters' },
    { row: 3, column: 'name', message: '"a,b": channel names are 1-255 characters without spaces, # / + , or control characters' },
  ]],
  ['a name of 256 characters', `name,type,value.type\r\n${'n'.repeat(256)},READ,INTEGER\r\n`, GENERIC, [{ row: 2, column: 'name', message: `"${'n'.repeat(40)}…": channel names are 1-255 characters without spaces, # / + , or control characters` }]],
  ['a duplicate name', 'name,type,value.type\r\nx,READ,INTEGER\r\ny,READ,INTEGER\r\nx,WRITE,INTEGER\r\n', GENERIC, [{ row: 4, column: 'name', columnIndex: 1, message: 'the channel "x" is also on row 2' }]],
  ['names the same once spaces become _', 'name,type,value.type\r\na_b,READ,INTEGER\r\na b,READ,INTEGER\r\n', GENERIC, [{ row: 3, column: 'name', message: 'the channel "a_b" is also on row 2 ("a b" reads as "a_b")' }]],
  ['not one of the options', 'name,type,value.type\r\nx,read,INTEGER\r\n', GENERIC, [{ row: 2, column: 'type', columnIndex: 2, message: '"read" is not one of READ, WRITE, READ_WRITE' }]],
  ['not a boolean (Kura would read false)', 'name,type,value.type,enabled\r\nx,READ,INTEGER,yes\r\n', GENERIC, [{ row: 2, column: 'enabled', columnIndex: 4, message: '"yes" is not true or false' }]],
  ['not an integer', 'name,memory.address\r\nx,1.5\r\ny,0x10\r\nz,1e3\r\n', MODBUS, [
    { row: 2, column: 'memory.address', message: '"1.5" is not an integer' },
    { row: 3, column: 'memory.address', message: '"0x10" is not an integer' },
    { row: 4, column: 'memory.address', message: '"1e3" is not an integer' },
  ]],
  ['outside the definition range', 'name,memory.address,unit.id\r\nx,0,256\r\ny,65537,-1\r\n', MODBUS, [
    { row: 2, column: 'memory.address', columnIndex: 2, message: '0 is below the minimum 1' },
    { row: 2, column: 'unit.id', columnIndex: 3, message: '256 is above the maximum 255' },
    { row: 3, column: 'memory.address', message: '65537 is above the maximum 65536' },
    { row: 3, column: 'unit.id', message: '-1 is below the minimum 0' },
  ]],
  ['outside the type range', 'name,type,value.type,address,tiny,small,counter\r\nx,READ,INTEGER,2147483648,128,-32769,9223372036854775808\r\n', ALL_TYPES, [
    { row: 2, column: 'address', message: '"2147483648" is outside the range of INTEGER (-2147483648 to 2147483647)' },
    { row: 2, column: 'tiny', message: '"128" is outside the range of BYTE (-128 to 127)' },
    { row: 2, column: 'small', message: '"-32769" is outside the range of SHORT (-32768 to 32767)' },
    { row: 2, column: 'counter', message: '"9223372036854775808" is outside the range of LONG (-9223372036854775808 to 9223372036854775807)' },
  ]],
  ['not a number', 'name,type,value.type,scale,offset,deadband\r\nx,READ,INTEGER,NaN,Infinity,0x1p3\r\ny,READ,INTEGER,1e999,"1,5",-1\r\n', GENERIC, [
    { row: 2, column: 'scale', message: '"NaN" is not a number' },
    { row: 2, column: 'offset', message: '"Infinity" is not a number' },
    { row: 2, column: 'deadband', message: '"0x1p3" is not a number' },
    { row: 3, column: 'scale', message: '"1e999" is outside the range of DOUBLE' },
    { row: 3, column: 'offset', message: '"1,5" is not a number' },
    { row: 3, column: 'deadband', message: '-1 is below the minimum 0' },
  ]],
  ['FLOAT range, CHAR length, STRING length', `name,type,value.type,address,ratio,sep,label\r\nx,READ,INTEGER,1,3.5e38,ab,${'l'.repeat(201)}\r\n`, ALL_TYPES, [
    { row: 2, column: 'ratio', message: '"3.5e38" is outside the range of FLOAT' },
    { row: 2, column: 'sep', message: '"ab" is not one character' },
    { row: 2, column: 'label', message: '201 characters is above the maximum 200' },
  ]],
  ['a value-typed key not of the row value.type', 'name,type,value.type,address,initial\r\nx,READ,INTEGER,1,2.5\r\ny,READ,BOOLEAN,1,on\r\n', ALL_TYPES, [
    { row: 2, column: 'initial', message: '"2.5" is not an integer' },
    { row: 3, column: 'initial', message: '"on" is not true or false' },
  ]],
  ['a quoted value not closed', 'name,type,value.type,unit\r\nx,READ,INTEGER,ok\r\ny,READ,INTEGER,"open\r\nz,READ,INTEGER,\r\n', GENERIC, [
    { row: 3, column: 'unit', columnIndex: 4, message: 'a quoted value is not closed: the file ends inside it (a quote inside a quoted value is written twice: "")' },
  ]],
  ['text after the closing quote', 'name,type,value.type,unit\r\nx,READ,INTEGER,"a"b\r\n', GENERIC, [
    { row: 2, column: 'unit', columnIndex: 4, message: 'text after the closing quote (a quote inside a quoted value is written twice: "")' },
  ]],
  ['too many channels', `name,type,value.type\r\n${'x,READ,INTEGER\r\n'.repeat(1)}${Array.from({ length: 1000 }, (_, i) => `c${i},READ,INTEGER\r\n`).join('')}`, GENERIC, [
    { row: 1002, message: 'more than 1000 channels; the rest of the file was not read' },
  ]],
  ['too many bytes', `name\r\n${'x'.repeat(LIMITS.maxBytes)}`, GENERIC, [{ message: `the file is larger than ${LIMITS.maxBytes} bytes` }]],
  ['too many bytes, counted in UTF-8', `name,unit\r\nx,${'°'.repeat(LIMITS.maxBytes / 2)}`, GENERIC, [{ message: `the file is larger than ${LIMITS.maxBytes} bytes` }]],
  ['too many bytes given as bytes', new Uint8Array(LIMITS.maxBytes + 1), GENERIC, [{ message: `the file is larger than ${LIMITS.maxBytes} bytes` }]],
  ['not UTF-8 (a file saved as Windows-1252)', Buffer.concat([Buffer.from('name,type,value.type,unit\r\nx,READ,INTEGER,\uFFFD\r\ny,READ,INTEGER,'), Buffer.from([0xb0]), Buffer.from('C\r\n')]), GENERIC, [
    { message: 'the file is not UTF-8 text: byte 0xB0 at offset 62 (line 3); save it as "CSV UTF-8"' },
  ]],
  ['a value too long', `name,type,value.type,unit\r\nx,READ,INTEGER,"${'u'.repeat(MAX_CSV_VALUE_CHARS + 1)}"\r\n`, GENERIC, [
    { row: 2, column: 'unit', columnIndex: 4, message: `a value of ${MAX_CSV_VALUE_CHARS + 1} characters; at most ${MAX_CSV_VALUE_CHARS} are read` },
  ]],
];

t.test('every problem names its row and column, and nothing is returned', async (t) => {
  for (const [what, text, defs, want] of problemCases) {
    const r = parseChannelsCsv(text, defs, LIMITS);
    t.equal(r.ok, false, `${what}: refused`);
    if (r.ok) continue;
    t.equal(r.problems.length, want.length, `${what}: ${r.problems.map(describeCsvProblem).join(' | ')}`);
    want.forEach((w, i) => t.match(r.problems[i], w, `${what}: problem ${i + 1}`));
    t.notOk('channels' in r, `${what}: no channels`);
  }
});

t.test('problems read as row, column letter and header name', async (t) => {
  t.equal(describeCsvProblem({ row: 4, column: 'unit.id', columnIndex: 9, message: 'x' }), 'row 4, column I (unit.id): x');
  t.equal(describeCsvProblem({ row: 1, column: 'address', message: 'x' }), 'row 1, column address: x');
  t.equal(describeCsvProblem({ row: 7, message: 'x' }), 'row 7: x');
  t.equal(describeCsvProblem({ message: 'x' }), 'x');
  t.strictSame([1, 26, 27, 52, 53, 702, 703].map(columnLetter), ['A', 'Z', 'AA', 'AZ', 'BA', 'ZZ', 'AAA']);
});

t.test('one bad row refuses the whole file; problems stop after the bound', async (t) => {
  const rows = Array.from({ length: 500 }, (_, i) => `c${i},READ,INTEGER`);
  rows[250] = 'c250,READ,INTEGR';
  const one = parseChannelsCsv(`name,type,value.type\r\n${rows.join('\r\n')}\r\n`, GENERIC, LIMITS);
  t.strictSame(withoutRows(one), [{ row: 252, column: 'value.type', columnIndex: 3, message: '"INTEGR" is not one of BOOLEAN, BYTE_ARRAY, DOUBLE, INTEGER, LONG, FLOAT, STRING' }]);
  const many = parseChannelsCsv(`name,type,value.type\r\n${Array.from({ length: 900 }, (_, i) => `c${i},RD,INTEGER`).join('\r\n')}`, GENERIC, LIMITS);
  t.equal(!many.ok && many.problems.length, MAX_CSV_PROBLEMS + 1);
  t.match(!many.ok && many.problems.at(-1), { row: 102, message: `more than ${MAX_CSV_PROBLEMS} problems; the rest of the file was not read` });
});

t.test('merge modes', async (t) => {
  const existing = [plain('a', { unit: 'old' }), plain('b', { 'unit.id': 3, unit: 'keep' }), plain('c')];
  const imported = [plain('b', { unit: 'new' }), plain('d'), plain('a')];
  const before = structuredClone(existing);
  t.strictSame(mergeChannels(existing, imported, 'replace'), imported, 'replace: the file, in its order');
  t.strictSame(mergeChannels(existing, imported, 'merge'), [plain('a'), plain('b', { unit: 'new' }), plain('c'), plain('d')], "merge: the existing order, a row replaces its channel whole (Kura's addAllChannels), new ones appended");
  t.strictSame(existing, before, 'the inputs are not changed');
  const parsed = parseChannelsCsv('name,type,value.type\r\nz,READ,INTEGER\r\n', GENERIC, LIMITS);
  t.strictSame(parsed.ok && mergeChannels([], parsed.channels, 'merge'), [plain('z')], 'the row number is not carried into the configuration');
  t.throws(() => mergeChannels(existing, imported, 'append' as 'merge'), TypeError);
});

t.test('1,000 Modbus channels: export and import (time reported, not asserted)', async (t) => {
  const tables = ['COILS', 'DISCRETE_INPUTS', 'INPUT_REGISTERS', 'HOLDING_REGISTERS'];
  const channels = Array.from({ length: 1000 }, (_, i) =>
    ch(`register_${i}`, {
      enabled: i % 7 !== 0,
      type: i % 2 ? 'READ' : 'READ_WRITE',
      'value.type': tables[i % 4].endsWith('REGISTERS') ? 'FLOAT' : 'BOOLEAN',
      scale: 0.1,
      offset: -40,
      unit: i % 3 ? '°C' : 'bar, abs',
      'unit.id': 1 + (i % 247),
      'primary.table': tables[i % 4],
      'memory.address': 1 + i * 2,
      'data.type': tables[i % 4].endsWith('REGISTERS') ? 'FLOAT32' : 'INT16',
      'data.order': 'BIG_ENDIAN',
      deadband: 0.25,
    }),
  );
  const text = channelsToCsv(channels, MODBUS);
  const times: number[] = [];
  let r: ChannelsCsvResult | undefined;
  for (let i = 0; i < 5; i++) {
    const start = performance.now();
    r = parseChannelsCsv(text, MODBUS, LIMITS);
    times.push(performance.now() - start);
  }
  t.strictSame(withoutRows(r!), channels, 'every channel read back unchanged');
  t.equal(channelsToCsv((r as { channels: CsvChannel[] }).channels, MODBUS), text, 'written again byte for byte');
  const start = performance.now();
  channelsToCsv(channels, MODBUS);
  t.comment(`1,000 channels, ${text.length} bytes: parse ${times.map((x) => x.toFixed(1)).join(', ')} ms; export ${(performance.now() - start).toFixed(1)} ms`);
});

t.test('hostile files are refused with bounded work and a clear problem', async (t) => {
  const big = 'x'.repeat(50 * 1024 * 1024);
  t.strictSame(withoutRows(parseChannelsCsv(big, GENERIC, LIMITS)), [{ message: `the file is larger than ${LIMITS.maxBytes} bytes` }], 'a 50 MB line beyond maxBytes');
  const roomy = { maxRows: 1000, maxBytes: 64 * 1024 * 1024 };
  const header = parseChannelsCsv(big, GENERIC, roomy);
  t.match(withoutRows(header), [{ row: 1, columnIndex: 1, message: `a value of ${big.length} characters; at most ${MAX_CSV_VALUE_CHARS} are read` }], 'a 50 MB header cell within a large maxBytes');
  const row = parseChannelsCsv(`name,type,value.type,unit\r\nx,READ,INTEGER,"${big}"\r\n`, GENERIC, roomy);
  t.match(withoutRows(row), [{ row: 2, column: 'unit', message: /^a value of 52428800 characters/ }], 'a 50 MB quoted value');
  for (const p of (header as { problems: ChannelsCsvProblem[] }).problems) t.ok(describeCsvProblem(p).length < 300, 'no problem echoes the value');

  const columns = `name,${Array.from({ length: 1e6 }, (_, i) => `c${i}`).join(',')}\r\n`;
  const wide = parseChannelsCsv(columns, GENERIC, { maxRows: 1000, maxBytes: 16 * 1024 * 1024 });
  t.equal(wide.ok, false);
  t.match(!wide.ok && wide.problems.at(-1), { row: 1, message: '1000001 columns; this asset\'s channels have 8' }, '1e6 columns');
  t.ok(!wide.ok && wide.problems.length <= 10, 'a few problems, not one per column');
  const wideRow = parseChannelsCsv(`name,type,value.type\r\nx,READ,INTEGER${',1'.repeat(1e6)}\r\n`, GENERIC, { maxRows: 10, maxBytes: 16 * 1024 * 1024 });
  t.strictSame(withoutRows(wideRow), [{ row: 2, message: '1000003 values; the header has 3 columns' }], '1e6 values in a row');

  const unbalanced = ['"', '""""', '"a"b"c', `name,type,value.type\r\n"x,READ,INTEGER\r\n`, `name,type,value.type\r\nx,READ,"INTEGER`, `name,"type\r\n`];
  for (const text of unbalanced) {
    const r = parseChannelsCsv(text, GENERIC, LIMITS);
    t.equal(r.ok, false, `unbalanced quotes refused: ${JSON.stringify(text)}`);
  }
});

t.test('the asset definitions of the configuration fit, and the demo asset round-trips', async (t) => {
  const { AssetDefinition } = await import('../../src/configuration/model.js');
  const { DriverRegistry } = await import('../../src/drivers/registry.js');
  const { builtinDrivers } = await import('../../src/drivers/builtin.js');
  const fs = await import('node:fs');
  const raw = JSON.parse(fs.readFileSync(new URL('../../config/dev.json', import.meta.url), 'utf8'));
  const defs = new AssetDefinition('sim', raw, new DriverRegistry(builtinDrivers())).channelAds.map((a) =>
    a.id === 'deadband' ? { ...a, extension: true } : a.id === 'initial' ? { ...a, valueTyped: true } : a,
  );
  const channels = Object.entries(raw.assets.demo.channels as Record<string, CsvChannel['props']>).map(([name, props]) => ({ name, props }));
  const text = channelsToCsv(channels, defs);
  t.equal(text.split('\r\n')[0], 'name,enabled,type,value.type,scale,offset,unit,simulation,delay,initial,deadband');
  const back = parseChannelsCsv(text, defs, LIMITS);
  // The round trip adds only the required keys' defaults the file leaves to the daemon (enabled).
  t.strictSame(withoutRows(back), channels.map((c) => ({ name: c.name, props: { enabled: true, ...c.props } })));
  t.equal(channelsToCsv((back as { channels: CsvChannel[] }).channels, defs), text, 'and writes the same text again');
});
