// The configuration as Kura components (docs/configuration-v2.md): which PID holds which keys of the
// configuration file, the definitions (OCD/AD) derived from the section validators and the driver
// factories, the overlay of the runtime layer on the image file, and Kura's typed property JSON.

import type { AttributeDef, PropertyLabel } from '../drivers/driver.js';
import type { DriverRegistry } from '../drivers/registry.js';
import { recorder } from '../drivers/props.js';
import { isPlainObject as isObj, setOwn, type Spec } from '../core/schema.js';
import { validateDaemon } from './config.js';
import { validateConsole, validateRest } from '../auth/config.js';
import { validateHttp } from '../http/config.js';
import { CONNECTION_KEYS, CONNECTION_NAME, DEFAULT_CONNECTION, mqttSection } from '../mqtt/config.js';
import { deploySection } from '../deploy/config.js';
import { commandSection } from '../command/config.js';
import { ASSET_TIMES } from '../assets/config.js';
import { javaDoubleText } from '../channels/values.js';
import { COMPONENT_LABELS } from './labels.js';

// The connection name rule and the default's name, for the front ends (which do not import src/mqtt).
export { CONNECTION_NAME, DEFAULT_CONNECTION };

export type Raw = Record<string, unknown>;
export type Props = Record<string, unknown>;

const K = 'org.eclipse.kura.';
export const DAEMON_PID = `${K}gatewayd.Daemon`;
export const ASSET_FACTORY = `${K}wire.WireAsset`;
export const DRIVER_FACTORY = `${K}driver.`;
export const PLACEHOLDER = 'placeholder';

const set = (o: object, k: string, v: unknown) => setOwn(o as Props, k, v);
const transport = (k: string) => /^(broker-url|client-id|username|password|keep-alive|clean-session|tls\..*)$/.test(k);

interface Singleton {
  pid: string;
  /** The configuration file section ('' = the top-level keys of the daemon). */
  section: string;
  spec: Spec;
  mine: (key: string) => boolean;
  /** Its properties' labels (src/configuration/labels.ts). */
  labels: Readonly<Record<string, PropertyLabel>>;
}

const S = (pid: string, section: string, spec: Spec, mine: (k: string) => boolean = () => true): Singleton => ({
  pid: K + pid,
  section,
  spec: Object.fromEntries(Object.entries(spec).filter(([k]) => mine(k))),
  mine: section ? mine : (k) => k in spec,
  labels: COMPONENT_LABELS[K + pid] ?? {},
});

export const SINGLETONS: Singleton[] = [
  S('gatewayd.Daemon', '', validateDaemon.spec!),
  S('internal.rest.provider.RestService', 'rest', validateRest.spec!),
  S('web.Console', 'console', validateConsole.spec!),
  S('http.server.manager.HttpService', 'http', validateHttp.spec!),
  S('core.data.transport.mqtt.MqttDataTransport', 'mqtt', mqttSection.spec!, transport),
  S('cloud.CloudService', 'mqtt', { ...mqttSection.spec!, ...CONNECTION_KEYS }, (k) => !transport(k)),
  S('deployment.agent', 'deploy', deploySection.spec!),
  S('cloud.app.command.CommandCloudApp', 'command', commandSection.spec!),
];

export const singleton = (pid: string) => SINGLETONS.find((s) => s.pid === pid);

// MQTT connections, plural (docs/mqtt.md "Connections"): with `mqtt.connections`, each connection is
// the two components of today's `mqtt` section, `…CloudService-<name>` and
// `…MqttDataTransport-<name>`, over `mqtt.connections.<name>`; `default` keeps today's PIDs.
const CLOUD = SINGLETONS.find((s) => s.pid === `${K}cloud.CloudService`)!;
const TRANSPORT = SINGLETONS.find((s) => s.pid === `${K}core.data.transport.mqtt.MqttDataTransport`)!;

/** The factory PIDs of a connection's two components (Kura's CloudConnectionFactory makes them as a pair). */
export const CLOUD_FACTORY = CLOUD.pid;
export const TRANSPORT_FACTORY = TRANSPORT.pid;
const isConnectionFactory = (f: string | undefined) => f === CLOUD_FACTORY || f === TRANSPORT_FACTORY;

/** A connection's two PIDs, transport first (the order of singletonsOf); `default` keeps the bare ones. */
export const connectionPids = (name: string): [string, string] =>
  name === DEFAULT_CONNECTION ? [TRANSPORT.pid, CLOUD.pid] : [`${TRANSPORT.pid}-${name}`, `${CLOUD.pid}-${name}`];

/**
 * The connection a PID would be (`…CloudService-<name>`, `…MqttDataTransport-<name>`, the bare PIDs:
 * `default`) and the factory PID of that half; undefined for any other PID. The name is not checked.
 */
