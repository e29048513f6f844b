// Properties that decide who is trusted or what code runs: only kura.admin changes them
// (docs/configuration-v2.md "Reserved to kura.admin"). Without this, an identity with
// rest.configuration could point MQTT at a broker of its own (whose clients are served as
// kura.admin, DEPLOY-V2 included), add its own key to the package trust anchors, or open listeners
// and authentication ways the administrator closed, or switch on the remote command (CMD-V1) with
// a password of its own.

import { isPlainObject } from '../core/schema.js';
import { SINGLETONS, sectionAt, shapedImage, singletonsOf, type Layer, type Raw } from './model.js';

/** By configuration file section, the keys reserved to kura.admin. */
const RESERVED: readonly { section: string; keys: RegExp }[] = [
  { section: 'mqtt', keys: /^(broker-url|username|password|tls\..+|requester\.permissions|applications\.disabled)$/ },
  { section: 'deploy', keys: /^(trust\.anchors|unsigned\.allowed|system\.packages\.database)$/ },
  { section: 'http', keys: /^(https?\.ports|https\.client\.auth\.ports|https\.keystore\..+|https\.truststore(\.crl)?|bind\.address)$/ },
  { section: 'rest', keys: /^(allowed\.ports|auth\..+|session\.management\.enabled|login\.throttle\.max\.delay)$/ },
  { section: 'command', keys: /^command\..+$/ },
];

export const ADMIN = 'kura.admin';

/** Who asks for a change: what they may do, and over which transport (the refusal's status depends on it). */
export interface ChangeActor {
  readonly transport: 'rest' | 'mqtt';
  readonly permissions: readonly string[];
}

export const isAdmin = (by: ChangeActor): boolean => by.permissions.includes(ADMIN);

/**
 * The refusal of a reserved property to someone else (REST 403; over MQTT 400, the code Kapua maps).
 * `key` '': not a property but the MQTT connection `pid` is, created or deleted (a rollback, `_reset`).
 */
export function reservedRefusal(by: ChangeActor, pid: string, key: string): { status: number; message: string } {
  const message = key === '' ? `Only ${ADMIN} may create or delete MQTT connections (${pid})` : `Only ${ADMIN} may change ${pid} property ${key}`;
  return { status: by.transport === 'mqtt' ? 400 : 403, message };
}

type Single = (typeof SINGLETONS)[number];

const own = (o: unknown, k: string): o is Record<string, unknown> => isPlainObject(o) && Object.hasOwn(o, k);

/**
 * A singleton's property in force for `shaped` (the image as `layer` shapes it, shapedImage: a
 * converted `mqtt` has its values under mqtt.connections.default) with `layer` on top, as applyLayer
 * makes it (undefined: absent).
 */
function valueOf(shaped: Raw, layer: Layer, s: Single, key: string): unknown {
  const c = Object.hasOwn(layer.components, s.pid) ? layer.components[s.pid] : undefined;
  if (c && Object.hasOwn(c.props, key)) return c.props[key] ?? undefined;
  if (c?.pinned) return undefined;
  const section = s.section ? sectionAt(shaped, s.section) : shaped;
  return own(section, key) ? section[key] : undefined;
}

/**
 * The part of `layer` that reservedChange reads as its `before`: the singletons' components (the
 * MQTT connections' pairs included, those the layer creates too) and the deletions, copied; the
 * layer's asset components, a large layer's bulk, are left out. Taken before a change mutates the
 * layer, so that the layer in force is read once per change.
 */
export function reservedPart(image: Raw, layer: Layer): Layer {
  const components: Layer['components'] = {};
  for (const s of singletonsOf(shapedImage(image, layer))) if (Object.hasOwn(layer.components, s.pid)) components[s.pid] = structuredClone(layer.components[s.pid]!);
  return { ...layer, components, deleted: [...layer.deleted] };
}

/**
 * The first reserved property whose value in force differs between `before` and `after` (both
 * layers over `image`; an absent property counts as its default, so sending a value back unchanged
 * is no change), or undefined. Works on the layers, before the whole configuration is validated.
 */
export function reservedChange(image: Raw, before: Layer, after: Layer): { pid: string; key: string } | undefined {
  // Each MQTT connection's pair is over `mqtt.connections.<name>` (src/configuration/model.ts); a
  // connection created or deleted at run time is in one of the two layers only, and the first one
  // created turns the object form into the connections form: each side is read with its own section.
  const was = shapedImage(image, before);
  const will = shapedImage(image, after);
  const wasOf = new Map(singletonsOf(was).map((s) => [s.pid, s]));
  const willOf = new Map(singletonsOf(will).map((s) => [s.pid, s]));
  const pids = new Set([...wasOf.keys(), ...willOf.keys()]);
  // A connection made or removed (by a rollback or `_reset`: configuration/v2's create and delete refuse first).
  for (const pid of pids) if (wasOf.has(pid) !== willOf.has(pid)) return { pid, key: '' };
  for (const r of RESERVED) {
    for (const pid of pids) {
      const a = wasOf.get(pid);
      const b = willOf.get(pid);
      const s = (b ?? a)!;
      if (s.section !== r.section && !s.section.startsWith(`${r.section}.`)) continue;
      const keys = new Set<string>();
      const sources = [s.spec, a && sectionAt(was, a.section), b && sectionAt(will, b.section), before.components[pid]?.props, after.components[pid]?.props];
      for (const src of sources) for (const k of isPlainObject(src) ? Object.keys(src) : []) if (s.mine(k) && r.keys.test(k)) keys.add(k);
      for (const k of keys) {
        const dflt = Object.hasOwn(s.spec, k) ? s.spec[k][1] : undefined;
        // A connection absent on one side has its keys at their defaults there.
        const va = a ? valueOf(was, before, a, k) : undefined;
        const vb = b ? valueOf(will, after, b, k) : undefined;
        if (JSON.stringify(va ?? dflt) !== JSON.stringify(vb ?? dflt)) return { pid, key: k };
      }
    }
  }
  return undefined;
}
