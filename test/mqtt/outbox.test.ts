// The QoS 1 outbox on a real filesystem: durability across reopen, recovery from a torn or corrupt
// tail, the bound (oldest dropped first, counted), batched fsyncs and compaction.

import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Outbox } from '../../src/mqtt/outbox.js';
import { crc32 } from '../../src/store/crc32.js';
import { silentLogger } from '../../src/log.js';

function tempDir(t: { teardown(fn: () => void): void }): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-outbox-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function open(dir: string, max = 100): Promise<Outbox> {
  const o = new Outbox({ dir, maxMessages: max, log: silentLogger, flushDelayMs: 5 });
  await o.open();
  return o;
}

const list = (o: Outbox) => [...o.messages()].map((m) => `${m.topic}:${m.payload.toString()}`);

t.test('crc32 matches the IEEE check value', async (t) => {
  t.equal(crc32(Buffer.from('123456789')), 0xcbf43926);
});

t.test('what enqueue() reported durable is there after a crash, in order', async (t) => {
  const dir = tempDir(t);
  const a = await open(dir);
  await Promise.all([1, 2, 3, 4].map((i) => a.enqueue(`t/${i}`, Buffer.from(`p${i}`))));
  const first = [...a.messages()];
  a.ack(first[1]!.seq);
  await a.flush();
  // No close(): a second instance reads the file as a restarted daemon would after a power cut.
  const b = await open(dir);
  t.same(list(b), ['t/1:p1', 't/3:p3', 't/4:p4']);
  t.equal([...b.messages()][0]!.seq, first[0]!.seq, 'sequence numbers survive');
  await b.enqueue('t/5', Buffer.from('p5'));
  t.ok([...b.messages()].pop()!.seq > first[3]!.seq, 'new sequence numbers continue after the old ones');
  await b.close();
  await a.close();
  const c = await open(dir);
  t.same(list(c), ['t/1:p1', 't/3:p3', 't/4:p4', 't/5:p5']);
  await c.close();
});

t.test('a torn or corrupt tail is cut off; earlier records are kept', async (t) => {
  const dir = tempDir(t);
  const a = await open(dir);
  await a.enqueue('x', Buffer.from('one'));
  await a.enqueue('x', Buffer.from('two'));
  await a.close();
  const file = path.join(dir, 'outbox.log');
  const good = fs.statSync(file).size;

  // 1. Half a record (power cut during the write).
  fs.appendFileSync(file, Buffer.from([0, 0, 0, 40, 1, 2, 3]));
  let b = await open(dir);
  t.same(list(b), ['x:one', 'x:two']);
  t.equal(b.stats().recoveredBytesDiscarded, 7);
  t.equal(fs.statSync(file).size, good, 'truncated at the record boundary');
  await b.enqueue('x', Buffer.from('three'));
  await b.close();

  // 2. A flipped byte in the last record: that record and anything after it are discarded.
  const data = fs.readFileSync(file);
  data[data.length - 2] ^= 0xff;
  fs.writeFileSync(file, data);
  b = await open(dir);
  t.same(list(b), ['x:one', 'x:two']);
  await b.close();

  // 3. Garbage only.
  fs.writeFileSync(file, Buffer.from('this is not an outbox'));
  b = await open(dir);
  t.same(list(b), []);
  await b.enqueue('x', Buffer.from('fresh'));
  await b.close();
  b = await open(dir);
  t.same(list(b), ['x:fresh']);
  await b.close();
});

t.test('bounded: the oldest are dropped first and counted, also on disk', async (t) => {
  const dir = tempDir(t);
  const a = await open(dir, 5);
  for (let i = 1; i <= 8; i++) void a.enqueue('b', Buffer.from(String(i)));
  await a.flush();
  t.same(list(a), ['b:4', 'b:5', 'b:6', 'b:7', 'b:8']);
  t.equal(a.stats().dropped, 3);
  await a.close();
  const b = await open(dir, 5);
  t.same(list(b), ['b:4', 'b:5', 'b:6', 'b:7', 'b:8']);
  b.maxMessages = 2;
  t.same(list(b), ['b:7', 'b:8'], 'a smaller bound applies at once');
  await b.close();
});

t.test('writes are batched: one fsync per batch, not per message', async (t) => {
  const dir = tempDir(t);
  const a = await open(dir);
  await Promise.all(Array.from({ length: 200 }, (_, i) => a.enqueue('n', Buffer.from(String(i)))));
  t.ok(a.stats().syncs <= 3, `200 messages took ${a.stats().syncs} fsync(s)`);
  await a.close();
});

t.test('the log is compacted when it is mostly acknowledged records', async (t) => {
  const dir = tempDir(t);
  const a = await open(dir, 100_000);
  for (let round = 0; round < 10; round++) {
    await Promise.all(Array.from({ length: 300 }, (_, i) => a.enqueue('c', Buffer.alloc(100, i))));
    for (const m of [...a.messages()]) a.ack(m.seq);
    await a.flush();
  }
  await a.enqueue('c', Buffer.from('last'));
  await a.flush();
  t.ok(a.fileSize() < 300 * 120, `log stays small (${a.fileSize()} bytes for 3001 messages)`);
  await a.close();
  const b = await open(dir);
  t.same(list(b), ['c:last']);
  await b.close();
  t.same(
    fs.readdirSync(dir).filter((n) => n.endsWith('.tmp')),
    [],
    'no temporary files left',
  );
});

t.test('enqueue after close is refused', async (t) => {
  const dir = tempDir(t);
  const a = await open(dir);
  await a.close();
  await t.rejects(a.enqueue('x', Buffer.from('y')), /closed/);
});
