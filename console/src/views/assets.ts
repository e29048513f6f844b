// Assets: the list with each asset's health, then one asset's channels with live values,
// per-channel errors, writes, trends, and its channels as CSV (docs/console.md "Views").

import { ApiError, callText, get, post, A, DRV } from '../api';
import { every, field, fmtReading, fmtTime, h, replace } from '../dom';
import { allowed, problem, table, type Identity } from './common';
import { sparkline, type Sample } from './trend';

interface Channel { name: string; type: 'READ' | 'WRITE' | 'READ_WRITE'; valueType: string; unit?: string; isEnabled: boolean }
interface Rec { name: string; value?: unknown; timestamp: number; unit?: string; channelStatus: { channelFlag: string; exceptionMessage?: string } }
interface Device { unit: number; requests: number; responses: number; timeouts: number; exceptions: number; backoffUntil: number }
interface PollStatus {
  pollInterval: number; lastPoll: number; lastSuccess: number; consecutiveFailures: number; overruns: number; devices: Device[];
  driver?: string; driverAttached?: boolean; state?: string;
}

/** The asset states of GET _status (docs/rest-api.md "Poll status") in words. */
export const STATES: Record<string, string> = {
  ok: 'ok', failing: 'failing', stale: 'stale', driverMissing: 'driver missing', notPolled: 'not polled', pending: 'waiting for the first poll',
};
export const stateBadge = (state: string | undefined): HTMLElement =>
  h('span', { class: `state state-${state ?? 'unknown'}` }, state ? STATES[state] ?? state : 'unknown');

/**
 * Every asset's poll status, a few requests at a time; an asset whose status failed is left out.
 * One request per asset, so a gateway with many assets is asked at most every 50 ms per asset (20
 * requests a second): a view calling more often gets the last answers again.
 */
export function statusReader(): (names: string[]) => Promise<Map<string, PollStatus>> {
  let last: { at: number; key: string; map: Map<string, PollStatus> } | undefined;
  return async (names) => {
    const key = names.join('\n');
    if (last && last.key === key && Date.now() - last.at < Math.max(4000, names.length * 50)) return last.map;
    const at = Date.now();
    const out = new Map<string, PollStatus>();
    let next = 0;
    const worker = async () => {
      while (next < names.length) {
        const n = names[next++]!;
        try {
          out.set(n, await get<PollStatus>(`${A}/${encodeURIComponent(n)}/_status`));
        } catch (e) {
          if (e instanceof ApiError && (e.status === 403 || e.status === 401)) throw e;
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(6, names.length) }, worker));
    last = { at, key, map: out };
    return out;
  };
}

/** The asset's poll status (GET _status) in words: a stalled poll shows as an old "last poll". */
function pollLines(s: PollStatus): HTMLElement[] {
  const when = (t: number, none: string) => (t ? fmtTime(t) : none);
  return [
    h('p', null, s.pollInterval > 0
      ? `Polled every ${s.pollInterval} ms: last poll ${when(s.lastPoll, 'not yet')}, last poll without errors ${when(s.lastSuccess, 'never')}, ${s.consecutiveFailures} failed in a row, ${s.overruns} overruns.`
      : 'Not polled: values are read when asked.'),
    ...s.devices.map((d) => h('p', null, `Unit ${d.unit}: ${d.requests} requests, ${d.responses} answers, ${d.timeouts} timeouts, ${d.exceptions} exceptions${d.backoffUntil ? `, not asked until ${fmtTime(d.backoffUntil)} (not answering)` : ''}.`)),
  ];
}

