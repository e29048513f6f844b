// The GPIO driver against a sysfs-shaped directory tree (gpio.sysfs.root): the shared conformance
// suite, export/direction/active_low handling, vanishing files, Kura's conversions and messages.
import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gpioFactory, levelToValue, valueToLevel } from '../../src/drivers/gpio/index.js';
import { channel, runDriverConformance, show } from '../helpers/driver-conformance.js';
import { silentLogger } from '../../src/log.js';
import { SharedLines } from '../../src/drivers/lines.js';
import type { ChannelResult } from '../../src/drivers/driver.js';
import type { TypedValue } from '../../src/channels/types.js';

/** A tree shaped like /sys/class/gpio with the given exported lines. */
function sysfsTree(t: { teardown(fn: () => void): void }, lines: Record<number, { direction: string; value: string }>): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-gpio-'));
  t.teardown(() => fs.rmSync(root, { recursive: true, force: true }));
  fs.writeFileSync(path.join(root, 'export'), '');
  fs.writeFileSync(path.join(root, 'unexport'), '');
  for (const [line, f] of Object.entries(lines)) exportLine(root, Number(line), f);
  return root;
}

function exportLine(root: string, line: number, f: { direction: string; value: string }): void {
  const dir = path.join(root, `gpio${line}`);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'direction'), `${f.direction}\n`);
  fs.writeFileSync(path.join(dir, 'value'), `${f.value}\n`);
  fs.writeFileSync(path.join(dir, 'active_low'), '0\n');
}

const attr = (root: string, line: number, name: string) => fs.readFileSync(path.join(root, `gpio${line}`, name), 'utf8').trim();
const describe = (r: ChannelResult) => (r.ok ? show(r.value) : `error: ${r.error}`);
const gpio = (name: string, direction: string, type: Parameters<typeof channel>[1] = 'BOOLEAN', extra: Record<string, unknown> = {}) =>
  channel(name, type, { 'resource.name': name.replace(/^ch-/, ''), 'resource.direction': direction, ...extra });

t.test('conformance', async (t) => {
  const root = sysfsTree(t, { 17: { direction: 'in', value: '1' }, 18: { direction: 'out', value: '0' } });
  const off = `${root}.off`;
  await runDriverConformance(t, {
    factory: gpioFactory,
    instanceProps: { 'gpio.sysfs.root': root, pins: { LED1: 18, BUTTON: 17 } },
    readable: [
      { channel: gpio('ch-BUTTON', 'INPUT'), expected: { type: 'BOOLEAN', value: true } },
      { channel: gpio('ch-17', 'INPUT', 'INTEGER'), expected: { type: 'INTEGER', value: 1 } },
    ],
    writable: [{ channel: gpio('ch-LED1', 'OUTPUT'), value: { type: 'BOOLEAN', value: true }, alt: { type: 'BOOLEAN', value: false } }],
    bad: gpio('ch-99', 'INPUT'),
    // The whole tree goes away (as when the driver's files vanish) and comes back.
    stopDevice: async () => fs.renameSync(root, off),
    startDevice: async () => fs.renameSync(off, root),
    recoveryMs: 3000,
  });
  t.equal(attr(root, 18, 'value'), '1', 'the conformance write landed in the value file');
});

const create = (root: string, pins: Record<string, number> = {}) => {
  const d = gpioFactory.create({ 'gpio.sysfs.root': root, pins }, { id: 'gpio', log: silentLogger, dataDir: root, lines: new SharedLines() });
  return d;
};

