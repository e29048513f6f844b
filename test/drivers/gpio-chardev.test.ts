// The GPIO driver's chardev back-end (`gpio.backend` chardev): the shared conformance suite and the
// libgpiod v2 tool calls it makes, against stand-ins of gpioget/gpioset (test/helpers/gpio-tools.ts)
// because this machine has neither a GPIO character device (no gpio-sim: no configfs, no modprobe)
// nor the v2 tools. What that does and does not prove is in docs/drivers.md ("gpio").
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { gpioFactory } from '../../src/drivers/gpio/index.js';
import { SharedLines } from '../../src/drivers/lines.js';
import { silentLogger } from '../../src/log.js';
import type { ChannelResult } from '../../src/drivers/driver.js';
import { channel, runDriverConformance, show } from '../helpers/driver-conformance.js';
import { fakeGpioTools } from '../helpers/gpio-tools.js';

const describe = (r: ChannelResult) => (r.ok ? show(r.value) : `error: ${r.error}`);
const line = (name: string, direction: string, extra: Record<string, unknown> = {}, type: Parameters<typeof channel>[1] = 'BOOLEAN') =>
  channel(`ch-${name}`, type, { 'resource.name': name, 'resource.direction': direction, ...extra });
const props = { 'gpio.backend': 'chardev', pins: { BUTTON: 'gpiochip1:4', LAMP: 5 } };

t.test('conformance (chardev)', async (t) => {
  const gpio = fakeGpioTools(t, { gpiochip0: { 3: 1, 5: 0 }, gpiochip1: { 4: 0 } });
  const chips = ['gpiochip0', 'gpiochip1'].map((c) => path.join(gpio.dir, c));
  await runDriverConformance(t, {
    factory: gpioFactory,
    instanceProps: props,
    readable: [
      { channel: line('gpiochip0:3', 'INPUT'), expected: { type: 'BOOLEAN', value: true } },
      { channel: line('BUTTON', 'INPUT', {}, 'INTEGER'), expected: { type: 'INTEGER', value: 0 } },
    ],
    writable: [{ channel: line('LAMP', 'OUTPUT'), value: { type: 'BOOLEAN', value: true }, alt: { type: 'BOOLEAN', value: false } }],
    bad: line('gpiochip0:99', 'INPUT'),
    // The chips go away and come back.
    stopDevice: async () => chips.forEach((c) => fs.renameSync(c, `${c}.off`)),
    startDevice: async () => chips.forEach((c) => fs.renameSync(`${c}.off`, c)),
    recoveryMs: 5000,
  });
});

t.test('tool calls: gpioget --numeric for inputs, a gpioset process holding each output', async (t) => {
  const gpio = fakeGpioTools(t, { gpiochip0: { 5: 0, 6: 1 }, gpiochip1: { 4: 1 } });
  const d = gpioFactory.create(props, { id: 'io', log: silentLogger, dataDir: gpio.dir, lines: new SharedLines() });
  t.teardown(() => d.close());
  const lamp = line('LAMP', 'OUTPUT');
  const inv = line('gpiochip0:6', 'OUTPUT', { 'resource.active.low': true });
  t.same((await d.read([line('BUTTON', 'INPUT'), lamp])).map(describe), ['BOOLEAN:true', 'BOOLEAN:false'], 'an output never written is read as it is');
  // The tools of different chips run at the same time: the order they start in is the system's.
  t.same(gpio.calls().slice().sort(), ['gpioget --numeric -c gpiochip0 -a 5', 'gpioget --numeric -c gpiochip1 4']);
  const w = await d.write([{ channel: lamp, value: { type: 'BOOLEAN', value: true } }, { channel: inv, value: { type: 'BOOLEAN', value: true } }]);
  t.same(w.map(describe), ['BOOLEAN:true', 'BOOLEAN:true']);
  t.equal(gpio.level('gpiochip0', 5), '1');
  t.equal(gpio.level('gpiochip0', 6), '0', 'active low: true is a low level');
  t.ok(gpio.held('gpiochip0', 5) && gpio.held('gpiochip0', 6), 'both outputs held by a gpioset process');
  t.same(gpio.calls().slice(2).sort(), ['gpioset --banner -C gatewayd -c gpiochip0 -l 6=1', 'gpioset --banner -C gatewayd -c gpiochip0 5=1']);
  t.same((await d.read([lamp, inv])).map(describe), ['BOOLEAN:true', 'BOOLEAN:true'], 'a held output reads back what was set');
  await d.write([{ channel: lamp, value: { type: 'INTEGER', value: 0 } }]);
  t.equal(gpio.level('gpiochip0', 5), '0', 'the next write replaces the holding process');
  t.ok(gpio.held('gpiochip0', 5));
  const input = await d.write([{ channel: line('BUTTON', 'INPUT'), value: { type: 'BOOLEAN', value: true } }]);
  t.equal(describe(input[0]), 'error: GPIO write operation failed: gpiochip1 line 4 is an INPUT');
  await d.close();
  t.notOk(gpio.held('gpiochip0', 5) || gpio.held('gpiochip0', 6), 'close releases the lines');
});