export function assetsView(root: HTMLElement, args: string[], me: Identity): (() => void) | void {
  if (args[0]) return assetView(root, args[0], me);
  const body = h('div', null, h('p', { 'aria-busy': 'true' }, 'Loading…'));
  replace(root, h('h1', null, 'Assets'), body);
  const statuses = statusReader();
  // Health at a glance: driver, state, last success and failures in a row, refreshed every 5 s.
  return every(5000, async (live) => {
    try {
      const names = await get<string[]>(A);
      if (names.length === 0) return replace(body, h('p', { class: 'empty' }, 'No assets are configured on this gateway.'));
      if (!live()) return;
      const st = await statuses(names);
      replace(body, table(['Asset', 'Driver', 'State', 'Last success', 'Failures in a row'], names.map((n) => {
        const s = st.get(n);
        return h('tr', { 'data-state': s?.state },
          h('th', { scope: 'row' }, h('a', { href: `#/assets/${encodeURIComponent(n)}` }, n)),
          h('td', null, s?.driver ?? '—'), h('td', null, stateBadge(s?.state)),
          h('td', null, s ? (s.lastSuccess ? fmtTime(s.lastSuccess) : 'never') : '—'), h('td', null, s ? s.consecutiveFailures : '—'));
      }), 'Assets and their health'), h('p', { class: 'muted' }, 'Refreshed every 5 seconds while this page is visible.'));
    } catch (e) {
      replace(body, problem(e, 'rest.assets'));
      throw e;
    }
  });
}

/**
 * An input that fits the channel's value type; `read()` gives the JSON text of the value or throws.
 * `chosen()`, where present, says whether a value has been chosen: Write waits for it.
 */
function valueInput(c: Channel): { el: HTMLInputElement | HTMLSelectElement; read(): string; chosen?(): boolean } {
  const label = `New value for ${c.name}`;
  switch (c.valueType) {
    case 'BOOLEAN': {
      // Nothing is preselected: a preset value would be written by a Write pressed to confirm,
      // switching an output the technician only meant to look at.
      const el = h('select', { 'aria-label': label },
        h('option', { value: '', selected: true }, 'choose…'), h('option', { value: 'true' }, 'true'), h('option', { value: 'false' }, 'false'));
      return { el, chosen: () => el.value !== '', read: () => {
        if (el.value === '') throw new Error(`${c.name}: choose true or false`);
        return el.value;
      } };
    }
    case 'INTEGER':
    case 'LONG': {
      const el = h('input', { 'aria-label': label, inputmode: 'numeric', placeholder: 'whole number' });
      return { el, read: () => {
        const v = el.value.trim();
        if (!/^-?\d+$/.test(v)) throw new Error(`${c.name}: enter a whole number`);
        return v; // sent as typed: LONG stays exact beyond 2^53
      } };
    }
    case 'FLOAT':
    case 'DOUBLE': {
      const el = h('input', { 'aria-label': label, type: 'number', step: 'any', placeholder: 'number' });
      return { el, read: () => {
        if (el.value.trim() === '' || !Number.isFinite(Number(el.value))) throw new Error(`${c.name}: enter a number`);
        return String(Number(el.value));
      } };
    }
    default: {
      const el = h('input', { 'aria-label': label, placeholder: c.valueType === 'BYTE_ARRAY' ? 'base64' : 'text' });
      return { el, read: () => JSON.stringify(el.value) };
    }
  }
}

const NUMERIC = new Set(['INTEGER', 'LONG', 'FLOAT', 'DOUBLE']);
/** Trends drawn per asset at most (each is one history request every 5 s). */
const MAX_TRENDS = 50;

