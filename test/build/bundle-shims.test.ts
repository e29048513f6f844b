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

t.test('mqtt-packet specialised to MQTT 3.1.1 with the bl shim parses and generates as the original', async (t) => {
  const { build } = await import('esbuild');
  const { mqtt311 } = await import(`${ROOT}/build/mqtt311.mjs`);

  const out = await build({
    stdin: { contents: `import m from 'mqtt-packet'; export default m;`, resolveDir: ROOT, loader: 'js' },
    bundle: true,
    write: false,
    format: 'cjs',
    platform: 'node',
    alias: { 'readable-stream': 'node:stream', debug: `${ROOT}/build/shims/debug.cjs`, bl: `${ROOT}/build/shims/bl.cjs` },
    plugins: [mqtt311],
  });

  const mod = { exports: {} as any };
  new Function('module', 'exports', 'require', out.outputFiles[0]!.text)(mod, mod.exports, require);
  const slim = mod.exports.default;
  const orig = require('mqtt-packet');
  const packets = [
    { cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clean: false, clientId: 'gw', keepalive: 30, username: 'u', password: Buffer.from('p'), will: { topic: 'w/t', payload: Buffer.from('gone'), qos: 1, retain: false } },
    { cmd: 'connack', returnCode: 0, sessionPresent: true },
    { cmd: 'publish', topic: 'a/b/c', payload: Buffer.alloc(70000, 7), qos: 1, messageId: 42, retain: false, dup: false },
    { cmd: 'publish', topic: 'x', payload: Buffer.from('hi'), qos: 0, retain: true, dup: false },
    { cmd: 'puback', messageId: 42 },
    { cmd: 'pubrec', messageId: 43 },
    { cmd: 'pubrel', messageId: 43 },
    { cmd: 'pubcomp', messageId: 43 },
    { cmd: 'subscribe', messageId: 2, subscriptions: [{ topic: '$EDC/a/gw/#', qos: 1 }] },
    { cmd: 'suback', messageId: 2, granted: [1] },
    { cmd: 'unsubscribe', messageId: 3, unsubscriptions: ['a/#'] },
    { cmd: 'unsuback', messageId: 3 },
    { cmd: 'pingreq' },
    { cmd: 'pingresp' },
    { cmd: 'disconnect' },
  ];
  for (const p of packets) {
    const bytes = slim.generate(p, { protocolVersion: 4 });
    t.same(bytes, orig.generate(p, { protocolVersion: 4 }), `${p.cmd}: same bytes`);
    const parsed: any[] = [];
    const parser = slim.parser({ protocolVersion: 4 });
    parser.on('packet', (x: any) => parsed.push(x));
    parser.on('error', (e: Error) => t.fail(`${p.cmd}: ${e.message}`));
    for (let i = 0; i < bytes.length; i += 997) parser.parse(bytes.subarray(i, i + 997));
    const want: any[] = [];
    const op = orig.parser({ protocolVersion: 4 });
    op.on('packet', (x: any) => want.push(x));
    op.parse(bytes);
    t.same(parsed, want, `${p.cmd}: parsed in pieces as the original parses it whole`);
  }
  // Malformed input: the same errors as the original (a PUBLISH whose topic length overruns it, a
  // CONNECT with a bad protocol name), emitted, not thrown.
  for (const bytes of [Buffer.from([0x30, 0x05, 0x00, 0x09, 0x61, 0x62, 0x63]), Buffer.from([0x10, 0x08, 0x00, 0x04, 0x58, 0x58, 0x58, 0x58, 0x04, 0x02])]) {
    const errors = (m: any) => {
      const out: string[] = [];
      const parser = m.parser({ protocolVersion: 4 });
      parser.on('error', (e: Error) => out.push(e.message));
      parser.on('packet', () => out.push('packet'));
      parser.parse(bytes);
      return out;
    };
    const want = errors(orig);
    t.ok(want.length > 0, `the original refuses ${bytes.toString('hex')}`);
    t.same(errors(slim), want, `the same answer to ${bytes.toString('hex')}`);
  }
});