export function connectionOfPid(pid: string): { name: string; factoryPid: string } | undefined {
  for (const f of [CLOUD.pid, TRANSPORT.pid]) {
    if (pid === f) return { name: DEFAULT_CONNECTION, factoryPid: f };
    if (pid.startsWith(`${f}-`)) return { name: pid.slice(f.length + 1), factoryPid: f };
  }
  return undefined;
}

/**
 * The image as the runtime layer shapes its `mqtt` section (docs/configuration-v2.md "Creating and
 * deleting connections"): a connection the layer created is an empty entry of `mqtt.connections`
 * (its properties come with the overlay), one it deleted is gone, and an object-form `mqtt` with a
 * created connection becomes the connections form with the object as `default` (same PIDs). The
 * image itself is not changed; without connection components in the layer it is returned as is.
 */
export function shapedImage(image: Raw, layer: Pick<Layer, 'components' | 'deleted'>): Raw {
  const created = new Set<string>();
  for (const [pid, c] of Object.entries(layer.components)) {
    // Created (or restored by a rollback): pinned. An update of a file's connection is not, and
    // follows the file (gone when the file no longer has the connection).
    const conn = c.pinned && isConnectionFactory(c.factoryPid) ? connectionOfPid(pid) : undefined;
    if (conn && CONNECTION_NAME.test(conn.name)) created.add(conn.name);
  }
  const deleted = new Set<string>();
  for (const pid of layer.deleted) {
    const conn = connectionOfPid(pid);
    if (conn && conn.name !== DEFAULT_CONNECTION) deleted.add(conn.name);
  }
  if (created.size === 0 && deleted.size === 0) return image;
  const m = image.mqtt;
  const form = isObj(m) && Object.hasOwn(m, 'connections');
  if (!form && created.size === 0) return image; // nothing of the object form to delete
  if (form && !isObj(m.connections)) return image; // a problem of the file, named by its validation
  const list: Raw = form ? { ...(m.connections as Raw) } : { [DEFAULT_CONNECTION]: isObj(m) ? m : {} };
  for (const n of created) if (!Object.hasOwn(list, n)) set(list, n, {});
  for (const n of deleted) if (!created.has(n)) delete list[n];
  return { ...image, mqtt: { ...(form ? (m as Raw) : {}), connections: list } };
}

/** The connections form's names, in the file's order; undefined for the object form. */
function connectionNames(raw: Raw): string[] | undefined {
  const m = raw.mqtt;
  if (!isObj(m) || !Object.hasOwn(m, 'connections') || !isObj(m.connections)) return undefined;
  // Only names that make a section path (docs/configuration.md "Connections"); others are a problem of the file.
  return Object.keys(m.connections).filter((n) => CONNECTION_NAME.test(n) && isObj((m.connections as Raw)[n]));
}

/** The singleton components of a configuration: SINGLETONS, with the mqtt pair once per connection. */
export function singletonsOf(raw: Raw): Singleton[] {
  const names = connectionNames(raw);
  if (!names) return SINGLETONS;
  const at = SINGLETONS.indexOf(TRANSPORT);
  const pair = (n: string): Singleton[] =>
    [TRANSPORT, CLOUD].map((s) => ({ ...s, pid: n === DEFAULT_CONNECTION ? s.pid : `${s.pid}-${n}`, section: `mqtt.connections.${n}` }));
  return [...SINGLETONS.slice(0, at), ...names.flatMap(pair), ...SINGLETONS.slice(at).filter((s) => s !== TRANSPORT && s !== CLOUD)];
}

export const singletonOf = (raw: Raw, pid: string) => singletonsOf(raw).find((s) => s.pid === pid);

/** The object at a section path (`mqtt`, `mqtt.connections.<name>`; connection names have no dot); undefined if absent. */
export function sectionAt(raw: Raw, section: string): unknown {
  let v: unknown = raw;
  for (const k of section.split('.')) v = isObj(v) && Object.hasOwn(v, k) ? v[k] : undefined;
  return v;
}

/** A component of a configuration: its properties as configuration-file JSON values. */
export interface Component {
  pid: string;
  factoryPid?: string;
  props: Props;
}

