// The scale benchmark's pure logic (bench/README.md "Scale"): the devices' Modbus answers, the telemetry
// scan, the latency histogram and the poll-miss count. No timing is asserted: `make bench` measures.
import t from 'tap';
import { answer, registerValue } from '../../bench/load/modbus-answer.js';
import { Histogram, pollMisses, scanTelemetry } from '../../bench/lib/telemetry.js';
import { scaleConfig } from '../../bench/sections/scale.js';
import { validateConfig } from '../../src/configuration/config.js';
import { DriverRegistry } from '../../src/drivers/registry.js';
import { builtinDrivers } from '../../src/drivers/builtin.js';
import os from 'node:os';

/** An MBAP frame: transaction 0x1234, protocol 0, unit 7, then the PDU. */
function frame(pdu: number[]): Buffer {
  const b = Buffer.alloc(7 + pdu.length);
  b.writeUInt16BE(0x1234, 0);
  b.writeUInt16BE(pdu.length + 1, 4);
  b[6] = 7;
  Buffer.from(pdu).copy(b, 7);
  return b;
}

t.test('the devices answer FC 3 and FC 4 with values that change with the clock step', async (t) => {
  const r = answer(frame([3, 0x00, 0x0a, 0x00, 0x03]), 5)!;
  t.equal(r.readUInt16BE(0), 0x1234, 'transaction id echoed');
  t.equal(r.readUInt16BE(2), 0, 'protocol id 0');
  t.equal(r.readUInt16BE(4), 1 + 2 + 6, 'MBAP length: unit + fc + byte count + 3 registers');
  t.equal(r[6], 7, 'unit echoed');
  t.same([...r.subarray(7, 9)], [3, 6], 'fc and byte count');
  t.same([0, 1, 2].map((i) => r.readUInt16BE(9 + i * 2)), [registerValue(10, 5), registerValue(11, 5), registerValue(12, 5)]);
  t.equal(registerValue(10, 5), 75);
  t.not(registerValue(10, 6), registerValue(10, 5), 'a register changes with every step');
  const r4 = answer(frame([4, 0xff, 0x83, 0x00, 0x7d]), 0)!;
  t.equal(r4[8], 250, '125 input registers at the top of the address space');
  t.equal(r4.length, 9 + 250);
});

t.test('the devices answer bad requests with the protocol exception', async (t) => {
  t.same([...answer(frame([6, 0, 1, 0, 5]), 0)!.subarray(7)], [0x86, 1], 'other function code: exception 1');
  t.same([...answer(frame([3, 0, 0, 0, 126]), 0)!.subarray(7)], [0x83, 3], 'quantity above 125: exception 3');
  t.same([...answer(frame([3, 0, 0, 0, 0]), 0)!.subarray(7)], [0x83, 3], 'quantity 0: exception 3');
  t.same([...answer(frame([3, 0xff, 0xff, 0, 2]), 0)!.subarray(7)], [0x83, 2], 'beyond 65535: exception 2');
  t.same([...answer(frame([3, 0]), 0)!.subarray(7)], [0x83, 3], 'truncated request: exception 3');
  t.equal(answer(Buffer.alloc(7), 0), undefined, 'no function code: no answer');
});

t.test('a json telemetry payload is scanned for tags, errors and timestamps', async (t) => {
  const payload = JSON.stringify({
    name: 'dev01',
    channels: [
      { name: 'c00001', timestamp: 1795525143805, value: '12', type: 'INTEGER' },
      { name: 'c00002', timestamp: 1795525143805, value: '13', type: 'INTEGER' },
      { name: 'c00003', timestamp: 1795525143809, error: 'Modbus TCP 127.0.0.1:502: no response' },
    ],
  });
  const s = scanTelemetry(payload);
  t.equal(s.tags, 3);
  t.equal(s.errors, 1);
  t.same(s.stamps, [1795525143805, 1795525143805, 1795525143809]);
  t.same(scanTelemetry('{"name":"x","channels":[]}'), { tags: 0, errors: 0, stamps: [] });
});

t.test('the latency histogram gives nearest-rank percentiles in 0.1 ms bins', async (t) => {
  const h = new Histogram(100);
  t.ok(Number.isNaN(h.percentile(50)), 'empty: NaN');
  for (let i = 1; i <= 100; i++) h.add(i / 10 - 0.05); // 0.05, 0.15, …, 9.95: one per bin
  h.add(5000, 1); // beyond the bound: last bin
  t.equal(h.count, 101);
  t.equal(h.percentile(50), 5.1);
  t.equal(h.percentile(99), 10.0);
  t.equal(h.percentile(100), 100, 'clamped to the bound');
  t.equal(h.max, 5000);
  h.add(-3, 4); // a clock step backwards counts as 0
  t.equal(h.percentile(1), 0.1);
  h.reset();
  t.equal(h.count, 0);
  t.ok(Number.isNaN(h.percentile(99)));
});

t.test('poll misses: periods of the schedule without a poll started on time', async (t) => {
  const at = (lastPoll: number, polls: number, overruns = 0) => ({ pollInterval: 1000, lastPoll, polls, overruns });
  t.equal(pollMisses(at(10_000, 10), at(20_000, 20), 10_000), 0, 'on schedule');
  t.equal(pollMisses(at(10_000, 10), at(20_000, 19), 10_000), 1, 'a period without a poll');
  // Poll 10 ran 2.5 periods: poll 11 started late at 12,500 (an overrun), then 13,500, 14,500.
  t.equal(pollMisses(at(10_000, 10), at(14_500, 13, 1), 4_500), 3, 'the two skipped periods and the late start');
  t.equal(pollMisses(at(10_000, 10, 2), at(20_000, 20, 2), 10_000), 0, 'overruns before the window do not count');
  t.equal(pollMisses(at(10_000, 10), at(10_000, 10), 10_000), 10, 'no poll at all: every period missed');
  t.equal(pollMisses({ ...at(0, 0), pollInterval: 0 }, { ...at(0, 0), pollInterval: 0 }, 10_000), 0, 'not polled');
});

t.test('the scale configuration is valid for gatewayd: 1,000 channels per asset, one driver per device', async (t) => {
  const cfg = scaleConfig(8080, 1883, [5020, 5021], 1000);
  t.same(Object.keys(cfg.assets), ['dev01', 'dev02']);
  t.equal(Object.keys(cfg.assets.dev01.channels).length, 1000);
  t.equal(cfg.assets.dev02['driver.pid'], 'mb-dev02');
  t.equal(cfg.drivers['mb-dev02']['modbus.tcp-udp.port'], 5021);
  t.equal(cfg.assets.dev01.channels.c01000['memory.address'], 1000);
  t.equal(scaleConfig(8080, 1883, [], 0, 'idle').mqtt['client-id'], 'idle', 'the idle reference has a client id of its own');
  const { config, problems } = validateConfig(cfg, new DriverRegistry(builtinDrivers()), os.tmpdir());
  t.same(problems.filter((p) => p.severity !== 'warning'), [], 'no configuration error');
  t.equal(config.assets.length, 2);
  t.equal(config.assets[0].channels.length, 1000);
});
