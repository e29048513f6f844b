// Status: the devices' health (asset states), version, uptime, memory, listeners, MQTT and outbox,
// dataDir (system/v1).

import { get, A, SYS } from '../api';
import { every, fmtBytes, fmtDuration, h, replace } from '../dom';
import { allowed, dl, problem, table, type Identity } from './common';
import { STATES, stateBadge, statusReader } from './assets';

interface Status {
  version: string;
  gatewayVersion: string;
  uptime: number;
  memory: { rss: number; heapUsed: number; systemTotal: number; systemFree: number };
  listeners: { port: number; protocol: string }[];
  mqtt: { enabled: boolean; brokerUrl: string; clientId: string; connected: boolean; outboxPending: number; outboxDropped: number; outboxMax: number };
  dataDir: { path: string; usedBytes: number; files: number; freeBytes?: number; totalBytes?: number };
}

/** How many assets are in each state (docs/console.md "Views", Status), for an identity with rest.assets. */
async function devicesSummary(statuses: ReturnType<typeof statusReader>): Promise<HTMLElement> {
  const names = await get<string[]>(A);
  const st = await statuses(names);
  const counts = new Map<string, number>();
  for (const s of st.values()) counts.set(s.state ?? 'unknown', (counts.get(s.state ?? 'unknown') ?? 0) + 1);
  const order = Object.keys(STATES).filter((k) => counts.has(k)).concat([...counts.keys()].filter((k) => !(k in STATES)));
  return h('section', { 'aria-labelledby': 's-dev' }, h('h2', { id: 's-dev' }, 'Devices'),
    names.length === 0 ? h('p', { class: 'empty' }, 'No assets are configured on this gateway.')
      : [h('ul', { class: 'summary', 'aria-label': 'Assets per state' }, order.map((k) => h('li', { 'data-state': k }, h('strong', null, counts.get(k)!), ' ', stateBadge(k)))),
        h('p', { class: 'muted' }, `${names.length} ${names.length === 1 ? 'asset' : 'assets'}. `, h('a', { href: '#/assets' }, 'See each asset'))]);
}

export function statusView(root: HTMLElement, _args: string[], me: Identity): () => void {
  const body = h('div', { 'aria-busy': 'true' }, h('p', null, 'Loading…'));
  replace(root, h('h1', null, 'Status'), body);
  let fw: Record<string, unknown> | undefined;
  const assets = allowed(me, 'rest.assets');
  const statuses = statusReader();
  return every(5000, async (live) => {
    try {
      fw ??= await get(`${SYS}/properties/framework`);
      const s = await get<Status>(`${SYS}/status`);
      if (!live()) return;
      // The devices summary is extra: its failure shows in its place, the rest still shows.
      const devices = assets ? await devicesSummary(statuses).catch((e) => h('section', null, h('h2', null, 'Devices'), problem(e, 'rest.assets'))) : null;
      const f = fw!;
      const m = s.mqtt;
      const mqttState = !m.enabled ? 'disabled' : m.connected ? 'connected' : 'not connected';
      body.removeAttribute('aria-busy');
      replace(body, devices,
        h('section', { 'aria-labelledby': 's-gw' }, h('h2', { id: 's-gw' }, 'Gateway'), dl([
          ['gatewayd version', s.version], ['Gateway version (packages)', s.gatewayVersion], ['Device name', f.deviceName],
          ['Uptime', fmtDuration(s.uptime)], ['Operating system', `${f.osDistro ?? f.osName} ${f.osDistroVersion ?? ''} (${f.osArch})`],
          ['Processors', f.numberOfProcessors],
        ])),
        h('section', { 'aria-labelledby': 's-mem' }, h('h2', { id: 's-mem' }, 'Memory'), dl([
          ['gatewayd (resident)', fmtBytes(s.memory.rss)], ['gatewayd heap in use', fmtBytes(s.memory.heapUsed)],
          ['Device free / total', `${fmtBytes(s.memory.systemFree)} / ${fmtBytes(s.memory.systemTotal)}`],
        ])),
        h('section', { 'aria-labelledby': 's-mqtt' }, h('h2', { id: 's-mqtt' }, 'MQTT'), dl([
          ['Connection', mqttState], ['Broker', m.enabled ? m.brokerUrl : '—'], ['Client id', m.clientId],
          ['Outbox (waiting to be sent)', `${m.outboxPending} of at most ${m.outboxMax}`], ['Dropped (outbox full)', m.outboxDropped],
        ])),
        h('section', { 'aria-labelledby': 's-data' }, h('h2', { id: 's-data' }, 'Data folder'), dl([
          ['Path', s.dataDir.path], ['Used by gatewayd', `${fmtBytes(s.dataDir.usedBytes)} in ${s.dataDir.files} files`],
          ['File system free / total', `${fmtBytes(s.dataDir.freeBytes)} / ${fmtBytes(s.dataDir.totalBytes)}`],
        ])),
        h('section', { 'aria-labelledby': 's-l' }, h('h2', { id: 's-l' }, 'Listeners'),
          table(['Port', 'Protocol'], s.listeners.map((l) => h('tr', null, h('td', null, l.port), h('td', null, l.protocol))), 'Listening ports')));
    } catch (e) {
      body.removeAttribute('aria-busy');
      replace(body, problem(e, 'rest.system'));
      throw e;
    }
  });
}