t.test('overlapping writes to one line take turns; a write under way at close holds nothing after it', async (t) => {
  const gpio = fakeGpioTools(t, { gpiochip0: { 5: 0 } });
  const d = gpioFactory.create(props, { id: 'io', log: silentLogger, dataDir: gpio.dir, lines: new SharedLines() });
  t.teardown(() => d.close());
  const lamp = line('LAMP', 'OUTPUT');
  const set = (on: boolean) => d.write([{ channel: lamp, value: { type: 'BOOLEAN', value: on } }]);
  // REST, MQTT and a poll can write the same line at once: the kernel refuses a second request of
  // a requested line, so two gpioset processes at a time would fail one of the writes.
  for (let i = 0; i < 5; i++) {
    const results = await Promise.all([set(true), set(false), set(true)]);
    t.same(results.map((r) => describe(r[0])), ['BOOLEAN:true', 'BOOLEAN:false', 'BOOLEAN:true'], `round ${i}: every write lands`);
    t.equal(gpio.level('gpiochip0', 5), '1', `round ${i}: the last write wins`);
  }
  t.equal(gpio.calls().filter((c) => c.startsWith('gpioset')).length, 15, 'one gpioset per write');
  const inFlight = set(false);
  await d.close();
  const r = await inFlight;
  t.equal(r.length, 1, 'the write under way at close settles');
  t.notOk(gpio.held('gpiochip0', 5), 'no gpioset holds the line after close');
});

t.test('failures name the chip, the line and the tool', async (t) => {
  const gpio = fakeGpioTools(t, { gpiochip0: { 1: 0 } });
  const d = gpioFactory.create(props, { id: 'io', log: silentLogger, dataDir: gpio.dir, lines: new SharedLines() });
  t.teardown(() => d.close());
  const r = await d.read([line('gpiochip0:7', 'INPUT'), line('gpiochip9:1', 'INPUT')]);
  t.same(r.map(describe), [
    "error: GPIO read operation failed: gpiochip0 line 7: gpioget: gpioget: offset 7 is out of range on chip 'gpiochip0'",
    "error: GPIO read operation failed: gpiochip9 line 1: gpioget: gpioget: cannot find GPIO chip 'gpiochip9'",
  ]);
  const w = await d.write([{ channel: line('gpiochip9:1', 'OUTPUT'), value: { type: 'BOOLEAN', value: true } }]);
  t.match(describe(w[0]), /^error: GPIO write operation failed: gpiochip9 line 1: gpioset: gpioset: cannot find GPIO chip/);
  process.env.PATH = '/nonexistent';
  const none = await d.read([line('gpiochip0:1', 'INPUT')]);
  t.equal(describe(none[0]), 'error: GPIO read operation failed: gpioget not found (install the libgpiod v2 tools)');
});

t.test('validation: gpio.backend, <chip>:<line> only with chardev, pins to chip lines', async (t) => {
  t.match(gpioFactory.validateInstance({ 'gpio.backend': 'libgpiod' }, 'drivers.g'), [{ path: 'drivers.g.gpio.backend', message: /expected one of sysfs, chardev/ }]);
  t.same(gpioFactory.validateInstance({ 'gpio.backend': 'chardev', pins: { A: 'gpiochip2:7', B: 3 } }, 'drivers.g'), []);
  t.match(gpioFactory.validateInstance({ 'gpio.sysfs.root': '/tmp', pins: { A: 'gpiochip2:7' } }, 'drivers.g'), [{ path: 'drivers.g.pins.A' }], 'sysfs lines are numbers');
  const ch = { 'resource.name': 'gpiochip2:7', 'resource.direction': 'INPUT' };
  t.same(gpioFactory.validateChannel(ch, 'BOOLEAN', 'c', { 'gpio.backend': 'chardev' }), []);
  t.match(gpioFactory.validateChannel(ch, 'BOOLEAN', 'c', {}), [{ path: 'c.resource.name', message: /neither a pins name nor a line number/ }]);
});
