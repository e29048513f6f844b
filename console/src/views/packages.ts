// Packages: installed list, upload with progress, install from a URL, uninstall, live job status.

import { call, get, post, upload, D } from '../api';
import { every, field, fmtBytes, fmtTime, h, replace } from '../dom';
import { problem, table } from './common';

interface Pkg { name: string; version: string }
interface Job { id: number; kind: string; url?: string; name?: string; version?: string; state: string; error?: string; queuedAt: string; finishedAt?: string }

export function packagesView(root: HTMLElement): () => void {
  const list = h('div', null, h('p', { 'aria-busy': 'true' }, 'Loading…'));
  const jobs = h('div');
  const note = h('p', { role: 'status', class: 'muted' });

  const file = h('input', { type: 'file', accept: '.dp,application/octet-stream', required: true });
  const bar = h('progress', { max: 100, value: 0, hidden: true, 'aria-label': 'Upload progress' });
  const upBtn = h('button', { type: 'submit' }, 'Upload and install');
  const upForm = h('form', {
    onsubmit: async (ev: Event) => {
      ev.preventDefault();
      const f = file.files?.[0];
      if (!f) return;
      const form = new FormData();
      form.append('file', f, f.name);
      bar.hidden = false;
      bar.value = 0;
      upBtn.disabled = true;
      note.textContent = `Uploading ${f.name} (${fmtBytes(f.size)})…`;
      try {
        const r = await upload(`${D}/_upload`, form, (sent, total) => (bar.value = total ? (100 * sent) / total : 0));
        bar.value = 100;
        note.textContent = `Uploaded ${f.name}: ${r}. Its job is listed below.`;
        upForm.reset();
        await refresh();
      } catch (e) {
        note.textContent = `Upload failed: ${(e as Error).message}`;
      } finally {
        upBtn.disabled = false;
      }
    },
  }, h('h2', null, 'Upload a package'), field('Deployment package file (.dp)', file), bar, upBtn);

  const url = h('input', { type: 'url', required: true, placeholder: 'https://… or file:/…', inputmode: 'url' });
  const urlForm = h('form', {
    onsubmit: async (ev: Event) => {
      ev.preventDefault();
      try {
        const r = await post(`${D}/_install`, { url: url.value });
        note.textContent = `Install requested: ${r}. Its job is listed below.`;
        url.value = '';
        await refresh();
      } catch (e) {
        note.textContent = `Install refused: ${(e as Error).message}`;
      }
    },
  }, h('h2', null, 'Install from a URL'), field('Package URL', url, 'http(s), or file: inside the folders the gateway allows'), h('button', { type: 'submit' }, 'Install'));

  replace(root, h('h1', null, 'Packages'), h('section', { 'aria-label': 'Installed packages' }, h('h2', null, 'Installed'), list), note,
    h('div', { class: 'cols' }, upForm, urlForm), h('section', { 'aria-label': 'Jobs' }, h('h2', null, 'Jobs'), jobs));

  const refresh = async () => {
    try {
      const [pkgs, js] = await Promise.all([get<Pkg[]>(D), get<Job[]>(`${D}/_jobs`)]);
      replace(list, pkgs.length === 0 ? h('p', { class: 'empty' }, 'No packages are installed.') : table(['Name', 'Version', ''], pkgs.map((p) =>
        h('tr', null, h('th', { scope: 'row' }, p.name), h('td', null, p.version), h('td', null, h('button', {
          type: 'button',
          class: 'danger',
          'aria-label': `Uninstall ${p.name}`,
          onclick: async () => {
            if (!confirm(`Uninstall ${p.name} ${p.version}?`)) return;
            try {
              note.textContent = `Uninstall requested: ${await call('DELETE', `${D}/${encodeURIComponent(p.name)}`)}.`;
              await refresh();
            } catch (e) {
              note.textContent = `Uninstall refused: ${(e as Error).message}`;
            }
          },
        }, 'Uninstall')))), 'Installed packages'));
      const recent = [...js].sort((a, b) => b.id - a.id);
      replace(jobs, recent.length === 0 ? h('p', { class: 'empty' }, 'No install or uninstall jobs yet.') : table(['#', 'Kind', 'Package', 'State', 'Queued', 'Finished'], recent.map((j) =>
        h('tr', { 'data-state': j.state }, h('td', null, j.id), h('td', null, j.kind), h('td', null, j.name ? `${j.name} ${j.version ?? ''}` : j.url ?? ''),
          h('td', { class: j.state === 'FAILED' ? 'error' : j.state === 'SUCCEEDED' ? 'ok' : '' }, j.state, j.error ? `: ${j.error}` : ''),
          h('td', null, fmtTime(j.queuedAt)), h('td', null, fmtTime(j.finishedAt)))), 'Install and uninstall jobs, newest first'));
    } catch (e) {
      replace(list, problem(e, 'rest.deploy'));
      replace(jobs);
      throw e;
    }
  };
  return every(2000, refresh);
}
