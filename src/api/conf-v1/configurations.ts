// The configurations CONF-V1 shows, as the DTOs the esf XML writer takes (src/api/conf-v1/esf-xml.ts):
// the same components, definitions and masked properties configuration/v2 shows
// (src/configuration/reply.ts), so the three front ends show one model. An asset's definitions and
// properties are made a channel at a time while the XML is written (docs/configuration-v2.md "How
// large a configuration can grow"): an asset of thousands of channels is never whole in memory.

import type { ConfigurationService } from '../../configuration/service.js';
import { ASSET_OCD, AssetDefinition, configDto, ocdDto, ocdOf, property, type Raw } from '../../configuration/model.js';
import { AssetSource, type Shown } from '../../configuration/reply.js';
import type { AdDto, ConfigurationDto, PropertyDto } from './esf-xml.js';

type DriverRegistry = ConfigurationService['registry'];
type AttributeDef = AssetDefinition['channelAds'][number];

const SERVICE_KEYS = ['kura.service.pid', 'service.factoryPid'];
const NAME_KEY = /^[^#/+, ]+#\+name$/;

export interface DtoOptions {
  /** With the `ocd:OCD` definitions (configurations), or without (a snapshot). */
  definition: boolean;
  /** Leave out the components that have no definition (Kura's GET/configurations). */
  onlyDefined?: boolean;
}

/** One DTO per component of `shown`, PASSWORD values masked (the writer never writes a password either). */
export function* configurationDtos(shown: Iterable<Shown>, raw: Raw, registry: DriverRegistry, o: DtoOptions): Generator<ConfigurationDto> {
  for (const c of shown) {
    if (c instanceof AssetSource) {
      yield assetDto(c, new AssetDefinition(c.driverPid, raw, registry), o.definition);
      continue;
    }
    const ocd = ocdOf(c, raw, registry);
    if (o.onlyDefined && !ocd) continue;
    const dto = configDto(c, ocd, { definition: o.definition, mask: true });
    yield dto as ConfigurationDto;
  }
}

/**
 * The AD of a channel property without its channel, as ocdDto writes it: the writer puts `<ch>#`
 * before the id, and names it by its label (else `<ch>#<id>` too).
 */
const channelAd = (a: AttributeDef): AdDto => ({ ...(ocdDto({ id: '', name: '', ads: [{ ...a }] }).ad![0] as AdDto), id: a.id, name: a.name });

function assetDto(c: AssetSource, def: AssetDefinition, definition: boolean): ConfigurationDto {
  const all = () => true; // the entries' channels are the asset's own
  return {
    pid: c.pid,
    definition: definition
      ? {
          ...ASSET_OCD,
          ad: (ocdDto({ ...ASSET_OCD, ads: [...def.ads([])] }).ad ?? []) as AdDto[],
          channelAds: { ads: def.channelAds.map(channelAd), channels: c.channels() },
        }
      : undefined,
    properties: (function* (): Generator<[string, PropertyDto | undefined]> {
      // As configuration/v2 shows them: every channel's `+name` first, then the properties, then
      // the service properties.
      for (const ch of c.channels()) {
        const k = `${ch}#+name`;
        const own = c.own(k);
        yield [k, property(own === undefined ? ch : own, def.ad(k, all), true)];
      }
      const service: Record<string, unknown> = { 'kura.service.pid': c.pid, 'service.factoryPid': c.factoryPid };
      for (const [k, v] of c.entries()) {
        if (NAME_KEY.test(k)) continue;
        if (SERVICE_KEYS.includes(k)) {
          yield [k, property(service[k], undefined, true)];
          delete service[k];
        } else yield [k, property(v, def.ad(k, all), true)];
      }
      for (const k of Object.keys(service)) yield [k, property(service[k], undefined, true)];
    })(),
  };
}
