// Commissioning tools of a driver instance (docs/console.md "Tools", docs/drivers.md "Commissioning
// tools"): probe (a write only after an explicit confirmation), scan with progress and cancel,
// device identification, and the line's live request log. All through /services/drivers
// (docs/rest-api.md "drivers"), role assets.

import { ApiError, call, get, post, DRV } from '../api';
import { every, field, h, replace, type Child } from '../dom';
import { problem, table } from './common';

interface Instance { pid: string; factory: string; attached: boolean; tools: string[]; 'access.type'?: string }
interface Found { unit: number; baudRate?: number; parity?: string; identification?: Record<string, string> }
interface Scan { id: string; state: 'RUNNING' | 'DONE' | 'CANCELLED'; progress: number; found: Found[]; errors?: { baudRate: number; parity: string; error: string }[] }
interface LogEntry {
  time: number; unit: number; function: number; address?: number; count?: number; result: string; latencyMs: number;
  exception?: number; error?: string; request?: string; response?: string;
}

const TABLES = ['HOLDING_REGISTERS', 'INPUT_REGISTERS', 'COILS', 'DISCRETE_INPUTS'];
const DATA_TYPES = ['INT16', 'UINT16', 'INT32', 'UINT32', 'INT64', 'UINT64', 'FLOAT32', 'FLOAT64', 'STRING'];
const ORDERS = ['BIG_ENDIAN', 'LITTLE_ENDIAN', 'BIG_ENDIAN_BYTE_SWAP', 'LITTLE_ENDIAN_BYTE_SWAP'];
const BAUDS = [1200, 2400, 4800, 9600, 19200, 38400, 57600, 115200];
// The scan's sweep values (docs/rest-api.md "drivers", POST _scan).
const PARITIES = ['none', 'even', 'odd'];
const FUNCTIONS: Record<number, string> = {
  1: 'read coils', 2: 'read discrete inputs', 3: 'read holding registers', 4: 'read input registers',
  5: 'write coil', 6: 'write register', 15: 'write coils', 16: 'write registers', 43: 'device identification',
};

const select = (options: string[], label: string, value = options[0]) =>
  h('select', { 'aria-label': label }, options.map((o) => h('option', { value: o, selected: o === value }, o)));
const num = (value: string, min: number, max: number) => h('input', { type: 'number', min, max, step: 1, value, inputmode: 'numeric' });
const hex = (n: number) => `0x${n.toString(16).toUpperCase().padStart(4, '0')}`;
const say = (el: HTMLElement, cls: string, ...text: Child[]) => {
  el.className = `result ${cls}`;
  replace(el, ...text);
};

export function toolsView(root: HTMLElement, args: string[]): (() => void) | void {
  if (args[0]) return instanceView(root, args[0]);
  replace(root, h('h1', null, 'Commissioning tools'), h('p', { 'aria-busy': 'true' }, 'Loading…'));
  get<Instance[]>(DRV).then((list) => {
    const usable = list.filter((i) => i.tools.length > 0);
    replace(root, h('h1', null, 'Commissioning tools'),
      h('p', { class: 'muted' }, 'Probe registers, scan for units and watch the requests on a line, without creating an asset.'),
      list.length === 0 ? h('p', { class: 'empty' }, 'No driver instances are configured on this gateway.')
        : table(['Driver instance', 'Factory', 'State', 'Tools'], list.map((i) => h('tr', null,
          h('th', { scope: 'row' }, i.tools.length ? h('a', { href: `#/tools/${encodeURIComponent(i.pid)}` }, i.pid) : i.pid),
          h('td', null, i.factory, i['access.type'] ? ` (${i['access.type']})` : ''),
          h('td', { class: i.attached ? 'ok' : 'error' }, i.attached ? 'attached' : 'driver missing'),
          h('td', null, i.tools.length ? i.tools.join(', ') : 'none'))), 'Driver instances'),
      usable.length === 0 && list.length > 0 ? h('p', { class: 'empty' }, 'None of the driver instances has commissioning tools (Modbus instances do).') : null);
  }, (e) => replace(root, h('h1', null, 'Commissioning tools'), problem(e, 'rest.assets')));
}

