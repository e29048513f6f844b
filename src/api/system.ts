// System API v1, `/services/system/v1` (role `system`; docs/console.md "System API"): Kura's three
// properties resources with the fields that apply to a Node.js daemon, and gatewayd's `status`
// extension (uptime, memory, listeners, MQTT, outbox, dataDir usage) that the field console shows.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { HttpServer } from '../http/server.js';
import { isPlainObject } from '../core/schema.js';
import { RequestError } from '../core/errors.js';
import type { CoreRequest, Family } from '../core/family.js';
import { redactUrl } from '../deploy/fetch.js';
import type { Config } from '../configuration/config.js';
import { VERSION } from '../version.js';

export interface SystemDeps {
  config: () => Config;
  /** The MQTT service's state, once it exists. */
  mqtt: () => { connected: boolean; pending: number; dropped: number; bytes: number } | undefined;
  /** Set when this start opened the image file's listener settings instead of the runtime layer's. */
  listenersRefused?: () => { at: number; properties: string[]; error: string } | undefined;
}

const kb = (n: number) => Math.round(n / 1024);

function osRelease(): Record<string, string> {
  const out: Record<string, string> = {};
  try {
    for (const m of fs.readFileSync('/etc/os-release', 'utf8').matchAll(/^(\w+)=("?)(.*)\2$/gm)) out[m[1]] = m[3];
  } catch {
    // not every image has it
  }
  return out;
}

function primaryInterface(): [string, string] | undefined {
  for (const [name, addrs] of Object.entries(os.networkInterfaces())) {
    const a = addrs?.find((x) => !x.internal && x.mac !== '00:00:00:00:00:00');
    if (a) return [name, a.mac.toUpperCase()];
  }
  return undefined;
}

/** Kura's FrameworkPropertiesDTO fields that have a meaning here, in its order (absent ones omitted). */
function framework(cfg: Config): Record<string, unknown> {
  const rel = osRelease();
  const nic = primaryInterface();
  const cpus = os.cpus();
  return {
    cpuVersion: cpus[0]?.model,
    deviceName: os.hostname(),
    numberOfProcessors: cpus.length,
    totalMemory: kb(os.totalmem()),
    freeMemory: kb(os.freemem()),
    osArch: os.machine?.() ?? os.arch(),
    osDistro: rel.NAME,
    osDistroVersion: rel.VERSION_ID,
    osName: os.type(),
    osVersion: os.release(),
    primaryMacAddress: nic?.[1],
    primaryNetworkInterfaceName: nic?.[0],
    fileSeparator: path.sep,
    kuraDataDirectory: cfg.dataDir,
    kuraMarketplaceCompatibilityVersion: cfg.deploy['gateway.version'],
    kuraVersion: `gatewayd ${VERSION}`,
    kuraHaveWebInterface: cfg.console['console.enabled'],
    kuraHaveNetAdmin: false,
  };
}

function kuraProperties(cfg: Config): Record<string, string> {
  return {
    'kura.version': `gatewayd ${VERSION}`,
    'kura.data': cfg.dataDir,
    'kura.device.name': os.hostname(),
    'kura.marketplace.compatibility.version': cfg.deploy['gateway.version'],
    'kura.have.web.inter': String(cfg.console['console.enabled']),
    'kura.have.net.admin': 'false',
    'os.name': os.type(),
    'os.version': os.release(),
    'os.arch': os.machine?.() ?? os.arch(),
  };
}

// Walking dataDir costs a stat per file: bounded, and cached for a few seconds.
const WALK_MAX_ENTRIES = 20_000;
type Usage = { dir: string; at: number; bytes: number; files: number };

/** The dataDir's size; `cache` (one per family, no module state) keeps the last walk for 5 s. */
function dirUsage(dir: string, cache: { last?: Usage }): { bytes: number; files: number } {
  const now = Date.now();
  const usageCache = cache.last;
  if (usageCache && usageCache.dir === dir && now - usageCache.at < 5000) return usageCache;
  let bytes = 0;
  let files = 0;
  const stack = [dir];
  while (stack.length > 0 && files < WALK_MAX_ENTRIES) {
    const d = stack.pop()!;
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(d, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const e of entries) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) stack.push(p);
      else if (e.isFile()) {
        files++;
        try {
          bytes += fs.statSync(p).size;
        } catch {
          // removed meanwhile
        }
      }
    }
  }
  cache.last = { dir, at: now, bytes, files };
  return cache.last;
}

function filesystem(dir: string): { freeBytes?: number; totalBytes?: number } {
  try {
    const s = fs.statfsSync(dir);
    return { freeBytes: s.bavail * s.bsize, totalBytes: s.blocks * s.bsize };
  } catch {
    return {}; // Node < 18.15, or the folder is gone
  }
}

/** The `status` extension: everything a technician checks first, in one typed answer. */
function status(server: HttpServer, deps: SystemDeps, cache: { last?: Usage }): Record<string, unknown> {
  const cfg = deps.config();
  const mem = process.memoryUsage();
  const mqtt = deps.mqtt();
  const usage = dirUsage(cfg.dataDir, cache);
  return {
    version: VERSION,
    gatewayVersion: cfg.deploy['gateway.version'],
    uptime: Math.round(process.uptime() * 1000),
    startedAt: Date.now() - Math.round(process.uptime() * 1000),
    memory: { rss: mem.rss, heapUsed: mem.heapUsed, heapTotal: mem.heapTotal, systemTotal: os.totalmem(), systemFree: os.freemem() },
    listeners: server.listeners().map((l) => ({ port: l.port, protocol: l.clientAuth ? 'https-client-auth' : l.secure ? 'https' : 'http' })),
    mqtt: {
      enabled: cfg.mqtt.enabled,
      brokerUrl: redactUrl(cfg.mqtt['broker-url']),
      clientId: cfg.mqtt['client-id'],
      connected: mqtt?.connected ?? false,
      outboxPending: mqtt?.pending ?? 0,
      outboxDropped: mqtt?.dropped ?? 0,
      outboxMax: cfg.mqtt['outbox.max.messages'],
      outboxBytes: mqtt?.bytes ?? 0,
      outboxMaxBytes: cfg.mqtt['outbox.max.bytes'],
    },
    dataDir: { path: cfg.dataDir, usedBytes: usage.bytes, files: usage.files, ...filesystem(cfg.dataDir) },
    listenerFallback: listenerFallback(deps),
  };
}

/**
 * null, or why this start runs the image file's listener settings: the runtime properties set aside
 * and the error their listeners failed with (docs/configuration-v2.md "Listener settings").
 */
function listenerFallback(deps: SystemDeps): { since: number; properties: string[]; error: string } | null {
  const r = deps.listenersRefused?.();
  return r ? { since: r.at, properties: r.properties, error: r.error } : null;
}

/** The extension's figures as Kura's extended-properties groups (string values). */
function extended(server: HttpServer, deps: SystemDeps, cache: { last?: Usage }): Record<string, Record<string, string>> {
  const s = status(server, deps, cache) as { mqtt: Record<string, unknown>; dataDir: Record<string, unknown> };
  const strings = (o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, String(v)]));
  return { mqtt: strings(s.mqtt), dataDir: strings(s.dataDir) };
}

