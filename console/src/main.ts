// The field console (docs/console.md): login, then the views the identity is allowed to use.

import { ApiError, get, post, setToken, setUnauthorizedHandler, S } from './api';
import { changePasswordView, loginView, startSession, type AuthInfo } from './auth';
import { h, replace } from './dom';
import { statusView } from './views/status';
import { assetsView } from './views/assets';
import { packagesView } from './views/packages';
import { identitiesView } from './views/identities';
import { configView } from './views/config';
import { allowed, type Identity, type View } from './views/common';
import { certificatesView } from './views/certificates';
import { toolsView } from './views/tools';
import { connectionsView } from './views/connections';


const VIEWS: { path: string; title: string; permission: string; render: View }[] = [
  { path: 'status', title: 'Status', permission: 'rest.system', render: statusView },
  { path: 'assets', title: 'Assets', permission: 'rest.assets', render: assetsView },
  { path: 'tools', title: 'Tools', permission: 'rest.assets', render: toolsView },
  { path: 'config', title: 'Configuration', permission: 'rest.configuration', render: configView },
  { path: 'packages', title: 'Packages', permission: 'rest.deploy', render: packagesView },
  { path: 'identities', title: 'Identities', permission: 'rest.identity', render: identitiesView },
  { path: 'certificates', title: 'Certificates', permission: 'rest.keystores', render: certificatesView },
  { path: 'connections', title: 'Connections', permission: 'rest.cloudconnection', render: connectionsView },
];

const app = document.getElementById('app')!;
const FLAG = 'gatewayd.console.session';
let me: Identity | undefined;
let stopView: (() => void) | void;

function stop(): void {
  if (stopView) stopView();
  stopView = undefined;
}

async function showLogin(notice = ''): Promise<void> {
  stop();
  sessionStorage.removeItem(FLAG);
  me = undefined;
  setToken('');
  let info: AuthInfo;
  try {
    info = await get<AuthInfo>(`${S}/authenticationInfo`);
  } catch (e) {
    replace(app, h('main', { class: 'login', id: 'main' }, h('h1', null, 'gatewayd'), h('p', { class: 'error', role: 'alert' }, (e as Error).message),
      h('button', { type: 'button', onclick: () => showLogin(notice) }, 'Try again')));
    return;
  }
  loginView(app, info, notice, (changeNeeded, user) => (changeNeeded ? showChange(user) : enter()));
}

function showChange(user: string): void {
  stop();
  void changePasswordView(app, user, async (name, password) => {
    // A new password ends every session of the identity: log in again with it.
    try {
      await post(`${S}/login/password`, { username: name, password }, { own401: true });
      await startSession();
      await enter('Password changed.');
    } catch {
      await showLogin('Password changed. Log in with the new password.');
    }
  }).catch((e) => showLogin((e as Error).message));
}

async function enter(notice = ''): Promise<void> {
  sessionStorage.setItem(FLAG, '1');
  try {
    me = await get<Identity>(`${S}/currentIdentity`, { own401: true });
  } catch (e) {
    return showLogin(e instanceof ApiError && e.status === 401 ? '' : (e as Error).message);
  }
  shell(notice);
}

function shell(notice: string): void {
  if (!me) return;
  const id = me;
  const nav = h('nav', { 'aria-label': 'Views' });
  const main = h('main', { id: 'main', tabindex: '-1' });
  const toast = h('p', { class: 'toast', role: 'status', 'aria-live': 'polite' }, notice);
  replace(app,
    h('header', null,
      h('a', { class: 'skip', href: '#main', onclick: (e: Event) => (e.preventDefault(), main.focus()) }, 'Skip to content'),
      h('span', { class: 'brand' }, 'gatewayd'),
      h('span', { class: 'who' }, 'Logged in as ', h('strong', null, id.name)),
      h('button', { type: 'button', class: 'secondary', onclick: logout }, 'Log out')),
    nav, toast, main);
  let first = true;
  const route = () => {
    stop();
    if (!first) toast.textContent = '';
    first = false;
    const [path = '', ...args] = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
    const permitted = VIEWS.filter((v) => allowed(id, v.permission));
    replace(nav, h('ul', null, permitted.map((v) => h('li', null, h('a', { href: `#/${v.path}`, 'aria-current': v.path === path ? 'page' : undefined }, v.title)))));
    const view = VIEWS.find((v) => v.path === path) ?? permitted[0];
    if (!view) {
      replace(main, h('h1', null, 'No views'), h('p', null, `The identity ${id.name} has no permission for any console view. Ask an administrator for one of: ${VIEWS.map((v) => v.permission).join(', ')}.`));
      return;
    }
    document.title = `${view.title} · gatewayd`;
    replace(main);
    stopView = view.render(main, args, id);
  };
  window.onhashchange = route;
  route();
}

async function logout(): Promise<void> {
  stop();
  try {
    await post(`${S}/logout`, undefined, { own401: true });
  } catch {
    // the session is gone either way
  }
  window.onhashchange = null;
  await showLogin('You have logged out.');
}

setUnauthorizedHandler(() => {
  if (!me) return;
  window.onhashchange = null;
  void showLogin('Your session has ended (it timed out, or the password or permissions changed). Log in again.');
});

// A page reload keeps the session (the HttpOnly cookie): pick it up when it is still valid. The
// flag only says a login happened in this tab (no secret), so a fresh visit asks nothing in vain.
(async () => {
  try {
    if (!sessionStorage.getItem(FLAG)) throw new Error('no session');
    await startSession();
    await enter();
  } catch {
    await showLogin();
  }
})();
