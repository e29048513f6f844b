// The outbox's bounds (docs/mqtt.md "Telemetry"): the log's segments never take more than
// `outbox.max.bytes`, the oldest messages going first; only the send window's payloads stay in
// memory, the rest are read back from disk in order as they are sent; a log over the bounds (an
// older version's, or bounds made smaller) is cut to them at start, oldest first; segments after a
// power cut lose only what was torn.

import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { TelemetryOutbox, type OutboxMessage } from '../../src/mqtt/telemetry-outbox.js';
import { silentLogger } from '../../src/log.js';

function tempDir(t: { teardown(fn: () => void): void }): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-outbox-bounds-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function open(dir: string, o: { maxBytes?: number; maxMessages?: number } = {}): Promise<TelemetryOutbox> {
  const b = new TelemetryOutbox({ dir, maxMessages: o.maxMessages ?? 100_000, maxBytes: o.maxBytes ?? 64 * 1024 * 1024, log: silentLogger, flushDelayMs: 5 });
  await b.open();
  return b;
}

/** Bytes of every file in `dir` (what the outbox takes on disk). */
const dirBytes = (dir: string) => fs.readdirSync(dir).reduce((n, f) => n + fs.statSync(path.join(dir, f)).size, 0);

/** A payload that says which message it is, padded to `size` bytes. */
const numbered = (i: number, size: number) => Buffer.concat([Buffer.from(`${i}:`), Buffer.alloc(size, 0x61)]).subarray(0, Math.max(size, String(i).length + 1));
const numberOf = (m: OutboxMessage) => Number(m.payload.toString('latin1', 0, m.payload.indexOf(0x3a)));

/** True when `ns` is a run of consecutive numbers. */
const consecutive = (ns: number[]) => ns.every((n, i) => i === 0 || n === ns[i - 1]! + 1);

t.test('bytes on disk stay within maxBytes; the oldest messages go first', async (t) => {
  const dir = tempDir(t);
  const max = 256 * 1024;
  const a = await open(dir, { maxBytes: max });
  let worst = 0;
  for (let i = 0; i < 2000; i++) {
    void a.enqueue('t/bytes', numbered(i, 1000));
    if (i % 50 === 49) {
      await a.flush();
      worst = Math.max(worst, dirBytes(dir));
      t.equal(a.fileSize(), dirBytes(dir), 'the outbox knows what it takes');
    }
  }
  await a.flush();
  t.ok(worst <= max, `at most ${worst} bytes on disk for 2000 messages of 1 KB (bound ${max})`);
  const kept = (await a.readPending()).map(numberOf);
  t.ok(a.stats().dropped > 0 && a.stats().dropped + kept.length === 2000, `${a.stats().dropped} dropped, ${kept.length} kept: every message is one or the other`);
  t.ok(kept.length > 150, `${kept.length} messages kept: most of the bound holds messages`);
  t.ok(consecutive(kept) && kept.at(-1) === 1999, `kept ${kept[0]}…${kept.at(-1)}: the newest, in order, no gap`);
  await a.close();
  const b = await open(dir, { maxBytes: max });
  t.same((await b.readPending()).map(numberOf), kept, 'the same after a restart');
  t.equal(b.stats().dropped, 0, 'nothing more dropped at start');
  await b.close();
});

t.test('maxBytes made smaller at run time applies at once', async (t) => {
  const dir = tempDir(t);
  const a = await open(dir, { maxBytes: 1024 * 1024 });
  for (let i = 0; i < 600; i++) void a.enqueue('t/shrink', numbered(i, 1000));
  await a.flush();
  t.ok(dirBytes(dir) > 512 * 1024, `${dirBytes(dir)} bytes before`);
  a.maxBytes = 256 * 1024;
  await a.flush();
  t.ok(dirBytes(dir) <= 256 * 1024, `${dirBytes(dir)} bytes after the bound became 256 KiB`);
  const kept = (await a.readPending()).map(numberOf);
  t.ok(consecutive(kept) && kept.at(-1) === 599, `kept ${kept[0]}…${kept.at(-1)}`);
  await a.close();
});

