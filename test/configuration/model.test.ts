// Kura's configuration DTOs for large assets: properties are matched with their definitions by id
// (a map, not a search per property, which made 10 assets × 1,000 Modbus channels take seconds).
import t from 'tap';
import { adsById, configDto, ocdOf, componentsOf, type Ocd } from '../../src/configuration/model.js';
import { DriverRegistry } from '../../src/drivers/registry.js';
import { builtinDrivers } from '../../src/drivers/builtin.js';

t.test('adsById: the first definition of an id wins, as a search would find it', async (t) => {
  const ocd = { id: 'x', name: 'x', ads: [{ id: 'a', type: 'STRING' }, { id: 'b', type: 'INTEGER' }, { id: 'a', type: 'BOOLEAN' }] } as unknown as Ocd;
  const m = adsById(ocd);
  t.equal(m.size, 2);
  t.equal(m.get('a')?.type, 'STRING');
  t.equal(adsById(undefined).size, 0);
});

t.test('configDto types every channel property of a large asset from its definition', async (t) => {
  const channels: Record<string, unknown> = {};
  for (let i = 1; i <= 2000; i++) channels[`c${i}`] = { type: 'READ', 'value.type': 'INTEGER', 'data.type': 'INT16', 'memory.address': i, scale: 1.5 };
  const raw = { drivers: { mb: { factory: 'modbus', 'modbus.tcp-udp.ip': '127.0.0.1' } }, assets: { plc: { 'driver.pid': 'mb', channels } } };
  const registry = new DriverRegistry(builtinDrivers());
  const plc = componentsOf(raw).find((c) => c.pid === 'plc')!;
  const dto = configDto(plc, ocdOf(plc, raw, registry), { definition: true, mask: true }) as any;
  t.same(dto.properties['c2000#memory.address'], { value: 2000, type: 'INTEGER' });
  t.same(dto.properties['c2000#+scale'], { value: '\u00011.5', type: 'DOUBLE' }, 'Java double text, as the definition says DOUBLE');
  t.same(dto.properties['c1#+name'], { value: 'c1', type: 'STRING' });
  t.equal(dto.definition.ad.filter((a: { id: string }) => a.id.startsWith('c2000#')).length > 5, true, 'per-channel definitions listed');
});
