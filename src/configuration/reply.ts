// Configurations as JSON text made a piece at a time (docs/configuration-v2.md "How large a
// configuration can grow"): an asset's ComponentConfigurationDTO (its definition with one AD per
// channel property, several per channel) or its snapshot entry is made channel by channel while it is
// written, so a reply or a snapshot file of any size is never whole in memory. The text is the one
// configDto and json() (replies) or JSON.stringify (snapshots) make of the whole object.

import type { AttributeDef } from '../drivers/driver.js';
import type { DriverRegistry } from '../drivers/registry.js';
import { isPlainObject as isObj } from '../core/schema.js';
import {
  ASSET_FACTORY,
  ASSET_OCD,
  AssetDefinition,
  configDto,
  flatAssetEntries,
  json,
  ocdDto,
  ocdOf,
  property,
  shownProps,
  type Component,
  type ComponentRef,
  type Props,
  type Raw,
} from './model.js';

/** What the reply shows of each component (configDto's options). */
export interface ShowOptions {
  definition: boolean;
  mask: boolean;
  defaultsOnly?: boolean;
}

/**
 * A component to show: a small one whole, an asset as its flat properties one at a time (from the
 * configuration as written, or from a snapshot's flat properties).
 */
export type Shown = Component | AssetSource;

/** An asset whose flat properties are made one at a time. */
export class AssetSource {
  readonly factoryPid = ASSET_FACTORY;

  private constructor(
    readonly pid: string,
    readonly driverPid: unknown,
    /** The flat properties in flattenAsset's order. */
    readonly entries: () => Iterable<[string, unknown]>,
    /** The channels in the order of their first property. */
    readonly channels: () => Iterable<string>,
    /** A property's own value (a snapshot's `<ch>#+name`), undefined when there is none. */
    readonly own: (key: string) => unknown,
  ) {}

  /** Asset `pid` of a configuration as written. */
  static ofRaw(pid: string, a: Raw): AssetSource {
    const channels = isObj(a.channels) ? a.channels : {};
    return new AssetSource(
      pid,
      a['driver.pid'],
      () => flatAssetEntries(a),
      () => Object.keys(channels).filter((ch) => isObj(channels[ch]) && Object.keys(channels[ch] as Raw).length > 0),
      () => undefined,
    );
  }

  /** An asset component with flat properties (a snapshot's). */
  static ofProps(c: Component): AssetSource {
    const props = c.props;
    return new AssetSource(c.pid, props['driver.pid'], () => ownEntries(props), () => channelsOf(props), (k) => (Object.hasOwn(props, k) ? props[k] : undefined));
  }
}

function* ownEntries(props: Props): Generator<[string, unknown]> {
  for (const k in props) if (Object.hasOwn(props, k)) yield [k, props[k]];
}

/** channelNames() without the array of every key: the channels of flat properties, in order. */
function* channelsOf(props: Props): Generator<string> {
  const seen = new Set<string>();
  for (const k in props) {
    const m = CHANNEL_NAME.exec(k);
    if (m && !seen.has(m[1])) {
      seen.add(m[1]);
      yield m[1];
    }
  }
}

