// The configuration file (docs/configuration.md): loading, and validation with key paths. Each
// section's type, defaults and validator belong to the feature that uses it (http/config.ts,
// auth/config.ts, assets/config.ts, mqtt/config.ts, deploy/config.ts); this file only combines them
// and checks what spans sections.

import fs from 'node:fs';
import path from 'node:path';
import type { DriverRegistry } from '../drivers/registry.js';
import { LEVELS, type Level } from '../log.js';
import type { AssetConfig } from '../assets/types.js';
import { validateAssets, validateDrivers, type DriverInstanceConfig } from '../assets/config.js';
import { validateConsole, validateIdentities, validateRest, type ConsoleConfig, type IdentitySeed, type RestConfig } from '../auth/config.js';
import { checkHttp, validateHttp, type HttpConfig } from '../http/config.js';
import { primaryConnection, validateMqttConnections, type MqttConfig, type NamedConnection } from '../mqtt/config.js';
import { validateDeploySection, type DeployConfig } from '../deploy/config.js';
import { validateCommandSection, type CommandConfig } from '../command/config.js';
import { isPlainObject, kind, num, oneOf, problem, section, str, unknownKey, warning, type Problem, type Validator } from '../core/schema.js';

export type { ConsoleConfig, DriverInstanceConfig, HttpConfig, IdentitySeed, Problem, RestConfig };

export const DEFAULT_CONFIG_FILE = '/etc/gatewayd/gatewayd.json';

export interface Config {
  /** Absolute path of the file it was read from ('' when built in code). */
  file: string;
  dataDir: string;
  logLevel: Level;
  /** Snapshots of the configuration kept in dataDir/config (docs/configuration-v2.md). */
  snapshotsMax: number;
  /** Their bytes in all: the oldest are dropped first beyond it (docs/configuration-v2.md). */
  snapshotsMaxBytes: number;
  http: HttpConfig;
  rest: RestConfig;
  console: ConsoleConfig;
  identities: Record<string, IdentitySeed>;
  deploy: DeployConfig;
  drivers: Record<string, DriverInstanceConfig>;
  assets: AssetConfig[];
  /** The connection system/v1 reports: `default`, else the first of `connections` (docs/mqtt.md "Connections"). */
  mqtt: MqttConfig;
  /** Every MQTT connection by name, in the file's order (the object form of `mqtt` is `default`). */
  connections: NamedConnection[];
  /** Kura's remote command, CMD-V1 (docs/configuration.md "command"). */
  command: CommandConfig;
}

/** The top-level keys that are not sections (the daemon's own component in configuration/v2). */
export const validateDaemon = section<{ 'log.level': Level; 'configuration.snapshots.max': number; 'configuration.snapshots.max.bytes': number }>({
  'log.level': [oneOf(LEVELS), 'info'],
  'configuration.snapshots.max': [num({ int: true, min: 2, max: 1000 }), 10],
  'configuration.snapshots.max.bytes': [num({ int: true, min: 1048576, max: 1073741824 }), 16777216],
});

export interface LoadResult {
  config: Config;
  problems: Problem[];
}

/** A file that could not be read or parsed has no configuration at all, only the problem. */
export type FileResult = LoadResult | { config: undefined; problems: Problem[] };

export function errorsOf(problems: Problem[]): Problem[] {
  return problems.filter((x) => x.severity !== 'warning');
}

