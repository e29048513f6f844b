// The simulator, the reference driver: the shared conformance suite, plus what its simulations do.
import t from 'tap';
import { simulatorFactory } from '../../src/drivers/simulator/index.js';
import { channel, runDriverConformance, show } from '../helpers/driver-conformance.js';
import { silentLogger } from '../../src/log.js';
import { SharedLines } from '../../src/drivers/lines.js';

t.test('conformance', async (t) => {
  await runDriverConformance(t, {
    factory: simulatorFactory,
    instanceProps: {},
    readable: [
      { channel: channel('temp', 'DOUBLE', { simulation: 'constant', initial: 21.5 }, 'READ'), expected: { type: 'DOUBLE', value: 21.5 } },
      { channel: channel('big', 'LONG', { simulation: 'constant', initial: '9223372036854775807' }, 'READ'), expected: { type: 'LONG', value: 2n ** 63n - 1n } },
      { channel: channel('raw', 'BYTE_ARRAY', { initial: 'AQID' }), expected: { type: 'BYTE_ARRAY', value: Buffer.from([1, 2, 3]) } },
    ],
    writable: [
      { channel: channel('setpoint', 'FLOAT', {}), value: { type: 'FLOAT', value: Math.fround(12.34) }, alt: { type: 'FLOAT', value: 1 } },
      { channel: channel('label', 'STRING', { simulation: 'memory' }), value: { type: 'STRING', value: 'pump room' }, alt: { type: 'STRING', value: 'x' } },
    ],
    bad: channel('bad', 'DOUBLE', { simulation: 'wave' }),
  });
});

const create = () => simulatorFactory.create({}, { id: 'sim', log: silentLogger, dataDir: '/nonexistent', lines: new SharedLines() });

t.test('memory channels read their zero value until written; other simulations refuse writes', async (t) => {
  const d = create();
  t.teardown(() => d.close());
  const types = ['BOOLEAN', 'INTEGER', 'LONG', 'FLOAT', 'DOUBLE', 'STRING', 'BYTE_ARRAY'] as const;
  const r = await d.read(types.map((ty) => channel(ty.toLowerCase(), ty, {})));
  t.same(r.map((x) => (x.ok ? show(x.value) : x.error)), ['BOOLEAN:false', 'INTEGER:0', 'LONG:0n', 'FLOAT:0', 'DOUBLE:0', 'STRING:""', 'BYTE_ARRAY:0x']);
  const w = await d.write([{ channel: channel('c', 'INTEGER', { simulation: 'counter' }), value: { type: 'INTEGER', value: 1 } }]);
  t.notOk(w[0].ok);
  if (!w[0].ok) t.match(w[0].error, /Simulated channel c \(counter\) is not writable/);
});

t.test('a counter advances once per driver call, whatever the number of channels', async (t) => {
  const d = create();
  t.teardown(() => d.close());
  const c = channel('n', 'INTEGER', { simulation: 'counter' });
  const a = await d.read([c]);
  const b = await d.read([c]);
  t.same([a, b].map((r) => (r[0].ok ? show(r[0].value) : '')), ['INTEGER:1', 'INTEGER:2']);
});

t.test('delay makes the batch wait for its slowest channel', async (t) => {
  const d = create();
  t.teardown(() => d.close());
  let done = false;
  const p = Promise.resolve(d.read([channel('slow', 'INTEGER', { delay: 200 }), channel('fast', 'INTEGER', {})])).then((r) => ((done = true), r));
  await new Promise((r) => setTimeout(r, 20));
  t.notOk(done, 'still pending while the slow channel waits');
  t.equal((await p).length, 2);
});

t.test('channel validation names the key', async (t) => {
  const p = simulatorFactory.validateChannel({ simulation: 'sine', initial: 5, delay: -1 }, 'STRING', 'assets.a.channels.c', {});
  t.same(p.map((x) => x.path).sort(), ['assets.a.channels.c.delay', 'assets.a.channels.c.initial', 'assets.a.channels.c.simulation']);
});
