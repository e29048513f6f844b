// The `deploy` section of the configuration file (docs/configuration.md "deploy"), with gatewayd's
// additions: `download.max.redirects`, `download.deadline`, the queue's bounds `queue.max.jobs` and
// `queue.max.bytes` (src/deploy/jobs.ts), `trust.anchors` and `unsigned.allowed` (see
// src/deploy/signature.ts), `system.packages.database` (src/deploy/system-packages.ts).

import type { Problem } from '../core/schema.js';
import fs from 'node:fs';
import { packageDatabaseProblem } from './system-packages.js';
import { arrayOf, bool, duration, num, problem, section, str, warning, type Validator } from '../core/schema.js';

export interface DeployConfig {
  /** Base of the marketplace API: `<base>/node/<id>/api/p` is fetched for `_packageDescriptor`. */
  'marketplace.url': string;
  /** What `currentGatewayVersion` reports and compatibility is judged against. */
  'gateway.version': string;
  /** Largest upload or download accepted, in bytes. */
  'upload.max.bytes': number;
  /** Connect and idle timeout of package downloads, in ms (Kura's dpa.connection/read.timeout). */
  'download.timeout': number;
  /** Overall deadline of one package download, in ms, however slowly the server trickles. */
  'download.deadline': number;
  /** Redirects followed by a download before it fails (Kura follows without a limit). */
  'download.max.redirects': number;
  /** Jobs queued or running at once, uploads being received included (Kura has no bound). */
  'queue.max.jobs': number;
  /** Bytes of package files the queued and running jobs may bring onto the device together. */
  'queue.max.bytes': number;
  /** `file:` install URLs must point inside one of these folders. */
  'file.allowed.dirs': string[];
  /** Public keys (PEM text, or the absolute path of a PEM file); non-empty: packages must be signed. */
  'trust.anchors': string[];
  /** false: without trust anchors every package is refused (the production configuration sets it). */
  'unsigned.allowed': boolean;
  /** Where INVENTORY-V1 reads the image's packages: `auto`, `none`, `dpkg:<path>`, `opkg:<path>`. */
  'system.packages.database': string;
}

export const DEPLOY_DEFAULTS: DeployConfig = {
  'marketplace.url': 'https://marketplace.eclipse.org',
  'gateway.version': '5.4.0',
  'upload.max.bytes': 67108864,
  'download.timeout': 60000,
  'download.deadline': 600000,
  'download.max.redirects': 5,
  'queue.max.jobs': 16,
  'queue.max.bytes': 134217728,
  'file.allowed.dirs': ['/tmp'],
  'trust.anchors': [],
  'unsigned.allowed': true,
  'system.packages.database': 'auto',
};

const httpUrl: Validator<string> = (raw, path, p) => {
  const s = str({ nonEmpty: true })(raw, path, p);
  if (s.trim() === '') return s;
  let u: URL | undefined;
  try {
    u = new URL(s);
  } catch {
    // reported below
  }
  if (!u || (u.protocol !== 'http:' && u.protocol !== 'https:')) problem(p, path, `expected an http: or https: URL, got ${JSON.stringify(s)}`);
  return s.replace(/\/+$/, '');
};

const trustAnchor: Validator<string> = (raw, path, p) => {
  const s = str({ nonEmpty: true })(raw, path, p);
  if (s && !s.startsWith('-----BEGIN ') && !s.startsWith('/')) {
    problem(p, path, 'expected PEM text ("-----BEGIN PUBLIC KEY-----…") or the absolute path of a PEM file');
  } else if (s.startsWith('/') && !fs.existsSync(s)) {
    // A missing referenced file is a warning (docs/configuration.md); installs then fail closed
    // until it exists.
    warning(p, path, `file not found: ${s} (every package install will be refused)`);
  }
  return s;
};

const packageDatabase: Validator<string> = (raw, path, p) => {
  const s = str({ nonEmpty: true })(raw, path, p);
  const why = packageDatabaseProblem(s);
  if (why) problem(p, path, why);
  return s;
};

export const deploySection = section<DeployConfig>({
  'marketplace.url': [httpUrl, DEPLOY_DEFAULTS['marketplace.url']],
  'gateway.version': [str({ nonEmpty: true }), DEPLOY_DEFAULTS['gateway.version']],
  'upload.max.bytes': [num({ int: true, min: 1 }), DEPLOY_DEFAULTS['upload.max.bytes']],
  // A pause of an hour in a transfer is a dead server; a whole download may take a day on a slow link.
  'download.timeout': [duration('ms', 1, 3_600_000), DEPLOY_DEFAULTS['download.timeout']],
  'download.deadline': [duration('ms', 1, 86_400_000), DEPLOY_DEFAULTS['download.deadline']],
  'download.max.redirects': [num({ int: true, min: 0, max: 20 }), DEPLOY_DEFAULTS['download.max.redirects']],
  'queue.max.jobs': [num({ int: true, min: 1, max: 1000 }), DEPLOY_DEFAULTS['queue.max.jobs']],
  'queue.max.bytes': [num({ int: true, min: 1 }), DEPLOY_DEFAULTS['queue.max.bytes']],
  'file.allowed.dirs': [arrayOf(str({ nonEmpty: true })), DEPLOY_DEFAULTS['file.allowed.dirs']],
  'trust.anchors': [arrayOf(trustAnchor), DEPLOY_DEFAULTS['trust.anchors']],
  'unsigned.allowed': [bool, DEPLOY_DEFAULTS['unsigned.allowed']],
  'system.packages.database': [packageDatabase, DEPLOY_DEFAULTS['system.packages.database']],
});

/** Validates the `deploy` section (absent: all defaults). Relative folders are the caller's to resolve. */
export function validateDeploySection(raw: unknown, path = 'deploy'): { value: DeployConfig; problems: Problem[] } {
  const problems: Problem[] = [];
  const value = deploySection(raw, path, problems);
  return { value, problems };
}
