// Configuration (rest.configuration): driver instances and assets, edited through configuration/v2
// with the API's validation messages next to the field they name, every field labelled from its
// definition (name, unit, description, default); an asset's channels as a table (channel-table.ts);
// snapshots: take, list, download, roll back.

import { call, get, post } from '../api';
import { field, fmtTime, h, replace, uid } from '../dom';
import { problem, table } from './common';
import { ChannelTable, labelOf, unitOf, type Ad as TableAd } from './channel-table';

const C = '/services/configuration/v2';
const DRIVER = 'org.eclipse.kura.driver.';
const ASSET = 'org.eclipse.kura.wire.WireAsset';
const HIDDEN = /^(kura\.service\.pid|service\.(factoryPid|pid))$/;
// An MQTT connection's two components (docs/configuration-v2.md "Components and PIDs"): the bare
// PIDs are the connection `default`, `…-<name>` the others.
const CONNECTION = /^org\.eclipse\.kura\.(cloud\.CloudService|core\.data\.transport\.mqtt\.MqttDataTransport)(?:-(.+))?$/;
/** What each of the daemon's own components holds (docs/configuration.md names the sections). */
const SERVICES: Record<string, string> = {
  'org.eclipse.kura.gatewayd.Daemon': 'The daemon: log level, configuration snapshots kept',
  'org.eclipse.kura.internal.rest.provider.RestService': 'REST: authentication methods, sessions, login throttling',
  'org.eclipse.kura.web.Console': 'This console: access banner, password rules',
  'org.eclipse.kura.http.server.manager.HttpService': 'HTTP and HTTPS: ports, keystore, client certificates, limits',
  'org.eclipse.kura.deployment.agent': 'Deployment packages: marketplace, downloads, install queue',
  'org.eclipse.kura.cloud.app.command.CommandCloudApp': 'Remote commands (CMD-V1): enabled, password, limits',
};

type Ad = TableAd;
interface Prop { type: string; value?: unknown }
interface Cfg { pid: string; definition?: { ad?: Ad[] }; properties: Record<string, Prop> }
interface Comp { pid: string; factoryPid?: string }

type Fields = Map<string, { read(): Prop | undefined; error: HTMLElement; initial: string; el: HTMLElement }>;

/** An input fitting the attribute definition; `read()` gives the typed property. */
function input(ad: Ad, current: unknown, fields: Fields, label = labelOf(ad)): HTMLElement {
  const id = uid('c');
  const error = h('small', { class: 'error', role: 'alert', id: uid('e') });
  let el: HTMLInputElement | HTMLSelectElement;
  const value = current ?? ad.defaultValue;
  if (ad.type === 'BOOLEAN') el = h('input', { type: 'checkbox', id, checked: value === true || value === 'true' });
  else if (ad.option?.length) el = h('select', { id }, ad.isRequired ? null : h('option', { value: '' }, '—'), ad.option.map((o) => h('option', { value: o.value, selected: String(value) === o.value }, o.label)));
  else if (/^(INTEGER|LONG|SHORT|BYTE|DOUBLE|FLOAT)$/.test(ad.type)) el = h('input', { id, type: 'number', step: /DOUBLE|FLOAT/.test(ad.type) ? 'any' : '1', value: value === undefined || value === null ? '' : String(value) });
  else el = h('input', { id, type: ad.type === 'PASSWORD' ? 'password' : 'text', value: value === undefined || value === null ? '' : String(value), autocomplete: 'off' });
  el.setAttribute('aria-describedby', error.id);
  const f = {
    error,
    el,
    initial: '',
    read: (): Prop | undefined => {
      if (el instanceof HTMLInputElement && el.type === 'checkbox') return { type: 'BOOLEAN', value: el.checked };
      const v = el.value.trim();
      if (v === '') return undefined;
      if (/^(INTEGER|LONG|SHORT|BYTE)$/.test(ad.type)) return { type: ad.type, value: Number.isSafeInteger(Number(v)) ? Number(v) : v };
      if (/^(DOUBLE|FLOAT)$/.test(ad.type)) return { type: ad.type, value: Number(v) };
      return { type: ad.type, value: v };
    },
  };
  f.initial = JSON.stringify(f.read());
  fields.set(ad.id, f);
  const box = h('div', { class: ad.type === 'BOOLEAN' ? 'field check' : 'field' });
  if (ad.type === 'BOOLEAN') box.append(h('label', { for: id }, el, label));
  else box.append(h('label', { for: id }, label), el);
  const about = [unitOf(ad).text, ad.defaultValue !== undefined && ad.defaultValue !== '' && `Default: ${ad.defaultValue}.`].filter(Boolean).join(' ');
  if (about) {
    const d = h('small', { id: uid('d') }, about);
    el.setAttribute('aria-describedby', `${d.id} ${error.id}`);
    box.append(d);
  }
  box.append(error);
  box.dataset.k = ad.id;
  return box;
}

