// The console's Connections view (docs/console.md "Views") in Debian's chromium against the real
// daemon and a real Mosquitto: each MQTT connection with its state, broker and counters;
// Disconnect really disconnects it (the broker sees the DC) and Connect brings it back; kura.admin
// adds a connection (it connects) and deletes it (DC; the note says what its outbox keeps), which
// an identity with rest.cloudconnection alone is not offered; an identity without
// rest.cloudconnection has no link and the view's address shows the 403. No CSP violation.

import t from 'tap';
import { startDaemon } from '../helpers/daemon.js';
import { haveBrowser, launchBrowser, openPage, logIn } from '../helpers/browser.js';
import { mosquittoSkip, startMosquitto } from '../helpers/mosquitto.js';
import { until } from '../helpers/mqtt-fixture.js';
import { MqttClient } from '../../src/mqtt/client.js';
import { silentLogger } from '../../src/log.js';

t.test('connections view', mosquittoSkip(), async (t) => {
  if (!haveBrowser(t)) return;
  const broker = await startMosquitto();
  t.teardown(() => broker.close());
  const seen: string[] = [];
  const sub = new MqttClient({ url: broker.url, clientId: 'watch', keepAlive: 30, clean: true, reconnectMin: 50, reconnectMax: 300, log: silentLogger });
  sub.on('message', (topic: string) => seen.push(topic));
  sub.start();
  t.teardown(() => sub.end());
  await until(() => sub.isConnected, 5000, 'watcher');
  await sub.subscribe('$EDC/#', 1);

  const d = await startDaemon(t, {
    identities: {
      admin: { password: 'Admin-pass1', permissions: ['kura.admin'] },
      tech: { password: 'Tech-pass1', permissions: ['rest.assets'] },
      ops: { password: 'Ops-pass12', permissions: ['rest.cloudconnection'] },
    },
    rest: { 'login.throttle.max.delay': 0 },
    mqtt: {
      connections: {
        default: { enabled: true, 'broker-url': broker.url, 'client-id': 'gw-cloud' },
        local: { enabled: true, 'broker-url': broker.url, 'client-id': 'gw-local', 'payload.encoding': 'json' },
      },
    },
  }, { https: 1 });
  const browser = await launchBrowser(t);
  const origin = `https://127.0.0.1:${d.ports.https[0]}`;
  const session = async (user: string, password: string, link: string) => {
    const w = await openPage(browser);
    await logIn(w.page, `${origin}`, user, password);
    await w.page.getByRole('link', { name: link }).waitFor();
    return w;
  };

  const { page, problems } = await session('admin', 'Admin-pass1', 'Connections');
  await page.getByRole('link', { name: 'Connections' }).click();
  await page.getByRole('heading', { name: 'Connections', exact: true }).waitFor();
  const row = (name: string) => page.locator(`tr[data-connection="${name}"]`);
  await row('local').getByText('connected', { exact: true }).waitFor();
  await row('default').getByText('connected', { exact: true }).waitFor();
  t.match(await row('local').innerText(), /gw-local/);
  t.match(await row('default').innerText(), new RegExp(`gw-cloud[\\s\\S]*${broker.url.replace(/[.]/g, '\\.')}|${broker.url.replace(/[.]/g, '\\.')}[\\s\\S]*gw-cloud`));

  await page.getByRole('button', { name: 'Disconnect local' }).click();
  await row('local').getByText('disconnected on request').waitFor();
  await until(() => seen.includes('$EDC/account/gw-local/MQTT/DC'), 5000, 'DC of local on the broker');
  t.pass('Disconnect: the broker saw the DC');
  await row('default').getByText('connected', { exact: true }).waitFor();
  const births = seen.filter((x) => x === '$EDC/account/gw-local/MQTT/BIRTH').length;
  await page.getByRole('button', { name: 'Connect local' }).click();
  await until(() => seen.filter((x) => x === '$EDC/account/gw-local/MQTT/BIRTH').length > births, 10_000, 'BIRTH of local again');
  await page.getByRole('button', { name: 'Disconnect local' }).waitFor();
  t.pass('Connect: BIRTH again, the row offers Disconnect');

  // kura.admin adds a connection (configuration/v2 factory components): it connects, BIRTH on the broker.
  t.equal(await row('default').getByRole('button', { name: 'Delete default' }).count(), 0, 'the default has no Delete');
  const add = page.getByRole('form', { name: 'Add a connection' });
  await add.getByLabel('Connection name').fill('extra');
  await add.getByLabel('Broker URL').fill(broker.url);
  await add.getByLabel('Client id').fill('gw-extra');
  await add.getByRole('button', { name: 'Add connection' }).click();
  await page.getByRole('status').filter({ hasText: 'Connection extra added.' }).waitFor();
  await until(() => seen.includes('$EDC/account/gw-extra/MQTT/BIRTH'), 10_000, 'BIRTH of the added connection');
  await row('extra').getByText('connected', { exact: true }).waitFor();
  t.pass('Add: the connection connects and is listed');
  // Delete (confirmed): DC on the broker, the row goes, the note says what its outbox keeps.
  page.once('dialog', (dialog) => void dialog.accept());
  await page.getByRole('button', { name: 'Delete extra' }).click();
  await page.getByRole('status').filter({ hasText: /MQTT connection extra deleted; the \d+ messages? its outbox held/ }).waitFor();
  await until(() => seen.includes('$EDC/account/gw-extra/MQTT/DC'), 5000, 'DC of the deleted connection');
  await row('extra').waitFor({ state: 'detached' });
  t.pass('Delete: DC, the row is gone, the kept messages are said');
  t.same(problems, [], 'no console error, no CSP violation');

  // With rest.cloudconnection but not kura.admin: the view, without Add or Delete.
  const ops = await session('ops', 'Ops-pass12', 'Connections');
  await ops.page.getByRole('link', { name: 'Connections' }).click();
  await ops.page.locator('tr[data-connection="local"]').waitFor();
  t.equal(await ops.page.getByRole('form', { name: 'Add a connection' }).count(), 0, 'no Add form');
  t.equal(await ops.page.getByRole('button', { name: 'Delete local' }).count(), 0, 'no Delete');

  // Without rest.cloudconnection: no link, and the view's address shows the 403.
  const tech = await session('tech', 'Tech-pass1', 'Assets');
  t.equal(await tech.page.getByRole('link', { name: 'Connections' }).count(), 0, 'not in the navigation');
  await tech.page.goto(`${origin}/console/#/connections`);
  await tech.page.getByRole('alert').filter({ hasText: 'rest.cloudconnection' }).waitFor();
  t.pass('the view by its address: access denied naming rest.cloudconnection');
});
