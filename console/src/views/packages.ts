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
  const warn = h('div', { class: 'warn-box', role: 'alert', hidden: true });

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

  replace(root, h('h1', null, 'Packages'), h('section', { 'aria-label': 'Installed packages' }, h('h2', null, 'Installed'), list, warn), note,
    h('div', { class: 'cols' }, upForm, urlForm), h('section', { 'aria-label': 'Jobs' }, h('h2', null, 'Jobs'), jobs));

  // An uninstall that leaves assets without a driver says which, and asks again (deploy/v2 _drivers).
  const uninstall = async (p: Pkg) => {
    warn.hidden = true;
    try {
      note.textContent = `Uninstall requested: ${await call('DELETE', `${D}/${encodeURIComponent(p.name)}`)}.`;
      await refresh();
    } catch (e) {
      note.textContent = `Uninstall refused: ${(e as Error).message}`;
    }
  };
  const askUninstall = async (p: Pkg) => {
    let use: { factories: string[]; instances: string[]; assets: string[] } | undefined;
    try {
      use = await get(`${D}/${encodeURIComponent(p.name)}/_drivers`);
    } catch {
      use = undefined; // an older gateway without the resource: ask as before
    }
    if (!use || use.assets.length === 0) {
      if (confirm(`Uninstall ${p.name} ${p.version}?`)) await uninstall(p);
      return;
    }
    warn.hidden = false;
    replace(warn,
      h('p', null, h('strong', null, `Uninstalling ${p.name} ${p.version} leaves ${use.assets.length === 1 ? 'this asset' : `these ${use.assets.length} assets`} without a driver: `),
        use.assets.join(', '), '.'),
      h('p', { class: 'muted' }, `It removes the driver ${use.factories.length === 1 ? 'factory' : 'factories'} ${use.factories.join(', ')}, used by the driver ${use.instances.length === 1 ? 'instance' : 'instances'} ${use.instances.join(', ')}. Their channels will answer "Driver not attached" until a package provides the driver again.`),
      h('button', { type: 'button', class: 'danger', onclick: () => uninstall(p) }, `Uninstall ${p.name} anyway`), ' ',
      h('button', { type: 'button', class: 'secondary', onclick: () => { warn.hidden = true; note.textContent = `${p.name} was kept.`; } }, 'Keep it'));
    (warn.querySelector('button') as HTMLButtonElement).focus();
  };

  const refresh = async () => {
    try {
      const [pkgs, js] = await Promise.all([get<Pkg[]>(D), get<Job[]>(`${D}/_jobs`)]);
      replace(list, pkgs.length === 0 ? h('p', { class: 'empty' }, 'No packages are installed.') : table(['Name', 'Version', ''], pkgs.map((p) =>
        h('tr', null, h('th', { scope: 'row' }, p.name), h('td', null, p.version), h('td', null, h('button', {
          type: 'button',
          class: 'danger',
          'aria-label': `Uninstall ${p.name}`,
          onclick: () => askUninstall(p),
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