/**
 * Hides the fields that do not apply to the transport chosen (docs/drivers.md "modbus"): the serial
 * settings unless `access.type` is RTU, the TCP address when it is; follows the choice as it changes.
 */
function transportFields(form: HTMLElement, fields: Fields): void {
  const access = fields.get('access.type');
  if (!access) return;
  const apply = () => {
    const rtu = (access.el as HTMLSelectElement).value.toUpperCase() === 'RTU';
    for (const box of form.querySelectorAll<HTMLElement>('[data-k]')) {
      const k = box.dataset.k!;
      if (k.startsWith('modbus.rtu.')) box.hidden = !rtu;
      else if (k.startsWith('modbus.tcp-udp.')) box.hidden = rtu;
    }
  };
  access.el.addEventListener('change', apply);
  apply();
}

/**
 * Puts each `Invalid configuration of <pid>, property <key>: <problem>` next to its field, and a
 * property reserved to kura.admin (`Only kura.admin may change <pid> property <key>`, the 403 of
 * docs/configuration-v2.md "Reserved to kura.admin") too.
 */
function showErrors(message: string, fields: Fields, top: HTMLElement): void {
  for (const f of fields.values()) {
    f.error.textContent = '';
    f.el.removeAttribute('aria-invalid');
  }
  const rest: string[] = [];
  let first: HTMLElement | undefined;
  for (const part of message.split('; ')) {
    const reserved = /^Only \S+ may change \S+ property (\S+)$/.exec(part);
    const m = reserved ? [part, reserved[1], part] : /property (\S+?): (.*)$/.exec(part);
    const f = m ? fields.get(m[1]) : undefined;
    if (!f) {
      rest.push(part);
      continue;
    }
    f.error.textContent = m![2];
    f.el.setAttribute('aria-invalid', 'true');
    first ??= f.el;
  }
  first?.focus();
  top.textContent = rest.length ? rest.join('; ') : 'Not saved: see the messages next to the fields.';
}

export function configView(root: HTMLElement, args: string[]): void {
  if (args[0] === 'edit' && args[1]) return void editor(root, args[1]);
  if (args[0] === 'new' && args[1]) return void creator(root, args[1]);
  overview(root);
}

