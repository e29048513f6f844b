// Connections (rest.cloudconnection): each MQTT connection's state, broker, outbox and counters,
// with Connect and Disconnect (cloudconnection/v1, docs/rest-api.md); refreshed every 5 s. For
// kura.admin, Add and Delete: a connection's two configuration/v2 factory components
// (docs/configuration-v2.md "Creating and deleting connections").

import { call, get, post } from '../api';
import { every, field, fmtTime, h, replace } from '../dom';
import { allowed, problem, table, type Identity } from './common';

const CC = '/services/cloudconnection/v1';
const C = '/services/configuration/v2';
const CLOUD = 'org.eclipse.kura.cloud.CloudService';
const MQTT = 'org.eclipse.kura.core.data.transport.mqtt.MqttDataTransport';
const S = (value: string) => ({ type: 'STRING', value });

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

export function connectionsView(root: HTMLElement, _args?: string[], me?: Identity): () => void {
  const body = h('div', { 'aria-busy': 'true' }, h('p', null, 'Loading…'));
  const note = h('p', { role: 'status', 'aria-live': 'polite' });
  const admin = !!me && allowed(me, 'kura.admin');
  replace(root, h('h1', null, 'Connections'), note, body, admin && addForm());
  /** Runs a configuration/v2 change; its answer's message (a delete's kept messages) or `done` goes to the note. */
  const change = async (done: string, fn: () => Promise<{ message?: string } | undefined>) => {
    try {
      note.textContent = (await fn())?.message ?? done;
    } catch (e) {
      replace(note, problem(e, 'kura.admin'));
    }
    await refresh().catch(() => {});
  };
  function addForm(): HTMLElement {
    const name = h('input', { required: true, pattern: '[A-Za-z0-9_\\-]{1,64}', autocomplete: 'off' });
    const url = h('input', { required: true, placeholder: 'mqtt://host:1883', autocomplete: 'off' });
    const client = h('input', { required: true, autocomplete: 'off' });
    const enabled = h('input', { type: 'checkbox', checked: true });
    const form = h('form', { 'aria-label': 'Add a connection' },
      h('h2', null, 'Add a connection'),
      field('Connection name', name, 'Letters, digits, _ and -; up to 64.'), field('Broker URL', url), field('Client id', client), field('Enabled', enabled),
      h('button', { type: 'submit' }, 'Add connection'));
    form.onsubmit = (ev) => {
      ev.preventDefault();
      void change(`Connection ${name.value} added.`, () => post(`${C}/factoryComponents`, {
        configs: [
          { factoryPid: CLOUD, pid: `${CLOUD}-${name.value}`, properties: { enabled: { type: 'BOOLEAN', value: enabled.checked } } },
          { factoryPid: MQTT, pid: `${MQTT}-${name.value}`, properties: { 'broker-url': S(url.value), 'client-id': S(client.value) } },
        ],
        takeSnapshot: true,
      }));
    };
    return form;
  }
  const remove = (c: Connection) =>
    confirm(`Delete the connection ${c.name}? What its outbox holds is kept on the device.`) &&
    change(`Connection ${c.name} deleted.`, () => call('DELETE', `${C}/factoryComponents/byPid`, { pids: [`${CLOUD}-${c.name}`], takeSnapshot: true }));
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
            : h('button', { type: 'button', onclick: () => act(c, '_connect'), 'aria-label': `Connect ${c.name}` }, 'Connect'),
            admin && c.name !== 'default' && h('button', { type: 'button', onclick: () => remove(c), 'aria-label': `Delete ${c.name}` }, 'Delete')))),
        'MQTT connections'));
    } catch (e) {
      body.removeAttribute('aria-busy');
      replace(body, problem(e, 'rest.cloudconnection'));
      throw e;
    }
  };
  return every(5000, refresh);
}