function instanceView(root: HTMLElement, pid: string): () => void {
  const base = `${DRV}/${encodeURIComponent(pid)}`;
  const head = [h('p', null, h('a', { href: '#/tools' }, '← All driver instances')), h('h1', null, `Tools of ${pid}`)];
  replace(root, head, h('p', { 'aria-busy': 'true' }, 'Loading…'));
  const stops: (() => void)[] = [];
  let left = false;
  get<Instance[]>(DRV).then((list) => {
    if (left) return;
    const inst = list.find((i) => i.pid === pid);
    if (!inst) return replace(root, head, h('p', { class: 'error', role: 'alert' }, `Driver not found: ${pid}`));
    if (!inst.attached) return replace(root, head, h('p', { class: 'error', role: 'alert' }, `The driver of ${pid} (${inst.factory}) is not installed: its tools are not available.`));
    if (inst.tools.length === 0) return replace(root, head, h('p', { class: 'empty' }, `The ${inst.factory} driver has no commissioning tools.`));
    const has = (t: string) => inst.tools.includes(t);
    const ident = identification(base);
    replace(root, head, h('p', { class: 'muted' }, `${inst.factory} driver${inst['access.type'] ? `, ${inst['access.type']}` : ''}. Each request waits its turn in the line's queue, between the polls.`),
      has('probe') ? probeSection(base) : null,
      has('scan') ? scanSection(base, inst['access.type'] === 'RTU', has('identification') ? ident.read : undefined, stops) : null,
      has('identification') ? ident.el : null,
      has('log') ? logSection(base, stops) : null);
  }, (e) => replace(root, head, problem(e, 'rest.assets')));
  return () => {
    left = true;
    for (const s of stops) s();
  };
}

