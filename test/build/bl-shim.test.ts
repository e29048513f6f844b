// The bundle's stand-in for `bl` (build/shims/bl.cjs) must answer exactly as bl does for every call
// mqtt-packet's parser makes: random appends, consumes and reads, compared with the real bl.
import t from 'tap';
import { createRequire } from 'node:module';
import { ROOT } from '../helpers/daemon.js';

const require = createRequire(import.meta.url);
const shim = require(`${ROOT}/build/shims/bl.cjs`);
const real = require(require.resolve('bl', { paths: [require.resolve('mqtt-packet')] }));

t.test('the shim answers as bl for random operation sequences', async (t) => {
  let seed = 7;
  const rnd = (n: number) => ((seed = (seed * 1103515245 + 12345) >>> 0) % n);
  for (let round = 0; round < 200; round++) {
    const a = shim();
    const b = real();
    for (let step = 0; step < 60; step++) {
      const op = rnd(6);
      if (op <= 1 || a.length < 4) {
        const chunk = Buffer.from(Array.from({ length: rnd(9) + (rnd(10) === 0 ? 0 : 1) }, () => rnd(256)));
        a.append(chunk);
        b.append(chunk);
      } else if (op === 2) {
        const n = rnd(a.length + 2);
        a.consume(n);
        b.consume(n);
      } else {
        const at = rnd(a.length - 3);
        const end = at + rnd(a.length - at + 1);
        const got = [a.readUInt8(at), a.readUInt16BE(at), a.readUInt32BE(at), Buffer.from(a.slice(at, end)).toString('hex'), a.toString('latin1', at, end), Buffer.from(a.slice()).toString('hex')];
        const want = [b.readUInt8(at), b.readUInt16BE(at), b.readUInt32BE(at), Buffer.from(b.slice(at, end)).toString('hex'), b.toString('latin1', at, end), Buffer.from(b.slice()).toString('hex')];
        if (JSON.stringify(got) !== JSON.stringify(want)) return t.fail(`round ${round} step ${step}: ${JSON.stringify(got)} != ${JSON.stringify(want)}`);
      }
      if (a.length !== b.length) return t.fail(`round ${round} step ${step}: length ${a.length} != ${b.length}`);
    }
  }
  t.pass('200 random sequences agree');
});

t.test('the bundle carries the shim, not bl', async (t) => {
  const fs = await import('node:fs');
  const bundle = fs.readFileSync(`${ROOT}/dist/gatewayd.js`, 'utf8');
  // bl marks its lists with `_isBufferList`; the daemon tests that parse MQTT run the bundle.
  t.notOk(bundle.includes('_isBufferList'), 'bl is not bundled');
});