// The channel of a flat key, as model.ts reads it (`<ch>#<key>`, `<ch>#+<key>`).
const CHANNEL_NAME = /^([^#/+, ]+)#\+?.+$/;
const SERVICE_KEYS = ['kura.service.pid', 'service.factoryPid'];
const NAME_KEY = /^[^#/+, ]+#\+name$/;

/** A JSON string's text between its quotes, as json() writes it. */
const inner = (s: string) => json(s).slice(1, -1);

/**
 * The text of an AD of every channel, as ocdDto writes `{ ...ad, id: <ch>#<id> }`, named by its
 * label (else `<ch>#<id>`): the parts around the places the channel's name goes.
 */
function channelAdText(a: AttributeDef): (ch: string) => string {
  const MARK = '\u0002';
  const parts = json(ocdDto({ id: '', name: '', ads: [{ ...a, id: MARK, name: a.name ?? MARK }] }).ad![0]).split(json(MARK));
  const id = inner(a.id);
  if (parts.length === 2) return (ch) => `${parts[0]}"${ch}#${id}"${parts[1]}`;
  return (ch) => `${parts[0]}"${ch}#${id}"${parts[1]}"${ch}#${id}"${parts[2]}`;
}

/** `{"configs":[…]}` for `shown`, a piece at a time (json() of configDto's objects, joined). */
export function* configsJson(shown: Iterable<Shown>, raw: Raw, registry: DriverRegistry, o: ShowOptions): Generator<string> {
  yield '{"configs":[';
  let sep = '';
  for (const c of shown) {
    if (c instanceof AssetSource) {
      yield sep;
      yield* assetJson(c, new AssetDefinition(c.driverPid, raw, registry), o);
    } else {
      const ocd = ocdOf(c, raw, registry);
      if (o.defaultsOnly && !ocd) continue; // Kura lists only components with a definition
      yield sep + json(configDto(c, ocd, o));
    }
    sep = ',';
  }
  yield ']}';
}

function* assetJson(c: AssetSource, def: AssetDefinition, o: ShowOptions): Generator<string> {
  yield `{"pid":${json(c.pid)}`;
  const all = () => true; // the entries' channels are the asset's own
  if (o.definition) {
    const head = ocdDto({ ...ASSET_OCD, ads: [...def.ads([])] });
    yield `,"definition":{"ad":[${head.ad!.map((a) => json(a)).join(',')}`;
    const texts = def.channelAds.map(channelAdText);
    for (const ch of c.channels()) {
      const e = inner(ch);
      let piece = '';
      for (const text of texts) piece += `,${text(e)}`;
      yield piece;
    }
    yield `],"name":${json(head.name)},"description":${json(head.description)},"id":${json(head.id)}}`;
  }
  yield ',"properties":{';
  let sep = '';
  const prop = (k: string, v: unknown, ad: AttributeDef | undefined): string => {
    const p = property(v, ad, o.mask);
    if (p === undefined) return '';
    const text = `${sep}${json(k)}:${json(p)}`;
    sep = ',';
    return text;
  };
  if (o.defaultsOnly) {
    // configDto: Object.fromEntries of every AD's id and default, each shown with the first AD of its id.
    for (const a of def.ads([])) yield prop(a.id, a.default, a);
    const ids = new Map<string, [AttributeDef, unknown]>();
    for (const a of def.channelAds) ids.set(a.id, [ids.get(a.id)?.[0] ?? a, a.default]);
    for (const ch of c.channels()) {
      let piece = '';
      for (const [id, [a, d]] of ids) piece += prop(`${ch}#${id}`, d, a);
      yield piece;
    }
    yield '}}';
    return;
  }
  // shownProps: every channel's `+name` first (a property of that key keeps its place there), then
  // the properties, then the service properties (configDto).
  for (const ch of c.channels()) {
    const k = `${ch}#+name`;
    const own = c.own(k);
    yield prop(k, own === undefined ? ch : own, def.ad(k, all));
  }
  const service: Record<string, unknown> = { 'kura.service.pid': c.pid, 'service.factoryPid': c.factoryPid };
  let piece = '';
  for (const [k, v] of c.entries()) {
    if (NAME_KEY.test(k)) continue;
    piece += SERVICE_KEYS.includes(k) ? prop(k, service[k], undefined) : prop(k, v, def.ad(k, all));
    if (SERVICE_KEYS.includes(k)) delete service[k];
    if (piece.length >= 4096) {
      yield piece;
      piece = '';
    }
  }
  for (const k of Object.keys(service)) piece += prop(k, service[k], undefined);
  yield `${piece}}}`;
}

/**
 * A snapshot's entry for component `c` of configuration `raw`: JSON.stringify of `{ pid,
 * factoryPid, props: shownProps(c, ocd) }` (every property, definition defaults included), an asset a
 * piece at a time.
 */
export function* snapshotJson(c: Shown, raw: Raw, registry: DriverRegistry): Generator<string> {
  if (!(c instanceof AssetSource)) {
    yield JSON.stringify({ ...c, props: shownProps(c, ocdOf(c, raw, registry)) });
    return;
  }
  yield `{"pid":${JSON.stringify(c.pid)},"factoryPid":${JSON.stringify(c.factoryPid)},"props":{`;
  let piece = '';
  let sep = '';
  for (const ch of c.channels()) {
    piece += `${sep}${JSON.stringify(`${ch}#+name`)}:${JSON.stringify(c.own(`${ch}#+name`) ?? ch)}`;
    sep = ',';
    if (piece.length >= 4096) yield piece, (piece = '');
  }
  for (const [k, v] of c.entries()) {
    if (v === undefined || NAME_KEY.test(k)) continue;
    piece += `${sep}${JSON.stringify(k)}:${JSON.stringify(v)}`;
    sep = ',';
    if (piece.length >= 4096) yield piece, (piece = '');
  }
  yield `${piece}}}`;
}

/** The components of `raw` to show: small ones whole, assets as sources. */
export function shownOf(raw: Raw, refs: Iterable<ComponentRef>, componentOf: (pid: string) => Component | undefined): Generator<Shown> {
  return (function* () {
    for (const r of refs) {
      if (r.factoryPid === ASSET_FACTORY && isObj(raw.assets) && Object.hasOwn(raw.assets, r.pid) && isObj(raw.assets[r.pid])) yield AssetSource.ofRaw(r.pid, raw.assets[r.pid] as Raw);
      else {
        const c = componentOf(r.pid);
        if (c) yield c;
      }
    }
  })();
}
