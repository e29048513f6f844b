// System API v1 (docs/console.md "System API"): role `system`, Kura's properties resources with the
// fields that apply, the filters, and gatewayd's `status` extension.

import t from 'tap';
import { startDaemon } from '../helpers/daemon.js';
import { basic } from '../helpers/session-client.js';

const SYS = '/services/system/v1';

t.test('system/v1', async (t) => {
  const d = await startDaemon(t, {
    identities: {
      admin: { password: 'admin-pw1', permissions: ['kura.admin'] },
      sys: { password: 'sys-pw123', permissions: ['rest.system'] },
      ops: { password: 'ops-pw123', permissions: ['rest.assets'] },
    },
    mqtt: { enabled: false, 'broker-url': 'mqtt://user:secret@127.0.0.1:1883', 'outbox.max.messages': 500 },
  }, { https: 1 });
  const sys = basic(d, 'sys', 'sys-pw123');

  t.equal((await d.request(`${SYS}/status`)).status, 401, 'anonymous: 401');
  t.equal((await basic(d, 'ops', 'ops-pw123').request(`${SYS}/status`)).status, 403, 'without rest.system: 403');
  t.equal((await basic(d, 'admin', 'admin-pw1').request(`${SYS}/status`)).status, 200, 'kura.admin passes');

  const fw = await sys.request(`${SYS}/properties/framework`);
  t.equal(fw.status, 200);
  const f = fw.json();
  t.type(f.numberOfProcessors, 'number');
  t.ok(f.totalMemory > 0 && f.freeMemory > 0 && f.freeMemory <= f.totalMemory, 'memory in kB');
  t.equal(f.kuraDataDirectory, d.dataDir);
  t.equal(f.kuraMarketplaceCompatibilityVersion, '5.4.0');
  t.match(f.kuraVersion, /^gatewayd \d/);
  t.equal(f.kuraHaveWebInterface, true);
  t.notOk('javaVersion' in f, 'fields that do not apply are absent, as Gson omits nulls');

  const filtered = await sys.request(`${SYS}/properties/framework/filter`, { method: 'POST', body: { names: ['kuraVersion', 'osName', 'noSuchField'] } });
  t.same(Object.keys(filtered.json()).sort(), ['kuraVersion', 'osName']);
  const bad = await sys.request(`${SYS}/properties/framework/filter`, { method: 'POST', body: { names: 'kuraVersion' } });
  t.equal(bad.status, 400);
  t.match(bad.json().message, /names must be an array/);
  t.equal((await sys.request(`${SYS}/properties/framework/filter`, { method: 'POST', body: '{', headers: { 'content-type': 'application/json' } })).status, 400);

  const kura = (await sys.request(`${SYS}/properties/kura`)).json();
  t.equal(kura.kuraProperties['kura.data'], d.dataDir);
  t.same((await sys.request(`${SYS}/properties/kura/filter`, { method: 'POST', body: { names: ['kura.data'] } })).json(), { kuraProperties: { 'kura.data': d.dataDir } });

  const ext = (await sys.request(`${SYS}/properties/extended`)).json();
  t.equal(ext.version, '1.0');
  t.equal(ext.extendedProperties.mqtt.enabled, 'false');
  t.equal(ext.extendedProperties.mqtt.outboxMax, '500');
  t.same(Object.keys((await sys.request(`${SYS}/properties/extended/filter`, { method: 'POST', body: { groupNames: ['dataDir'] } })).json().extendedProperties), ['dataDir']);

  const s = (await sys.request(`${SYS}/status`)).json();
  t.match(s.version, /\d/);
  t.ok(s.uptime >= 0 && s.startedAt <= Date.now());
  t.ok(s.memory.rss > 0 && s.memory.systemTotal >= s.memory.systemFree);
  t.same(s.listeners, [{ port: d.ports.http[0], protocol: 'http' }, { port: d.ports.https[0], protocol: 'https' }]);
  t.same(s.mqtt, { enabled: false, brokerUrl: 'mqtt://127.0.0.1:1883', clientId: 'gatewayd', connected: false, outboxPending: 0, outboxDropped: 0, outboxMax: 500, outboxBytes: 0, outboxMaxBytes: 16777216 }, 'no broker password');
  t.notMatch(JSON.stringify(s), /secret/);
  t.equal(s.dataDir.path, d.dataDir);
  t.ok(s.dataDir.usedBytes > 0 && s.dataDir.files > 0, 'the identity store is in dataDir');
  t.ok(s.dataDir.totalBytes >= s.dataDir.freeBytes, 'file system figures');
});

t.test('a 401 for a script carries no Basic challenge while BASIC is on', async (t) => {
  const d = await startDaemon(t, {});
  const p = '/services/assets';
  t.match((await d.request(p)).headers['www-authenticate'], /^Basic realm="kura-rest-api"$/, 'curl-like client: challenged');
  t.match((await d.request(p, { headers: { 'sec-fetch-mode': 'navigate' } })).headers['www-authenticate'], /Basic/, 'navigation: challenged');
  for (const headers of [{ 'x-requested-with': 'XMLHttpRequest' }, { 'sec-fetch-mode': 'cors' }, { 'sec-fetch-mode': 'same-origin' }] as Record<string, string>[]) {
    const r = await d.request(p, { headers });
    t.equal(r.status, 401, JSON.stringify(headers));
    t.equal(r.headers['www-authenticate'], undefined, `${JSON.stringify(headers)}: no challenge`);
  }
  const off = await startDaemon(t, { rest: { 'auth.basic.enabled': false } });
  t.equal((await off.request(p)).headers['www-authenticate'], undefined, 'BASIC off: never');
});
