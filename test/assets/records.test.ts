// Kura's REST ChannelRecord JSON: the per-channel cache a REST read writes records with gives the
// same text as recordJson, record after record, while a channel's type or unit changes (a reload)
// and for failures and refused channels (never cached).
import t from 'tap';
import { RecordJsonCache, recordJson } from '../../src/assets/records.js';
import type { ChannelRecord } from '../../src/channels/types.js';

t.test('RecordJsonCache writes what recordJson writes', async (t) => {
  const records: ChannelRecord[] = [
    { name: 'temperature', status: 'SUCCESS', valueType: 'DOUBLE', value: { type: 'DOUBLE', value: 20.5 }, timestamp: 1700000000000, unit: 'C' },
    { name: 'temperature', status: 'SUCCESS', valueType: 'DOUBLE', value: { type: 'DOUBLE', value: 1e7 }, timestamp: 1700000000001, unit: 'C' },
    // A reload changed the unit, then the type, then dropped the unit.
    { name: 'temperature', status: 'SUCCESS', valueType: 'DOUBLE', value: { type: 'DOUBLE', value: 68.9 }, timestamp: 1700000000002, unit: '°F "quoted"' },
    { name: 'temperature', status: 'SUCCESS', valueType: 'FLOAT', value: { type: 'FLOAT', value: 0.10000000149011612 }, timestamp: 1700000000003, unit: '°F "quoted"' },
    { name: 'temperature', status: 'SUCCESS', valueType: 'FLOAT', value: { type: 'FLOAT', value: 2 }, timestamp: 1700000000004 },
    { name: 'counter', status: 'SUCCESS', valueType: 'INTEGER', value: { type: 'INTEGER', value: 7 }, timestamp: 1700000000005 },
    { name: 'big', status: 'SUCCESS', valueType: 'LONG', value: { type: 'LONG', value: 9007199254740993n }, timestamp: 1700000000006, unit: '' },
    { name: 'na\u00efve "name"', status: 'SUCCESS', valueType: 'STRING', value: { type: 'STRING', value: 'a\nb' }, timestamp: 1700000000007 },
    { name: 'nan', status: 'SUCCESS', valueType: 'DOUBLE', value: { type: 'DOUBLE', value: NaN }, timestamp: 1700000000008 },
    { name: 'counter', status: 'FAILURE', valueType: 'INTEGER', error: 'Modbus exception 2 (ILLEGAL DATA ADDRESS)', timestamp: 1700000000009 },
    { name: 'gone', status: 'FAILURE', valueType: 'STRING', error: 'Channel not available', timestamp: 1700000000010, refused: true },
    { name: 'counter', status: 'SUCCESS', valueType: 'INTEGER', value: { type: 'INTEGER', value: 8 }, timestamp: 1700000000011 },
    // Records of one read share a timestamp (its text is written once); an earlier one comes back.
    { name: 'temperature', status: 'SUCCESS', valueType: 'DOUBLE', value: { type: 'DOUBLE', value: 21 }, timestamp: 1700000000011, unit: 'C' },
    { name: 'counter', status: 'SUCCESS', valueType: 'INTEGER', value: { type: 'INTEGER', value: 9 }, timestamp: 1700000000005 },
    { name: 'temperature', status: 'SUCCESS', valueType: 'DOUBLE', value: { type: 'DOUBLE', value: 22 }, timestamp: 0, unit: 'C' },
  ];
  const cache = new RecordJsonCache();
  for (const r of records) {
    const text = cache.json(r);
    t.equal(text, recordJson(r), `${r.name} ${r.status} ${r.valueType} ${r.unit ?? '(no unit)'}`);
    t.doesNotThrow(() => JSON.parse(text));
  }
});