t.test('exports a missing line, sets direction and active_low, and recovers when the line appears', async (t) => {
  const root = sysfsTree(t, { 18: { direction: 'in', value: '0' } });
  const d = create(root);
  t.teardown(() => d.close());
  const led = gpio('ch-18', 'OUTPUT', 'BOOLEAN', { 'resource.active.low': true });
  const r1 = await d.read([led]);
  t.equal(describe(r1[0]), 'BOOLEAN:false');
  t.equal(attr(root, 18, 'direction'), 'out', 'direction set');
  t.equal(attr(root, 18, 'active_low'), '1', 'active_low set');

  const line22 = gpio('ch-22', 'INPUT', 'INTEGER');
  const r2 = await d.read([line22, led]);
  t.match(describe(r2[0]), /^error: GPIO read operation failed: line 22: not exported/);
  t.equal(describe(r2[1]), 'BOOLEAN:false', 'the other line is unaffected');
  t.equal(fs.readFileSync(path.join(root, 'export'), 'utf8'), '22', 'wrote the line number to export');
  // What the kernel does on export.
  exportLine(root, 22, { direction: 'out', value: '1' });
  const r3 = await d.read([line22]);
  t.equal(describe(r3[0]), 'INTEGER:1');
  t.equal(attr(root, 22, 'direction'), 'in');
});

t.test('a value file that vanishes fails that channel alone, and the channel recovers when it returns', async (t) => {
  const root = sysfsTree(t, { 5: { direction: 'in', value: '1' }, 6: { direction: 'in', value: '0' } });
  const d = create(root, { A: 5, B: 6 });
  t.teardown(() => d.close());
  const a = gpio('ch-A', 'INPUT');
  const b = gpio('ch-B', 'INPUT', 'STRING');
  t.same((await d.read([a, b])).map(describe), ['BOOLEAN:true', 'STRING:"false"']);
  fs.rmSync(path.join(root, 'gpio5'), { recursive: true });
  const down = await d.read([a, b]);
  t.match(describe(down[0]), /^error: GPIO read operation failed: line 5: /);
  t.equal(describe(down[1]), 'STRING:"false"');
  exportLine(root, 5, { direction: 'out', value: '0' });
  t.same((await d.read([a, b])).map(describe), ['BOOLEAN:false', 'STRING:"false"'], 'recovered');
  t.equal(attr(root, 5, 'direction'), 'in', 'direction set again after the line came back');
});

t.test("Kura's conversions: level to every type, and every type to a level", async (t) => {
  const types = ['BOOLEAN', 'INTEGER', 'LONG', 'FLOAT', 'DOUBLE', 'STRING', 'BYTE_ARRAY'] as const;
  t.same(types.map((ty) => show(levelToValue(true, ty))), ['BOOLEAN:true', 'INTEGER:1', 'LONG:1n', 'FLOAT:1', 'DOUBLE:1', 'STRING:"true"', 'BYTE_ARRAY:0x01']);
  t.same(types.map((ty) => show(levelToValue(false, ty))), ['BOOLEAN:false', 'INTEGER:0', 'LONG:0n', 'FLOAT:0', 'DOUBLE:0', 'STRING:"false"', 'BYTE_ARRAY:0x00']);
  const rows: [TypedValue, boolean][] = [
    [{ type: 'INTEGER', value: 5 }, true],
    [{ type: 'INTEGER', value: -1 }, false],
    [{ type: 'LONG', value: 1n }, true],
    [{ type: 'DOUBLE', value: 0.5 }, true],
    [{ type: 'STRING', value: 'TRUE' }, true],
    [{ type: 'STRING', value: '1' }, true],
    [{ type: 'STRING', value: 'False' }, false],
    [{ type: 'STRING', value: '0' }, false],
    [{ type: 'BYTE_ARRAY', value: Buffer.from([0, 0]) }, false],
    [{ type: 'BYTE_ARRAY', value: Buffer.from([0, 2]) }, true],
  ];
  for (const [v, want] of rows) t.equal(valueToLevel(v), want, show(v));
  // Text that is no level is refused, never taken as low (an output switched off for "on").
  for (const text of ['yes', 'on', 'off', '2', '', ' true']) t.match(valueToLevel({ type: 'STRING', value: text }), /is not a level \(true, false, 1 or 0\)/, JSON.stringify(text));

  const root = sysfsTree(t, { 3: { direction: 'out', value: '0' } });
  const d = create(root);
  t.teardown(() => d.close());
  const out = gpio('ch-3', 'OUTPUT', 'INTEGER');
  await d.write([{ channel: out, value: { type: 'INTEGER', value: 7 } }]);
  t.equal(attr(root, 3, 'value'), '1');
  await d.write([{ channel: out, value: { type: 'INTEGER', value: 0 } }]);
  t.equal(attr(root, 3, 'value'), '0');
  const text = gpio('ch-3', 'OUTPUT', 'STRING');
  await d.write([{ channel: text, value: { type: 'STRING', value: 'TRUE' } }]);
  t.equal(attr(root, 3, 'value'), '1');
  const [refused] = await d.write([{ channel: text, value: { type: 'STRING', value: 'off' } }]);
  t.match(refused, { ok: false, error: /off is not a level/ }, 'text that is no level fails the write');
  t.equal(attr(root, 3, 'value'), '1', 'and leaves the line as it was');
});