/** Probe: one read of any table, address, count, type and order; a write only once confirmed. */
function probeSection(base: string): HTMLElement {
  const unit = num('1', 0, 255);
  const tbl = select(TABLES, 'Table');
  const addr = num('1', 1, 65536);
  const count = h('input', { type: 'number', min: 1, max: 2000, step: 1, placeholder: 'as the data type takes', inputmode: 'numeric' });
  const dtype = select(DATA_TYPES, 'Data type');
  const order = select(ORDERS, 'Word order');
  const len = h('input', { type: 'number', min: 1, max: 125, step: 1, placeholder: 'registers (STRING)', inputmode: 'numeric' });
  const out = h('div', { class: 'probe-out', 'aria-live': 'polite' });
  const request = (): Record<string, unknown> => {
    const r: Record<string, unknown> = { 'unit.id': Number(unit.value), 'primary.table': tbl.value, 'memory.address': Number(addr.value) };
    const bits = tbl.value === 'COILS' || tbl.value === 'DISCRETE_INPUTS';
    if (!bits) Object.assign(r, { 'data.type': dtype.value, 'data.order': order.value });
    if (!bits && dtype.value === 'STRING') r['array.data.length'] = Number(len.value || 1);
    if (count.value.trim() !== '') r.count = Number(count.value);
    return r;
  };
  const showRead = (r: Record<string, unknown>, written = false) => {
    const start = Number(addr.value);
    const regs = r.registers as number[] | undefined;
    const bits = r.bits as boolean[] | undefined;
    replace(out,
      h('p', { class: 'probe-value' }, written ? 'Written: ' : 'Decoded value: ', h('strong', { class: 'value' }, r.value === null || r.value === undefined ? '—' : String(r.value)),
        r.valueType ? ` (${r.valueType})` : '', r.decodeError ? h('span', { class: 'error' }, ` ${r.decodeError}`) : null),
      regs ? table(['Address', 'Register', 'Hex'], regs.map((v, i) => h('tr', null, h('td', null, start + i), h('td', { class: 'value' }, v), h('td', null, hex(v)))), 'Raw registers') : null,
      bits ? table(['Address', 'Bit'], bits.map((v, i) => h('tr', null, h('td', null, start + i), h('td', { class: 'value' }, v ? '1 (true)' : '0 (false)'))), 'Raw bits') : null);
  };

  // Write: the value, then an explicit confirmation naming exactly what will be written where.
  const value = h('input', { placeholder: 'value to write' });
  const confirmBox = h('div', { class: 'warn-box', role: 'alert', hidden: true });
  const writeBtn = h('button', { type: 'button', class: 'danger' }, 'Write…');
  const writable = () => tbl.value === 'HOLDING_REGISTERS' || tbl.value === 'COILS';
  const syncWrite = () => {
    writeBtn.disabled = !writable();
    confirmBox.hidden = true;
  };
  tbl.addEventListener('change', syncWrite);
  writeBtn.addEventListener('click', () => {
    const raw = value.value.trim();
    if (raw === '') return say(out, 'error', 'Enter the value to write.');
    const r = request();
    const what = tbl.value === 'COILS' ? 'coil' : `${r['data.type']} (${r['data.order']})`;
    replace(out);
    confirmBox.hidden = false;
    replace(confirmBox,
      h('p', null, h('strong', null, `Write ${raw} as ${what} to ${tbl.value} ${addr.value} on unit ${unit.value}?`), ' This changes the device at once.'),
      h('button', {
        type: 'button',
        class: 'danger',
        onclick: async () => {
          confirmBox.hidden = true;
          const v: unknown = tbl.value === 'COILS' ? raw === 'true' || raw === '1' : raw;
          try {
            showRead(await post(`${base}/_probe`, { ...request(), value: v, confirm: true }), true);
          } catch (e) {
            say(out, 'error', `Write failed: ${(e as Error).message}`);
          }
        },
      }, 'Confirm write'), ' ',
      h('button', { type: 'button', class: 'secondary', onclick: () => { confirmBox.hidden = true; say(out, 'muted', 'Nothing was written.'); } }, 'Cancel'));
  });

  const form = h('form', {
    class: 'probe',
    onsubmit: async (ev: Event) => {
      ev.preventDefault();
      confirmBox.hidden = true;
      say(out, 'muted', 'Reading…');
      try {
        showRead(await post(`${base}/_probe`, request()));
        out.className = 'probe-out';
      } catch (e) {
        say(out, 'error', (e as Error).message);
      }
    },
  },
  h('div', { class: 'cols' }, field('Unit id', unit), field('Table', tbl), field('Address (1-based)', addr), field('Count', count, 'registers or bits to read; default: what the data type takes'),
    field('Data type', dtype), field('Word order', order), field('String length', len, 'registers, for STRING')),
  h('button', { type: 'submit' }, 'Read'),
  h('div', { class: 'probe-write' }, field('Value', value, 'holding registers and coils only; for a coil true or false'), writeBtn), confirmBox);
  return h('section', { 'aria-labelledby': 'probe-h' }, h('h2', { id: 'probe-h' }, 'Probe'), form, out);
}

/** Identification of one unit (FC 43 / MEI 14); `read` shows a unit's objects in the section. */
function identification(base: string): { el: HTMLElement; read(unit: number, into?: HTMLElement): Promise<void> } {
  const unit = num('1', 0, 255);
  const out = h('div', { 'aria-live': 'polite' });
  const read = async (u: number, into: HTMLElement = out) => {
    say(into, 'muted', `Reading the identification of unit ${u}…`);
    try {
      const objs = await get<Record<string, string>>(`${base}/units/${u}/identification`);
      into.className = 'ident';
      replace(into, h('dl', { 'aria-label': `Identification of unit ${u}` }, Object.entries(objs).map(([k, v]) => [h('dt', null, k), h('dd', null, v)])));
    } catch (e) {
      say(into, 'error', (e as Error).message);
    }
  };
  const el = h('section', { 'aria-labelledby': 'ident-h' }, h('h2', { id: 'ident-h' }, 'Device identification'),
    h('form', { class: 'inline', onsubmit: (ev: Event) => (ev.preventDefault(), void read(Number(unit.value))) }, field('Unit id', unit), h('button', { type: 'submit' }, 'Read identification')), out);
  return { el, read };
}