function assetView(root: HTMLElement, pid: string, me: Identity): (() => void) | void {
  const base = `${A}/${encodeURIComponent(pid)}`;
  const head = [h('p', null, h('a', { href: '#/assets' }, '← All assets')), h('h1', null, `Asset ${pid}`)];
  const health = h('p', { class: 'health', 'aria-label': 'Health' });
  const csv = allowed(me, 'rest.configuration') ? csvSection(pid, () => load()) : null;
  let stops: (() => void)[] = [];
  let stopped = false;
  const stopAll = () => {
    for (const f of stops) f();
    stops = [];
  };

  const load = () => {
    stopAll();
    replace(root, head, h('p', { 'aria-busy': 'true' }, 'Loading…'));
    get<Channel[]>(base).then((channels) => {
      if (stopped) return;
      show(channels);
    }, (e) => replace(root, head, problem(e, 'rest.assets')));
  };

  const show = (channels: Channel[]) => {
    const cells = new Map<string, { value: HTMLElement; time: HTMLElement; decimal: boolean }>();
    const trends = new Map<string, ReturnType<typeof sparkline>>();
    const status = h('p', { class: 'muted', role: 'status' });
    const poll = h('div', { class: 'muted', 'aria-label': 'Poll status' });
    const rows = channels.map((c) => {
      const value = h('td', { class: 'value' }, c.type === 'WRITE' ? 'write only' : '…');
      const time = h('td', null, '—');
      cells.set(c.name, { value, time, decimal: c.valueType === 'FLOAT' || c.valueType === 'DOUBLE' });
      let trend: Node | string = '';
      if (NUMERIC.has(c.valueType) && c.type !== 'WRITE' && c.isEnabled && trends.size < MAX_TRENDS) {
        const sp = sparkline(c.name);
        trends.set(c.name, sp);
        trend = sp.el;
      }
      let write: HTMLElement = h('span', { class: 'muted' }, c.type === 'READ' ? 'read only' : 'disabled');
      if (c.type !== 'READ' && c.isEnabled) {
        const input = valueInput(c);
        const result = h('span', { class: 'result', role: 'status' });
        const button = h('button', { type: 'submit', disabled: input.chosen ? !input.chosen() : false }, 'Write');
        if (input.chosen) input.el.addEventListener('change', () => (button.disabled = !input.chosen!()));
        write = h('form', {
          class: 'inline',
          onsubmit: async (ev: Event) => {
            ev.preventDefault();
            result.className = 'result';
            try {
              const text = input.read();
              const body = `{"channels":[{"name":${JSON.stringify(c.name)},"type":"${c.valueType}","value":${text}}]}`;
              const [r] = await post<Rec[]>(`${base}/_write`, body);
              const ok = r?.channelStatus.channelFlag === 'SUCCESS';
              result.className = ok ? 'result ok' : 'result error';
              result.textContent = ok ? 'Written' : `Write failed: ${r?.channelStatus.exceptionMessage ?? 'unknown error'}`;
            } catch (e) {
              result.className = 'result error';
              result.textContent = (e as Error).message;
            }
          },
        }, input.el, button, result);
      }
      return h('tr', null, h('th', { scope: 'row' }, c.name, c.isEnabled ? null : h('small', null, ' (disabled)')), h('td', null, c.type), h('td', null, c.valueType),
        value, h('td', { class: 'trend' }, trend), h('td', null, c.unit ?? ''), time, h('td', null, write));
    });
    replace(root, head, health, channels.length === 0 ? h('p', { class: 'empty' }, 'This asset has no channels.')
      : [table(['Channel', 'Mode', 'Type', 'Value', 'Trend', 'Unit', 'Read at', 'Write'], rows, `Channels of ${pid}`), status, poll], csv);
    let polled = false;
    const showStatus = (s: PollStatus) => {
      polled = s.pollInterval > 0;
      replace(poll, pollLines(s));
      replace(health, 'Driver ', h('strong', null, s.driver ?? '—'), ': ', stateBadge(s.state),
        s.driver ? [' · ', h('a', { href: `#/tools/${encodeURIComponent(s.driver)}` }, 'commissioning tools')] : null);
    };
    if (!channels.some((c) => c.type !== 'WRITE' && c.isEnabled)) {
      get<PollStatus>(`${base}/_status`).then(showStatus, () => {});
      return;
    }
    stops.push(every(2000, async (live) => {
      try {
        const recs = await get<Rec[]>(`${base}/_read`);
        for (const r of recs) {
          const cell = cells.get(r.name);
          if (!cell) continue;
          const ok = r.channelStatus.channelFlag === 'SUCCESS';
          cell.value.className = ok ? 'value' : 'value error';
          const rounded = ok && cell.decimal && typeof r.value === 'number';
          cell.value.textContent = !ok ? `Error: ${r.channelStatus.exceptionMessage ?? 'unknown'}` : rounded ? fmtReading(r.value as number) : String(r.value);
          if (rounded) cell.value.title = String(r.value);
          else cell.value.removeAttribute('title');
          cell.time.textContent = fmtTime(r.timestamp);
        }
        status.textContent = 'Values refresh every 2 seconds while this page is visible.';
        // Left while _read was on its way: nothing more is asked for.
        if (live()) showStatus(await get<PollStatus>(`${base}/_status`));
      } catch (e) {
        if (e instanceof ApiError && e.status !== 0) throw e;
        status.textContent = (e as Error).message;
      }
    }));
    // Trends from the polls' history (only a polled asset has one), every 5 s while visible.
    if (trends.size > 0) {
      stops.push(every(5000, async (live) => {
        if (!polled) return;
        for (const [name, sp] of trends) {
          if (!live()) return;
          try {
            sp.draw(await get<Sample[]>(`${base}/_history?channel=${encodeURIComponent(name)}`));
          } catch (e) {
            if (e instanceof ApiError && (e.status === 403 || e.status === 401)) throw e;
          }
        }
      }));
    }
  };

  load();
  return () => {
    stopped = true;
    stopAll();
  };
}

