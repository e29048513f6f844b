// The configuration gatewayd runs with in the benchmark: the simulator demo asset (bench/README.md, HTTP section) and an
// identity allowed to read it, plus options shared by the sections.

import { freePort } from '../../test/helpers/ports.js';

export const USER = 'bench';
export const PASSWORD = 'Bench-pass-1';
export const ASSET = 'demo';

export interface Options {
  repeats: number;
  /** wrk run length in seconds. */
  seconds: number;
  quick: boolean;
}

export async function demoConfig(tls?: { cert: string; key: string }): Promise<{ config: Record<string, any>; http: number; https?: number }> {
  const http = await freePort();
  const https = tls ? await freePort() : undefined;
  const config = {
    'log.level': 'warn',
    http: {
      'http.ports': [http],
      'https.ports': https ? [https] : [],
      'https.client.auth.ports': [],
      'https.keystore.cert': tls?.cert ?? '',
      'https.keystore.key': tls?.key ?? '',
      'bind.address': '127.0.0.1',
    },
    identities: { [USER]: { password: PASSWORD, permissions: ['rest.assets'], passwordChangeNeeded: false } },
    drivers: { sim: { factory: 'simulator' } },
    assets: {
      [ASSET]: {
        'driver.pid': 'sim',
        'poll.interval': 0,
        channels: {
          temperature: { type: 'READ', 'value.type': 'DOUBLE', unit: 'C', simulation: 'sine' },
          counter: { type: 'READ', 'value.type': 'INTEGER', simulation: 'counter' },
        },
      },
    },
    mqtt: { enabled: false },
  };
  return { config, http, https };
}
