// The Configuration view with two MQTT connections (`mqtt.connections`, docs/configuration-v2.md
// "Components and PIDs"), in Debian's chromium against the real daemon: the daemon's own components
// are listed (the singletons and each connection's two, `…CloudService-<name>` and
// `…MqttDataTransport-<name>`) and edited like the other singletons, by an identity with
// rest.configuration only: fields labelled from the definition with its default, the API's 400 at
// the field it names, a property reserved to kura.admin refused with the 403's message at its
// field, nothing applied; a change it may make is saved, on that connection alone.
// The connections are disabled: editing their configuration needs no broker.

import t from 'tap';
import { startDaemon, type Daemon } from '../helpers/daemon.js';
import { basic } from '../helpers/session-client.js';
import { haveBrowser, launchBrowser, openPage, logIn } from '../helpers/browser.js';
import type { Page } from 'playwright-core';

const C = '/services/configuration/v2';
const K = 'org.eclipse.kura.';
const MQTT = `${K}core.data.transport.mqtt.MqttDataTransport`;
const CLOUD = `${K}cloud.CloudService`;

async function stored(d: Daemon, pid: string): Promise<Record<string, { type: string; value: unknown }>> {
  const r = await basic(d, 'admin', 'Admin-pass1').request(`${C}/configurableComponents/configurations/byPid`, { method: 'POST', body: JSON.stringify({ pids: [pid] }), headers: { 'content-type': 'application/json' } });
  return r.json().configs[0].properties;
}

const box = (page: Page, key: string) => page.locator(`main form > .field[data-k="${key}"]`);
const saveButton = (page: Page) => page.locator('main form > button[type=submit]');

