// A stored secret is kept only while the endpoint it belongs to is unchanged (docs/configuration-v2.md
// "Secrets"): reads show PASSWORD values as `placeholder`, and an update that sends `placeholder`
// back (or leaves the password out) keeps the stored one; without this rule, a change of the
// broker's address alone would send the stored password to the new host at the next connect.

import type { Config } from './config.js';
import type { DriverRegistry } from '../drivers/registry.js';
import { isPlainObject } from '../core/schema.js';
import { DRIVER_FACTORY, connectionPids, factoryOcd, sectionAt, singletonsOf, type Raw } from './model.js';
import { DEFAULT_CONNECTION, mqttSection } from '../mqtt/config.js';

/** The secrets of the configuration file's sections, each with the keys that say where it is sent. */
const SECTION_SECRETS: readonly { section: 'mqtt'; secret: string; endpoint: readonly string[] }[] = [
  { section: 'mqtt', secret: 'password', endpoint: ['broker-url', 'username'] },
];

/**
 * For a PASSWORD property a package's driver factory declares: its instance keys that look like
 * where the secret goes (an address, a port, a user, a file). A factory with none of them: every
 * other instance property counts.
 */
const ENDPOINT_NAME = /(^|[._-])(url|uri|host|hostname|address|addr|ip|port|server|broker|endpoint|user|username|login|account|file|path|keystore|truststore)($|[._-])/i;

/** Per pid, the PASSWORD properties a request sets to a new value (not `placeholder`). */
export type GivenSecrets = ReadonlyMap<string, ReadonlySet<string>>;

export interface MovedSecret {
  pid: string;
  /** The secret property. */
  key: string;
  /** The endpoint property that changed. */
  changed: string;
}

const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/**
 * Whether `after` would send a secret it kept from `before` to another endpoint. The exception is
 * the image file's own pair: a secret and endpoint both as the image has them (a runtime override
 * removed) go together.
 */
function moved(before: Record<string, unknown>, after: Record<string, unknown>, image: Record<string, unknown> | undefined, secret: string, endpoint: readonly string[], given: ReadonlySet<string> | undefined): string | undefined {
  if (given?.has(secret)) return undefined;
  const value = after[secret];
  if (value === undefined || value === null || value === '') return undefined; // nothing to send
  const changed = endpoint.find((k) => !same(before[k], after[k]));
  if (changed === undefined) return undefined;
  if (image && Object.hasOwn(image, secret) && same(image[secret], value) && endpoint.every((k) => same(image[k], after[k]))) return undefined;
  return changed;
}

/** The first secret `after` would take to a new endpoint without having been given again, or undefined. */
export function movedSecret(before: Config, after: Config, image: Raw, given: GivenSecrets, registry: DriverRegistry): MovedSecret | undefined {
  // Per MQTT connection (the object form is the one connection `default` over `mqtt`).
  for (const s of SECTION_SECRETS) {
    for (const conn of after.connections) {
      const prev = before.connections.find((c) => c.name === conn.name);
      if (!prev) continue; // a new connection has no stored secret
      // The connection's transport component, whether the file, or the runtime layer, made it (a
      // connection created at run time has no image values: its keys' defaults stand in for them).
      const single = singletonsOf(image).find((x) => (x.section === conn.keyPath || (x.section === s.section && conn.keyPath === s.section)) && x.mine(s.secret));
      const pid = single?.pid ?? connectionPids(conn.name)[0];
      const sec = single ? sectionAt(image, single.section) : conn.name === DEFAULT_CONNECTION && !isPlainObject(sectionAt(image, conn.keyPath)) ? image.mqtt : sectionAt(image, conn.keyPath);
      const img = isPlainObject(sec) ? sec : {};
      const spec = mqttSection.spec!;
      // The image as validated would read it: absent keys at their defaults.
      const imageValues = Object.fromEntries([s.secret, ...s.endpoint].map((k) => [k, Object.hasOwn(img, k) ? img[k] : spec[k]?.[1]]));
      const changed = moved(prev.config as unknown as Record<string, unknown>, conn.config as unknown as Record<string, unknown>, imageValues, s.secret, s.endpoint, given.get(pid));
      if (changed) return { pid, key: s.secret, changed };
    }
  }
  const imageDrivers = isPlainObject(image.drivers) ? image.drivers : {};
  for (const [id, d] of Object.entries(after.drivers)) {
    const old = Object.hasOwn(before.drivers, id) ? before.drivers[id] : undefined;
    if (!old || old.factory !== d.factory) continue; // a new instance has no stored secret
    const ads = factoryOcd(DRIVER_FACTORY + d.factory, registry)?.ads ?? [];
    const secrets = new Set(ads.filter((a) => a.type === 'PASSWORD').map((a) => a.id));
    if (secrets.size === 0) continue;
    const keys = [...new Set([...ads.map((a) => a.id), ...Object.keys(old.props), ...Object.keys(d.props)])].filter((k) => !secrets.has(k));
    const named = keys.filter((k) => ENDPOINT_NAME.test(k));
    const img = Object.hasOwn(imageDrivers, id) && isPlainObject(imageDrivers[id]) ? (imageDrivers[id] as Record<string, unknown>) : undefined;
    for (const secret of secrets) {
      const changed = moved(old.props, d.props, img, secret, named.length > 0 ? named : keys, given.get(id));
      if (changed) return { pid: id, key: secret, changed };
    }
  }
  return undefined;
}

export function movedSecretMessage(m: MovedSecret): string {
  return `Invalid configuration of ${m.pid}, property ${m.key}: ${m.changed} changed, and the stored ${m.key} is kept only for the endpoint it was given for; send the ${m.key} for the new ${m.changed} with the change (an empty one for none)`;
}
