// The `mqtt` configuration section, and MqttService life cycle: TLS from configured files, disabled,
// reconfiguration on and off, missing TLS files, stopping while the broker is unreachable.

import t from 'tap';
import fs from 'node:fs';
import { validateMqttSection } from '../../src/mqtt/config.js';
import { createLogger } from '../../src/log.js';
import { startMosquitto, mosquittoSkip, freePort } from '../helpers/mosquitto.js';
import { makeRuntime, makeService, mqttConfig, Requester, until } from '../helpers/mqtt-fixture.js';

t.test('validateMqttSection', async (t) => {
  const d = validateMqttSection(undefined);
  t.same(d.problems, []);
  t.match(d.value, {
    enabled: false,
    'broker-url': 'mqtt://127.0.0.1:1883',
    'client-id': 'gatewayd',
    'keep-alive': 30,
    'clean-session': false,
    'topic.context.account-name': 'account',
    'topic.control-prefix': '$EDC',
    'payload.encoding': 'kura-protobuf',
    'outbox.max.messages': 10000,
    'encode.gzip': true,
  });
  const bad = validateMqttSection(
    {
      'keep-alive': '30',
      'keepalive': 30,
      'payload.encoding': 'xml',
      'outbox.max.messages': 0,
      'client-id': 'a/b',
      'broker-url': 'http://x',
      'tls.cert': '/nonexistent/cert.pem',
    },
    'mqtt',
  );
  const paths = bad.problems.filter((p) => p.severity !== 'warning').map((p) => p.path).sort();
  t.same(paths, ['mqtt.broker-url', 'mqtt.client-id', 'mqtt.keep-alive', 'mqtt.keepalive', 'mqtt.outbox.max.messages', 'mqtt.payload.encoding', 'mqtt.tls.key'].sort());
  t.ok(bad.problems.some((p) => p.path === 'mqtt.tls.cert' && p.severity === 'warning'), 'missing file is a warning');
  for (const p of bad.problems) t.notMatch(p.message, /at .*\.ts:\d+/, 'no stack traces');
  const pw = validateMqttSection({ password: 123 });
  t.notOk(pw.problems.some((p) => p.message.includes('123')), 'a bad password value is not echoed');
});

t.test('validateMqttSection: the outbox bounds and the requester policy, at their limits and one past', async (t) => {
  const d = validateMqttSection(undefined).value;
  t.same([d['outbox.max.bytes'], d['requester.permissions'], d['applications.disabled']], [16 * 1024 * 1024, ['kura.admin'], []], 'defaults (docs/configuration.md)');
  const problems = (raw: Record<string, unknown>) => validateMqttSection(raw, 'mqtt').problems.map((p) => `${p.path}: ${p.message}`);
  for (const ok of [{ 'outbox.max.bytes': 65_536 }, { 'outbox.max.bytes': 2 ** 31 - 1 }, { 'outbox.max.messages': 100_000 }, { 'outbox.max.messages': 1 }]) t.same(problems(ok), [], JSON.stringify(ok));
  t.same(problems({ 'outbox.max.bytes': 65_535 }), ['mqtt.outbox.max.bytes: must be at least 65536, got 65535']);
  t.same(problems({ 'outbox.max.bytes': 2 ** 31 }), ['mqtt.outbox.max.bytes: must be at most 2147483647, got 2147483648']);
  t.same(problems({ 'outbox.max.messages': 100_001 }), ['mqtt.outbox.max.messages: must be at most 100000, got 100001']);
  t.same(problems({ 'requester.permissions': ['rest.assets', 'kura.admin'], 'applications.disabled': ['CONF-V2', 'DEPLOY-V2'] }), []);
  t.same(problems({ 'requester.permissions': [] }), [], 'no permission at all: nothing is served');
  t.same(problems({ 'requester.permissions': 'kura.admin' }), ['mqtt.requester.permissions: expected an array, got string']);
  t.same(problems({ 'requester.permissions': ['rest assets'] }), ['mqtt.requester.permissions[0]: not a permission name']);
  t.same(problems({ 'requester.permissions': ['rest.assets', 'rest.assets'] }), ['mqtt.requester.permissions: contains duplicates']);
  t.same(problems({ 'applications.disabled': ['CONF-V2/#'] }), ['mqtt.applications.disabled[0]: not an MQTT application id (a topic level: non-empty, without / # +)']);
  t.same(problems({ 'applications.disabled': [''] }), ['mqtt.applications.disabled[0]: not an MQTT application id (a topic level: non-empty, without / # +)']);
});