// Kura's generic channel properties carry a `+` (`<ch>#+type`); driver and gatewayd keys do not.
const PLUS = ['enabled', 'type', 'value.type', 'scale', 'offset', 'unit'];
// Kura's name rule: text before the first `#`, no `/ + ,` or space; other keys are ignored.
const CHANNEL_KEY = /^([^#/+, ]+)#(\+?)(.+)$/;
// Accepted for Kura tooling, without effect here: WireAsset's emit/timestamp options, `+name`,
// `+listen` and the service properties Kura reports.
const IGNORED = /^(emit\..*|timestamp\.mode|kura\.service\.pid|service\.(factoryPid|pid))$/;

export function flattenAsset(a: Raw): Props {
  const out: Props = {};
  for (const [k, v] of flatAssetEntries(a)) set(out, k, v);
  return out;
}

/** An asset's flat properties one at a time, in flattenAsset's order: no object with all of them. */
export function* flatAssetEntries(a: Raw): Generator<[string, unknown]> {
  for (const k of Object.keys(a)) {
    const v = a[k];
    if (k !== 'channels') yield [k, v];
    else if (isObj(v)) {
      for (const ch of Object.keys(v)) {
        const c = v[ch];
        if (isObj(c)) for (const ck of Object.keys(c)) yield [`${ch}#${PLUS.includes(ck) ? '+' : ''}${ck}`, c[ck]];
      }
    }
  }
}

export function unflattenAsset(props: Props): Raw {
  const out: Raw = {};
  const channels: Record<string, Raw> = {};
  for (const [k, v] of Object.entries(props)) {
    const m = CHANNEL_KEY.exec(k);
    if (!m) {
      if (!k.includes('#') && !IGNORED.test(k)) set(out, k, v);
    } else if (!(m[2] && (m[3] === 'name' || m[3] === 'listen'))) {
      if (!Object.hasOwn(channels, m[1])) set(channels, m[1], {});
      set(channels[m[1]], m[3], /^(value\.)?type$/.test(m[3]) && typeof v === 'string' ? v.toUpperCase() : v);
    }
  }
  if (Object.keys(channels).length) out.channels = channels;
  return out;
}

/**
 * `unflattenAsset(merge(flattenAsset(img), over))` (the image's asset with the layer's properties
 * on top) without the flat object, which holds several entries per channel: the flat properties are
 * taken one at a time, the layer's replacing the image's in place.
 */
export function layeredAsset(img: Raw | undefined, over: Props): Raw {
  const out: Raw = {};
  const channels: Record<string, Raw> = {};
  let anyChannel = false;
  const put = (k: string, v: unknown) => {
    if (v === null) return;
    const m = CHANNEL_KEY.exec(k);
    if (!m) {
      if (!k.includes('#') && !IGNORED.test(k)) set(out, k, v);
    } else if (!(m[2] && (m[3] === 'name' || m[3] === 'listen'))) {
      if (!Object.hasOwn(channels, m[1])) set(channels, m[1], {});
      anyChannel = true;
      set(channels[m[1]], m[3], /^(value\.)?type$/.test(m[3]) && typeof v === 'string' ? v.toUpperCase() : v);
    }
  };
  const taken = new Set<string>();
  if (img) {
    for (const [k, v] of flatAssetEntries(img)) {
      if (Object.hasOwn(over, k)) taken.add(k), put(k, over[k]);
      else put(k, v);
    }
  }
  for (const k of Object.keys(over)) if (!taken.has(k)) put(k, over[k]);
  if (anyChannel) out.channels = channels;
  return out;
}

const sectionOf = (raw: Raw, s: Singleton): Raw => {
  const v = s.section ? sectionAt(raw, s.section) : raw;
  return isObj(v) ? v : {};
};

const drivers = (raw: Raw) => (raw.drivers === undefined ? { sim: { factory: 'simulator' } } : raw.drivers);

/**
 * A connection other than `default` is a factory instance, as Kura's CloudConnectionFactory makes
 * them (`service.factoryPid` `…CloudService` / `…MqttDataTransport`): deletable, restored by a rollback.
 */
const connectionFactory = (s: Singleton): { factoryPid?: string } =>
  s.section.startsWith('mqtt.connections.') && s.pid !== CLOUD.pid && s.pid !== TRANSPORT.pid ? { factoryPid: s.pid.startsWith(`${CLOUD.pid}-`) ? CLOUD.pid : TRANSPORT.pid } : {};

/** The components of a (raw) configuration, properties as written (no defaults). */
export function componentsOf(raw: Raw): Component[] {
  return [...eachComponent(raw)];
}

/** A component's identity without its properties: listing components flattens no asset. */
export interface ComponentRef {
  pid: string;
  factoryPid?: string;
}

/** The pids of componentsOf(raw), in its order, without building any component's properties. */
export function componentRefs(raw: Raw): ComponentRef[] {
  const out: ComponentRef[] = singletonsOf(raw).map((s) => ({ pid: s.pid, ...connectionFactory(s) }));
  for (const [pid, d] of Object.entries(drivers(raw) as Raw)) if (isObj(d)) out.push({ pid, factoryPid: DRIVER_FACTORY + String(d.factory) });
  if (isObj(raw.assets)) for (const [pid, a] of Object.entries(raw.assets)) if (isObj(a)) out.push({ pid, factoryPid: ASSET_FACTORY });
  return out;
}

/** The component `pid` of componentsOf(raw) (the first of that pid), built alone. */
export function componentOf(raw: Raw, pid: string): Component | undefined {
  const ref = componentRefs(raw).find((c) => c.pid === pid);
  if (!ref) return undefined;
  const s = singletonOf(raw, pid);
  if (s) return { pid, ...connectionFactory(s), props: Object.fromEntries(Object.entries(sectionOf(raw, s)).filter(([k]) => s.mine(k))) };
  const props = ref.factoryPid === ASSET_FACTORY ? flattenAsset((raw.assets as Raw)[pid] as Raw) : { ...((drivers(raw) as Raw)[pid] as Raw) };
  delete props.factory;
  return { ...ref, props };
}

/** componentsOf one at a time: an asset's flattened properties (several per channel) live only while used. */
export function* eachComponent(raw: Raw): Generator<Component> {
  const done = (c: Component): Component => (delete c.props.factory, c);
  for (const s of singletonsOf(raw)) yield done({ pid: s.pid, ...connectionFactory(s), props: Object.fromEntries(Object.entries(sectionOf(raw, s)).filter(([k]) => s.mine(k))) });
  for (const [pid, d] of Object.entries(drivers(raw) as Raw)) if (isObj(d)) yield done({ pid, factoryPid: DRIVER_FACTORY + String(d.factory), props: { ...d } });
  if (isObj(raw.assets)) for (const [pid, a] of Object.entries(raw.assets)) if (isObj(a)) yield done({ pid, factoryPid: ASSET_FACTORY, props: flattenAsset(a) });
}

/** The runtime layer: property values by pid (null removes one), created and deleted components. */
export interface Layer {
  formatVersion: 1;
  /** `pinned`: the image's properties of this component do not show through (created, rolled back). */
  components: Record<string, { factoryPid?: string; pinned?: boolean; props: Props }>;
  deleted: string[];
}

export const emptyLayer = (): Layer => ({ formatVersion: 1, components: {}, deleted: [] });

function merge(into: Raw, over: Props): Raw {
  for (const [k, v] of Object.entries(over)) {
    if (v === null) delete into[k];
    else set(into, k, v);
  }
  return into;
}

/**
 * The effective configuration: the image with the runtime layer on top, property by property. A
 * factory component the layer changed but the image no longer defines is gone (it follows the image)
 * unless the layer created or pinned it.
 */
export function applyLayer(image: Raw, layer: Layer): Raw {
  image = shapedImage(image, layer);
  // Assets the layer replaces or deletes are not copied only to be dropped (a null keeps their place).
  const imageAssets = isObj(image.assets) ? image.assets : {};
  const replaced = (pid: string) => Object.hasOwn(imageAssets, pid) && isObj(imageAssets[pid]) && (layer.deleted.includes(pid) || layer.components[pid]?.factoryPid === ASSET_FACTORY);
  const out = structuredClone(Object.keys(imageAssets).some(replaced) ? { ...image, assets: Object.fromEntries(Object.entries(imageAssets).map(([pid, a]) => [pid, replaced(pid) ? null : a])) } : image);
  out.drivers = drivers(out);
  const map = (k: string): Raw => (isObj(out[k]) ? out[k] : (out[k] = {})) as Raw;
  for (const pid of layer.deleted) delete map('drivers')[pid], delete map('assets')[pid];
  const singles = singletonsOf(image);
  for (const [pid, c] of Object.entries(layer.components)) {
    const s = singles.find((x) => x.pid === pid);
    if (s) {
      const sec = s.section ? s.section.split('.').reduce((o: Raw, k) => (Object.hasOwn(o, k) && isObj(o[k]) ? o[k] : (set(o, k, {}), o[k])) as Raw, out) : out;
      if (c.pinned) for (const k of Object.keys(sec)) if (s.mine(k)) delete sec[k];
      merge(sec, c.props);
    } else if (c.factoryPid && !isConnectionFactory(c.factoryPid)) {
      const asset = c.factoryPid === ASSET_FACTORY;
      const kind = map(asset ? 'assets' : 'drivers');
      const from = asset ? imageAssets : kind;
      const img = Object.hasOwn(from, pid) ? from[pid] : undefined;
      if (!c.pinned && !isObj(img)) continue;
      if (asset) {
        set(kind, pid, layeredAsset(c.pinned ? undefined : (img as Raw), c.props));
        continue;
      }
      const base = c.pinned ? {} : { ...(img as Raw) };
      delete base.factory;
      merge(base, c.props);
      set(kind, pid, { factory: c.factoryPid.slice(DRIVER_FACTORY.length), ...base });
    }
  }
  return out;
}

// ---- definitions ---------------------------------------------------------------------------------

export interface Ocd {
  id: string;
  name: string;
  description?: string;
  ads: AttributeDef[];
}

const adsOfSpec = (spec: Spec, labels: Readonly<Record<string, PropertyLabel>> = {}): AttributeDef[] =>
  Object.entries(spec).map(([id, [v, def]]) => {
    const a = { ...(v.ad ?? { type: 'STRING' }), id, default: def, ...(id === 'password' && { type: 'PASSWORD' }) } as AttributeDef;
    return Object.hasOwn(labels, id) ? labelled(a, labels[id]) : a;
  });

/**
 * A factory's definitions: declared (`DriverFactory.ocd`), else recorded from what its validator
 * reads; keys neither covers show as STRING.
 */
function driverAds(registry: DriverRegistry, name: string, channel: boolean): AttributeDef[] {
  const f = registry.get(name);
  let declared = (channel ? f?.ocd?.channel : f?.ocd?.instance) ?? [];
  if (f && !f.ocd) {
    const seen: AttributeDef[] = (recorder.ads = []);
    try {
      if (channel) f.validateChannel({}, 'INTEGER', '', {});
      else f.validateInstance({}, '');
    } catch {
      // a definition is only a help
    }
    recorder.ads = undefined;
    declared = seen.filter((a, i) => seen.findIndex((b) => b.id === a.id) === i).map((a) => Object.assign({}, ...seen.filter((b) => b.id === a.id)));
  }
  const keys = (channel ? f?.channelKeys : f?.instanceKeys) ?? [];
  const all: AttributeDef[] = [...declared.filter((a) => keys.includes(a.id)), ...keys.filter((k) => !declared.some((a) => a.id === k)).map((id) => ({ id, type: 'STRING' as const }))];
  const labels = f?.labels;
  return labels ? all.map((a) => (a.name === undefined && Object.hasOwn(labels, a.id) ? labelled(a, labels[a.id]) : a)) : all;
}

/** An AD with its label: the name, and the description ending with the unit (Kura's AD has no unit field). */
const labelled = (a: AttributeDef, l: PropertyLabel): AttributeDef => ({ ...a, name: l.name, description: l.unit ? `${l.description} Unit: ${l.unit}.` : l.description });

const TYPES: Record<string, AttributeDef['type']> = { S: 'STRING', I: 'INTEGER', B: 'BOOLEAN', D: 'DOUBLE' };
const ads = (rows: [string, string, unknown?, string?, number?][]): AttributeDef[] => rows.map(([id, t, d, o, min]) => ({ id, type: TYPES[t], default: d, options: o?.split(' '), min }));
const CHANNEL_ADS = ads([
  ['+name', 'S', 'Channel-1'],
  ['+enabled', 'B', true],
  ['+type', 'S', 'READ', 'READ WRITE READ_WRITE'],
  ['+value.type', 'S', 'INTEGER', 'BOOLEAN BYTE_ARRAY DOUBLE INTEGER LONG FLOAT STRING'],
  ['+scale', 'D', 1],
  ['+offset', 'D', 0],
  ['+unit', 'S', ''],
  ['deadband', 'D', 0, , 0],
]);
const ASSET_ADS = [...ads([['asset.desc', 'S'], ['driver.pid', 'S']]), ...adsOfSpec(ASSET_TIMES)];
for (const a of [...CHANNEL_ADS.slice(0, 4), ASSET_ADS[1]]) a.required = true;
/** Labels of the asset and generic channel properties (docs/configuration.md "`assets`: assets and channels"). */
const LABELS: Record<string, PropertyLabel> = {
  '+name': { name: 'Name', description: 'The channel name: letters, digits and . _ - (no space, /, + or ,).' },
  '+enabled': { name: 'Enabled', description: 'Whether the channel is read, written and published.' },
  '+type': { name: 'Mode', description: 'READ, WRITE or READ_WRITE.' },
  '+value.type': { name: 'Value type', description: 'The type of the channel\'s value.' },
  '+scale': { name: 'Scale', description: 'Read values are multiplied by this (value × scale + offset).' },
  '+offset': { name: 'Offset', description: 'Added to read values after the scale.' },
  '+unit': { name: 'Unit', description: 'The engineering unit of the value, as published (e.g. °C, kWh).' },
  deadband: { name: 'Deadband', description: 'A numeric change smaller than this is not published (telemetry); in the channel\'s unit.' },
  'asset.desc': { name: 'Description', description: 'What the asset is, for people.' },
  'driver.pid': { name: 'Driver instance', description: 'The driver instance (pid) the asset talks through.' },
  'poll.interval': { name: 'Poll interval', description: 'Read the asset this often and publish changes as telemetry; 0 reads only on request.', unit: 'ms' },
  'publish.max.interval': { name: 'Republish interval', description: 'With polling: publish every channel again at least this often; 0 publishes changes only.', unit: 'ms' },
};
for (const list of [CHANNEL_ADS, ASSET_ADS]) list.forEach((a, i) => (list[i] = labelled(a, LABELS[a.id])));

export const ASSET_OCD = { id: `${K}asset`, name: 'Wire Asset', description: 'Configure Wire Asset Instance' };

/**
 * An asset's definition as Kura shows it once the driver is attached: the asset ADs, then for each
 * channel the generic channel ADs and the driver's channel ADs under `<ch>#<id>`. Kept as the
 * templates, not as one AD per channel property: with thousands of channels the copies were many
 * times the configuration itself (docs/configuration-v2.md "How large a configuration can grow").
 */
export class AssetDefinition {
  /** The channel ADs (generic, then the driver's), with their own ids (`+type`, `unit.id`). */
  readonly channelAds: AttributeDef[];
  private readonly byId = new Map<string, AttributeDef>();

  constructor(driverPid: unknown, raw: Raw, registry: DriverRegistry) {
    const d = (drivers(raw) as Raw)[String(driverPid)];
    this.channelAds = [...CHANNEL_ADS, ...(isObj(d) ? driverAds(registry, String(d.factory), true) : [])];
    for (const a of this.channelAds) if (!this.byId.has(a.id)) this.byId.set(a.id, a);
  }

  /**
   * The AD of property `key` (the first of its id, as adsById finds it); a channel key has one only
   * when `hasChannel` says its channel exists. A channel key's AD is the template (its id without
   * the channel).
   */
  ad(key: string, hasChannel: (ch: string) => boolean): AttributeDef | undefined {
    const m = CHANNEL_KEY.exec(key);
    if (!m) return key.includes('#') ? undefined : ASSET_ADS.find((a) => a.id === key);
    const a = this.byId.get(m[2] + m[3]);
    return a && hasChannel(m[1]) ? a : undefined;
  }

  /** Every AD of the asset with channels `channels`, made one at a time. */
  *ads(channels: Iterable<string>): Generator<AttributeDef> {
    yield* ASSET_ADS;
    for (const ch of channels) for (const a of this.channelAds) yield { ...a, id: `${ch}#${a.id}`, name: a.name ?? `${ch}#${a.id}` };
  }
}

/**
 * gatewayd's extension (docs/configuration-v2.md "Channel definitions"): the channel ADs an asset's
 * channels get (the generic ones, then its driver's), with their own ids (`+type`, `unit.id`), even
 * for an asset without channels, whose Kura definition has only the asset ADs. Its OCD is left as Kura
 * shapes it; a client adding the first channel reads the template here.
 */
export function channelOcd(pid: string, raw: Raw, registry: DriverRegistry): Ocd {
  const a = isObj(raw.assets) && Object.hasOwn(raw.assets, pid) && isObj(raw.assets[pid]) ? (raw.assets[pid] as Raw) : {};
  return { ...ASSET_OCD, ads: new AssetDefinition(a['driver.pid'], raw, registry).channelAds };
}

/**
 * The definition of a component. Assets: Kura's base ADs, then per channel the generic ADs and the
 * driver's channel ADs cloned as `<ch>#<id>` (as Kura does once the driver is attached).
 */
export function ocdOf(c: Component, raw: Raw, registry: DriverRegistry): Ocd | undefined {
  const s = singletonOf(raw, c.pid);
  if (s) return { id: s.pid, name: s.pid.slice(s.pid.lastIndexOf('.') + 1), ads: adsOfSpec(s.spec, s.labels) };
  if (c.factoryPid === ASSET_FACTORY) return { ...ASSET_OCD, ads: [...new AssetDefinition(c.props['driver.pid'], raw, registry).ads(channelNames(c.props))] };
  return c.factoryPid ? factoryOcd(c.factoryPid, registry) : undefined;
}

/**
 * The definition of each property of component `c` of configuration `raw`: what
 * `adsById(ocdOf(c, raw, registry)).get(key)` gives, without building an asset's whole definition.
 * An asset's channels are those of `raw` (`c` may carry no properties).
 */
export function definitionLookup(c: ComponentRef, raw: Raw, registry: DriverRegistry): (key: string) => AttributeDef | undefined {
  if (c.factoryPid === ASSET_FACTORY && !singleton(c.pid)) {
    const a = isObj(raw.assets) && Object.hasOwn(raw.assets, c.pid) && isObj(raw.assets[c.pid]) ? (raw.assets[c.pid] as Raw) : {};
    const channels = isObj(a.channels) ? a.channels : {};
    const def = new AssetDefinition(a['driver.pid'], raw, registry);
    const has = (ch: string) => Object.hasOwn(channels, ch) && isObj(channels[ch]) && Object.keys(channels[ch] as Raw).length > 0;
    return (key) => def.ad(key, has);
  }
  const ads = adsById(ocdOf({ ...c, props: {} }, raw, registry));
  return (key) => ads.get(key);
}

export function factoryOcd(factoryPid: string, registry: DriverRegistry): Ocd | undefined {
  const conn = factoryPid === CLOUD.pid ? CLOUD : factoryPid === TRANSPORT.pid ? TRANSPORT : undefined;
  if (conn) return { id: conn.pid, name: conn.pid.slice(conn.pid.lastIndexOf('.') + 1), ads: adsOfSpec(conn.spec, conn.labels) };
  const name = factoryPid.slice(DRIVER_FACTORY.length);
  const f = factoryPid.startsWith(DRIVER_FACTORY) ? registry.get(name) : undefined;
  return f && { id: factoryPid, name: f.ocd?.name ?? name, description: f.ocd?.description, ads: driverAds(registry, name, false) };
}

export function channelNames(props: Props): string[] {
  return [...new Set(Object.keys(props).map((k) => CHANNEL_KEY.exec(k)?.[1]).filter((n): n is string => n !== undefined))];
}

/** The properties to show: definition defaults, then the configured values (Kura: OCD defaults ⊕ stored). */
export function shownProps(c: Component, ocd: Ocd | undefined): Props {
  const out: Props = {};
  const asset = c.factoryPid === ASSET_FACTORY;
  if (!asset) for (const a of ocd?.ads ?? []) if (a.default !== undefined) set(out, a.id, a.default);
  if (asset) for (const ch of channelNames(c.props)) set(out, `${ch}#+name`, ch);
  return Object.assign(out, c.props);
}

// ---- Kura's typed properties ---------------------------------------------------------------------

const INTS = ['INTEGER', 'LONG', 'SHORT', 'BYTE'];
const NUMS = [...INTS, 'DOUBLE', 'FLOAT'];
export const KURA_TYPES = ['STRING', 'CHAR', 'BOOLEAN', 'PASSWORD', ...NUMS];

const first = (v: unknown) => (Array.isArray(v) ? v.find((e) => e !== null) : v);

function inferType(v: unknown): string {
  const x = first(v);
  if (typeof x === 'boolean') return 'BOOLEAN';
  if (typeof x === 'number') return Number.isInteger(x) ? (Math.abs(x) < 2 ** 31 ? 'INTEGER' : 'LONG') : 'DOUBLE';
  return 'STRING';
}

/** Whether the definition's type describes the value (else the value's own type is shown). */
function fits(type: string | undefined, v: unknown): boolean {
  const x = first(v);
  if (!type || isObj(x) || Array.isArray(x)) return false;
  if (x === undefined) return true;
  if (NUMS.includes(type)) return typeof x === 'number' && (!INTS.includes(type) || Number.isInteger(x));
  return type === 'BOOLEAN' ? typeof x === 'boolean' : typeof x === 'string';
}

/** JSON text as Kura's Gson writes it: `< > & = '` escaped, DOUBLE values as Java prints them (`1.0`). */
export const json = (v: unknown) =>
  JSON.stringify(v)
    .replace(/"\\u0001([^"]*)"/g, '$1')
    .replace(/[<>&=']/g, (c) => `\\u00${c.charCodeAt(0).toString(16)}`);

/** Kura's PropertyDTO `{"value":…,"type":T}`; undefined for a value Kura would not show. */
export function property(v: unknown, ad: AttributeDef | undefined, mask: boolean): { value: unknown; type: string } | undefined {
  if (v === undefined || v === null) return undefined;
  const type = fits(ad?.type, v) ? ad!.type : inferType(v);
  const one = (x: unknown) =>
    x === null ? x : type === 'PASSWORD' && mask ? PLACEHOLDER : typeof x === 'number' && /DOUBLE|FLOAT/.test(type) ? `\u0001${javaDoubleText(x)}` : typeof x === 'object' ? JSON.stringify(x) : x;
  return { value: Array.isArray(v) && !ad?.json && !Array.isArray(first(v)) && !isObj(first(v)) ? v.map(one) : one(v), type };
}

/**
 * A request property `{"type","value"}` checked as Kura's PropertyDTO does, as a configuration-file
 * value: the error text is Kura's (`Invalid property for type INTEGER: foo`). `null`: remove.
 */
export function propertyValue(p: unknown, ad: AttributeDef | undefined): unknown {
  if (p === null || p === undefined) throw new Error('propety values cannot be null');
  if (!isObj(p) || !KURA_TYPES.includes(p.type as string)) throw new Error('parameter "type" is required');
  const type = p.type as string;
  const one = (x: unknown) => {
    const ok = x === null || (NUMS.includes(type) ? typeof x === 'number' : type === 'BOOLEAN' ? typeof x === 'boolean' : typeof x === 'string' && (type !== 'CHAR' || x.length === 1));
    if (!ok) throw new Error(`Invalid property for type ${type}: ${typeof x === 'number' ? javaDoubleText(x) : typeof x === 'string' ? x : JSON.stringify(x)}`);
    return typeof x === 'number' && INTS.includes(type) ? Math.trunc(x) : x;
  };
  const v = p.value ?? null;
  if (Array.isArray(v)) return v.map(one);
  const r = one(v);
  if (ad?.json && typeof r === 'string') {
    try {
      return JSON.parse(r);
    } catch {
      // the validator names the problem
    }
  }
  return r;
}

/** A definition's attributes by id (the first of an id, as a search would find). */
export function adsById(ocd: Ocd | undefined): Map<string, AttributeDef> {
  const m = new Map<string, AttributeDef>();
  for (const a of ocd?.ads ?? []) if (!m.has(a.id)) m.set(a.id, a);
  return m;
}

/** One component as Kura's ComponentConfigurationDTO (serialise with {@link json}). */
export function configDto(c: Component, ocd: Ocd | undefined, opts: { definition?: boolean; mask?: boolean; defaultsOnly?: boolean }) {
  const props = opts.defaultsOnly ? Object.fromEntries((ocd?.ads ?? []).map((a) => [a.id, a.default])) : { ...shownProps(c, ocd), 'kura.service.pid': c.pid, 'service.factoryPid': c.factoryPid };
  const properties: Props = {};
  // By id, not a search per property: an asset has several properties and definitions per channel.
  const ads = adsById(ocd);
  for (const [k, v] of Object.entries(props)) set(properties, k, property(v, ads.get(k), !!opts.mask));
  return { pid: c.pid, definition: opts.definition && ocd ? ocdDto(ocd) : undefined, properties };
}

export function ocdDto(o: Ocd) {
  const ad = o.ads.map((a) => ({
    option: a.options?.map((value) => ({ label: value, value })),
    name: a.name ?? a.id,
    description: a.description,
    id: a.id,
    type: a.type,
    cardinality: a.cardinality ?? 0,
    min: a.min?.toString(),
    max: a.max?.toString(),
    defaultValue: a.default === undefined || isObj(a.default) ? undefined : typeof a.default === 'number' && a.type === 'DOUBLE' ? javaDoubleText(a.default) : String(a.default),
    isRequired: !!a.required,
  }));
  return { ad: ad.length ? ad : undefined, name: o.name, description: o.description, id: o.id };
}

/**
 * The pid and property a validation problem's key path is about (`assets.a1.channels.c1.value.type`
 * → `a1`, `c1#+value.type`), for error messages.
 */
export function locate(path: string, raw: Raw): string {
  const p = path.replace(/\[\d+\]/g, '');
  const after = (obj: unknown, base: string) => {
    const name = Object.keys(isObj(obj) ? obj : {}).filter((n) => `${p}.`.startsWith(`${base}.${n}.`)).sort((a, b) => b.length - a.length)[0];
    return name === undefined ? undefined : { name, rest: p.slice(base.length + name.length + 2) };
  };
  let pid: string | undefined;
  let prop = p;
  for (const kind of ['drivers', 'assets']) {
    const f = p.startsWith(`${kind}.`) && after(raw[kind], kind);
    if (!f) continue;
    const a = (raw[kind] as Raw)[f.name];
    const c = f.rest.startsWith('channels.') ? after(isObj(a) && a.channels, `${kind}.${f.name}.channels`) : undefined;
    pid = f.name;
    prop = c ? `${c.name}#${PLUS.includes(c.rest) ? '+' : ''}${c.rest}` : f.rest;
  }
  if (!pid) {
    const s = singletonsOf(raw).find((s) => (s.section ? p === s.section || (p.startsWith(`${s.section}.`) && s.mine(p.slice(s.section.length + 1))) : s.mine(p)));
    pid = s?.pid ?? DAEMON_PID;
    if (s?.section) prop = p.slice(s.section.length + 1);
  }
  return `Invalid configuration of ${pid}${prop ? `, property ${prop}` : ''}`;
}
