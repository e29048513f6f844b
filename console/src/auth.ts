// Login (banner, password, client certificate) and the forced password change.

import { ApiError, get, post, setToken, I, S } from './api';
import { field, h, replace } from './dom';

export interface AuthInfo {
  passwordAuthenticationEnabled: boolean;
  certificateAuthenticationEnabled: boolean;
  certificateAuthenticationPorts?: number[];
  message?: string;
}

export interface Requirements {
  passwordMinimumLength: number;
  passwordRequireDigits: boolean;
  passwordRequireSpecialChars: boolean;
  passwordRequireBothCases: boolean;
}

/** After a login: the XSRF token that every later call carries. */
export async function startSession(): Promise<void> {
  setToken('');
  const r = await get<{ xsrfToken: string }>(`${S}/xsrfToken`, { own401: true });
  setToken(r.xsrfToken);
}

const loginFailed = (e: unknown, failures: number): string => {
  if (!(e instanceof ApiError)) return String(e);
  if (e.status === 404) return 'Session login is switched off on this gateway (rest.session.management.enabled), so the console cannot be used; ask the administrator.';
  if (e.status !== 401) return e.message;
  return failures > 1
    ? 'Login failed again. After repeated failures the gateway delays further attempts for this user and address for a few seconds: wait a moment, check the user name and password, then try again.'
    : 'Login failed: the user name or the password is wrong.';
};

export function loginView(app: HTMLElement, info: AuthInfo, notice: string, done: (changeNeeded: boolean, user: string) => void): void {
  let failures = 0;
  const err = h('p', { class: 'error', role: 'alert' });
  const user = h('input', { name: 'username', autocomplete: 'username', required: true, autocapitalize: 'none', spellcheck: 'false' });
  const pass = h('input', { name: 'password', type: 'password', autocomplete: 'current-password', required: true });
  const submit = h('button', { type: 'submit' }, 'Log in');
  const form = h('form', {
    'aria-labelledby': 'login-title',
    onsubmit: async (ev: Event) => {
      ev.preventDefault();
      submit.disabled = true;
      err.textContent = '';
      try {
        const r = await post<{ passwordChangeNeeded: boolean }>(`${S}/login/password`, { username: user.value, password: pass.value }, { own401: true });
        await startSession();
        done(r.passwordChangeNeeded, user.value);
      } catch (e) {
        failures++;
        err.textContent = loginFailed(e, failures);
        pass.value = '';
        pass.focus();
      } finally {
        submit.disabled = false;
      }
    },
  }, h('h2', { id: 'login-title' }, 'Log in'), field('User name', user), field('Password', pass), submit, err);

  const ports = info.certificateAuthenticationPorts ?? [];
  const here = Number(location.port || (location.protocol === 'https:' ? 443 : 80));
  let cert: HTMLElement | null = null;
  if (info.certificateAuthenticationEnabled && ports.length > 0) {
    if (ports.includes(here)) {
      const certErr = h('p', { class: 'error', role: 'alert' });
      cert = h('section', { 'aria-labelledby': 'cert-title' }, h('h2', { id: 'cert-title' }, 'Client certificate'),
        h('p', null, 'Your browser presented a client certificate on this port.'),
        h('button', {
          type: 'button',
          onclick: async () => {
            certErr.textContent = '';
            try {
              const r = await post<{ passwordChangeNeeded: boolean }>(`${S}/login/certificate`, {}, { own401: true });
              await startSession();
              done(false, '');
              void r;
            } catch (e) {
              certErr.textContent = e instanceof ApiError && e.status === 401 ? 'Certificate login failed: the certificate does not name an identity of this gateway.' : String((e as Error).message);
            }
          },
        }, 'Log in with my certificate'), certErr);
    } else {
      cert = h('section', { 'aria-labelledby': 'cert-title' }, h('h2', { id: 'cert-title' }, 'Client certificate'),
        h('p', null, 'To log in with a client certificate installed in this browser, open the console on a certificate port:'),
        h('ul', null, ports.map((p) => h('li', null, h('a', { href: `https://${location.hostname}:${p}/console/` }, `https://${location.hostname}:${p}/console/`)))));
    }
  }
  replace(app, h('main', { class: 'login', id: 'main' },
    h('h1', null, 'gatewayd'),
    info.message ? h('section', { class: 'banner', 'aria-labelledby': 'banner-title' }, h('h2', { id: 'banner-title' }, 'Notice'), h('p', null, info.message)) : null,
    notice ? h('p', { class: 'notice', role: 'status' }, notice) : null,
    info.passwordAuthenticationEnabled ? form : h('p', null, 'Password login is disabled on this gateway.'),
    cert));
  (info.passwordAuthenticationEnabled ? user : app).focus();
}

