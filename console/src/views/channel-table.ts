// An asset's channels as a table (docs/console.md "Editing an asset's channels"): one row per
// channel, the properties a technician sets as columns, the rest in the row's details. Everything
// comes from the asset's definition (configuration/v2): labels, descriptions, units, defaults,
// types, bounds and options. Rows are plain objects; the table shows a page of them, built in one
// DocumentFragment from cloned cell templates, and one listener per event type on the table reads
// which row and key a control belongs to from data attributes (no listener per cell).

import { h, replace, uid } from '../dom';

export interface Ad { id: string; name?: string; description?: string; type: string; cardinality?: number; min?: string; max?: string; defaultValue?: string; isRequired?: boolean; option?: { label: string; value: string }[] }
export interface Prop { type: string; value?: unknown }

/** The unit a definition's description ends with (`… Unit: ms.`), and the description without it. */
export function unitOf(ad: Ad): { unit?: string; text?: string } {
  const m = ad.description ? /\s*Unit: (.+)\.$/.exec(ad.description) : null;
  return m ? { unit: m[1], text: ad.description!.slice(0, m.index) } : { text: ad.description };
}

export const labelOf = (ad: Ad): string => {
  const u = unitOf(ad).unit;
  return `${ad.name ?? ad.id}${u ? ` (${u})` : ''}`;
};