async function overview(root: HTMLElement): Promise<void> {
  const note = h('p', { role: 'status', class: 'muted' });
  replace(root, h('h1', null, 'Configuration'), h('p', { 'aria-busy': 'true' }, 'Loading…'));
  let comps: Comp[];
  let factories: string[];
  let ids: number[];
  try {
    [comps, factories, ids] = await Promise.all([
      get<{ components: Comp[] }>(`${C}/configurableComponents/pidsWithFactory`).then((r) => r.components),
      get<{ pids: string[] }>(`${C}/factoryComponents`).then((r) => r.pids.filter((p) => p.startsWith(DRIVER))),
      get<{ ids: number[] }>(`${C}/snapshots`).then((r) => r.ids),
    ]);
  } catch (e) {
    return replace(root, h('h1', null, 'Configuration'), problem(e, 'rest.configuration'));
  }
  const act = async (what: string, fn: () => Promise<unknown>) => {
    try {
      await fn();
      await overview(root);
      root.querySelector('[role=status]')!.textContent = what;
    } catch (e) {
      note.textContent = `${what.replace(/\.$/, '')} failed: ${(e as Error).message}`;
    }
  };
  const del = (pid: string) => h('button', {
    type: 'button', class: 'danger', 'aria-label': `Delete ${pid}`,
    onclick: () => confirm(`Delete ${pid}?`) && act(`${pid} deleted.`, () => call('DELETE', `${C}/factoryComponents/byPid`, { pids: [pid] })),
  }, 'Delete');
  const edit = (pid: string) => h('a', { href: `#/config/edit/${encodeURIComponent(pid)}` }, 'Edit');
  const drivers = comps.filter((c) => c.factoryPid?.startsWith(DRIVER));
  const assets = comps.filter((c) => c.factoryPid === ASSET);
  // The daemon's own components: the singletons and each MQTT connection's two.
  const services = comps.filter((c) => !c.factoryPid?.startsWith(DRIVER) && c.factoryPid !== ASSET);
  const about = (p: string) => {
    const m = CONNECTION.exec(p);
    return m ? `MQTT connection ${m[2] ?? 'default'} (${m[1] === 'cloud.CloudService' ? 'cloud service' : 'broker and transport'})` : SERVICES[p] ?? '';
  };

  const factory = h('select', { required: true }, factories.map((f) => h('option', { value: f }, f.slice(DRIVER.length))));
  const newDriver = h('form', {
    onsubmit: (ev: Event) => {
      ev.preventDefault();
      location.hash = `#/config/new/${encodeURIComponent(factory.value)}`;
    },
  }, h('h3', null, 'New driver instance'), field('Driver', factory), h('button', { type: 'submit' }, 'Continue'));

  const pid = h('input', { required: true, autocapitalize: 'none', spellcheck: 'false' });
  const driver = h('select', { required: true }, drivers.map((d) => h('option', { value: d.pid }, d.pid)));
  const desc = h('input');
  const err = h('p', { class: 'error', role: 'alert' });
  const newAsset = h('form', {
    onsubmit: async (ev: Event) => {
      ev.preventDefault();
      err.textContent = '';
      try {
        await post(`${C}/factoryComponents`, { configs: [{ pid: pid.value, factoryPid: ASSET, properties: { 'driver.pid': { type: 'STRING', value: driver.value }, 'asset.desc': { type: 'STRING', value: desc.value } } }], takeSnapshot: true });
        location.hash = `#/config/edit/${encodeURIComponent(pid.value)}`;
      } catch (e) {
        err.textContent = (e as Error).message;
      }
    },
  }, h('h3', null, 'New asset'), field('Asset name', pid), field('Driver instance', driver), field('Description', desc), h('button', { type: 'submit' }, 'Create asset'), err);

  const snaps = [...ids].reverse();
  replace(root, h('h1', null, 'Configuration'), note,
    h('section', { 'aria-labelledby': 'cfg-d' }, h('h2', { id: 'cfg-d' }, 'Driver instances'),
      drivers.length ? table(['Name', 'Driver', ''], drivers.map((d) => h('tr', null, h('th', { scope: 'row' }, d.pid), h('td', null, d.factoryPid!.slice(DRIVER.length)), h('td', { class: 'actions' }, edit(d.pid), ' ', del(d.pid)))), 'Driver instances') : h('p', { class: 'empty' }, 'No driver instances.'),
      factories.length ? newDriver : null),
    h('section', { 'aria-labelledby': 'cfg-a' }, h('h2', { id: 'cfg-a' }, 'Assets'),
      assets.length ? table(['Name', ''], assets.map((a) => h('tr', null, h('th', { scope: 'row' }, a.pid), h('td', { class: 'actions' }, edit(a.pid), ' ', del(a.pid)))), 'Assets') : h('p', { class: 'empty' }, 'No assets.'),
      drivers.length ? newAsset : h('p', null, 'Create a driver instance first.')),
    h('section', { 'aria-labelledby': 'cfg-v' }, h('h2', { id: 'cfg-v' }, 'Services'),
      services.length ? table(['Component', 'What', ''], services.map((c) => h('tr', null, h('th', { scope: 'row' }, c.pid), h('td', null, about(c.pid)), h('td', { class: 'actions' }, h('a', { href: `#/config/edit/${encodeURIComponent(c.pid)}`, 'aria-label': `Edit ${c.pid}` }, 'Edit')))), 'Services') : h('p', { class: 'empty' }, 'No services.')),
    h('section', { 'aria-labelledby': 'cfg-s' }, h('h2', { id: 'cfg-s' }, 'Snapshots'),
      h('p', null, 'Each change keeps a snapshot of the whole configuration. Rolling back makes a snapshot the configuration in force.'),
      h('button', { type: 'button', class: 'secondary', onclick: () => act('Snapshot taken.', () => post(`${C}/snapshots/_write`)) }, 'Take a snapshot now'),
      snaps.length ? table(['Snapshot', 'Taken', ''], snaps.map((id) => h('tr', null, h('th', { scope: 'row' }, String(id)), h('td', null, fmtTime(id)), h('td', { class: 'actions' },
        h('button', { type: 'button', class: 'secondary', 'aria-label': `Download snapshot ${id}`, onclick: async () => {
          try {
            const s = await post(`${C}/snapshots/byId`, { id });
            const a = h('a', { href: URL.createObjectURL(new Blob([JSON.stringify(s, null, 2)], { type: 'application/json' })), download: `gatewayd-snapshot-${id}.json` });
            a.click();
            setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
          } catch (e) {
            note.textContent = `Download failed: ${(e as Error).message}`;
          }
        } }, 'Download'), ' ',
        h('button', { type: 'button', class: 'danger', 'aria-label': `Roll back to snapshot ${id}`, onclick: () => confirm(`Roll back to the configuration of ${fmtTime(id)}?`) && act(`Rolled back to snapshot ${id}.`, () => post(`${C}/snapshots/byId/_rollback`, { id })) }, 'Roll back')))), 'Snapshots, newest first') : h('p', { class: 'empty' }, 'No snapshots yet.')));
}