t.test('payloads beyond the send window are on disk only, and read back in order as they are sent', async (t) => {
  const dir = tempDir(t);
  const a = await open(dir);
  const total = 1000;
  const size = 20_000;
  // Produced as telemetry is, a batch at a time (not 20 MB in one synchronous burst, which the
  // bound on unwritten payloads would cut).
  for (let i = 0; i < total; i++) {
    void a.enqueue('t/mem', numbered(i, size));
    if (i % 100 === 99) await a.flush();
  }
  const bound = 4 * 1024 * 1024 + size;
  t.ok(a.stats().memoryBytes <= bound, `${a.stats().memoryBytes} bytes of payloads in memory for ${total * size} pending`);
  // A sender as the MQTT service is: up to 32 in flight, acknowledged out of order now and then,
  // woken by the outbox when what it read back is ready.
  const sent: number[] = [];
  let peak = 0;
  let wake: () => void = () => {};
  a.onEnqueue(() => wake());
  const inFlight: OutboxMessage[] = [];
  while (sent.length < total && a.stats().pending > 0) {
    for (let m = a.take(); m; m = inFlight.length < 32 ? a.take() : undefined) inFlight.push(m);
    peak = Math.max(peak, a.stats().memoryBytes);
    if (inFlight.length === 0) {
      await new Promise<void>((r) => {
        wake = r;
        setTimeout(r, 50);
      });
      continue;
    }
    const m = inFlight.length > 2 && sent.length % 7 === 0 ? inFlight.splice(1, 1)[0]! : inFlight.shift()!;
    sent.push(numberOf(m));
    a.ack(m.seq);
    if (sent.length % 10 === 0) await new Promise((r) => setImmediate(r));
  }
  t.same([...sent].sort((x, y) => x - y), Array.from({ length: total }, (_, i) => i), 'every message sent once');
  t.ok(sent.every((n, i) => Math.abs(n - i) <= 2), 'in order (but for the acknowledgements taken out of turn)');
  t.ok(peak <= bound, `at most ${peak} bytes of payloads in memory while sending`);
  await a.flush();
  t.equal(a.stats().pending, 0);
  await a.close();
  t.ok(dirBytes(dir) < 64 * 1024, `acknowledged segments deleted (${dirBytes(dir)} bytes left)`);
});

t.test('a client that goes away: what it was handed is sent again, oldest first', async (t) => {
  const dir = tempDir(t);
  const a = await open(dir);
  for (let i = 0; i < 5; i++) void a.enqueue('t/again', numbered(i, 10));
  await a.flush();
  const first = [a.take()!, a.take()!, a.take()!];
  a.ack(first[1]!.seq);
  a.untakeAll();
  t.same([a.take(), a.take(), a.take(), a.take()].map((m) => m && numberOf(m)), [0, 2, 3, 4]);
  t.equal(a.take(), undefined);
  await a.close();
});

t.test('a log over the bounds at start: cut to them, oldest segments first, the newest kept', async (t) => {
  const dir = tempDir(t);
  // Written with a bound of 4 MiB (segments of 512 KiB), then started with 1 MiB.
  const a = await open(dir, { maxBytes: 4 * 1024 * 1024 });
  for (let i = 0; i < 3000; i++) {
    void a.enqueue('t/old', numbered(i, 1000));
    if (i % 100 === 99) await a.flush();
  }
  await a.close();
  t.ok(fs.readdirSync(dir).length >= 6, `${fs.readdirSync(dir).length} segments`);
  const max = 1024 * 1024;
  const b = await open(dir, { maxBytes: max });
  const kept = (await b.readPending()).map(numberOf);
  t.ok(consecutive(kept) && kept.at(-1) === 2999 && kept.length > 500, `kept ${kept[0]}…${kept.at(-1)}`);
  t.equal(b.stats().dropped, 3000 - kept.length, `${b.stats().dropped} dropped`);
  t.ok(dirBytes(dir) <= max, `${dirBytes(dir)} bytes on disk after the start (bound ${max})`);
  await b.close();
  const c = await open(dir, { maxBytes: max });
  t.same((await c.readPending()).map(numberOf), kept, 'the cut log reads the same');
  t.equal(c.stats().dropped, 0);
  await c.close();
});

