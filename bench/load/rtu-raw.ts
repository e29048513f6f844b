// The RTU floor on this bench (a process of its own): hand-made Read Holding Registers frames over
// the same pty and the same pymodbus device, no framework, the answer recognised by its length and
// CRC. What it takes is the device's and the pty's time; gatewayd's poll minus this is gatewayd's.
//
//   node bench/out/rtu-raw.mjs PTY UNIT ADDRESS COUNT POLLS  → {"ready":true}, then {"msPerPoll":[…]}

import fs from 'node:fs';
import tty from 'node:tty';

const [pty, unit, address, count, polls] = process.argv.slice(2).map((x, i) => (i === 0 ? x : Number(x))) as [string, number, number, number, number];

function crc16(buf: Buffer): number {
  let crc = 0xffff;
  for (const b of buf) {
    crc ^= b;
    for (let i = 0; i < 8; i++) crc = crc & 1 ? (crc >>> 1) ^ 0xa001 : crc >>> 1;
  }
  return crc;
}

const req = Buffer.alloc(8);
req.writeUInt8(unit, 0);
req.writeUInt8(3, 1);
req.writeUInt16BE(address, 2);
req.writeUInt16BE(count, 4);
req.writeUInt16LE(crc16(req.subarray(0, 6)), 6);
const answerLength = 5 + 2 * count;

const fd = fs.openSync(pty, fs.constants.O_RDWR | fs.constants.O_NOCTTY | fs.constants.O_NONBLOCK);
const input = new tty.ReadStream(fd);
let rx = Buffer.alloc(0);
let waiting: (() => void) | undefined;
input.on('data', (d: Buffer) => {
  rx = Buffer.concat([rx, d]);
  if (rx.length >= answerLength && waiting) waiting();
});

function poll(): Promise<void> {
  rx = Buffer.alloc(0);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no answer on ${pty} (${rx.length} bytes)`)), 2000);
    waiting = () => {
      clearTimeout(timer);
      waiting = undefined;
      const frame = rx.subarray(0, answerLength);
      if (frame[1] !== 3 || crc16(frame.subarray(0, answerLength - 2)) !== frame.readUInt16LE(answerLength - 2)) reject(new Error('bad answer'));
      else resolve();
    };
    fs.writeSync(fd, req);
  });
}

process.stdout.write(JSON.stringify({ ready: true }) + '\n');
const times: number[] = [];
try {
  for (let i = 0; i < 3; i++) await poll(); // warm-up
  for (let i = 0; i < polls; i++) {
    const t0 = process.hrtime.bigint();
    await poll();
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  process.stdout.write(JSON.stringify({ msPerPoll: times }) + '\n');
} catch (err) {
  process.stdout.write(JSON.stringify({ error: (err as Error).message }) + '\n');
}
input.destroy();
process.exit(0);
