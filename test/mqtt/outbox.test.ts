// The QoS 1 outbox on a real filesystem: durability across reopen, recovery from a torn or corrupt
// tail, the bounds (oldest dropped first, counted; bytes on disk; payloads in memory), batched
// fsyncs, segments deleted once acknowledged, the log read back in order as it is sent.

import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TelemetryOutbox } from '../../src/mqtt/telemetry-outbox.js';
import { crc32 } from '../../src/store/crc32.js';
import { silentLogger } from '../../src/log.js';
import { watchTimers } from '../helpers/timer-fires.js';

function tempDir(t: { teardown(fn: () => void): void }): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-outbox-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function open(dir: string, max = 100): Promise<TelemetryOutbox> {
  const o = new TelemetryOutbox({ dir, maxMessages: max, log: silentLogger, flushDelayMs: 5 });
  await o.open();
  return o;
}

const list = async (o: TelemetryOutbox) => (await o.readPending()).map((m) => `${m.topic}:${m.payload.toString()}`);

t.test('crc32 matches the IEEE check value', async (t) => {
  t.equal(crc32(Buffer.from('123456789')), 0xcbf43926);
});

t.test('what enqueue() reported durable is there after a crash, in order', async (t) => {
  const dir = tempDir(t);
  const a = await open(dir);
  await Promise.all([1, 2, 3, 4].map((i) => a.enqueue(`t/${i}`, Buffer.from(`p${i}`))));
  const first = (await a.readPending());
  a.ack(first[1]!.seq);
  await a.flush();
  // No close(): a second instance reads the file as a restarted daemon would after a power cut.
  const b = await open(dir);
  t.same(await list(b), ['t/1:p1', 't/3:p3', 't/4:p4']);
  t.equal((await b.readPending())[0]!.seq, first[0]!.seq, 'sequence numbers survive');
  await b.enqueue('t/5', Buffer.from('p5'));
  t.ok((await b.readPending()).pop()!.seq > first[3]!.seq, 'new sequence numbers continue after the old ones');
  await b.close();
  await a.close();
  const c = await open(dir);
  t.same(await list(c), ['t/1:p1', 't/3:p3', 't/4:p4', 't/5:p5']);
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
  t.same(await list(b), ['x:one', 'x:two']);
  t.equal(b.stats().recoveredBytesDiscarded, 7);
  t.equal(fs.statSync(file).size, good, 'truncated at the record boundary');
  await b.enqueue('x', Buffer.from('three'));
  await b.close();

  // 2. A flipped byte in the last record: that record and anything after it are discarded.
  const data = fs.readFileSync(file);
  data[data.length - 2] ^= 0xff;
  fs.writeFileSync(file, data);
  b = await open(dir);
  t.same(await list(b), ['x:one', 'x:two']);
  await b.close();

  // 3. Garbage only.
  fs.writeFileSync(file, Buffer.from('this is not an outbox'));
  b = await open(dir);
  t.same(await list(b), []);
  await b.enqueue('x', Buffer.from('fresh'));
  await b.close();
  b = await open(dir);
  t.same(await list(b), ['x:fresh']);
  await b.close();
});

t.test('bounded: the oldest are dropped first and counted, also on disk', async (t) => {
  const dir = tempDir(t);
  const a = await open(dir, 5);
  for (let i = 1; i <= 8; i++) void a.enqueue('b', Buffer.from(String(i)));
  await a.flush();
  t.same(await list(a), ['b:4', 'b:5', 'b:6', 'b:7', 'b:8']);
  t.equal(a.stats().dropped, 3);
  await a.close();
  const b = await open(dir, 5);
  t.same(await list(b), ['b:4', 'b:5', 'b:6', 'b:7', 'b:8']);
  b.maxMessages = 2;
  t.same(await list(b), ['b:7', 'b:8'], 'a smaller bound applies at once');
  await b.close();
});

t.test('writes are batched: one fsync per batch, not per message', async (t) => {
  const dir = tempDir(t);
  const a = await open(dir);
  await Promise.all(Array.from({ length: 200 }, (_, i) => a.enqueue('n', Buffer.from(String(i)))));
  t.ok(a.stats().syncs <= 3, `200 messages took ${a.stats().syncs} fsync(s)`);
  await a.close();
});