t.test('an older version\'s single log over the bounds: the start stays within them', async (t) => {
  const dir = tempDir(t);
  const a = await open(dir);
  for (let i = 0; i < 3000; i++) void a.enqueue('t/legacy', numbered(i, 1000));
  await a.close();
  t.same(fs.readdirSync(dir), ['outbox.log'], 'one file of 3 MB, as versions without segments wrote it');
  const original = fs.readFileSync(path.join(dir, 'outbox.log'));

  // Over the byte bound: it is one segment, and it goes as a whole.
  const b = await open(dir, { maxBytes: 1024 * 1024 });
  t.same([b.stats().pending, b.stats().dropped], [0, 3000], 'dropped, and counted');
  t.ok(dirBytes(dir) <= 1024 * 1024, `${dirBytes(dir)} bytes on disk`);
  void b.enqueue('t/legacy', numbered(3000, 10));
  await b.close();
  t.same((await (await open(dir, { maxBytes: 1024 * 1024 })).readPending()).map(numberOf), [3000], 'and the outbox goes on');

  // Over the number bound only: the newest are kept (read in chunks, the oldest dropped as it goes).
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { mode: 0o700 });
  fs.writeFileSync(path.join(dir, 'outbox.log'), original);
  const newest = Array.from({ length: 100 }, (_, i) => 2900 + i);
  const d = await open(dir, { maxMessages: 100 });
  t.same((await d.readPending()).map(numberOf), newest, 'the newest 100');
  await d.close();
  const e = await open(dir, { maxMessages: 100 });
  t.same((await e.readPending()).map(numberOf), newest, 'the same at the next start');
  await e.close();
});

t.test('segments after a power cut: a torn tail is cut; a corrupt segment loses only its own tail', async (t) => {
  const dir = tempDir(t);
  const a = await open(dir, { maxBytes: 64 * 1024 });
  for (let i = 0; i < 40; i++) {
    void a.enqueue('t/seg', numbered(i, 1000));
    if (i % 5 === 4) await a.flush();
  }
  await a.close();
  const archives = fs.readdirSync(dir).filter((f) => f !== 'outbox.log').sort((x, y) => Number(x.split('.').pop()) - Number(y.split('.').pop()));
  t.ok(archives.length >= 3, `${archives.length} archived segments`);
  const all = (await (await open(dir, { maxBytes: 64 * 1024 })).readPending()).map(numberOf);

  fs.appendFileSync(path.join(dir, 'outbox.log'), Buffer.from([0, 0, 0, 40, 1, 2, 3]));
  const b = await open(dir, { maxBytes: 64 * 1024 });
  t.same((await b.readPending()).map(numberOf), all, 'a torn tail of outbox.log: everything before it kept');
  t.equal(b.stats().recoveredBytesDiscarded, 7);
  await b.close();

  const victim = path.join(dir, archives[1]!);
  const data = fs.readFileSync(victim);
  data[Math.floor(data.length / 2)] ^= 0xff;
  fs.writeFileSync(victim, data);
  const c = await open(dir, { maxBytes: 64 * 1024 });
  const left = (await c.readPending()).map(numberOf);
  t.ok(left.length < all.length && left.length > all.length / 2, `${all.length - left.length} of ${all.length} lost with the corrupt half of one segment`);
  t.ok(left.every((n, i) => i === 0 || n > left[i - 1]!), 'the others in order');
  t.equal(left.at(-1), all.at(-1), 'the segments after the corrupt one are read');
  await c.close();
});