/**
 * The asset's channels as a CSV file (docs/rest-api.md "Channels as CSV", role configuration):
 * download, and upload replacing or merging; a refused file shows the gateway's row and column
 * message and nothing of it is applied.
 */
function csvSection(pid: string, reload: () => void): HTMLElement {
  const path = `${A}/${encodeURIComponent(pid)}/_channels.csv`;
  const note = h('p', { role: 'status', class: 'csv-note' });
  const say = (cls: string, text: string) => {
    note.className = `csv-note ${cls}`;
    note.textContent = text;
  };
  const download = h('button', {
    type: 'button',
    class: 'secondary',
    onclick: async () => {
      try {
        const text = await callText('GET', path);
        const url = URL.createObjectURL(new Blob([text], { type: 'text/csv' }));
        const a = h('a', { href: url, download: `${pid}.channels.csv`, hidden: true });
        document.body.append(a);
        a.click();
        a.remove();
        setTimeout(() => URL.revokeObjectURL(url), 10_000);
        say('ok', `Downloaded ${pid}.channels.csv.`);
      } catch (e) {
        say('error', `Download failed: ${(e as Error).message}`);
      }
    },
  }, 'Download channels (CSV)');
  const file = h('input', { type: 'file', accept: '.csv,text/csv', required: true });
  const mode = (value: string, label: string, checked = false) => h('label', { class: 'choice' }, h('input', { type: 'radio', name: `csv-mode-${pid}`, value, checked }), ` ${label}`);
  const form: HTMLFormElement = h('form', {
    onsubmit: async (ev: Event) => {
      ev.preventDefault();
      const f = file.files?.[0];
      const m = (form.querySelector('input[type=radio]:checked') as HTMLInputElement | null)?.value;
      if (!f || !m) return;
      say('', `Uploading ${f.name}…`);
      try {
        const r = JSON.parse(await callText('PUT', `${path}?mode=${m}`, await f.text())) as { changed: boolean; channels: number };
        say('ok', r.changed ? `Applied ${f.name} (${m}): the asset now has ${r.channels} channels.` : `${f.name} changes nothing (${r.channels} channels).`);
        if (r.changed) setTimeout(reload, 0);
      } catch (e) {
        say('error', (e as Error).message);
      }
    },
  }, field('Channels file (.csv)', file),
  h('fieldset', { class: 'modes' }, h('legend', null, 'Upload mode'),
    mode('merge', 'Merge: channels in the file replace those of the same name, others are kept', true),
    mode('replace', 'Replace: the file\'s channels become all of the asset\'s channels')),
  h('button', { type: 'submit' }, 'Upload CSV'));
  return h('section', { 'aria-labelledby': 'csv-h' }, h('h2', { id: 'csv-h' }, 'Channels as CSV'), h('p', null, download), form, note);
}