t.test('the Configuration view with two MQTT connections', async (t) => {
  if (!haveBrowser(t)) return;
  const launching = launchBrowser(t);
  const d = await startDaemon(t, {
    identities: {
      admin: { password: 'Admin-pass1', permissions: ['kura.admin'], passwordChangeNeeded: false },
      conf: { password: 'Conf-pass1x', permissions: ['rest.configuration'], passwordChangeNeeded: false },
    },
    mqtt: {
      connections: {
        default: { enabled: false, 'broker-url': 'mqtt://127.0.0.1:1', 'client-id': 'gw-cloud', 'keep-alive': 5 },
        local: { enabled: false, 'broker-url': 'mqtt://127.0.0.1:2', 'client-id': 'gw-local', 'topic.context.account-name': 'plant', 'keep-alive': 5 },
      },
    },
  }, { http: 1, https: 1 });
  const browser = await launching;
  const { page, problems } = await openPage(browser);
  const origin = `https://127.0.0.1:${d.ports.https[0]}`;
  await logIn(page, `${origin}`, 'conf', 'Conf-pass1x');
  await page.getByRole('link', { name: 'Configuration' }).waitFor();

  t.test("the connections' components are listed with the singletons", async (t) => {
    await page.goto(`${origin}/console/#/config`);
    const services = page.locator('section[aria-labelledby=cfg-v] table');
    await services.waitFor();
    const rows = await services.locator('tbody th').allInnerTexts();
    for (const p of [MQTT, CLOUD, `${MQTT}-local`, `${CLOUD}-local`, `${K}internal.rest.provider.RestService`, `${K}deployment.agent`]) t.ok(rows.includes(p), `${p} listed`);
    t.notOk(rows.includes('org.eclipse.kura.driver.simulator'), 'not a driver factory');
    t.match(await services.locator('tr', { hasText: `${CLOUD}-local` }).innerText(), /MQTT connection local \(cloud service\)/, 'said which connection');
    t.match(await services.locator('tr', { has: page.locator(`th:text-is("${MQTT}")`) }).innerText(), /MQTT connection default \(broker and transport\)/);
    const what = async (pid: string) => services.locator('tr', { has: page.locator(`th:text-is("${K}${pid}")`) }).locator('td').first().innerText();
    for (const [pid, re] of [
      ['gatewayd.Daemon', /log level/], ['internal.rest.provider.RestService', /^REST: authentication/], ['web.Console', /password rules/],
      ['http.server.manager.HttpService', /HTTPS: ports/], ['deployment.agent', /^Deployment packages/], ['cloud.app.command.CommandCloudApp', /CMD-V1/],
    ] as const) t.match(await what(pid), re, `${pid}: said what it holds`);
    await page.locator(`a[aria-label="Edit ${MQTT}-local"]`).click();
    await page.getByRole('heading', { name: `Component ${MQTT}-local` }).waitFor();
  });

  t.test('a connection transport: labelled fields, the 400 and the 403 at their field', async (t) => {
    const keep = box(page, 'keep-alive');
    t.equal(await keep.locator('label').innerText(), 'Keep-alive (s)', "labelled from its definition with its unit, as the other singletons' fields");
    t.equal(await keep.locator('input').inputValue(), '5', "the connection's value");
    t.match(await keep.locator('small:not(.error)').innerText(), /Default: 30\./, 'with its default');
    t.equal(await box(page, 'broker-url').locator('input').inputValue(), 'mqtt://127.0.0.1:2', 'its own broker');
    await keep.locator('input').fill('70000');
    await saveButton(page).click();
    const keepError = keep.locator('small.error');
    await keepError.filter({ hasText: /\S/ }).waitFor();
    t.match(await keepError.innerText(), /65535/, `the API's message at the field: ${await keepError.innerText()}`);
    t.equal(await keep.locator('input').getAttribute('aria-invalid'), 'true');
    t.equal((await stored(d, `${MQTT}-local`))['keep-alive']?.value, 5, 'nothing applied');

    await keep.locator('input').fill('7');
    await box(page, 'broker-url').locator('input').fill('mqtt://127.0.0.1:3');
    await saveButton(page).click();
    const brokerError = box(page, 'broker-url').locator('small.error');
    await brokerError.filter({ hasText: /\S/ }).waitFor();
    t.equal(await brokerError.innerText(), `Only kura.admin may change ${MQTT}-local property broker-url`, "the 403's message at the reserved field");
    t.equal(await box(page, 'broker-url').locator('input').getAttribute('aria-invalid'), 'true');
    t.equal(await keepError.innerText(), '', 'the other field cleared');
    t.same([(await stored(d, `${MQTT}-local`))['keep-alive']?.value, (await stored(d, `${MQTT}-local`))['broker-url']?.value], [5, 'mqtt://127.0.0.1:2'], 'nothing applied');

    await box(page, 'broker-url').locator('input').fill('mqtt://127.0.0.1:2');
    await saveButton(page).click();
    await page.locator('main p[role=status]', { hasText: 'Saved and applied.' }).waitFor();
    t.equal((await stored(d, `${MQTT}-local`))['keep-alive']?.value, 7, 'a property it may change is saved');
    t.equal((await stored(d, MQTT))['keep-alive']?.value, 5, 'on that connection alone');
  });

  t.test('a connection cloud service: edited the same way', async (t) => {
    await page.goto(`${origin}/console/#/config`);
    await page.locator(`a[aria-label="Edit ${CLOUD}-local"]`).click();
    await page.getByRole('heading', { name: `Component ${CLOUD}-local` }).waitFor();
    const account = box(page, 'topic.context.account-name');
    t.equal(await account.locator('input').inputValue(), 'plant');
    await account.locator('input').fill('plant2');
    await saveButton(page).click();
    await page.locator('main p[role=status]', { hasText: 'Saved and applied.' }).waitFor();
    t.equal((await stored(d, `${CLOUD}-local`))['topic.context.account-name']?.value, 'plant2', 'saved');
    t.not((await stored(d, CLOUD))['topic.context.account-name']?.value, 'plant2', 'not on the default connection');
  });

  t.test('no errors in the page', async (t) => {
    t.same(problems.filter((p) => !/status of 40[03]/.test(p)), [], 'none but the refused saves');
  });
});