/** Validates a parsed configuration. Relative paths are resolved against `baseDir`. */
export function validateConfig(raw: unknown, registry: DriverRegistry, baseDir: string, file = ''): LoadResult {
  const p: Problem[] = [];
  if (!isPlainObject(raw)) {
    problem(p, '', `the configuration must be a JSON object, got ${kind(raw)}`);
    raw = {};
  }
  const obj = raw as Record<string, unknown>;
  const known = ['dataDir', 'log.level', 'configuration.snapshots.max', 'configuration.snapshots.max.bytes', 'http', 'rest', 'console', 'identities', 'deploy', 'drivers', 'assets', 'mqtt', 'command'];
  for (const k of Object.keys(obj)) if (!known.includes(k)) unknownKey(p, k, k, known);

  // A keystore entry (`keystore:<name>/<alias>`, docs/configuration.md "Certificates from a keystore") is no path.
  const resolve = (f: string) => (f === '' || f.startsWith('keystore:') ? f : path.resolve(baseDir, f));
  const dataDir = resolve(obj.dataDir === undefined ? '/var/lib/gatewayd' : str({ nonEmpty: true })(obj.dataDir, 'dataDir', p));
  const top = validateDaemon(
    { 'log.level': obj['log.level'], 'configuration.snapshots.max': obj['configuration.snapshots.max'], 'configuration.snapshots.max.bytes': obj['configuration.snapshots.max.bytes'] },
    '',
    p,
  );
  const httpCfg = validateHttp(obj.http, 'http', p);
  for (const k of ['https.keystore.cert', 'https.keystore.key', 'https.truststore', 'https.truststore.crl'] as const) httpCfg[k] = resolve(httpCfg[k]);
  const rest = validateRest(obj.rest, 'rest', p);
  const consoleCfg = validateConsole(obj.console, 'console', p);
  const identities =
    obj.identities === undefined
      ? { admin: { password: 'admin', permissions: ['kura.admin'], passwordChangeNeeded: true } }
      : validateIdentities(obj.identities, 'identities', p);
  const dv = validateDeploySection(obj.deploy, 'deploy');
  p.push(...dv.problems);
  const deploy = dv.value;
  deploy['file.allowed.dirs'] = deploy['file.allowed.dirs'].map((d) => resolve(d));
  const drivers = validateDrivers(obj.drivers === undefined ? { sim: { factory: 'simulator' } } : obj.drivers, p, registry);
  const assets = validateAssets(obj.assets === undefined ? {} : obj.assets, 'assets', p, drivers, registry);
  const mv = validateMqttConnections(obj.mqtt, 'mqtt');
  p.push(...mv.problems);
  const connections = mv.connections;
  for (const c of connections) for (const k of ['tls.ca', 'tls.cert', 'tls.key'] as const) c.config[k] = resolve(c.config[k]);
  const mqtt = primaryConnection(connections);
  const cv = validateCommandSection(obj.command, dataDir);
  p.push(...cv.problems);

  checkHttp(httpCfg, p);
  checkAllowedPorts(httpCfg, rest, p);

  return {
    config: { file, dataDir, logLevel: top['log.level'], snapshotsMax: top['configuration.snapshots.max'], snapshotsMaxBytes: top['configuration.snapshots.max.bytes'], http: httpCfg, rest, console: consoleCfg, identities, deploy, drivers, assets, mqtt, connections, command: cv.value },
    problems: p,
  };
}

function checkAllowedPorts(h: HttpConfig, rest: RestConfig, p: Problem[]): void {
  const listeners = new Set([...h['http.ports'], ...h['https.ports'], ...h['https.client.auth.ports']]);
  for (const [i, x] of rest['allowed.ports'].entries()) {
    if (!listeners.has(x)) warning(p, `rest.allowed.ports[${i}]`, `port ${x} is not a configured listener`);
  }
}

/** Reads and parses a configuration file (`text`: as read); a read or syntax error becomes one problem. */
export function readConfigFile(file: string): { raw?: unknown; text?: string; problems: Problem[] } {
  const abs = path.resolve(file);
  let text: string;
  try {
    text = fs.readFileSync(abs, 'utf8');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    return { problems: [{ path: '', message: `cannot read ${abs}: ${e.code ?? e.message}`, severity: 'error' }] };
  }
  try {
    return { raw: JSON.parse(text), text, problems: [] };
  } catch (err) {
    // Where, as an editor shows it: line and column (1-based) of the offending character.
    const msg = (err as Error).message.replace(/\s*\(line \d+ column \d+\)$/, '');
    const m = / at position (\d+)/.exec(msg);
    const before = text.slice(0, m ? Number(m[1]) : text.length).split('\n');
    const where = `line ${before.length}, column ${before[before.length - 1].length + 1}`;
    return { problems: [{ path: '', message: `${abs} is not valid JSON: ${where}: ${msg.replace(/ in JSON at position \d+/, '')}`, severity: 'error' }] };
  }
}

/** Reads and validates a configuration file. Syntax errors become one problem with the position. */
export function loadConfigFile(file: string, registry: DriverRegistry): FileResult {
  const abs = path.resolve(file);
  const { raw, problems } = readConfigFile(abs);
  if (problems.length > 0) return { config: undefined, problems };
  return validateConfig(raw, registry, path.dirname(abs), abs);
}

export type { Validator };
