// Identities (rest.identity): list, create, permissions, force a password change, delete.

import { call, get, post, I } from '../api';
import { field, h, replace, uid } from '../dom';
import { problem, table, type Identity } from './common';

interface Ident { userName: string; passwordAuthEnabled: boolean; passwordChangeNeeded: boolean; permissions: string[] }

function checkboxes(all: string[], chosen: string[], legend: string): { el: HTMLElement; value(): string[] } {
  const boxes = all.map((p) => h('input', { type: 'checkbox', value: p, checked: chosen.includes(p), id: uid('p') }));
  return {
    el: h('fieldset', { class: 'perms' }, h('legend', null, legend), boxes.map((b) => h('label', { for: b.id }, b, b.value))),
    value: () => boxes.filter((b) => b.checked).map((b) => b.value),
  };
}

export function identitiesView(root: HTMLElement, _args: string[], me: Identity): void {
  const note = h('p', { role: 'status', class: 'muted' });
  const list = h('div', null, h('p', { 'aria-busy': 'true' }, 'Loading…'));
  const createSlot = h('div');
  replace(root, h('h1', null, 'Identities'), note, list, createSlot);
  let perms: string[] = [];

  const act = async (what: string, fn: () => Promise<unknown>) => {
    try {
      await fn();
      await load();
      note.textContent = what;
    } catch (e) {
      note.textContent = `${what.replace(/\.$/, '')} failed: ${(e as Error).message}`;
    }
  };

  const load = async () => {
    try {
      const [ids, defined] = await Promise.all([get<{ userConfig: Ident[] }>(`${I}/identities`), get<{ permissions: string[] }>(`${I}/definedPermissions`)]);
      perms = defined.permissions;
      replace(list, ids.userConfig.length === 0 ? h('p', { class: 'empty' }, 'No identities.') : table(['Name', 'Permissions', 'Password', 'Actions'], ids.userConfig.map((u) => {
        const edit = checkboxes(perms, u.permissions, `Permissions of ${u.userName}`);
        const details = h('details', null, h('summary', null, 'Edit permissions'), h('form', {
          onsubmit: (ev: Event) => {
            ev.preventDefault();
            void act(`Permissions of ${u.userName} saved.`, () => call('PUT', `${I}/identities`, { userName: u.userName, permissions: edit.value() }));
          },
        }, edit.el, h('button', { type: 'submit' }, 'Save permissions')));
        return h('tr', null, h('th', { scope: 'row' }, u.userName, u.userName === me.name ? h('small', null, ' (you)') : null),
          h('td', null, u.permissions.join(', ') || '—', details),
          h('td', null, !u.passwordAuthEnabled ? 'certificate only' : u.passwordChangeNeeded ? 'must change at next login' : 'set'),
          h('td', { class: 'actions' },
            u.passwordAuthEnabled && !u.passwordChangeNeeded && u.userName !== me.name ? h('button', {
              type: 'button', class: 'secondary', 'aria-label': `Force ${u.userName} to change the password`,
              onclick: () => act(`${u.userName} must change the password at the next login.`, () => call('PUT', `${I}/identities`, { userName: u.userName, passwordChangeNeeded: true })),
            }, 'Force password change') : null,
            u.userName === me.name ? null : h('button', {
              type: 'button', class: 'danger', 'aria-label': `Delete ${u.userName}`,
              onclick: () => confirm(`Delete the identity ${u.userName}?`) && act(`${u.userName} deleted.`, () => call('DELETE', `${I}/identities`, { userName: u.userName })),
            }, 'Delete')));
      }), 'Identities'));
      if (!createSlot.firstChild) replace(createSlot, createForm());
    } catch (e) {
      replace(list, problem(e, 'rest.identity'));
    }
  };

  const createForm = () => {
    const name = h('input', { required: true, autocomplete: 'off', autocapitalize: 'none', pattern: '[A-Za-z0-9_.@\\-]{1,64}' });
    const pw = h('input', { type: 'password', required: true, autocomplete: 'new-password' });
    const change = h('input', { type: 'checkbox', checked: true, id: uid('c') });
    change.defaultChecked = true; // form.reset() after a creation checks it again
    const sel = checkboxes(perms, [], 'Permissions');
    const form: HTMLFormElement = h('form', {
      onsubmit: (ev: Event) => {
        ev.preventDefault();
        void act(`Identity ${name.value} created.`, async () => {
          await post(`${I}/identities`, { userName: name.value, password: pw.value, passwordAuthEnabled: true, passwordChangeNeeded: change.checked, permissions: sel.value() });
          form.reset();
        });
      },
    }, h('h2', null, 'New identity'), field('Name', name, 'Letters, digits and _ . @ -'), field('Initial password', pw, 'Must meet the gateway\'s password rules.'),
    h('div', { class: 'field' }, h('label', { for: change.id }, change, 'Must change the password at the first login')), sel.el, h('button', { type: 'submit' }, 'Create identity'));
    return form;
  };
  void load();
}
