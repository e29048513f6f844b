// What the two runtime-layer test files share (docs/configuration-v2.md): the image configuration
// they start the daemon with and a configuration/v2 client for it.
import type { Daemon } from '../helpers/daemon.js';
import { basic } from '../helpers/session-client.js';

export const C = '/services/configuration/v2';
export const REST = 'org.eclipse.kura.internal.rest.provider.RestService';
export const CONSOLE = 'org.eclipse.kura.web.Console';
export const WA = 'org.eclipse.kura.wire.WireAsset';

export const image = {
  rest: { 'login.throttle.max.delay': 0 },
  identities: { admin: { password: 'admin', permissions: ['kura.admin'] } },
  drivers: { sim: { factory: 'simulator' } },
  assets: {
    fast: { 'driver.pid': 'sim', 'poll.interval': 50, channels: { n: { type: 'READ', 'value.type': 'INTEGER', simulation: 'counter' } } },
    other: { 'driver.pid': 'sim', channels: { v: { type: 'READ', 'value.type': 'INTEGER', simulation: 'counter' } } },
  },
};

export const api = (d: Daemon) => {
  const c = basic(d, 'admin', 'admin');
  const call = async (p: string, body?: unknown, method = 'POST') => c.request(`${C}/${p}`, { method, body: body === undefined ? undefined : JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  return {
    call,
    update: (configs: unknown[], takeSnapshot = false) => call('configurableComponents/configurations/_update', { configs, takeSnapshot }, 'PUT'),
    props: async (pid: string) => (await call('configurableComponents/configurations/byPid', { pids: [pid] })).json().configs[0]?.properties,
    pids: async (): Promise<string[]> => (await c.request(`${C}/configurableComponents`)).json().pids,
  };
};