t.test('service life cycle', mosquittoSkip(), async (t) => {
  const broker = await startMosquitto({ tls: true });
  const { runtime, dataDir } = makeRuntime();
  t.teardown(async () => {
    await runtime.close();
    await broker.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  const c = broker.certs!;

  t.test('TLS with CA, client certificate and key from the configuration', async (t) => {
    const svc = makeService(
      runtime,
      dataDir,
      mqttConfig({
        'broker-url': `mqtts://127.0.0.1:${broker.tlsPort}`,
        'client-id': 'tlsdev',
        'topic.context.account-name': 'acct',
        'tls.ca': c.ca,
        'tls.cert': c.clientCert,
        'tls.key': c.clientKey,
      }),
    );
    await svc.start();
    t.teardown(() => svc.stop());
    await until(() => svc.isConnected, 8000, 'TLS connect');
    await new Promise((r) => setTimeout(r, 150));
    const req = new Requester(broker.url, 'tq');
    await req.start();
    t.teardown(() => req.end());
    const r = await req.kura('tlsdev', 'GET/assets', '[{"name":"a"}]');
    t.equal(r!.code, 200, 'ASSET-V1 over a TLS device connection');
  });

  t.test('a missing TLS file is logged, nothing crashes, no connection', async (t) => {
    const lines: string[] = [];
    const svc = makeService(
      runtime,
      dataDir,
      mqttConfig({ 'broker-url': `mqtts://127.0.0.1:${broker.tlsPort}`, 'client-id': 'nofile', 'tls.ca': '/nonexistent/ca.pem' }),
      createLogger('debug', (l) => lines.push(l)),
    );
    await svc.start();
    await new Promise((r) => setTimeout(r, 300));
    t.notOk(svc.isConnected);
    t.ok(lines.some((l) => l.includes('key=mqtt.tls.ca')), 'names the key');
    await svc.stop();
  });

  t.test('malformed TLS material is a configuration error naming the key, not a crash', async (t) => {
    const garbage = `${dataDir}/garbage.pem`;
    fs.writeFileSync(garbage, 'not a certificate');
    for (const [raw, key] of [
      [{ 'tls.ca': garbage }, 'mqtt.tls.ca'],
      [{ 'tls.ca': c.ca, 'tls.cert': c.clientCert, 'tls.key': garbage }, 'mqtt.tls.cert'],
    ] as const) {
      const lines: string[] = [];
      const svc = makeService(
        runtime,
        dataDir,
        mqttConfig({ 'broker-url': `mqtts://127.0.0.1:${broker.tlsPort}`, 'client-id': 'badpem', ...raw }),
        createLogger('debug', (l) => lines.push(l)),
      );
      await svc.start();
      await new Promise((r) => setTimeout(r, 200));
      t.notOk(svc.isConnected);
      t.ok(lines.some((l) => l.includes(`key=${key}`) && l.includes('msg="mqtt not started"')), `names ${key}`);
      t.notOk(lines.some((l) => l.includes('not a certificate')), 'file content not logged');
      await svc.stop();
    }
  });

  t.test('disabled, then enabled and disabled again by reconfiguration', async (t) => {
    const watcherLines: string[] = [];
    const on = mqttConfig({ 'broker-url': broker.url, 'client-id': 'toggle', 'topic.context.account-name': 'acct' });
    const off = { ...on, enabled: false };
    const svc = makeService(runtime, dataDir, off, createLogger('debug', (l) => watcherLines.push(l)));
    await svc.start();
    await new Promise((r) => setTimeout(r, 200));
    t.notOk(svc.isConnected, 'disabled: no connection');
    await svc.reconfigure(on);
    await until(() => svc.isConnected, 5000, 'enabled by SIGHUP');
    await svc.reconfigure(off);
    t.notOk(svc.isConnected, 'disabled by SIGHUP');
    await svc.stop();
  });

  t.test('stop() with the broker unreachable returns promptly', async (t) => {
    const port = await freePort();
    const svc = makeService(runtime, dataDir, mqttConfig({ 'broker-url': `mqtt://127.0.0.1:${port}`, 'client-id': 'gone' }));
    await svc.start();
    await new Promise((r) => setTimeout(r, 200));
    const started = Date.now();
    await svc.stop();
    t.ok(Date.now() - started < 3000, 'stopped');
  });
});
