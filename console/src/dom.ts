// A few lines of DOM building: elements from tag, attributes and children. Text is always set as
// text (never parsed as HTML), so values from the gateway cannot inject markup.

export type Child = Node | string | number | false | null | undefined | Child[];
export type Attrs = Record<string, unknown>;

const PROPS = new Set(['value', 'checked', 'disabled', 'hidden', 'max', 'min', 'step', 'required', 'type', 'name', 'selected', 'rows']);

export function append(el: Node, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.appendChild(typeof c === 'object' ? c : document.createTextNode(String(c)));
  }
}

export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs?: Attrs | null, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v as EventListener);
    else if (k === 'class') el.className = String(v);
    else if (PROPS.has(k)) (el as unknown as Record<string, unknown>)[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

let seq = 0;
export const uid = (p: string): string => `${p}-${++seq}`;

/** A labelled control with an optional hint (announced with it). */
export function field(label: string, input: HTMLElement, hint?: Child): HTMLDivElement {
  input.id ||= uid('f');
  const hintEl = hint ? h('small', { id: uid('h') }, hint) : null;
  if (hintEl) input.setAttribute('aria-describedby', hintEl.id);
  return h('div', { class: 'field' }, h('label', { for: input.id }, label), input, hintEl);
}

export function replace(el: Element, ...children: Child[]): void {
  el.textContent = '';
  append(el, children);
}

/**
 * Runs `fn` now and then every `ms` while the page is visible, until the returned stop is called.
 * `fn` is given `live()`: false once stopped, for a run that asks for more than one thing to stop
 * between its requests when its view is left.
 */
export function every(ms: number, fn: (live: () => boolean) => Promise<void> | void): () => void {
  let stopped = false;
  let timer: number | undefined;
  const live = () => !stopped;
  const tick = async () => {
    if (stopped) return;
    if (!document.hidden) {
      try {
        await fn(live);
      } catch (e) {
        // The view shows its own errors; a refusal (403) will not change by asking again.
        if ((e as { status?: number }).status === 403) stopped = true;
      }
    }
    if (!stopped) timer = window.setTimeout(tick, ms);
  };
  void tick();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

export const fmtBytes = (n: number | undefined): string => {
  if (n === undefined || !Number.isFinite(n)) return '—';
  const u = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) [n, i] = [n / 1024, i + 1];
  return `${n.toFixed(i === 0 ? 0 : 1)} ${u[i]}`;
};

export const fmtDuration = (ms: number): string => {
  const s = Math.floor(ms / 1000);
  const d = Math.floor(s / 86400);
  const hh = Math.floor((s % 86400) / 3600);
  const mm = Math.floor((s % 3600) / 60);
  return `${d > 0 ? `${d} d ` : ''}${hh} h ${mm} min ${s % 60} s`;
};

export const fmtTime = (t: number | string | undefined): string => (t === undefined ? '—' : new Date(t).toLocaleString());

/**
 * A FLOAT or DOUBLE reading as a technician reads it: six significant digits, but the whole part is
 * never rounded away (`-23.726753928870977` → `-23.7268`, `1234567.891` → `1234568`). The exact
 * value is shown in the cell's title and is in the REST answer.
 */
export const fmtReading = (v: number): string => {
  if (!Number.isFinite(v) || Number.isInteger(v)) return String(v);
  const abs = Math.abs(v);
  const whole = abs < 1 ? 0 : Math.floor(Math.log10(abs)) + 1;
  return String(Number(abs < 1 ? v.toPrecision(6) : v.toFixed(Math.max(0, 6 - whole))));
};
