// channelSpecs: a driver's parse of a channel's properties, made once per channel object and kept on
// it without changing what the channel's JSON shows (the asset runtime compares configurations by it).
import t from 'tap';
import { channelSpecs, PropReader, SpecError } from '../../src/drivers/props.js';
import { validateAssets, validateDrivers } from '../../src/assets/config.js';
import { DriverRegistry } from '../../src/drivers/registry.js';
import { builtinDrivers } from '../../src/drivers/builtin.js';
import type { ChannelConfig } from '../../src/channels/types.js';
import type { Problem } from '../../src/core/schema.js';

function channels(): ChannelConfig[] {
  const registry = new DriverRegistry(builtinDrivers());
  const p: Problem[] = [];
  const drivers = validateDrivers({ sim: { factory: 'simulator' } }, p, registry);
  const assets = validateAssets({ a: { 'driver.pid': 'sim', channels: { ok: { type: 'READ', 'value.type': 'INTEGER', n: 3 }, bad: { type: 'READ', 'value.type': 'INTEGER', n: 'x' } } } }, 'assets', p, drivers, registry);
  return assets[0]!.channels;
}

const parser = (calls: string[], base: number) => (ch: ChannelConfig, path: string) => {
  calls.push(ch.name);
  const r = new PropReader(ch.driverProps, path);
  return { value: { n: r.int('n', 0, 0, 10) + base }, problems: r.problems };
};

t.test('parsed once per channel and driver, kept out of the channel JSON', async (t) => {
  const [ok, bad] = channels();
  const json = [JSON.stringify(ok), JSON.stringify(bad)];
  const calls: string[] = [];
  const spec = channelSpecs(parser(calls, 0));
  const s1 = spec(ok!);
  t.same(s1, { n: 3 });
  t.equal(spec(ok!), s1, 'the same spec again, not parsed again');
  const e = spec(bad!);
  t.ok(e instanceof SpecError);
  t.match((e as SpecError).error, /^n: must be an integer/);
  t.equal(spec(bad!), e);
  t.same(calls, ['ok', 'bad']);
  t.same([JSON.stringify(ok), JSON.stringify(bad)], json, 'the channel JSON is unchanged');
  // Another driver instance (other instance properties) parses for itself.
  const calls2: string[] = [];
  const other = channelSpecs(parser(calls2, 100));
  t.same(other(ok!), { n: 103 });
  t.same(calls2, ['ok']);
  t.equal(spec(ok!), s1, 'each keeps its own, the same object');
  t.equal(other(ok!), other(ok!));
  t.same(calls, ['ok', 'bad'], 'none parsed again');
  t.same(calls2, ['ok']);
});