/** Scan: which units answer, with a progress bar fed by polling the scan, and Cancel. */
function scanSection(base: string, rtu: boolean, identify: ((unit: number, into?: HTMLElement) => Promise<void>) | undefined, stops: (() => void)[]): HTMLElement {
  const from = num('1', 0, 255);
  const to = num(rtu ? '247' : '10', 0, 255);
  const withIdent = h('input', { type: 'checkbox' });
  const bauds = BAUDS.map((b) => h('label', { class: 'choice' }, h('input', { type: 'checkbox', value: String(b), name: 'baud' }), ` ${b}`));
  const parities = PARITIES.map((p) => h('label', { class: 'choice' }, h('input', { type: 'checkbox', value: p, name: 'parity' }), ` ${p}`));
  const bar = h('progress', { max: 100, value: 0, hidden: true, 'aria-label': 'Scan progress' });
  const state = h('p', { role: 'status', class: 'muted' });
  const found = h('div');
  const start = h('button', { type: 'submit' }, 'Start scan');
  const cancel = h('button', { type: 'button', class: 'secondary', hidden: true }, 'Cancel scan');
  let current = '';
  let stopPoll: (() => void) | undefined;
  stops.push(() => stopPoll?.());
  const checked = (els: HTMLElement[]) => els.map((l) => l.querySelector('input') as HTMLInputElement).filter((i) => i.checked).map((i) => i.value);

  const showScan = (s: Scan) => {
    bar.hidden = false;
    bar.value = Math.round(s.progress * 100);
    const n = s.found.length;
    state.className = s.state === 'CANCELLED' ? 'muted' : s.state === 'DONE' ? 'ok' : 'muted';
    state.textContent = `${s.state === 'RUNNING' ? 'Scanning' : s.state === 'DONE' ? 'Done' : 'Cancelled'}: ${Math.round(s.progress * 100)} %, ${n} ${n === 1 ? 'unit' : 'units'} found.`;
    const sweep = s.found.some((f) => f.baudRate !== undefined || f.parity !== undefined);
    // Sweep combinations the serial port refused: said once each, beside the units found.
    const refusedCombos = s.errors?.length ? h('ul', { class: 'error', 'aria-label': 'Serial settings refused' }, s.errors.map((e) => h('li', null, `${e.baudRate} baud, parity ${e.parity}: ${e.error}`))) : null;
    replace(found, refusedCombos, n === 0 ? null : table(['Unit', ...(sweep ? ['Baud rate', 'Parity'] : []), 'Identification', ''], s.found.map((f) => {
      const idCell = h('td', null, f.identification ? [f.identification.VendorName, f.identification.ProductCode, f.identification.MajorMinorRevision].filter(Boolean).join(' · ') : '—');
      return h('tr', null, h('th', { scope: 'row' }, f.unit), sweep ? [h('td', null, f.baudRate ?? '—'), h('td', null, f.parity ?? '—')] : null, idCell,
        h('td', null, identify ? h('button', { type: 'button', class: 'secondary', 'aria-label': `Read identification of unit ${f.unit}`, onclick: () => identify(f.unit, idCell) }, 'Read identification') : null));
    }), 'Units found'));
    if (s.state !== 'RUNNING') {
      stopPoll?.();
      stopPoll = undefined;
      cancel.hidden = true;
      start.disabled = false;
    }
  };

  cancel.addEventListener('click', async () => {
    if (!current) return;
    try {
      showScan(await call('DELETE', `${base}/_scan/${encodeURIComponent(current)}`));
    } catch (e) {
      say(state, 'error', `Cancel failed: ${(e as Error).message}`);
    }
  });

  const form = h('form', {
    onsubmit: async (ev: Event) => {
      ev.preventDefault();
      const body: Record<string, unknown> = { units: [Number(from.value), Number(to.value)] };
      if (withIdent.checked) body.identify = true;
      if (rtu) {
        const b = checked(bauds);
        const p = checked(parities);
        if (b.length) body.baudRates = b.map(Number);
        if (p.length) body.parities = p;
      }
      stopPoll?.();
      replace(found);
      bar.hidden = true;
      try {
        const { id } = await post<{ id: string }>(`${base}/_scan`, body);
        current = id;
        start.disabled = true;
        cancel.hidden = false;
        say(state, 'muted', 'Scanning…');
        stopPoll = every(500, async () => {
          try {
            showScan(await get<Scan>(`${base}/_scan/${encodeURIComponent(id)}`));
          } catch (e) {
            say(state, 'error', (e as Error).message);
            if (e instanceof ApiError && e.status === 404) stopPoll?.();
          }
        });
      } catch (e) {
        // A refused scan (400: a range or a sweep the line cannot do; 409: one already runs) says why.
        say(state, 'error', `Scan refused: ${(e as Error).message}`);
      }
    },
  },
  h('div', { class: 'cols' }, field('First unit', from), field('Last unit', to)),
  identify ? h('div', { class: 'field check' }, h('label', null, withIdent, ' Also read the identification of each unit found')) : null,
  rtu ? [
    h('fieldset', { class: 'perms' }, h('legend', null, 'Baud rates to try (all unchecked: the line\'s own)'), bauds),
    h('fieldset', { class: 'perms' }, h('legend', null, 'Parities to try (all unchecked: the line\'s own)'), parities),
  ] : null,
  start, ' ', cancel);
  return h('section', { 'aria-labelledby': 'scan-h' }, h('h2', { id: 'scan-h' }, 'Scan for units'),
    h('p', { class: 'muted' }, 'Asks each unit of the range one read; any answer, an exception too, means the unit is there. At most 10 requests a second.'),
    form, bar, state, found);
}