/** A new driver instance: the factory's definition as a form. */
async function creator(root: HTMLElement, factoryPid: string): Promise<void> {
  const back = h('p', null, h('a', { href: '#/config' }, '← Configuration'));
  let ocd: Cfg | undefined;
  try {
    ocd = (await post<{ configs: Cfg[] }>(`${C}/factoryComponents/ocd/byFactoryPid`, { pids: [factoryPid] })).configs[0];
  } catch (e) {
    return replace(root, back, problem(e, 'rest.configuration'));
  }
  const fields: Fields = new Map();
  const pid = h('input', { required: true, autocapitalize: 'none', spellcheck: 'false' });
  const top = h('p', { class: 'error', role: 'alert' });
  replace(root, back, h('h1', null, `New ${factoryPid.slice(DRIVER.length)} driver instance`), h('form', {
    onsubmit: async (ev: Event) => {
      ev.preventDefault();
      top.textContent = '';
      const properties: Record<string, Prop> = {};
      // Only what the user changed: the rest keeps following the image's configuration.
      for (const [k, f] of fields) {
        const p = f.read();
        if (p && JSON.stringify(p) !== f.initial) properties[k] = p;
      }
      try {
        await post(`${C}/factoryComponents`, { configs: [{ pid: pid.value, factoryPid, properties }], takeSnapshot: true });
        location.hash = '#/config';
      } catch (e) {
        showErrors((e as Error).message, fields, top);
      }
    },
  }, field('Instance name', pid, 'Assets name their driver by it (driver.pid).'), (ocd?.definition?.ad ?? []).map((ad) => input(ad, undefined, fields)), top, h('button', { type: 'submit' }, 'Create driver instance')));
  transportFields(root, fields);
  pid.focus();
}

