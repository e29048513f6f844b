// The esf XML writer's per-channel ADs (src/api/conf-v1/esf-xml.ts `channelAds`, what an asset's
// definition is written with): the same markup as the same ADs given one by one in `ad`, for channel
// names that need escaping, for definitions whose texts hold the writer's own mark (written channel
// by channel then), and read back by the reader; a channel name XML cannot carry is an error naming it.

import t from 'tap';
import { configurationsXmlText, decodeConfigurations, type AdDto, type ConfigurationDto } from '../../src/api/conf-v1/esf-xml.js';

const TEMPLATE: AdDto[] = [
  { id: '+name', type: 'STRING', cardinality: 0, defaultValue: 'Channel-1', isRequired: true },
  { id: '+type', type: 'STRING', cardinality: 0, defaultValue: 'READ', isRequired: true, option: [{ label: 'READ', value: 'READ' }, { label: 'WRITE & READ', value: 'READ_WRITE' }] },
  { id: 'unit.id', type: 'INTEGER', cardinality: 0, defaultValue: '1', min: '1', max: '247', description: 'Modbus unit <id>', isRequired: true },
  // Labelled: named by its label, not `<ch>#<id>` (the console's field names).
  { id: 'memory.address', name: 'Memory address & <offset>', type: 'INTEGER', cardinality: 0, defaultValue: '1', min: '1', max: '65536', isRequired: true },
];
const CHANNELS = ['ch0', 'a&b', 'x<y', 'quote"d', 'tab\there', 'ünïcode', '\u{1F600}'];

const config = (definition: ConfigurationDto['definition']): ConfigurationDto => ({ pid: 'plc', definition, properties: { p: { type: 'STRING', value: 'v' } } });
const oneByOne = (ads: AdDto[]) => CHANNELS.flatMap((ch) => ads.map((a) => ({ ...a, id: `${ch}#${a.id}`, name: a.name ?? `${ch}#${a.id}` })));
const head: AdDto[] = [{ id: 'driver.pid', type: 'STRING', cardinality: 0, isRequired: true }];

t.test('channelAds write what the same ADs one by one write', async (t) => {
  const grouped = configurationsXmlText([config({ id: 'asset', name: 'Asset', ad: head, channelAds: { ads: TEMPLATE, channels: CHANNELS } })]);
  const plain = configurationsXmlText([config({ id: 'asset', name: 'Asset', ad: [...head, ...oneByOne(TEMPLATE)] })]);
  t.equal(grouped, plain);
  const [read] = decodeConfigurations(grouped, { definitions: true });
  t.same(read.definition!.ad.map((a) => a.id), ['driver.pid', ...oneByOne(TEMPLATE).map((a) => a.id)]);
  t.same(read.definition!.ad.find((a) => a.id === 'a&b#+type')!.option, TEMPLATE[1].option);
});

t.test('without other ADs, and with no channels', async (t) => {
  t.equal(configurationsXmlText([config({ id: 'asset', channelAds: { ads: TEMPLATE, channels: CHANNELS } })]), configurationsXmlText([config({ id: 'asset', ad: oneByOne(TEMPLATE) })]));
  t.equal(configurationsXmlText([config({ id: 'asset', channelAds: { ads: TEMPLATE, channels: [] } })]), configurationsXmlText([config({ id: 'asset', ad: [] })]));
});

t.test('a definition whose texts hold the writer mark is written channel by channel, the same', async (t) => {
  const marked = TEMPLATE.map((a, i) => (i === 2 ? { ...a, description: 'odd \uE000channel\uE000 text' } : a));
  t.equal(
    configurationsXmlText([config({ id: 'asset', channelAds: { ads: marked, channels: CHANNELS } })]),
    configurationsXmlText([config({ id: 'asset', ad: oneByOne(marked) })]),
  );
});

t.test('a channel name XML cannot carry is an error naming the configuration', async (t) => {
  t.throws(() => configurationsXmlText([config({ id: 'asset', channelAds: { ads: TEMPLATE, channels: ['ok', 'bad\u0001'] } })]), /configuration plc, definition bad\u0001#\+name: character U\+0001/);
});