/** The line's last exchanges, newest first, polled every second while the view is open and visible. */
function logSection(base: string, stops: (() => void)[]): HTMLElement {
  const frames = h('input', { type: 'checkbox' });
  const body = h('div', null, h('p', { class: 'muted' }, 'Loading…'));
  const describe = (e: LogEntry) => e.result === 'exception' ? `exception ${e.exception ?? ''}`.trim() : e.result === 'error' ? `error: ${e.error ?? ''}` : e.result;
  const draw = (entries: LogEntry[]) => {
    const raw = frames.checked;
    const rows = [...entries].reverse().map((e) => h('tr', { 'data-result': e.result },
      h('td', null, new Date(e.time).toLocaleTimeString(undefined, { hour12: false }) + `.${String(e.time % 1000).padStart(3, '0')}`),
      h('td', null, e.unit), h('td', null, `${e.function}${FUNCTIONS[e.function] ? ` ${FUNCTIONS[e.function]}` : ''}`),
      h('td', null, e.address ?? '—'), h('td', null, e.count ?? '—'),
      h('td', { class: e.result === 'ok' ? 'ok' : 'error' }, describe(e)), h('td', null, `${e.latencyMs} ms`),
      raw ? [h('td', { class: 'frame' }, e.request ?? ''), h('td', { class: 'frame' }, e.response ?? '')] : null));
    replace(body, entries.length === 0 ? h('p', { class: 'empty' }, 'No requests on this line yet.')
      : table(['Time', 'Unit', 'Function', 'Address', 'Count', 'Result', 'Latency', ...(raw ? ['Request PDU', 'Response PDU'] : [])], rows, 'Request log, newest first'));
  };
  stops.push(every(1000, async () => {
    try {
      draw(await get<LogEntry[]>(`${base}/_log${frames.checked ? '?frames=true' : ''}`));
    } catch (e) {
      replace(body, problem(e, 'rest.assets'));
      throw e;
    }
  }));
  return h('section', { 'aria-labelledby': 'log-h' }, h('h2', { id: 'log-h' }, 'Request log'),
    h('p', { class: 'muted' }, 'The last 200 exchanges on the line, every attempt; refreshed every second while this page is visible. '),
    h('div', { class: 'field check' }, h('label', null, frames, ' Show raw frames (PDUs in hex)')), body);
}