t.test("Kura's failure messages", async (t) => {
  const root = sysfsTree(t, { 4: { direction: 'in', value: '0' } });
  const d = create(root);
  t.teardown(() => d.close());
  const unsetDir = channel('u', 'BOOLEAN', { 'resource.name': '4', 'resource.direction': '#select direction' });
  const unsetName = channel('n', 'BOOLEAN', { 'resource.name': '#select resource', 'resource.direction': 'INPUT' });
  const r = await d.read([unsetDir, unsetName]);
  t.same(r.map(describe), ['error: GPIO read operation failed: resource.direction is not set', 'error: GPIO read operation failed: resource.name is not set']);
  const w = await d.write([{ channel: gpio('ch-4', 'INPUT'), value: { type: 'BOOLEAN', value: true } }]);
  t.equal(describe(w[0]), 'error: GPIO write operation failed: line 4 is an INPUT');
  t.equal(attr(root, 4, 'value'), '0', 'nothing written');
  await d.close();
  t.equal(describe((await d.read([gpio('ch-4', 'INPUT')]))[0]), 'error: Driver not attached', 'a closed driver answers as a detached one');
});

t.test('validation names each key', async (t) => {
  const inst = gpioFactory.validateInstance({ 'gpio.sysfs.root': 'relative/gpio', pins: { LED: -1, OK: 4 } }, 'drivers.g');
  t.same(inst.map((p) => p.path), ['drivers.g.gpio.sysfs.root', 'drivers.g.pins.LED']);
  const missing = gpioFactory.validateInstance({ 'gpio.sysfs.root': '/nonexistent/gpio' }, 'drivers.g');
  t.same(missing.map((p) => p.severity), ['warning'], 'a missing sysfs root is a warning');
  const ip = { pins: { LED1: 17 } };
  const ok = gpioFactory.validateChannel({ 'resource.name': 'LED1', 'resource.direction': 'OUTPUT', 'resource.trigger': 'NONE' }, 'BOOLEAN', 'c', ip);
  t.same(ok, []);
  const bad = gpioFactory.validateChannel(
    { 'resource.name': 'LED2', 'resource.direction': 'output', 'resource.trigger': 'RISING_EDGE', 'resource.active.low': 'yes' },
    'BOOLEAN', 'c', ip,
  );
  t.same(bad.map((p) => `${p.path} ${p.severity ?? 'error'}`), [
    'c.resource.name error', 'c.resource.direction error', 'c.resource.trigger error', 'c.resource.active.low error',
  ]);
  const num = gpioFactory.validateChannel({ 'resource.name': 17, 'resource.direction': 'INPUT' }, 'BOOLEAN', 'c', ip);
  t.match(num[0].message, /expected a string/);
  const warn = gpioFactory.validateChannel({ 'resource.name': '17', 'resource.direction': '#select direction', 'resource.trigger': 'RAISING_EDGE' }, 'BOOLEAN', 'c', ip);
  t.same(warn.map((p) => p.severity), ['warning', 'warning'], 'placeholders and triggers other than NONE are warnings');
});
