// Modbus TCP baselines with modbus-serial (npm, benchmark-only), a process of its own:
//   block:       one Read Holding Registers of the whole block (what a careful client does by hand)
//   per-channel: one request per channel (what ThingsBoard gateway and Node-RED flows do)
//
//   node bench/out/modbus-client.mjs PORT UNIT MODE START CHANNELS WORDS_PER_CHANNEL POLLS
//   → {"ready":true}, then {"msPerPoll":[…],"checksum":n}

import ModbusSerial from 'modbus-serial';

// modbus-serial is CommonJS (`module.exports = ModbusRTU`) but its types declare `export default`.
const ModbusRTU = ModbusSerial as unknown as typeof ModbusSerial.default;

const [port, unit, mode, start, channels, words, polls] = process.argv.slice(2).map((x, i) => (i === 2 ? x : Number(x))) as [number, number, string, number, number, number, number];
const client = new ModbusRTU();
await client.connectTCP('127.0.0.1', { port });
client.setID(unit);
client.setTimeout(2000);
process.stdout.write(JSON.stringify({ ready: true }) + '\n');

// Decoding is part of a poll in every contender: 32-bit big-endian words as gatewayd's default order.
async function poll(): Promise<number> {
  let sum = 0;
  if (mode === 'block') {
    const r = await client.readHoldingRegisters(start, channels * words);
    for (let c = 0; c < channels; c++) sum += words === 2 ? r.buffer.readInt32BE(c * 4) : r.buffer.readInt16BE(c * 2);
  } else {
    for (let c = 0; c < channels; c++) {
      const r = await client.readHoldingRegisters(start + c * words, words);
      sum += words === 2 ? r.buffer.readInt32BE(0) : r.buffer.readInt16BE(0);
    }
  }
  return sum;
}

const times: number[] = [];
let checksum = 0;
for (let i = 0; i < polls; i++) {
  const t0 = process.hrtime.bigint();
  checksum = await poll();
  times.push(Number(process.hrtime.bigint() - t0) / 1e6);
}
process.stdout.write(JSON.stringify({ msPerPoll: times, checksum }) + '\n');
client.close(() => process.exit(0));