/** `{"names": [...]}` or `{"groupNames": [...]}` of Kura's FilterDTO: exact names (no patterns). */
async function filterOf(req: CoreRequest, key: 'names' | 'groupNames'): Promise<Set<string>> {
  const body = await req.body();
  const list = isPlainObject(body) ? body[key] : undefined;
  if (!Array.isArray(list) || !list.every((n) => typeof n === 'string')) throw new RequestError(400, `Bad request. ${key} must be an array of names`);
  return new Set(list as string[]);
}

const pick = <T>(o: Record<string, T>, keep: Set<string>) => Object.fromEntries(Object.entries(o).filter(([k]) => keep.has(k)));

/** The system/v1 family (src/core/family.ts), REST only. */
export function systemFamily(server: HttpServer, deps: SystemDeps): Family {
  const cfg = () => deps.config();
  const cache: { last?: Usage } = {};
  const ext = () => ({ version: '1.0', extendedProperties: extended(server, deps, cache) });
  return {
    name: 'system/v1',
    rest: '/services/system/v1',
    role: 'system',
    errors: 'json',
    routes: [
      { method: 'GET', path: 'properties/framework', handler: () => framework(cfg()) },
      { method: 'POST', path: 'properties/framework/filter', handler: async (req) => pick(framework(cfg()), await filterOf(req, 'names')) },
      { method: 'GET', path: 'properties/kura', handler: () => ({ kuraProperties: kuraProperties(cfg()) }) },
      { method: 'POST', path: 'properties/kura/filter', handler: async (req) => ({ kuraProperties: pick(kuraProperties(cfg()), await filterOf(req, 'names')) }) },
      { method: 'GET', path: 'properties/extended', handler: ext },
      { method: 'POST', path: 'properties/extended/filter', handler: async (req) => {
        const keep = await filterOf(req, 'groupNames');
        const e = ext();
        return { ...e, extendedProperties: pick(e.extendedProperties, keep) };
      } },
      { method: 'GET', path: 'status', handler: () => status(server, deps, cache) },
    ],
  };
}
