// The configuration view's component form in Debian's chromium, for the rules on secrets and reserved
// properties (docs/configuration-v2.md "Secrets", "Reserved to kura.admin"): changing the MQTT
// broker-url without typing the password shows the refusal next to the password field and nothing
// reaches the new host; with the password typed, only it is sent there. A technician with
// rest.configuration sees why a reserved property is refused, and saves the others.

import t from 'tap';
import { startDaemon } from '../helpers/daemon.js';
import { haveBrowser, launchBrowser, openPage, logIn } from '../helpers/browser.js';
import { startFakeBroker } from '../helpers/fake-broker.js';

const MQTT = 'org.eclipse.kura.core.data.transport.mqtt.MqttDataTransport';

t.test('the component form: a stored password does not follow a new broker; reserved properties', async (t) => {
  if (!haveBrowser(t)) return;
  // Chromium starts while the brokers and the daemon do: none of them waits for another.
  const launching = launchBrowser(t);
  const accept = (conn: { send(p: object): void }, p: { cmd: string }) => {
    if (p.cmd === 'connect') conn.send({ cmd: 'connack', returnCode: 0, sessionPresent: false });
  };
  const first = await startFakeBroker(accept);
  const second = await startFakeBroker(accept);
  t.teardown(async () => {
    await first.close();
    await second.close();
  });
  const passwordsAt = (b: typeof first) => b.connections.flatMap((c) => c.packets.filter((p) => p.cmd === 'connect').map((p) => String((p as { password?: Buffer }).password ?? '')));
  const d = await startDaemon(t, {
    identities: {
      admin: { password: 'Admin-pass1', permissions: ['kura.admin'] },
      tech: { password: 'Tech-pass1', permissions: ['rest.configuration'] },
    },
    rest: { 'login.throttle.max.delay': 0 },
    mqtt: { enabled: true, 'broker-url': first.url, 'client-id': 'dev1', username: 'device', password: 'Stored-Secret-1' },
  }, { http: 0, https: 1 });
  await d.waitForLog(/msg="mqtt connected"/);
  t.same([...new Set(passwordsAt(first))], ['Stored-Secret-1'], 'the first broker got the stored password');
  const browser = await launching;
  const origin = `https://127.0.0.1:${d.ports.https[0]}`;

  const session = async (user: string, password: string) => {
    const w = await openPage(browser);
    await logIn(w.page, `${origin}`, user, password);
    await w.page.getByRole('link', { name: 'Configuration' }).waitFor();
    await w.page.goto(`${origin}/console/#/config/edit/${encodeURIComponent(MQTT)}`);
    await w.page.getByRole('heading', { name: `Component ${MQTT}` }).waitFor();
    return w;
  };
  const errorOf = async (page: Awaited<ReturnType<typeof session>>['page'], label: string) => {
    const ids = await page.getByLabel(label, { exact: true }).getAttribute('aria-describedby');
    return page.locator(`#${ids!.split(' ').at(-1)}`);
  };

  const { page, problems } = await session('admin', 'Admin-pass1');
  await page.getByLabel('Broker URL', { exact: true }).fill(second.url);
  await page.getByRole('button', { name: 'Save' }).click();
  const pwError = await errorOf(page, 'Password');
  await pwError.filter({ hasText: /\S/ }).waitFor();
  t.match(await pwError.innerText(), /^broker-url changed, and the stored password is kept only for the endpoint it was given for/, `next to the password field: ${await pwError.innerText()}`);
  t.equal(await page.getByLabel('Password', { exact: true }).getAttribute('aria-invalid'), 'true', 'the password field is marked');
  await new Promise((r) => setTimeout(r, 500));
  t.same(passwordsAt(second), [], 'the new host got nothing');

  await page.getByLabel('Password', { exact: true }).fill('For-The-Second-1');
  await page.getByRole('button', { name: 'Save' }).click();
  await page.getByRole('status').filter({ hasText: 'Saved and applied.' }).waitFor();
  // The client reconnects in the background after the change; wait for its CONNECT (no speed is asserted).
  for (const end = Date.now() + 30_000; Date.now() < end && passwordsAt(second).length === 0; ) await new Promise((r) => setTimeout(r, 100));
  t.same([...new Set(passwordsAt(second))], ['For-The-Second-1'], 'the new host got the typed password only');
  t.same(problems.filter((p) => !/status of 4\d\d/.test(p)), [], 'no console errors (admin)');

  // A technician: a reserved property is refused with the reason, another one is saved.
  const tech = await session('tech', 'Tech-pass1');
  await tech.page.getByLabel('User name', { exact: true }).fill('someone-else');
  await tech.page.getByRole('button', { name: 'Save' }).click();
  await tech.page.getByText(`Only kura.admin may change ${MQTT} property username`).waitFor();
  t.pass('the refusal names the reserved property');
  await tech.page.getByLabel('User name', { exact: true }).fill('device');
  await tech.page.getByLabel('Keep-alive (s)', { exact: true }).fill('45');
  await tech.page.getByRole('button', { name: 'Save' }).click();
  await tech.page.getByRole('status').filter({ hasText: 'Saved and applied.' }).waitFor();
  t.pass('keep-alive saved by rest.configuration');
  t.same(tech.problems.filter((p) => !/status of 4\d\d/.test(p)), [], 'no console errors (technician)');
});
