// The nodered bench section's device (bench/load/ticking_device.py through bench/lib/ticking-device.ts),
// against a real Modbus TCP client (modbus-serial): what a poll reads is what the subscriber's
// parsing expects, requests are counted, and values go on from the wall clock after a restart.
// No timing is asserted: waits only have generous deadlines.
import t from 'tap';
import ModbusSerial from 'modbus-serial';
import { CHANNELS, sampleOf, type Sample } from '../../bench/lib/nodered.js';
import { TickingDevice } from '../../bench/lib/ticking-device.js';
import { freePort } from '../helpers/ports.js';
import { havePeers } from '../helpers/pymodbus.js';

// modbus-serial is CommonJS (`module.exports = ModbusRTU`) but its types declare `export default`.
const ModbusRTU = ModbusSerial as unknown as typeof ModbusSerial.default;

/** One block read of every channel (INT32, high word first), as the subscriber sees the values. */
async function poll(port: number): Promise<(Sample | undefined)[]> {
  const c = new ModbusRTU();
  await c.connectTCP('127.0.0.1', { port });
  c.setID(1);
  c.setTimeout(10_000);
  try {
    const r = await c.readHoldingRegisters(0, 2 * CHANNELS);
    return Array.from({ length: CHANNELS }, (_, ch) => sampleOf(r.buffer.readInt32BE(4 * ch), ch));
  } finally {
    await new Promise<void>((resolve) => c.close(() => resolve()));
  }
}

t.test('ticking device: one tick per read, counted requests, values that go on after a restart', async (t) => {
  if (!havePeers(t, 'pymodbus')) return;
  const dev = new TickingDevice(await freePort(), Date.now() - 10_000);
  t.teardown(() => dev.stop());
  await dev.start();
  t.equal(await dev.count(), 0, 'nothing counted before the first request');

  const first = await poll(dev.port);
  t.ok(first.every((s) => s !== undefined), 'every channel holds seq × 100 + its index');
  const seq = first[0]!.seq;
  t.ok(first.every((s) => s!.seq === seq), 'one read sees the values of one tick');
  t.ok(seq >= dev.seqAt(Date.now() - 60_000) && seq <= dev.seqAt(Date.now()), 'the tick follows the wall clock from the epoch');

  // The values change by themselves (every 50 ms): poll until they did.
  let later = seq;
  for (let i = 0; i < 200 && later === seq; i++) later = (await poll(dev.port))[0]!.seq;
  t.ok(later > seq, 'a later poll sees newer values');
  const polls = await dev.count();
  t.ok(polls >= 2, 'every answered request is counted');
  await poll(dev.port);
  t.equal(await dev.count(), polls + 1, 'one more read, one more request');

  const restartedAt = dev.seqAt(Date.now());
  await dev.stop();
  await dev.start();
  const after = await poll(dev.port);
  t.ok(after.every((s) => s !== undefined && s.seq >= restartedAt), 'after a restart on the same port the values go on from the wall clock');
  t.equal(await dev.count(), 1, 'the new process counts its own requests');
});