async function editor(root: HTMLElement, pid: string): Promise<void> {
  const back = h('p', null, h('a', { href: '#/config' }, '← Configuration'));
  let cfg: Cfg | undefined;
  let driverPids: string[] = [];
  try {
    [cfg, driverPids] = await Promise.all([
      post<{ configs: Cfg[] }>(`${C}/configurableComponents/configurations/byPid`, { pids: [pid] }).then((r) => r.configs[0]),
      get<{ components: Comp[] }>(`${C}/configurableComponents/pidsWithFactory`).then((r) => r.components.filter((x) => x.factoryPid?.startsWith(DRIVER)).map((x) => x.pid).sort()),
    ]);
  } catch (e) {
    return replace(root, back, problem(e, 'rest.configuration'));
  }
  if (!cfg) return replace(root, back, h('p', { class: 'error', role: 'alert' }, `No component ${pid}.`));
  const c = cfg;
  const fields: Fields = new Map();
  const ads = c.definition?.ad ?? Object.entries(c.properties).map(([id, p]) => ({ id, type: p.type }));
  const visible = ads.filter((a) => !HIDDEN.test(a.id));
  const asset = c.properties['service.factoryPid']?.value === ASSET;
  const base = visible.filter((a) => !a.id.includes('#')).map((a): Ad => {
    if (!asset || a.id !== 'driver.pid') return a;
    // The driver instances to choose from (and the current one, should it be gone).
    const current = String(c.properties['driver.pid']?.value ?? '');
    const pids = current && !driverPids.includes(current) ? [...driverPids, current] : driverPids;
    return { ...a, option: pids.map((value) => ({ label: value, value })) };
  });
  // Channel names in the order of the definition; the first channel's ADs are the template.
  const names: string[] = [];
  let template: Ad[] = [];
  for (const a of visible) {
    const i = a.id.indexOf('#');
    if (i < 0) continue;
    const ch = a.id.slice(0, i);
    if (names[names.length - 1] !== ch && !names.includes(ch)) names.push(ch);
    if (ch === names[0]) template.push({ ...a, id: a.id.slice(i + 1) });
  }
  if (!asset) template = [];
  else if (!template.length) {
    // An asset without channels: Kura's definition has only the asset's ADs, the channel ADs come
    // from configuration/v2's extension (docs/configuration-v2.md "Channel definitions").
    try {
      const d = await post<{ configs: Cfg[] }>(`${C}/configurableComponents/channelDefinitions/byPid`, { pids: [pid] });
      template = d.configs[0]?.definition?.ad ?? [];
    } catch (e) {
      return replace(root, back, problem(e, 'rest.configuration'));
    }
  }
  const channels = asset && template.length ? new ChannelTable(template, c.properties, names) : undefined;
  const top = h('p', { class: 'error', role: 'alert' });
  const status = h('p', { role: 'status', class: 'muted' });
  const form = h('form', {
    novalidate: true,
    onsubmit: async (ev: Event) => {
      ev.preventDefault();
      top.textContent = '';
      status.textContent = '';
      const properties: Record<string, Prop> = {};
      // Only what the user changed: the rest keeps following the image's configuration.
      for (const [k, f] of fields) {
        const p = f.read();
        if (p && JSON.stringify(p) !== f.initial) properties[k] = p;
      }
      let sent: Record<string, Prop> | undefined;
      if (channels) {
        sent = channels.changes();
        if (!sent) return void (top.textContent = 'Not saved: see the messages in the channel table.');
        Object.assign(properties, sent);
      }
      try {
        const r = await call<{ message?: string } | undefined>('PUT', `${C}/configurableComponents/configurations/_update`, { configs: [{ pid, properties }], takeSnapshot: true });
        if (channels) {
          // 500 channels are not read and drawn again: the table takes what was applied.
          channels.saved(sent!);
          showErrors('', fields, top);
          top.textContent = '';
          for (const f of fields.values()) f.initial = JSON.stringify(f.read());
          status.textContent = r?.message ?? 'Saved and applied.';
          return;
        }
        await editor(root, pid);
        root.querySelector('[role=status]')!.textContent = r?.message ?? 'Saved and applied.';
      } catch (e) {
        const msg = (e as Error).message;
        const rest = channels ? channels.serverErrors(msg) : msg.split('; ');
        showErrors(rest.join('; '), fields, top);
        if (channels && rest.length === 0) top.textContent = 'Not saved: see the messages in the channel table.';
      }
    },
  }, base.map((a) => input(a, c.properties[a.id]?.value, fields)),
  channels?.el, top, h('button', { type: 'submit' }, 'Save'));
  replace(root, back, h('h1', null, `${asset ? 'Asset' : 'Component'} ${pid}`), status, asset ? h('p', null, h('a', { href: `#/assets/${encodeURIComponent(pid)}` }, 'Live values of this asset')) : null, form);
  transportFields(form, fields);
}
