// Assets: the list, then one asset's channels with live values, per-channel errors, and writes.

import { ApiError, get, post, A } from '../api';
import { every, fmtReading, fmtTime, h, replace } from '../dom';
import { problem, table } from './common';

interface Channel { name: string; type: 'READ' | 'WRITE' | 'READ_WRITE'; valueType: string; unit?: string; isEnabled: boolean }
interface Rec { name: string; value?: unknown; timestamp: number; unit?: string; channelStatus: { channelFlag: string; exceptionMessage?: string } }
interface Device { unit: number; requests: number; responses: number; timeouts: number; exceptions: number; backoffUntil: number }
interface PollStatus { pollInterval: number; lastPoll: number; lastSuccess: number; consecutiveFailures: number; overruns: number; devices: Device[] }

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

export function assetsView(root: HTMLElement, args: string[]): (() => void) | void {
  if (args[0]) return assetView(root, args[0]);
  replace(root, h('h1', null, 'Assets'), h('p', { 'aria-busy': 'true' }, 'Loading…'));
  get<string[]>(A).then(
    (names) => replace(root, h('h1', null, 'Assets'), names.length === 0
      ? h('p', { class: 'empty' }, 'No assets are configured on this gateway.')
      : h('ul', { class: 'cards' }, names.map((n) => h('li', null, h('a', { href: `#/assets/${encodeURIComponent(n)}` }, n))))),
    (e) => replace(root, h('h1', null, 'Assets'), problem(e, 'rest.assets')),
  );
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

function assetView(root: HTMLElement, pid: string): (() => void) | void {
  const base = `${A}/${encodeURIComponent(pid)}`;
  const head = [h('p', null, h('a', { href: '#/assets' }, '← All assets')), h('h1', null, `Asset ${pid}`)];
  replace(root, head, h('p', { 'aria-busy': 'true' }, 'Loading…'));
  let stopPoll: (() => void) | undefined;
  let stopped = false;
  get<Channel[]>(base).then((channels) => {
    if (stopped) return;
    const cells = new Map<string, { value: HTMLElement; time: HTMLElement; decimal: boolean }>();
    const status = h('p', { class: 'muted', role: 'status' });
    const poll = h('div', { class: 'muted', 'aria-label': 'Poll status' });
    const rows = channels.map((c) => {
      const value = h('td', { class: 'value' }, c.type === 'WRITE' ? 'write only' : '…');
      const time = h('td', null, '—');
      cells.set(c.name, { value, time, decimal: c.valueType === 'FLOAT' || c.valueType === 'DOUBLE' });
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
        value, h('td', null, c.unit ?? ''), time, h('td', null, write));
    });
    replace(root, head, channels.length === 0 ? h('p', { class: 'empty' }, 'This asset has no channels.')
      : [table(['Channel', 'Mode', 'Type', 'Value', 'Unit', 'Read at', 'Write'], rows, `Channels of ${pid}`), status, poll]);
    if (!channels.some((c) => c.type !== 'WRITE' && c.isEnabled)) return;
    stopPoll = every(2000, async () => {
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
        replace(poll, pollLines(await get<PollStatus>(`${base}/_status`)));
      } catch (e) {
        if (e instanceof ApiError && e.status !== 0) throw e;
        status.textContent = (e as Error).message;
      }
    });
  }, (e) => replace(root, head, problem(e, 'rest.assets')));
  return () => {
    stopped = true;
    stopPoll?.();
  };
}
