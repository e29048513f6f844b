// Modbus TCP devices for the scale benchmark (bench/README.md "Scale"), all in this one process so that they
// cost the shared cores little: N servers on 127.0.0.1 (ephemeral ports), any unit id, every holding
// and input register 0..65535 readable (FC 3 and 4, at most 125 per request as the protocol allows,
// Modbus Application Protocol V1.1b3 §6.3, §6.4). Register a reads (a × 7 + tick) & 0x7fff, where tick
// counts 250 ms steps of the clock: every register changes between two polls a second apart, so the
// telemetry carries every tag each cycle. Any other function code is answered with exception 1.
//
//   node bench/out/modbus-farm.mjs DEVICES
//   → {"ports":[…]}, then per line on stdin {"cmd":"stats"} → {"requests":[…],"bad":n}

import net from 'node:net';
import { serveCommands } from '../lib/commands.js';
import { answer } from './modbus-answer.js';

const devices = Number(process.argv[2] ?? 10);
const requests = new Array<number>(devices).fill(0);
let bad = 0;

function serve(i: number): Promise<number> {
  const server = net.createServer((sock) => {
    sock.setNoDelay(true);
    let buf = Buffer.alloc(0);
    sock.on('data', (d) => {
      buf = buf.length ? Buffer.concat([buf, d]) : d;
      // MBAP header: transaction id, protocol id, length (unit id + PDU), unit id.
      while (buf.length >= 7) {
        const len = buf.readUInt16BE(4);
        if (len < 2 || len > 254) {
          bad++;
          sock.destroy();
          return;
        }
        if (buf.length < 6 + len) break;
        const frame = buf.subarray(0, 6 + len);
        buf = buf.subarray(6 + len);
        requests[i]++;
        const out = answer(frame, Math.floor(Date.now() / 250));
        if (!out) bad++;
        else sock.write(out);
      }
    });
    sock.on('error', () => {});
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port)));
}

const ports = await Promise.all(Array.from({ length: devices }, (_, i) => serve(i)));
process.stdout.write(JSON.stringify({ ports }) + '\n');
serveCommands((cmd) => (cmd.cmd === 'stats' ? { requests, bad } : { error: `unknown command ${cmd.cmd}` }));
