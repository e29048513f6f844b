// The configuration file of contract §2: loading, validation with key paths, defaults.

import fs from 'node:fs';
import path from 'node:path';
import type { Problem } from '../drivers/driver.js';
import type { DriverRegistry } from '../drivers/registry.js';
import { LEVELS, type Level } from '../log.js';
import type { AssetConfig } from '../assets/types.js';
import { validateAssets } from '../assets/config.js';
import { IDENTITY_NAME } from '../auth/identity-store.js';
import { validateMqttSection, type MqttConfig } from '../mqtt/config.js';
import { validateDeploySection, type DeployConfig } from '../deploy/config.js';
import {
  any, arrayOf, bool, isPlainObject, kind, mapOf, num, oneOf, port, problem, section, setOwn, str, warning,
  type Validator,
} from './schema.js';

export const DEFAULT_CONFIG_FILE = '/etc/gatewayd/gatewayd.json';

export interface HttpConfig {
  'http.ports': number[];
  'https.ports': number[];
  'https.client.auth.ports': number[];
  'https.keystore.cert': string;
  'https.keystore.key': string;
  'https.truststore': string;
  'bind.address': string;
  /** Hardening limits (docs/configuration.md): open connections, body deadline (ms), anonymous body reads. */
  'max.connections': number;
  'body.timeout': number;
  'max.unauthenticated.bodies': number;
}

export interface RestConfig {
  'allowed.ports': number[];
  'auth.password.enabled': boolean;
  'auth.certificate.enabled': boolean;
  'session.management.enabled': boolean;
  'session.inactivity.interval': number;
  'auth.basic.enabled': boolean;
  'auth.certificate.stateless.enabled': boolean;
  'login.throttle.max.delay': number;
  /** Bound of the session store (oldest idle sessions evicted first). Extension. */
  'session.max.count': number;
}

export interface ConsoleConfig {
  'access.banner.enabled': boolean;
  'access.banner.content': string;
  'new.password.min.length': number;
  'new.password.require.digits': boolean;
  'new.password.require.special.characters': boolean;
  'new.password.require.both.cases': boolean;
}

export interface IdentitySeed {
  password?: string;
  passwordHash?: string;
  permissions: string[];
  passwordChangeNeeded: boolean;
}

export interface DriverInstanceConfig {
  id: string;
  factory: string;
  props: Record<string, unknown>;
}

export interface Config {
  /** Absolute path of the file it was read from ('' when built in code). */
  file: string;
  dataDir: string;
  logLevel: Level;
  http: HttpConfig;
  rest: RestConfig;
  console: ConsoleConfig;
  identities: Record<string, IdentitySeed>;
  deploy: DeployConfig;
  drivers: Record<string, DriverInstanceConfig>;
  assets: AssetConfig[];
  mqtt: MqttConfig;
}

const ports = arrayOf(port, { unique: true });

export const validateHttp = section<HttpConfig>({
  'http.ports': [ports, [8080]],
  'https.ports': [ports, []],
  'https.client.auth.ports': [ports, []],
  'https.keystore.cert': [str(), ''],
  'https.keystore.key': [str(), ''],
  'https.truststore': [str(), ''],
  'bind.address': [str({ nonEmpty: true }), '0.0.0.0'],
  'max.connections': [num({ int: true, min: 1, max: 65_535 }), 256],
  'body.timeout': [num({ int: true, min: 100, max: 300_000 }), 20_000],
  'max.unauthenticated.bodies': [num({ int: true, min: 1, max: 1024 }), 8],
});

export const validateRest = section<RestConfig>({
  'allowed.ports': [ports, []],
  'auth.password.enabled': [bool, true],
  'auth.certificate.enabled': [bool, true],
  'session.management.enabled': [bool, true],
  'session.inactivity.interval': [num({ int: true, min: 1 }), 900],
  'auth.basic.enabled': [bool, true],
  'auth.certificate.stateless.enabled': [bool, true],
  'login.throttle.max.delay': [num({ int: true, min: 0, max: 600_000 }), 5000],
  'session.max.count': [num({ int: true, min: 1 }), 10_000],
});

export const validateConsole = section<ConsoleConfig>({
  'access.banner.enabled': [bool, false],
  'access.banner.content': [str(), ''],
  'new.password.min.length': [num({ int: true, min: 0, max: 1024 }), 8],
  'new.password.require.digits': [bool, false],
  'new.password.require.special.characters': [bool, false],
  'new.password.require.both.cases': [bool, false],
});

const permission = str({ pattern: /^(kura\.admin|rest\.[A-Za-z0-9_.-]+|[A-Za-z0-9_.-]+)$/, patternHint: 'not a permission name' });

const validateIdentity = section<IdentitySeed>({
  password: [str(), undefined],
  passwordHash: [str({ nonEmpty: true }), undefined],
  permissions: [arrayOf(permission, { unique: true }), []],
  passwordChangeNeeded: [bool, false],
});


const validateIdentities = mapOf<IdentitySeed>(
  (raw, path, p) => {
    const id = validateIdentity(raw, path, p);
    if (id.password !== undefined && id.passwordHash !== undefined) problem(p, path, 'give either password or passwordHash, not both');
    return id;
  },
  (key) => (IDENTITY_NAME.test(key) ? undefined : 'identity names are 1-64 characters of A-Z a-z 0-9 _ . @ -'),
);

