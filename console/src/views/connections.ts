// Connections (rest.cloudconnection): each MQTT connection's state, broker, outbox and counters,
// with Connect and Disconnect (cloudconnection/v1, docs/rest-api.md); refreshed every 5 s.

import { get, post } from '../api';
import { every, fmtTime, h, replace } from '../dom';
import { problem, table } from './common';

const CC = '/services/cloudconnection/v1';

interface Connection {
  name: string;
  type: string;
  connected: boolean;
  brokerUrl: string;
  clientId: string;
  outbox: { pending: number; dropped: number };
  disconnectedOnRequest: boolean;
  published: number;
  reconnects: number;
  lastError: { at: number; message: string } | null;
}

export function connectionsView(root: HTMLElement): () => void {
  const body = h('div', { 'aria-busy': 'true' }, h('p', null, 'Loading…'));
  const note = h('p', { role: 'status', 'aria-live': 'polite' });
  replace(root, h('h1', null, 'Connections'), note, body);
  const act = async (c: Connection, what: '_connect' | '_disconnect') => {
    try {
      await post(`${CC}/connections/${encodeURIComponent(c.name)}/${what}`);
      note.textContent = `${c.name}: ${what === '_connect' ? 'connecting' : 'disconnected'}.`;
    } catch (e) {
      replace(note, problem(e, 'rest.cloudconnection'));
    }
    await refresh();
  };
  const refresh = async () => {
    try {
      const list = await get<Connection[]>(`${CC}/connections`);
      body.removeAttribute('aria-busy');
      const state = (c: Connection) => (c.connected ? 'connected' : c.disconnectedOnRequest ? 'disconnected on request' : 'not connected');
      replace(body, list.length === 0 ? h('p', null, 'No MQTT connection is configured.') : table(
        ['Name', 'Type', 'State', 'Broker', 'Client id', 'Outbox', 'Dropped', 'Published', 'Reconnects', 'Last error', ''],
        list.map((c) => h('tr', { 'data-connection': c.name },
          h('td', null, c.name), h('td', null, c.type), h('td', { class: c.connected ? 'ok' : 'error' }, state(c)),
          h('td', null, c.brokerUrl), h('td', null, c.clientId), h('td', null, c.outbox.pending), h('td', null, c.outbox.dropped),
          h('td', null, c.published), h('td', null, c.reconnects),
          h('td', null, c.lastError ? `${c.lastError.message} (${fmtTime(c.lastError.at)})` : '—'),
          h('td', null, c.connected
            ? h('button', { type: 'button', onclick: () => act(c, '_disconnect'), 'aria-label': `Disconnect ${c.name}` }, 'Disconnect')
            : h('button', { type: 'button', onclick: () => act(c, '_connect'), 'aria-label': `Connect ${c.name}` }, 'Connect')))),
        'MQTT connections'));
    } catch (e) {
      body.removeAttribute('aria-busy');
      replace(body, problem(e, 'rest.cloudconnection'));
      throw e;
    }
  };
  return every(5000, refresh);
}
