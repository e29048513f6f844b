// Certificates (rest.keystores): the entries of the device's keystores with subject, issuer and
// expiry (those expiring within 30 days, or expired, are marked); an administrator adds a CA
// certificate and makes a certification request for a key pair (docs/console.md "Views",
// docs/rest-api.md "keystores/v1").

import { get, post } from '../api';
import { field, fmtTime, h, replace } from '../dom';
import { problem, table, type Identity } from './common';

const K = '/services/keystores/v1';
const SOON_MS = 30 * 86_400_000;

interface Keystore { keystoreServicePid: string; size: number }
interface Entry {
  keystoreServicePid: string;
  alias: string;
  type: 'TRUSTED_CERTIFICATE' | 'PRIVATE_KEY';
  subjectDN?: string;
  issuer?: string;
  expirationDate?: number;
  algorithm?: string;
  size?: number;
}

/** The expiry cell: the date, and a mark when it is near or past. */
function expiry(e: Entry, now: number): HTMLElement {
  const at = e.expirationDate;
  if (at === undefined) return h('td', null, '—');
  const days = Math.floor((at - now) / 86_400_000);
  if (at <= now) return h('td', { class: 'expired' }, fmtTime(at), h('strong', null, ' expired'));
  if (at - now <= SOON_MS) return h('td', { class: 'expiring' }, fmtTime(at), h('strong', null, ` expires in ${days} day${days === 1 ? '' : 's'}`));
  return h('td', null, fmtTime(at));
}

export function certificatesView(root: HTMLElement, _args: string[], me: Identity): void {
  const note = h('p', { role: 'status', class: 'muted' });
  const list = h('div', null, h('p', { 'aria-busy': 'true' }, 'Loading…'));
  const forms = h('div');
  replace(root, h('h1', null, 'Certificates'), note, list, forms);
  // Adding trust and making requests is the administrator's (docs/console.md "Views").
  const admin = me.permissions.includes('kura.admin');

  const load = async () => {
    try {
      const stores = await get<Keystore[]>(K);
      const entries = (await Promise.all(stores.map((s) => get<Entry[]>(`${K}/entries?keystoreServicePid=${encodeURIComponent(s.keystoreServicePid)}`)))).flat();
      const now = Date.now();
      replace(list, entries.length === 0 ? h('p', { class: 'empty' }, 'No certificates: the keystores are empty.') : table(
        ['Keystore', 'Alias', 'Kind', 'Subject', 'Issuer', 'Expires', 'Algorithm'],
        entries.map((e) => h('tr', null,
          h('td', null, e.keystoreServicePid),
          h('th', { scope: 'row' }, e.alias),
          h('td', null, e.type === 'PRIVATE_KEY' ? 'key pair' : 'trusted certificate'),
          h('td', null, e.subjectDN ?? '—'),
          h('td', null, e.issuer ?? '—'),
          expiry(e, now),
          h('td', null, `${e.algorithm ?? ''} ${e.size ?? ''}`.trim() || '—'))),
        'Certificates'));
      if (admin) replace(forms, caForm(stores), csrForm(entries.filter((e) => e.type === 'PRIVATE_KEY')));
    } catch (e) {
      replace(list, problem(e, 'rest.keystores'));
    }
  };

  const keystoreSelect = (stores: Keystore[]) => h('select', null, stores.map((s) => h('option', { value: s.keystoreServicePid }, s.keystoreServicePid)));

  const caForm = (stores: Keystore[]) => {
    const ks = keystoreSelect(stores);
    const alias = h('input', { required: true, autocomplete: 'off', autocapitalize: 'none', pattern: '[A-Za-z0-9][A-Za-z0-9._\\-]{0,63}' });
    const pem = h('textarea', { required: true, rows: 6, spellcheck: 'false', placeholder: '-----BEGIN CERTIFICATE-----' });
    const status = h('p', { role: 'status' });
    const form: HTMLFormElement = h('form', {
      onsubmit: async (ev: Event) => {
        ev.preventDefault();
        try {
          await post(`${K}/entries/certificate`, { keystoreServicePid: ks.value, alias: alias.value, certificate: pem.value });
          note.textContent = `CA certificate ${alias.value} added to ${ks.value}.`;
          form.reset();
          status.textContent = '';
          await load();
        } catch (e) {
          status.textContent = `Not added: ${(e as Error).message}`;
          status.className = 'error';
        }
      },
    }, h('h2', null, 'Add a CA certificate'), field('Keystore', ks), field('Alias', alias, 'Letters, digits and . _ -'),
    field('Certificate (PEM)', pem, 'Paste the CA certificate, BEGIN and END lines included.'), status, h('button', { type: 'submit' }, 'Add certificate'));
    return form;
  };

  const csrForm = (keys: Entry[]) => {
    if (keys.length === 0) return h('section', null, h('h2', null, 'Make a certification request'), h('p', { class: 'empty' }, 'No key pair to make a request for.'));
    const entry = h('select', null, keys.map((k, i) => h('option', { value: String(i) }, `${k.keystoreServicePid} / ${k.alias}`)));
    const algorithm = h('select');
    const subject = h('input', { required: true, autocomplete: 'off', spellcheck: 'false' });
    const out = h('textarea', { rows: 8, readonly: true, spellcheck: 'false' });
    const status = h('p', { role: 'status' });
    const chosen = () => keys[Number(entry.value)];
    const sync = () => {
      const k = chosen();
      const names = k.algorithm === 'EC' ? ['SHA256withECDSA', 'SHA384withECDSA', 'SHA512withECDSA'] : ['SHA256withRSA', 'SHA384withRSA', 'SHA512withRSA'];
      replace(algorithm, names.map((n) => h('option', { value: n }, n)));
      subject.value = k.subjectDN ?? '';
    };
    entry.addEventListener('change', sync);
    sync();
    const result = h('div', { hidden: true }, field('Certification request (PEM)', out, 'Send it to the CA; install its answer as the entry\'s chain.'));
    return h('form', {
      onsubmit: async (ev: Event) => {
        ev.preventDefault();
        const k = chosen();
        try {
          const r = await post<{ signingRequest: string }>(`${K}/entries/csr`, { keystoreServicePid: k.keystoreServicePid, alias: k.alias, signatureAlgorithm: algorithm.value, attributes: subject.value });
          out.value = r.signingRequest;
          result.hidden = false;
          status.textContent = `Request made for ${k.keystoreServicePid} / ${k.alias}.`;
          status.className = 'muted';
        } catch (e) {
          status.textContent = `No request: ${(e as Error).message}`;
          status.className = 'error';
        }
      },
    }, h('h2', null, 'Make a certification request'), field('Key pair', entry), field('Signature algorithm', algorithm),
    field('Subject', subject, 'Most specific first, e.g. CN=gw-17, O=Example, C=IT'), status, h('button', { type: 'submit' }, 'Make request'), result);
  };

  void load();
}
