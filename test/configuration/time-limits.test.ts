// Time-valued keys at their maximum and one past it (docs/configuration.md "Time-valued keys"),
// through every path a configuration arrives by, against the built daemon: check-config, the start,
// a reload (SIGHUP), configuration/v2 over REST and CONF-V2 over a real Mosquitto. The keys come
// from the real definitions (test/helpers/config-keys.ts), so a time-valued key added later is in
// the table without being listed; and the definitions configuration/v2 publishes carry each range.
import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCli, startDaemon } from '../helpers/daemon.js';
import { basic } from '../helpers/session-client.js';
import { mosquittoSkip, startMosquitto } from '../helpers/mosquitto.js';
import { Requester } from '../helpers/mqtt-fixture.js';
import { baseConfig, rangeRefusal, timeKeys, type TimeKey } from '../helpers/config-keys.js';

const C = '/services/configuration/v2';
const keys = timeKeys();
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-time-'));
t.teardown(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** The base configuration with every time key set to `value(key)`. */
function withAll(value: (k: TimeKey) => number): Record<string, any> {
  const cfg = baseConfig();
  for (const k of keys) k.set(cfg, value(k));
  return cfg;
}

/** A configuration file for check-config, with a dataDir of its own. */
const write = (name: string, cfg: Record<string, any>) => {
  const f = path.join(tmp, name);
  fs.writeFileSync(f, JSON.stringify({ ...cfg, dataDir: path.join(tmp, 'data') }));
  return f;
};

const errorLines = (out: string) => out.split('\n').filter((l) => l.startsWith('error: '));

t.ok(keys.length >= 11, `${keys.length} time-valued keys: ${keys.map((k) => k.path).join(', ')}`);

t.test('check-config: every time-valued key at its maximum is accepted', async (t) => {
  const r = runCli(['check-config', '--config', write('max.json', withAll((k) => k.max))]);
  t.same(errorLines(r.stdout), [], 'no error');
  t.equal(r.status, 0, r.stdout);
});

t.test('check-config: one past the maximum, and one below the minimum, is refused naming key and range', async (t) => {
  for (const [name, value] of [['above', (k: TimeKey) => k.max + 1], ['below', (k: TimeKey) => k.min - 1]] as const) {
    const r = runCli(['check-config', '--config', write(`${name}.json`, withAll(value))]);
    t.equal(r.status, 1, `${name}: exit 1`);
    const lines = errorLines(r.stdout);
    t.equal(lines.length, keys.length, `${name}: one error per key, nothing else:\n${lines.join('\n')}`);
    for (const k of keys) {
      const line = lines.find((l) => l.startsWith(`error: ${k.path}: `));
      t.match(line, rangeRefusal(k, value(k)), `${name}: ${k.path}`);
    }
  }
});

t.test('the start refuses a value past the maximum, naming key and range', async (t) => {
  const d = await startDaemon(t, withAll((k) => k.max + 1), { noWait: true });
  t.equal(await d.exited, 2, 'not started');
  for (const k of keys) {
    const line = d.logs.find((l) => l.includes('msg="configuration error"') && l.includes(`key=${k.path} `));
    t.match(line, rangeRefusal(k, k.max + 1), k.path);
  }
});

t.test('a running daemon: SIGHUP, configuration/v2 and CONF-V2 refuse one past the maximum and take the maximum', mosquittoSkip(), async (t) => {
  const broker = await startMosquitto();
  t.teardown(() => broker.close());
  const mqtt = { enabled: true, 'broker-url': broker.url, 'client-id': 'dev1', 'topic.context.account-name': 'acct' };
  const base = { identities: { admin: { password: 'admin', permissions: ['kura.admin'] } }, rest: { 'login.throttle.max.delay': 0 }, mqtt };
  const d = await startDaemon(t, { ...baseConfig(), ...structuredClone(base) });
  await d.waitForLog(/msg="mqtt connected"/);
  const admin = basic(d, 'admin', 'admin');
  const post = (p: string, body: unknown, method = 'POST') => admin.request(`${C}/${p}`, { method, body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  const update = (k: TimeKey, value: number) => ({ configs: [{ pid: k.pid, properties: { [k.prop]: { type: 'INTEGER', value } } }], takeSnapshot: false });
  const req = new Requester(broker.url, 'kapua');
  await req.start();
  t.teardown(() => req.client.end());

  t.test('SIGHUP with every key past its maximum: reload refused, each key named with its range', async (t) => {
    const cfg = JSON.parse(fs.readFileSync(d.configFile, 'utf8'));
    const original = JSON.stringify(cfg);
    for (const k of keys) k.set(cfg, k.max + 1);
    fs.writeFileSync(d.configFile, JSON.stringify(cfg));
    const before = d.logs.length;
    d.signal('SIGHUP');
    await d.waitForLog(/msg="reload refused: keeping the running configuration"/);
    const logged = d.logs.slice(before);
    for (const k of keys) {
      const line = logged.find((l) => l.includes('msg="reload refused: configuration problem"') && l.includes(`key=${k.path} `));
      t.match(line, rangeRefusal(k, k.max + 1), k.path);
    }
    fs.writeFileSync(d.configFile, original);
  });

  t.test('the published definitions carry each range (Kura AD min and max)', async (t) => {
    const pids = [...new Set(keys.map((k) => k.pid))];
    const configs = (await post('configurableComponents/configurations/byPid', { pids })).json().configs;
    for (const k of keys) {
      const ad = configs.find((c: any) => c.pid === k.pid)?.definition.ad.find((a: any) => a.id === k.prop);
      t.same(ad && { type: ad.type, min: ad.min, max: ad.max }, { type: 'INTEGER', min: String(k.min), max: String(k.max) }, `${k.pid} ${k.prop}`);
    }
  });

  t.test('CONF-V2: one past the maximum is refused with the range, as over REST; nothing applied', async (t) => {
    for (const k of keys) {
      const r = (await req.kura('dev1', 'PUT/configurableComponents/configurations/_update', JSON.stringify(update(k, k.max + 1)), { app: 'CONF-V2', wait: 8000 }))!;
      t.equal(r.code, 400, `${k.path}: response.code 400`);
      t.match(JSON.parse(r.body!).message, new RegExp(`^Invalid configuration of ${k.pid}, property ${k.prop.replace(/[.+#]/g, '\\$&')}: ${rangeRefusal(k, k.max + 1).source}$`), k.path);
    }
    const layer = path.join(d.dataDir, 'config', 'runtime.json');
    t.same(fs.existsSync(layer) ? JSON.parse(fs.readFileSync(layer, 'utf8')).components : {}, {}, 'no runtime change stored');
  });

  t.test('configuration/v2: one past the maximum is 400 naming pid, property and range; the maximum is applied', async (t) => {
    for (const k of keys) {
      const bad = await post('configurableComponents/configurations/_update', update(k, k.max + 1), 'PUT');
      t.equal(bad.status, 400, `${k.path} above: 400`);
      t.match(bad.json().message, new RegExp(`^Invalid configuration of ${k.pid}, property ${k.prop.replace(/[.+#]/g, '\\$&')}: ${rangeRefusal(k, k.max + 1).source}$`), k.path);
      const ok = await post('configurableComponents/configurations/_update', update(k, k.max), 'PUT');
      t.equal(ok.status, 200, `${k.path} at the maximum: 200 ${ok.body}`);
      const shown = (await post('configurableComponents/configurations/byPid', { pids: [k.pid] })).json().configs[0].properties[k.prop];
      t.same(shown, { value: k.max, type: 'INTEGER' }, `${k.path} is now ${k.max}`);
    }
    t.notOk(d.logs.some((l) => /TimeoutOverflowWarning/.test(l)), 'no TimeoutOverflowWarning');
  });
});