/** Each rule with whether `pw` meets it (the gateway's own rules, from passwordRequirements). */
export function rules(r: Requirements, pw: string): [string, boolean][] {
  const out: [string, boolean][] = [];
  if (r.passwordMinimumLength > 0) out.push([`At least ${r.passwordMinimumLength} characters`, pw.length >= r.passwordMinimumLength]);
  if (r.passwordRequireDigits) out.push(['At least one digit', /[0-9]/.test(pw)]);
  if (r.passwordRequireBothCases) out.push(['Upper and lower case letters', /[a-z]/.test(pw) && /[A-Z]/.test(pw)]);
  if (r.passwordRequireSpecialChars) out.push(['At least one character that is not a letter or digit', /[^A-Za-z0-9]/.test(pw)]);
  return out;
}

export async function changePasswordView(app: HTMLElement, user: string, done: (user: string, password: string) => void): Promise<void> {
  const req = await get<Requirements>(`${I}/passwordRequirements`);
  const err = h('p', { class: 'error', role: 'alert' });
  const cur = h('input', { type: 'password', autocomplete: 'current-password', required: true });
  const next = h('input', { type: 'password', autocomplete: 'new-password', required: true });
  const again = h('input', { type: 'password', autocomplete: 'new-password', required: true });
  const list = h('ul', { class: 'rules', 'aria-live': 'polite' });
  const submit = h('button', { type: 'submit' }, 'Change password');
  const check = () => {
    const rs = rules(req, next.value);
    if (again.value !== '' || next.value !== '') rs.push(['Both new passwords match', next.value === again.value]);
    rs.push(['Differs from the current password', next.value !== '' && next.value !== cur.value]);
    replace(list, rs.map(([text, ok]) => h('li', { class: ok ? 'ok' : 'no' }, h('span', { 'aria-hidden': 'true' }, ok ? '✓ ' : '✗ '), text, h('span', { class: 'sr' }, ok ? ' (met)' : ' (not met)'))));
    return rs.every(([, ok]) => ok);
  };
  for (const i of [cur, next, again]) i.addEventListener('input', check);
  check();
  replace(app, h('main', { class: 'login', id: 'main' }, h('h1', null, 'gatewayd'), h('form', {
    'aria-labelledby': 'pw-title',
    onsubmit: async (ev: Event) => {
      ev.preventDefault();
      err.textContent = '';
      if (!check()) {
        err.textContent = 'The new password does not meet every rule yet (see the list).';
        return;
      }
      submit.disabled = true;
      try {
        await post(`${S}/changePassword`, { currentPassword: cur.value, newPassword: next.value }, { own401: true });
        done(user, next.value);
      } catch (e) {
        err.textContent = e instanceof ApiError && e.status === 401 ? 'The current password is wrong (or the session ended: reload the page to log in again).' : (e as Error).message;
      } finally {
        submit.disabled = false;
      }
    },
  }, h('h2', { id: 'pw-title' }, 'Change your password'),
  h('p', null, `The gateway requires a new password${user ? ` for ${user}` : ''} before you continue.`),
  field('Current password', cur), field('New password', next, 'Checked as you type against the gateway\'s rules:'), list, field('Repeat the new password', again), submit, err)));
  cur.focus();
}