const INTS = /^(INTEGER|LONG|SHORT|BYTE)$/;
const NUMS = /^(INTEGER|LONG|SHORT|BYTE|DOUBLE|FLOAT)$/;
// Kura's channel name rule (docs/configuration-v2.md): not empty, no `#`, `/`, `+`, `,` or space.
const NAME = /^[^#/+, ]+$/;

/** Driver keys kept in a row's details rather than as columns: seldom set when commissioning. */
const DETAIL = new Set(['array.data.length', 'scale.on.write', 'resource.trigger', 'resource.active.low', 'delay', 'deadband']);
const LEAD = ['+name', '+enabled', '+type', '+value.type'];
const TAIL = ['+unit', '+scale', '+offset'];
/** Rows shown at once; a larger asset is paged (a 12,000-channel table would take seconds to lay out). */
export const PAGE = 1000;

interface Row {
  /** Stable while the table lives: the `data-i` of its table rows. */
  id: number;
  /** The channel's name when loaded; undefined for a new row. */
  orig?: string;
  values: Record<string, string | boolean>;
  /** The loaded values as sent back unchanged (JSON of the property), by key. */
  initial: Record<string, string>;
  types: Record<string, string>;
  errors: Record<string, string>;
  selected: boolean;
  open: boolean;
}

/** The text of a value in its control: numbers and strings as text, booleans as booleans. */
const shown = (ad: Ad, v: unknown): string | boolean => (ad.type === 'BOOLEAN' ? v === true || v === 'true' : v === undefined || v === null ? '' : String(v));

export class ChannelTable {
  readonly el: HTMLElement;
  readonly columns: Ad[];
  readonly details: Ad[];
  private readonly byId = new Map<string, Ad>();
  private rows: Row[] = [];
  private nextId = 0;
  private rowTemplate?: HTMLTableRowElement;
  private page = 0;
  private readonly tbody = h('tbody');
  private readonly pager = h('p', { class: 'pager' });
  private readonly templates = new Map<string, HTMLElement>();
  private readonly all = h('input', { type: 'checkbox', 'aria-label': 'Select all channels of this page' });
  private readonly bulkKey: HTMLSelectElement;
  private bulkValue: HTMLInputElement;
  private readonly bulkBox = h('span', { class: 'bulk-value' });
  readonly note = h('p', { role: 'status', class: 'muted' });
  /** How many rows are selected, and beyond a page the choice to select every row of the asset. */
  private readonly selInfo = h('span', { class: 'sel-info' });
  private readonly lists = h('div', { hidden: true });

  constructor(template: Ad[], private readonly props: Record<string, Prop>, names: string[]) {
    for (const a of template) if (!this.byId.has(a.id)) this.byId.set(a.id, a);
    const ids = [...this.byId.keys()].filter((k) => k !== '+name');
    const driver = ids.filter((k) => !k.startsWith('+') && !DETAIL.has(k));
    const cols = [...LEAD, ...driver, ...TAIL].filter((k) => this.byId.has(k));
    this.columns = cols.map((k) => this.byId.get(k)!);
    this.details = ids.filter((k) => !cols.includes(k)).map((k) => this.byId.get(k)!);
    for (const ch of names) this.rows.push(this.loaded(ch));
    this.bulkKey = h('select', { 'aria-label': 'Column to set' }, this.columns.filter((a) => a.id !== '+name').map((a) => h('option', { value: a.id }, labelOf(a))));
    const bulkControl = (ad: Ad) => {
      const c = this.control(ad);
      c.setAttribute('aria-label', 'Value to set');
      if (c.dataset.list) c.setAttribute('list', c.dataset.list);
      return c;
    };
    this.bulkValue = bulkControl(this.columns.find((a) => a.id !== '+name') ?? this.columns[0]);
    this.bulkBox.append(this.bulkValue);
    this.bulkKey.addEventListener('change', () => {
      this.bulkValue = bulkControl(this.byId.get(this.bulkKey.value)!);
      this.bulkBox.replaceChildren(this.bulkValue);
    });

    const head = h('tr', null, h('th', { scope: 'col', class: 'sel' }, this.all), this.columns.map((a) => h('th', { scope: 'col', title: unitOf(a).text ?? '' }, labelOf(a))), h('th', { scope: 'col' }, h('span', { class: 'sr' }, 'Actions')));
    // Fixed column widths: the browser lays out 500 rows without measuring every cell first.
    const widths = [2.5, ...this.columns.map((a) => (a.id === '+name' ? 8 : a.type === 'BOOLEAN' ? 4.5 : a.option?.length ? 10 : NUMS.test(a.type) ? 5 : 6)), 15];
    const table = h('table', { class: 'channels' }, h('caption', { class: 'sr' }, 'Channels'),
      h('colgroup', null, widths.map((w) => h('col', { width: `${w * 16}` }))), h('thead', null, head), this.tbody);
    table.style.width = `${widths.reduce((a, b) => a + b, 0)}rem`;
    table.addEventListener('input', (e) => this.edited(e.target as HTMLElement));
    table.addEventListener('change', (e) => {
      const el = e.target as HTMLElement;
      this.edited(el);
      // A renamed channel: its controls' labels name it anew.
      const at = el.dataset.k === '+name' ? this.rowOf(el) : undefined;
      if (at) this.redraw(at.r);
    });
    table.addEventListener('click', (e) => this.clicked(e.target as HTMLElement));
    table.addEventListener('focusin', (e) => {
      const c = e.target as HTMLElement;
      if (c instanceof HTMLTableCellElement && c.dataset.k) this.activate(c);
      else if (c.dataset.list && !c.hasAttribute('list')) c.setAttribute('list', c.dataset.list);
    });
    table.addEventListener('focusout', (e) => {
      const c = e.target as HTMLInputElement;
      const td = c.parentElement;
      if (td instanceof HTMLTableCellElement && td.classList.contains('v') && c.dataset.k) this.deactivate(td, c);
    });
    this.all.addEventListener('change', () => {
      for (const r of this.shownRows()) r.selected = this.all.checked;
      for (const c of this.tbody.querySelectorAll<HTMLInputElement>('input[data-k="#sel"]')) c.checked = this.all.checked;
      this.selection();
    });
    const help = h('details', { class: 'help' }, h('summary', null, 'What the columns mean'),
      h('dl', null, [...this.columns, ...this.details].map((a) => {
        const { unit, text } = unitOf(a);
        return [h('dt', null, a.name ?? a.id), h('dd', null, text ?? '', unit ? ` Unit: ${unit}.` : '', a.defaultValue !== undefined && a.defaultValue !== '' ? ` Default: ${a.defaultValue}.` : '', ` Property: ${a.id}.`)];
      })));
    const bar = h('div', { class: 'toolbar' },
      h('button', { type: 'button', class: 'secondary', 'data-act': 'add' }, 'Add a channel'), ' ',
      h('span', { class: 'bulk' }, 'Selected rows: set ', this.bulkKey, ' to ', this.bulkBox, ' ', h('button', { type: 'button', class: 'secondary', 'data-act': 'bulk' }, 'Apply to selected'), ' ',
        h('button', { type: 'button', class: 'danger', 'data-act': 'remove-selected' }, 'Remove selected')), ' ', this.selInfo);
    bar.addEventListener('click', (e) => this.clicked(e.target as HTMLElement));
    this.pager.addEventListener('click', (e) => this.clicked(e.target as HTMLElement));
    this.el = h('section', { 'aria-labelledby': 'ch-h', class: 'channel-editor' }, h('h2', { id: 'ch-h' }, 'Channels'), help, bar, this.note, this.pager, h('div', { class: 'scroll table-box' }, table), this.lists);
    this.render();
  }

  get count(): number {
    return this.rows.length;
  }

  private loaded(ch: string): Row {
    const r: Row = { id: this.nextId++, orig: ch, values: {}, initial: {}, types: {}, errors: {}, selected: false, open: false };
    for (const ad of this.byId.values()) {
      const p = ad.id === '+name' ? { type: 'STRING', value: ch } : this.props[`${ch}#${ad.id}`];
      r.values[ad.id] = shown(ad, p?.value ?? (ad.id === '+enabled' ? true : undefined));
      if (p) r.types[ad.id] = p.type;
    }
    for (const k of Object.keys(r.values)) r.initial[k] = JSON.stringify(this.prop(r, k) ?? null);
    return r;
  }

  /** A new row: the definition's defaults (a default outside the AD's bounds means "unset"). */
  private fresh(): Row {
    const r: Row = { id: this.nextId++, values: {}, initial: {}, types: {}, errors: {}, selected: false, open: false };
    for (const ad of this.byId.values()) {
      let d: string | undefined = ad.defaultValue;
      if (d !== undefined && NUMS.test(ad.type) && ((ad.min !== undefined && Number(d) < Number(ad.min)) || (ad.max !== undefined && Number(d) > Number(ad.max)))) d = undefined;
      r.values[ad.id] = shown(ad, d);
    }
    r.values['+name'] = this.freeName('Channel-');
    return r;
  }

  private freeName(prefix: string, from = this.rows.length + 1): string {
    const taken = new Set(this.rows.map((r) => r.values['+name']));
    let i = from;
    while (taken.has(`${prefix}${i}`)) i++;
    return `${prefix}${i}`;
  }

  private shownRows(): Row[] {
    return this.rows.slice(this.page * PAGE, (this.page + 1) * PAGE);
  }

  /** The control of a key, cloned from its template: a checkbox, a select of the options, or an input. */
  private control(ad: Ad): HTMLInputElement {
    let t = this.templates.get(ad.id);
    if (!t) {
      if (ad.type === 'BOOLEAN') t = h('input', { type: 'checkbox' });
      else if (ad.option?.length) {
        // A text input offering the options from one shared list: lighter than a select per cell
        // (500 rows × 4 option columns), and a value outside the options is shown and flagged.
        const list = h('datalist', { id: uid('dl') }, ad.option.map((o) => h('option', { value: o.value }, o.label)));
        this.lists.append(list);
        // The list is attached when the control is focused: a list on every cell costs Chromium a
        // shadow tree per input at render time.
        t = h('input', { type: 'text', 'data-list': list.id, size: 10, autocomplete: 'off', spellcheck: 'false', autocapitalize: 'none' });
      }
      else if (NUMS.test(ad.type)) t = h('input', { type: 'text', inputmode: INTS.test(ad.type) ? 'numeric' : 'decimal', size: 6, autocomplete: 'off' });
      else t = h('input', { type: 'text', size: ad.id === '+name' ? 14 : 10, autocomplete: 'off', spellcheck: 'false', autocapitalize: 'none' });
      t.dataset.k = ad.id;
      this.templates.set(ad.id, t);
    }
    return t.cloneNode(true) as HTMLInputElement;
  }

  /** A cell with its control (the details of a row: a few, always as controls). */
  private cell(r: Row, ad: Ad, name: string): HTMLElement {
    const td = document.createElement('td');
    td.append(this.control(ad));
    this.fill(td, r, ad, name);
    return td;
  }

  /**
   * Puts row `r`'s value of `ad` (and its message) into cell `td`. A checkbox is a control; any other
   * value is shown as the cell's text, and becomes an input when the cell is focused ({@link activate}):
   * a text input costs Chromium a shadow tree and its layout, and 500 rows have 5,000 of them.
   */
  private fill(td: HTMLElement, r: Row, ad: Ad, name: string): void {
    const v = r.values[ad.id];
    const label = `${ad.name ?? ad.id} of ${name}`;
    const err = r.errors[ad.id];
    const c = td.firstChild as HTMLInputElement | null;
    if (c instanceof HTMLInputElement) {
      if (c.type === 'checkbox') c.checked = v === true;
      else c.value = String(v);
      c.setAttribute('aria-label', label);
      if (err) c.setAttribute('aria-invalid', 'true');
    } else {
      td.textContent = String(v);
      td.setAttribute('aria-label', label);
      if (err) td.setAttribute('aria-invalid', 'true');
    }
    if (err) td.append(h('small', { class: 'cell-error', role: 'alert' }, err));
  }

  /** A text cell becomes its input, focused, with the cell's label and message. */
  private activate(td: HTMLTableCellElement): void {
    const at = this.rowOf(td);
    const ad = this.byId.get(td.dataset.k!);
    if (!at || !ad) return;
    const c = this.control(ad);
    c.value = String(at.r.values[ad.id]);
    c.setAttribute('aria-label', td.getAttribute('aria-label') ?? '');
    if (c.dataset.list) c.setAttribute('list', c.dataset.list);
    const err = td.querySelector('small.cell-error');
    if (err) c.setAttribute('aria-invalid', 'true');
    td.removeAttribute('aria-label');
    td.removeAttribute('aria-invalid');
    td.removeAttribute('tabindex');
    td.replaceChildren(c, ...(err ? [err] : []));
    c.focus();
  }

  /** Back to text when the input loses the focus (its value is in the row already). */
  private deactivate(td: HTMLTableCellElement, c: HTMLInputElement): void {
    const at = this.rowOf(td);
    if (!at) return;
    const label = c.getAttribute('aria-label') ?? '';
    const err = at.r.errors[c.dataset.k!];
    td.textContent = String(at.r.values[c.dataset.k!]);
    td.setAttribute('aria-label', label);
    td.tabIndex = 0;
    if (err) {
      td.setAttribute('aria-invalid', 'true');
      td.append(h('small', { class: 'cell-error', role: 'alert' }, err));
    }
  }

  /** A row's cells without values, cloned for every row (one deep clone instead of a node at a time). */
  private template(): HTMLTableRowElement {
    if (this.rowTemplate) return this.rowTemplate;
    const tr = document.createElement('tr');
    const sel = h('input', { type: 'checkbox' });
    sel.dataset.k = '#sel';
    tr.append(h('td', { class: 'sel' }, sel));
    for (const ad of this.columns) {
      if (ad.type === 'BOOLEAN') tr.append(h('td', null, this.control(ad)));
      // An empty cell shows the default that applies, greyed (style.css).
      else tr.append(h('td', { class: 'v', 'data-k': ad.id, tabindex: 0, 'data-default': ad.defaultValue || null }));
    }
    tr.append(h('td', { class: 'actions' },
      h('button', { type: 'button', class: 'secondary', 'data-act': 'details', 'aria-expanded': 'false' }, 'More'),
      h('button', { type: 'button', class: 'secondary', 'data-act': 'dup' }, 'Duplicate'),
      h('button', { type: 'button', class: 'danger', 'data-act': 'del' }, 'Remove')));
    return (this.rowTemplate = tr);
  }

  private rowEl(r: Row): DocumentFragment {
    const f = document.createDocumentFragment();
    const name = String(r.values['+name']);
    const tr = this.template().cloneNode(true) as HTMLTableRowElement;
    tr.dataset.i = String(r.id);
    if (r.orig === undefined) tr.className = 'new';
    const tds = tr.children;
    const sel = tds[0].firstChild as HTMLInputElement;
    sel.checked = r.selected;
    sel.setAttribute('aria-label', `Select ${name}`);
    this.columns.forEach((ad, j) => this.fill(tds[j + 1] as HTMLElement, r, ad, name));
    const actions = tds[tds.length - 1];
    const [more, dup, del] = actions.children;
    more.setAttribute('aria-expanded', String(r.open));
    more.setAttribute('aria-label', `Details of ${name}`);
    dup.setAttribute('aria-label', `Duplicate ${name}`);
    del.setAttribute('aria-label', `Remove ${name}`);
    if (r.errors['#row']) actions.append(h('small', { class: 'cell-error', role: 'alert' }, r.errors['#row']));
    f.append(tr);
    if (r.open) {
      const d = document.createElement('tr');
      d.className = 'detail';
      d.dataset.i = String(r.id);
      const box = h('td', { colspan: this.columns.length + 2 });
      for (const ad of this.details) {
        const td = this.cell(r, ad, name);
        const id = uid('dc');
        td.firstElementChild!.id = id;
        box.append(h('div', { class: 'field' }, h('label', { for: id }, labelOf(ad)), ...td.childNodes, h('small', null, unitOf(ad).text ?? '', ad.defaultValue ? ` Default: ${ad.defaultValue}.` : '')));
      }
      d.append(box);
      f.append(d);
    }
    return f;
  }

  render(): void {
    const pages = Math.max(1, Math.ceil(this.rows.length / PAGE));
    this.page = Math.min(this.page, pages - 1);
    const f = document.createDocumentFragment();
    for (const r of this.shownRows()) f.append(this.rowEl(r));
    this.tbody.replaceChildren(f);
    const shown = this.shownRows();
    this.all.checked = shown.length > 0 && shown.every((r) => r.selected);
    this.counts();
  }

  /**
   * The selection's count; with more than a page, the head's box ticks only the page's rows (it
   * says so), and "Select all N channels" ticks every row of the asset, on every page.
   */
  private selection(): void {
    const n = this.rows.reduce((a, r) => a + (r.selected ? 1 : 0), 0);
    const paged = this.rows.length > PAGE;
    this.all.setAttribute('aria-label', paged ? `Select the ${this.shownRows().length} rows of this page` : 'Select all channels');
    replace(this.selInfo, n ? `${n} of ${this.rows.length} selected` : '',
      paged && n < this.rows.length ? [' ', h('button', { type: 'button', class: 'secondary', 'data-act': 'select-all' }, `Select all ${this.rows.length} channels`)] : '',
      n ? [' ', h('button', { type: 'button', class: 'secondary', 'data-act': 'select-none' }, 'Clear selection')] : '');
  }

  /** The count of channels, and the page buttons (first, previous, next, last) when there is more than a page. */
  private counts(): void {
    this.selection();
    const pages = Math.max(1, Math.ceil(this.rows.length / PAGE));
    const from = this.page * PAGE;
    replace(this.pager, `${this.rows.length} channel${this.rows.length === 1 ? '' : 's'}`,
      pages > 1 ? [` · rows ${from + 1}–${Math.min(from + PAGE, this.rows.length)} `,
        h('button', { type: 'button', class: 'secondary', 'data-act': 'first', disabled: this.page === 0 }, 'First rows'), ' ',
        h('button', { type: 'button', class: 'secondary', 'data-act': 'prev', disabled: this.page === 0 }, 'Previous rows'), ' ',
        h('button', { type: 'button', class: 'secondary', 'data-act': 'next', disabled: this.page === pages - 1 }, 'Next rows'), ' ',
        h('button', { type: 'button', class: 'secondary', 'data-act': 'last', disabled: this.page === pages - 1 }, 'Last rows')] : '');
  }

  private rowOf(el: HTMLElement): { r: Row; i: number } | undefined {
    const id = el.closest('tr')?.dataset.i;
    const i = id === undefined ? -1 : this.rows.findIndex((r) => r.id === Number(id));
    return i < 0 ? undefined : { r: this.rows[i], i };
  }

  /** The table rows of row `r` on the page (its row, and its details when open). */
  private trsOf(r: Row): HTMLTableRowElement[] {
    return [...this.tbody.querySelectorAll<HTMLTableRowElement>(`tr[data-i="${r.id}"]`)];
  }

  /** Row `r` drawn again in place (after its details opened or closed, or new messages). */
  private redraw(r: Row): void {
    const old = this.trsOf(r);
    if (!old.length) return;
    old[0].before(this.rowEl(r));
    for (const x of old) x.remove();
  }

  private onPage(i: number): boolean {
    return Math.floor(i / PAGE) === this.page;
  }

  private edited(el: HTMLElement): void {
    const k = el.dataset.k;
    const at = k && this.rowOf(el);
    if (!at) return;
    const c = el as HTMLInputElement;
    if (k === '#sel') {
      at.r.selected = c.checked;
      return this.selection();
    }
    at.r.values[k] = c.type === 'checkbox' ? c.checked : c.value;
    const ad = this.byId.get(k)!;
    const why = this.check(ad, at.r.values[k], at.r);
    if (why) at.r.errors[k] = why;
    else delete at.r.errors[k];
    this.mark(c, why);
  }

  /** Sets or clears the message under a control, without rebuilding the row. */
  private mark(c: HTMLElement, why: string | undefined): void {
    const td = c.parentElement!;
    let small = td.querySelector('small.cell-error');
    if (!why) {
      c.removeAttribute('aria-invalid');
      small?.remove();
      return;
    }
    c.setAttribute('aria-invalid', 'true');
    if (!small) td.append((small = h('small', { class: 'cell-error', role: 'alert' })));
    small.textContent = why;
  }

  /** The client's checks from the definition: required, type, bounds, options; names unique. */
  check(ad: Ad, v: string | boolean, r: Row): string | undefined {
    if (typeof v === 'boolean') return undefined;
    const s = v.trim();
    if (s === '') return ad.isRequired ? 'required' : undefined;
    if (ad.id === '+name') {
      if (!NAME.test(s)) return 'no space, #, /, + or , in a channel name';
      if (this.rows.some((o) => o !== r && o.values['+name'] === s)) return 'another channel has this name';
    }
    if (NUMS.test(ad.type)) {
      const n = Number(s);
      if (!Number.isFinite(n)) return `must be a number, got ${JSON.stringify(s)}`;
      if (INTS.test(ad.type) && !Number.isInteger(n)) return `must be an integer, got ${JSON.stringify(s)}`;
      if ((ad.min !== undefined && n < Number(ad.min)) || (ad.max !== undefined && n > Number(ad.max))) return `${s} is out of range (${ad.min ?? '…'}..${ad.max ?? '…'})`;
    }
    if (ad.option?.length && !ad.option.some((o) => o.value === s)) return `unknown value ${JSON.stringify(s)} (expected one of ${ad.option.map((o) => o.value).join(', ')})`;
    return undefined;
  }

  private clicked(el: HTMLElement): void {
    const b = el.closest<HTMLElement>('[data-act]');
    if (!b) return;
    const act = b.dataset.act;
    const at = this.rowOf(b);
    if (act === 'add') {
      const r = this.fresh();
      this.rows.push(r);
      const i = this.rows.length - 1;
      if (this.onPage(i)) {
        this.tbody.append(this.rowEl(r));
        this.counts();
      } else {
        this.page = Math.floor(i / PAGE);
        this.render();
      }
      this.focusRow(r);
    } else if (act === 'dup' && at) {
      const copy: Row = { id: this.nextId++, values: { ...at.r.values }, initial: {}, types: { ...at.r.types }, errors: {}, selected: false, open: false };
      copy.values['+name'] = this.freeName(`${at.r.values['+name']}-`, 2);
      this.rows.splice(at.i + 1, 0, copy);
      const trs = this.trsOf(at.r);
      trs[trs.length - 1].after(this.rowEl(copy));
      this.counts();
      this.focusRow(copy);
    } else if (act === 'del' && at) {
      this.rows.splice(at.i, 1);
      for (const x of this.trsOf(at.r)) x.remove();
      this.counts();
      this.note.textContent = `Channel ${at.r.values['+name']} removed (saved with the asset).`;
    } else if (act === 'details' && at) {
      at.r.open = !at.r.open;
      this.redraw(at.r);
    } else if (act === 'select-all' || act === 'select-none') {
      const on = act === 'select-all';
      for (const r of this.rows) r.selected = on;
      this.all.checked = on;
      for (const c of this.tbody.querySelectorAll<HTMLInputElement>('input[data-k="#sel"]')) c.checked = on;
      this.selection();
      this.note.textContent = on ? `All ${this.rows.length} channels selected, on every page.` : 'No channel selected.';
    } else if (act === 'remove-selected') {
      const gone = this.rows.filter((r) => r.selected);
      const paged = this.rows.length > PAGE;
      this.rows = this.rows.filter((r) => !r.selected);
      // Beyond a page, the rows after the removed ones move up onto this page: drawn again.
      if (paged) this.render();
      else {
        for (const r of gone) for (const x of this.trsOf(r)) x.remove();
        this.counts();
      }
      this.note.textContent = `${gone.length} channel${gone.length === 1 ? '' : 's'} removed (saved with the asset).`;
    } else if (act === 'bulk') {
      const k = this.bulkKey.value;
      const ad = this.byId.get(k)!;
      const c = this.bulkValue;
      const v = c.type === 'checkbox' ? c.checked : c.value;
      const picked = this.rows.filter((r) => r.selected);
      const why = picked.length ? this.check(ad, v, picked[0]) : 'select rows first';
      if (why) return void (this.note.textContent = `${ad.name ?? ad.id}: ${why}`);
      const j = this.columns.indexOf(ad);
      const shown = new Map<string, HTMLTableRowElement>();
      if (j >= 0) for (const tr of this.tbody.querySelectorAll<HTMLTableRowElement>('tr:not(.detail)')) shown.set(tr.dataset.i!, tr);
      for (const r of picked) {
        r.values[k] = v;
        delete r.errors[k];
        const tr = shown.get(String(r.id));
        if (!tr) {
          if (r.open) this.redraw(r);
          continue;
        }
        const td = tr.children[j + 1] as HTMLElement;
        const x = td.firstChild;
        if (x instanceof HTMLInputElement) {
          if (x.type === 'checkbox') x.checked = v === true;
          else x.value = String(v);
          this.mark(x, undefined);
        } else {
          td.removeAttribute('aria-invalid');
          this.fill(td, r, ad, String(r.values['+name']));
        }
      }
      this.note.textContent = `${ad.name ?? ad.id} set on ${picked.length} channel${picked.length === 1 ? '' : 's'}.`;
    } else if (act === 'prev' || act === 'next') {
      this.page += act === 'next' ? 1 : -1;
      this.render();
    } else if (act === 'first' || act === 'last') {
      // render() bounds the page to the last one.
      this.page = act === 'first' ? 0 : Number.MAX_SAFE_INTEGER;
      this.render();
    }
  }

  private focusRow(r: Row): void {
    const c = this.tbody.querySelector<HTMLElement>(`tr[data-i="${r.id}"] [data-k="+name"]`);
    c?.focus();
    c?.scrollIntoView({ block: 'nearest', inline: 'nearest' });
  }

  /** A row's property of key `k` as configuration/v2 takes it, or undefined when empty. */
  private prop(r: Row, k: string): Prop | undefined {
    const ad = this.byId.get(k)!;
    const v = r.values[k];
    if (typeof v === 'boolean') return { type: 'BOOLEAN', value: v };
    const s = v.trim();
    if (s === '') return undefined;
    const type = r.types[k] && !(NUMS.test(ad.type) && !NUMS.test(r.types[k])) ? r.types[k] : ad.type === 'PASSWORD' ? 'STRING' : ad.type;
    if (NUMS.test(type)) {
      const n = Number(s);
      return { type, value: INTS.test(type) && !Number.isSafeInteger(n) ? s : n };
    }
    if (type === 'BOOLEAN') return { type, value: s === 'true' };
    return { type, value: s };
  }

  /**
   * The properties to send: changed values of kept channels; every value of a new, duplicated or
   * renamed channel; for a removed or renamed channel each of its stored properties without a value
   * (configuration/v2 removes it). Undefined, with the messages shown, when a client check fails.
   */
  changes(): Record<string, Prop> | undefined {
    const out: Record<string, Prop> = {};
    let bad = -1;
    this.rows.forEach((r, i) => {
      for (const [k, v] of Object.entries(r.values)) {
        const why = this.check(this.byId.get(k)!, v, r);
        if (why) r.errors[k] = why;
        else delete r.errors[k];
      }
      if (bad < 0 && Object.keys(r.errors).length) bad = i;
    });
    if (bad >= 0) {
      this.showRow(bad);
      return undefined;
    }
    const kept = new Set(this.rows.map((r) => r.orig).filter((n) => n !== undefined));
    const gone = new Set<string>();
    for (const r of this.rows) if (r.orig !== undefined && r.values['+name'] !== r.orig) gone.add(r.orig);
    for (const k of Object.keys(this.props)) {
      const ch = k.slice(0, k.indexOf('#'));
      if (k.includes('#') && !k.endsWith('#+name') && (!kept.has(ch) || gone.has(ch))) out[k] = { type: this.props[k].type };
    }
    for (const r of this.rows) {
      const name = String(r.values['+name']).trim();
      const whole = r.orig === undefined || r.orig !== name;
      for (const k of Object.keys(r.values)) {
        if (k === '+name') continue;
        const p = this.prop(r, k);
        if (!whole && JSON.stringify(p ?? null) === r.initial[k]) continue;
        if (p) out[`${name}#${k}`] = p;
        else if (!whole) out[`${name}#${k}`] = { type: r.types[k] ?? this.byId.get(k)!.type };
      }
    }
    return out;
  }

  /**
   * After configuration/v2 applied `sent` (what {@link changes} gave): the table's rows are the
   * asset's channels as stored now, without reading them again.
   */
  saved(sent: Record<string, Prop>): void {
    for (const [k, p] of Object.entries(sent)) {
      if (!k.includes('#')) continue;
      if (p.value === undefined) delete this.props[k];
      else this.props[k] = p;
    }
    for (const r of this.rows) {
      r.orig = String(r.values['+name']).trim();
      r.errors = {};
      for (const k of Object.keys(r.values)) {
        const p = this.prop(r, k);
        r.initial[k] = JSON.stringify(p ?? null);
        if (p) r.types[k] = p.type;
      }
    }
    for (const tr of this.tbody.querySelectorAll('tr.new')) tr.classList.remove('new');
    for (const x of this.tbody.querySelectorAll('.cell-error')) x.remove();
    for (const x of this.tbody.querySelectorAll('[aria-invalid]')) x.removeAttribute('aria-invalid');
    this.note.textContent = '';
  }

  /**
   * The server's refusal on its cell: each `Invalid configuration of <pid>, property <ch>#<key>: <problem>`
   * goes to channel `<ch>`'s cell (or its row, for a key in the details). The rest is returned.
   */
  serverErrors(message: string): string[] {
    for (const r of this.rows) r.errors = {};
    const rest: string[] = [];
    let first = -1;
    for (const part of message.split('; ')) {
      const m = /property ([^#\s]+)#(\S+?): (.*)$/.exec(part);
      const i = m ? this.rows.findIndex((r) => r.values['+name'] === m[1]) : -1;
      if (!m || i < 0) {
        rest.push(part);
        continue;
      }
      const r = this.rows[i];
      const key = this.byId.has(m[2]) ? m[2] : '#row';
      if (this.details.some((a) => a.id === key)) r.open = true;
      r.errors[key] = key === '#row' ? `${m[2]}: ${m[3]}` : m[3];
      if (first < 0) first = i;
    }
    if (first >= 0) this.showRow(first);
    else this.render();
    return rest;
  }

  /** Shows the page of row `i` with the messages, and focuses its first marked control. */
  private showRow(i: number): void {
    this.page = Math.floor(i / PAGE);
    this.render();
    const id = this.rows[i].id;
    const c = this.tbody.querySelector<HTMLElement>(`tr[data-i="${id}"] [aria-invalid=true]`) ?? this.tbody.querySelector<HTMLElement>(`tr[data-i="${id}"] .cell-error`);
    c?.focus();
    c?.scrollIntoView({ block: 'nearest', inline: 'nearest' });
  }
}