function validateDrivers(raw: unknown, p: Problem[], registry: DriverRegistry): Record<string, DriverInstanceConfig> {
  const out: Record<string, DriverInstanceConfig> = {};
  const all = mapOf<unknown>(any)(raw, 'drivers', p);
  for (const [id, v] of Object.entries(all)) {
    const path = `drivers.${id}`;
    if (!isPlainObject(v)) {
      problem(p, path, `expected an object, got ${kind(v)}`);
      continue;
    }
    const { factory, ...props } = v;
    if (typeof factory !== 'string' || factory === '') {
      problem(p, `${path}.factory`, factory === undefined ? 'missing' : `expected a string, got ${kind(factory)}`);
      continue;
    }
    const f = registry.get(factory);
    if (!f) {
      // A factory may come from a deployment package installed later (or already, in dataDir).
      warning(p, `${path}.factory`, `no driver factory "${factory}" is built in; it must be provided by an installed deployment package`);
    } else {
      for (const key of Object.keys(props)) if (!f.instanceKeys.includes(key)) problem(p, `${path}.${key}`, 'unknown key');
      p.push(...f.validateInstance(props, path));
    }
    setOwn(out, id, { id, factory, props });
  }
  return out;
}

export interface LoadResult {
  config: Config;
  problems: Problem[];
}

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
  const known = ['dataDir', 'log.level', 'http', 'rest', 'console', 'identities', 'deploy', 'drivers', 'assets', 'mqtt'];
  for (const k of Object.keys(obj)) if (!known.includes(k)) problem(p, k, 'unknown key');

  const resolve = (f: string) => (f === '' ? '' : path.resolve(baseDir, f));
  const dataDir = resolve(obj.dataDir === undefined ? '/var/lib/gatewayd' : str({ nonEmpty: true })(obj.dataDir, 'dataDir', p));
  const logLevel = obj['log.level'] === undefined ? 'info' : oneOf(LEVELS)(obj['log.level'], 'log.level', p);
  const httpCfg = validateHttp(obj.http, 'http', p);
  for (const k of ['https.keystore.cert', 'https.keystore.key', 'https.truststore'] as const) httpCfg[k] = resolve(httpCfg[k]);
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
  const mv = validateMqttSection(obj.mqtt, 'mqtt');
  p.push(...mv.problems);
  const mqtt = mv.value;
  for (const k of ['tls.ca', 'tls.cert', 'tls.key'] as const) mqtt[k] = resolve(mqtt[k]);

  checkCrossSection(httpCfg, rest, p);
  checkFiles(httpCfg, p);

  return {
    config: { file, dataDir, logLevel, http: httpCfg, rest, console: consoleCfg, identities, deploy, drivers, assets, mqtt },
    problems: p,
  };
}

function checkCrossSection(h: HttpConfig, rest: RestConfig, p: Problem[]): void {
  const all = [...h['http.ports'], ...h['https.ports'], ...h['https.client.auth.ports']];
  const seen = new Set<number>();
  for (const x of all) {
    if (x !== 0 && seen.has(x)) problem(p, 'http', `port ${x} is configured for more than one listener`);
    seen.add(x);
  }
  if (all.length === 0) warning(p, 'http', 'no listener configured: the REST API is unreachable');
  for (const [i, x] of rest['allowed.ports'].entries()) {
    if (!seen.has(x)) warning(p, `rest.allowed.ports[${i}]`, `port ${x} is not a configured listener`);
  }
  if ((h['https.keystore.cert'] === '') !== (h['https.keystore.key'] === '')) {
    problem(p, 'http', 'https.keystore.cert and https.keystore.key must be given together');
  }
}

function checkFiles(h: HttpConfig, p: Problem[]): void {
  const needTls = h['https.ports'].length + h['https.client.auth.ports'].length > 0;
  for (const k of ['https.keystore.cert', 'https.keystore.key'] as const) {
    if (needTls && h[k] !== '' && !fs.existsSync(h[k])) warning(p, `http.${k}`, `file not found: ${h[k]}`);
  }
  if (h['https.client.auth.ports'].length > 0) {
    if (h['https.truststore'] === '') warning(p, 'http.https.truststore', 'not set: client-auth ports will not be opened');
    else if (!fs.existsSync(h['https.truststore'])) warning(p, 'http.https.truststore', `file not found: ${h['https.truststore']}: client-auth ports will not be opened`);
  }
}

/** Reads and validates a configuration file. Syntax errors become one problem with the position. */
export function loadConfigFile(file: string, registry: DriverRegistry): LoadResult {
  const abs = path.resolve(file);
  let text: string;
  try {
    text = fs.readFileSync(abs, 'utf8');
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    return { config: undefined as unknown as Config, problems: [{ path: '', message: `cannot read ${abs}: ${e.code ?? e.message}`, severity: 'error' }] };
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    return { config: undefined as unknown as Config, problems: [{ path: '', message: `${abs} is not valid JSON: ${(err as Error).message}`, severity: 'error' }] };
  }
  return validateConfig(raw, registry, path.dirname(abs), abs);
}

export type { Validator };
