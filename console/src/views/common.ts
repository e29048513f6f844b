import { ApiError } from '../api';
import { h } from '../dom';

/** Who is signed in (session/v1 currentIdentity). */
export interface Identity {
  name: string;
  permissions: string[];
  passwordChangeNeeded: boolean;
}

/** A view draws into `root` and returns what stops its refreshing. */
export type View = (root: HTMLElement, args: string[], me: Identity) => (() => void) | void;

export const allowed = (id: Identity, permission: string): boolean => id.permissions.includes('kura.admin') || id.permissions.includes(permission);

/** An error as the view shows it: a 403 names the permission the identity lacks. */
export function problem(e: unknown, permission?: string): HTMLElement {
  const msg = e instanceof ApiError && e.status === 403
    ? `Access denied: your identity lacks the permission this view needs${permission ? ` (${permission})` : ''}. Ask an administrator to grant it.`
    : (e as Error).message;
  return h('p', { class: 'error', role: 'alert' }, msg);
}

/** A table; at phone width each row becomes a card whose cells are labelled with their column. */
export function table(head: string[], rows: HTMLElement[], caption: string): HTMLElement {
  for (const r of rows) [...r.children].forEach((c, i) => head[i] && c.setAttribute('data-label', head[i]));
  return h('div', { class: 'scroll' }, h('table', null, h('caption', { class: 'sr' }, caption), h('thead', null, h('tr', null, head.map((x) => h('th', { scope: 'col' }, x)))), h('tbody', null, rows)));
}

export const dl = (pairs: [string, unknown][]): HTMLElement =>
  h('dl', null, pairs.map(([k, v]) => [h('dt', null, k), h('dd', null, v === undefined || v === null || v === '' ? '—' : String(v))]));