t.test('acknowledged segments are deleted: the log stays small', async (t) => {
  const dir = tempDir(t);
  // 64 KiB: segments of 8 KiB, so 3000 messages of 121 bytes fill dozens of them.
  const a = new TelemetryOutbox({ dir, maxMessages: 100_000, maxBytes: 65_536, log: silentLogger, flushDelayMs: 5 });
  await a.open();
  for (let round = 0; round < 10; round++) {
    await Promise.all(Array.from({ length: 300 }, (_, i) => a.enqueue('c', Buffer.alloc(100, i))));
    for (const m of await a.readPending()) a.ack(m.seq);
    await a.flush();
  }
  await a.enqueue('c', Buffer.from('last'));
  await a.flush();
  t.ok(a.fileSize() < 16 * 1024, `log stays small (${a.fileSize()} bytes for 3001 messages, ${a.stats().bytesWritten} written)`);
  t.ok(fs.readdirSync(dir).length <= 2, `segment files left: ${fs.readdirSync(dir).join(', ')}`);
  t.equal(a.stats().dropped, 0, 'nothing dropped: every message was acknowledged');
  await a.close();
  const b = await open(dir);
  t.same(await list(b), ['c:last']);
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

// ---- flash-friendly: online, nothing acknowledged in time is written ----

async function openOnline(dir: string, ackLagMs = 100): Promise<TelemetryOutbox> {
  const o = new TelemetryOutbox({ dir, maxMessages: 1000, log: silentLogger, flushDelayMs: 5, ackLagMs });
  await o.open();
  o.setOnline(true);
  return o;
}

t.test('online and acknowledged in time: nothing is written; enqueue resolves on the PUBACK', async (t) => {
  const dir = tempDir(t);
  const a = await openOnline(dir, 60_000);
  const safe = Array.from({ length: 500 }, (_, i) => a.enqueue('t', Buffer.from(String(i))));
  for (const m of (await a.readPending())) a.ack(m.seq);
  await Promise.all(safe);
  await a.flush();
  t.same([a.stats().bytesWritten, a.stats().syncs, a.fileSize()], [0, 0, 0], '500 messages, no byte written, no fsync');
  await a.close();
  t.equal(fs.statSync(path.join(dir, 'outbox.log')).size, 0);
});

t.test('online, acknowledgements lag: written after ackLagMs in one batch, and kept over a power cut', async (t) => {
  const dir = tempDir(t);
  const a = await openOnline(dir, 100);
  let resolved = 0;
  const safe = Array.from({ length: 50 }, (_, i) => a.enqueue('lag', Buffer.from(String(i))).then(() => resolved++));
  await new Promise((r) => setTimeout(r, 20));
  t.equal(a.stats().bytesWritten, 0, 'not yet written');
  await Promise.all(safe);
  t.equal(resolved, 50);
  t.ok(a.stats().syncs >= 1 && a.stats().syncs <= 2, `${a.stats().syncs} fsync(s) for 50 messages`);
  const b = await open(dir); // power cut: a second reader of the same files
  t.equal((await list(b)).length, 50, 'every message reported safe is on disk');
  await b.close();
  // Acknowledged now: DONE records, and a restart finds nothing pending.
  for (const m of (await a.readPending())) a.ack(m.seq);
  await a.close();
  const c = await open(dir);
  t.same(await list(c), []);
  await c.close();
});

t.test('online: the lag check wakes once per ackLagMs, and a late PUBACK after an early one is still caught', async (t) => {
  const dir = tempDir(t);
  const a = await openOnline(dir, 100);
  const timers = watchTimers(t);
  // A message every 10 ms for 1 s, acknowledged at once: the check fires when the oldest message
  // not on disk would be 100 ms old (about 10 times). On a period of half ackLagMs it fired ~20 times.
  const until = Date.now() + 1000;
  while (Date.now() < until) {
    const p = a.enqueue('fast', Buffer.from('x'));
    a.ack((await a.readPending()).pop()!.seq);
    await p;
    await timers.sleep(10);
  }
  t.ok(timers.fires() <= 14, `${timers.fires()} lag-check wakes in 1 s of messages every 10 ms (ackLagMs 100)`);
  t.equal(a.stats().bytesWritten, 0, 'nothing written');
  // Wait out the last check; then one acknowledged message and, 60 ms later, one never acknowledged.
  await timers.sleep(150);
  const first = a.enqueue('lag', Buffer.from('acked'));
  await timers.sleep(50);
  a.ack((await a.readPending())[0]!.seq);
  await first;
  const late = a.enqueue('lag', Buffer.from('unacked'));
  await timers.sleep(60); // past the first message's deadline: the check is armed again for this one
  t.equal(a.stats().bytesWritten, 0, 'the unacknowledged message is not written before it is ackLagMs old');
  await late;
  const b = await open(dir);
  t.same(await list(b), ['lag:unacked'], 'written once ackLagMs old');
  await b.close();
  await a.close();
});

t.test('the connection drops: what is only in memory is written at once; offline writes as it comes', async (t) => {
  const dir = tempDir(t);
  const a = await openOnline(dir, 60_000);
  const first = Array.from({ length: 10 }, (_, i) => a.enqueue('drop', Buffer.from(`a${i}`)));
  a.ack((await a.readPending())[0]!.seq); // delivered before the drop: never written
  a.setOnline(false);
  await Promise.all(first);
  await a.enqueue('drop', Buffer.from('offline'));
  const b = await open(dir); // power cut while offline
  t.same(await list(b), [...Array.from({ length: 9 }, (_, i) => `drop:a${i + 1}`), 'drop:offline']);
  await b.close();
  // Back online: the stored ones are acknowledged with DONE records, new ones stay in memory.
  a.setOnline(true);
  for (const m of (await a.readPending())) a.ack(m.seq);
  await a.flush();
  const before = a.stats().bytesWritten;
  const late = a.enqueue('drop', Buffer.from('late'));
  a.ack((await a.readPending()).pop()!.seq);
  await late;
  await a.flush();
  t.equal(a.stats().bytesWritten, before, 'acknowledged in time: not written');
  // Closing writes what is only in memory, for the next start.
  void a.enqueue('drop', Buffer.from('at-close'));
  await a.close();
  const c = await open(dir);
  t.same(await list(c), ['drop:at-close']);
  await c.close();
});

t.test('an owned payload acknowledged before it was ever written is freed at the PUBACK; any other payload is left alone', async (t) => {
  const dir = tempDir(t);
  const o = await open(dir);
  o.setOnline(true);
  const owned = Buffer.allocUnsafe(64 * 1024).fill(1);
  const lent = Buffer.allocUnsafe(64 * 1024).fill(2);
  const small = Buffer.from('pooled'); // a slice of Node's shared pool: never detached
  const acks = [o.enqueue('a', owned, 1, true), o.enqueue('b', lent, 1), o.enqueue('c', small, 1, true)];
  const taken = [o.take()!, o.take()!, o.take()!];
  t.same(taken.map((m) => m.topic), ['a', 'b', 'c']);
  for (const m of taken) o.ack(m.seq);
  await Promise.all(acks);
  t.equal(owned.length, 0, 'the owned payload gave its memory back (its ArrayBuffer detached)');
  t.equal(lent.length, 64 * 1024, 'a payload the caller keeps is untouched');
  t.equal(lent[0], 2);
  t.equal(small.toString(), 'pooled', 'a pool slice is untouched');

  // Written to disk first (offline): the write may still use it, so it is not freed.
  o.setOnline(false);
  const stored = Buffer.allocUnsafe(64 * 1024).fill(3);
  await o.enqueue('d', stored, 1, true);
  await o.flush();
  const m = o.take()!;
  t.equal(m.topic, 'd');
  o.ack(m.seq);
  t.equal(stored.length, 64 * 1024, 'a payload that went to disk is left to the collector');
  t.same(await list(o), [], 'nothing pending');
  await o.close();
});
