// The benchmark harness's own logic (bench/lib): wrk report parsing, the launcher's node flags,
// statistics and goal verdicts. No timing is asserted anywhere (bench/README.md): `make bench` measures.
import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseSTime, parseWrk } from '../../bench/lib/proc.js';
import { launcherEnv, launcherNodeFlags } from '../../bench/lib/gatewayd.js';
import { median, percentile, round } from '../../bench/lib/stats.js';
import { Results } from '../../bench/lib/results.js';

const WRK = `Running 3s test @ http://127.0.0.1:8080/services/assets/demo/_read
  1 threads and 10 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   812.40us  301.11us  12.50ms   95.12%
    Req/Sec    12.31k   401.22    12.90k    80.00%
  Latency Distribution
     50%  761.00us
     75%  845.00us
     90%  0.95ms
     99%    1.62ms
  36742 requests in 3.00s, 12.87MB read
  Non-2xx or 3xx responses: 3
  Socket errors: connect 0, read 1, write 0, timeout 2
Requests/sec:  12245.87
Transfer/sec:      4.29MB
`;

t.test('wrk --latency reports are parsed with their units', async (t) => {
  const r = parseWrk(WRK);
  t.equal(r.rps, 12245.87);
  t.equal(r.p50, 0.761);
  t.equal(r.p99, 1.62);
  t.equal(r.requests, 36742);
  t.equal(r.bad, 6, 'non-2xx answers and socket errors make a run invalid');
  const clean = parseWrk(WRK.replace(/ {2}Non-2xx.*\n/, '').replace(/ {2}Socket errors.*\n/, '').replace('99%    1.62ms', '99%    1.20s'));
  t.equal(clean.bad, 0);
  t.equal(clean.p99, 1200);
  t.ok(Number.isNaN(parseWrk('wrk: connection refused').rps), 'no figure from a failed run');
});

t.test('openssl s_time -reuse reports are parsed against the measured wall time', async (t) => {
  const out = 'Collecting connection statistics for 3 seconds\nstarting\nrrrrrrr*rr\n\n10 connections in 0.01s; 1000.00 connections/user sec, bytes read 770\n10 connections in 4 real seconds, 77 bytes read per connection\n';
  const r = parseSTime(out, 2.5)!;
  t.equal(r.n, 10);
  t.equal(r.cps, 4, 'connections per wall-clock second, not per user second');
  t.equal(r.resumed, 0.9);
  t.equal(parseSTime('connect: Connection refused', 1), undefined);
});

t.test('launcher node flags', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-bench-launcher-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const f = path.join(dir, 'gatewayd');
  t.equal(launcherNodeFlags(f), undefined, 'no launcher yet');

  fs.writeFileSync(f, '#!/bin/sh\n# --not-a-flag in a comment\nexec /usr/bin/node --max-old-space-size=48 --max-semi-space-size=1 /usr/lib/gatewayd/gatewayd.mjs --config /etc/gatewayd/gatewayd.json "$@"\n');
  t.same(launcherNodeFlags(f), ['--max-old-space-size=48', '--max-semi-space-size=1'], 'flags before the bundle only');

  fs.writeFileSync(f, '#!/bin/sh\nNODE_FLAGS="--max-old-space-size=64 --jitless"\nexport NODE_OPTIONS="--stack-size=512"\nexec node $NODE_FLAGS "$BUNDLE" "$@"\n');
  t.same(launcherNodeFlags(f), ['--max-old-space-size=64', '--jitless', '--stack-size=512'], 'flags from variables');

  fs.writeFileSync(f, '#!/bin/sh\nexec node /usr/lib/gatewayd/gatewayd.mjs "$@"\n');
  t.same(launcherNodeFlags(f), [], 'a launcher without flags');
});

t.test('statistics', async (t) => {
  t.equal(median([3, 1, 2]), 2);
  t.equal(median([4, 1, 3, 2]), 2.5);
  t.ok(Number.isNaN(median([])));
  const xs = Array.from({ length: 100 }, (_, i) => i + 1);
  t.equal(percentile(xs, 50), 50);
  t.equal(percentile(xs, 99), 99);
  t.equal(percentile([5], 99), 5);
  t.equal(round(1234.5678), 1235, 'integer digits are kept');
  t.equal(round(0.0123456), 0.0123);
});

t.test('rows: medians, ratio to the baseline, goal verdicts', async (t) => {
  const res = new Results();
  const up = res.add('HTTP', 'a', 'a', 'req/s', [900, 1000, 800], 'bare', [1000, 1100, 1000], { op: '>=', value: 0.85, text: '' });
  t.equal(up.gatewayd, 900);
  t.equal(up.baselineValue, 1000);
  t.equal(up.ratio, 0.9);
  t.equal(up.verdict, 'met');
  t.equal(res.add('HTTP', 'b', 'b', 'req/s', [800], 'bare', [1000], { op: '>=', value: 0.85, text: '' }).verdict, 'missed');
  t.equal(res.add('HTTP', 'c', 'c', 'req/s', [1000], 'fastify', [1000], { op: '>', value: 1, text: '' }).verdict, 'missed', 'a tie is not ahead');
  t.equal(res.add('Modbus', 'd', 'd', 'requests', [1], 'per channel', [50], { op: '<=', value: 2, text: '', on: 'value' }).verdict, 'met', 'judged on the figure itself');
  t.equal(res.add('MQTT', 'e', 'e', 'ms', [NaN], 'echo', [1], { op: '<=', value: 1.5, text: '' }).verdict, 'not measured');
  res.notMeasured('Footprint', 'f', 'f', 'x', 'no launcher');
  t.equal(res.rows.at(-1)!.verdict, 'not measured');
  t.equal(res.rows.at(-1)!.note, 'no launcher');
});

t.test('launcher environment', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-bench-launcher-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const f = path.join(dir, 'gatewayd');
  t.same(launcherEnv(f), {}, 'no launcher, no environment');
  fs.writeFileSync(f, '#!/bin/sh\nexport MALLOC_ARENA_MAX=${MALLOC_ARENA_MAX:-2}\nexport UV_THREADPOOL_SIZE=2\nexport NODE_OPTIONS="--jitless"\nFOO=1\nexec node "$x"\n');
  t.same(launcherEnv(f), { MALLOC_ARENA_MAX: '2', UV_THREADPOOL_SIZE: '2' }, 'exported defaults; NODE_OPTIONS counts as flags');
});
