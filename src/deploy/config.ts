// The `deploy` section of the configuration (contract §2).

import type { Problem } from '../drivers/driver.js';
import { arrayOf, num, section, str } from '../config/schema.js';

export interface DeployConfig {
  'marketplace.url': string;
  'gateway.version': string;
  'upload.max.bytes': number;
  'download.timeout': number;
  'file.allowed.dirs': string[];
  /** PEM public keys; when non-empty every package must carry a valid signature from one of them. */
  'trust.anchors': string[];
}

const validate = section<DeployConfig>({
  'marketplace.url': [str({ pattern: /^https?:\/\/\S+$/, patternHint: 'expected an http: or https: URL' }), 'https://marketplace.eclipse.org'],
  'gateway.version': [str({ pattern: /^\d+(\.\d+){0,2}([.-][0-9A-Za-z.-]+)?$/, patternHint: 'expected a version like 5.4.0' }), '5.4.0'],
  'upload.max.bytes': [num({ int: true, min: 1 }), 67108864],
  'download.timeout': [num({ int: true, min: 1 }), 60000],
  'file.allowed.dirs': [arrayOf(str({ nonEmpty: true })), ['/tmp']],
  'trust.anchors': [arrayOf(str({ nonEmpty: true })), []],
});

export function validateDeploySection(raw: unknown, path = 'deploy'): { value: DeployConfig; problems: Problem[] } {
  const problems: Problem[] = [];
  const value = validate(raw, path, problems);
  return { value, problems };
}
