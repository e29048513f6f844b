// The TLS material of a broker connection (`mqtt.tls.ca`, `tls.cert`, `tls.key`): files, or
// keystore entries through `read` (docs/configuration.md "Certificates from a keystore"). One that
// cannot be read is logged (its path, never its content) and the connection is not made.

import fs from 'node:fs';
import type { ReadTls } from '../core/keystore-reference.js';
import type { Logger } from '../log.js';
import type { MqttConfig } from './config.js';

export type TlsMaterial = { ca?: Buffer; cert?: Buffer; key?: Buffer };

/** `keyPath`: where the connection's keys are (`mqtt`, `mqtt.connections.<name>`); `failed` hears what could not be read. */
export function readTlsFiles(c: MqttConfig, log: Logger, read?: ReadTls, keyPath = 'mqtt', failed?: (message: string) => void): TlsMaterial | undefined {
  const out: TlsMaterial = {};
  for (const [k, f] of [['ca', c['tls.ca']], ['cert', c['tls.cert']], ['key', c['tls.key']]] as const) {
    if (!f) continue;
    try {
      out[k] = read ? read(f, k) : fs.readFileSync(f);
    } catch (err) {
      // The path is configuration, not a secret; the key's content never reaches the log.
      failed?.(`TLS file cannot be read: ${keyPath}.tls.${k}`);
      log.error('mqtt TLS file cannot be read, not connecting', { key: `${keyPath}.tls.${k}`, file: f, error: (err as NodeJS.ErrnoException).code ?? (err as Error).message });
      return undefined;
    }
  }
  return out;
}
