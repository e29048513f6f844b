// CMD-V1 (docs/mqtt.md "CMD-V1") switched on in the configuration file: in the first BIRTH, off and
// on again by a reload (SIGHUP), the running commands ended by a daemon stop; the bare-JSON
// encoding's object of parameters; check-config's messages for the command section
// (docs/configuration.md "command"). The real daemon and a real Mosquitto; the Kapua-shaped
// requester is test/helpers/kapua-command.ts.

import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runCli, startDaemon } from '../helpers/daemon.js';
import { mosquittoSkip, startMosquitto } from '../helpers/mosquitto.js';
import { until, watchBirths } from '../helpers/mqtt-fixture.js';
import { ACCOUNT, DEVICE, Kapua, PASSWORD, alive, command } from '../helpers/kapua-command.js';
import { MqttClient } from '../../src/mqtt/client.js';
import { silentLogger } from '../../src/log.js';

t.test('enabled in the file: in the first BIRTH; stopping the daemon ends the running commands', mosquittoSkip(), async (t) => {
  const broker = await startMosquitto();
  t.teardown(() => broker.close());
  const births = await watchBirths(t, broker.url, `$EDC/${ACCOUNT}/${DEVICE}/MQTT/#`, 'birth-watcher-2');
  const d = await startDaemon(t, {
    mqtt: { enabled: true, 'broker-url': broker.url, 'client-id': DEVICE, 'topic.context.account-name': ACCOUNT, 'payload.encoding': 'kura-protobuf' },
    command: { 'command.enabled': true, 'command.password': PASSWORD, 'command.working.directory': 'jobs' },
  });
  await until(() => births.length > 0, 10_000, 'BIRTH');
  t.ok(births[0]!.split(',').includes('CMD-V1'), `the first BIRTH: ${births[0]}`);
  // A reload (SIGHUP) of the file switches it too.
  const file = JSON.parse(fs.readFileSync(d.configFile, 'utf8'));
  for (const on of [false, true]) {
    const before = births.length;
    file.command['command.enabled'] = on;
    fs.writeFileSync(d.configFile, JSON.stringify(file));
    d.signal('SIGHUP');
    await until(() => births.length > before, 10_000, `BIRTH after the reload (${on})`);
    t.equal(births.at(-1)!.split(',').includes('CMD-V1'), on, `reloaded with command.enabled ${on}: ${births.at(-1)}`);
  }
  const kapua = new Kapua(broker.url);
  await kapua.start();
  t.teardown(() => kapua.client.end());
  const dir = path.join(d.dataDir, 'jobs');
  const r = await kapua.exec(command('sh', ['-c', 'echo $$ > long.pid; exec sleep 300'], { password: PASSWORD, async: true }));
  t.equal(r.metrics['response.code'], 200);
  const pidFile = path.join(dir, 'long.pid');
  await until(() => fs.existsSync(pidFile) && fs.readFileSync(pidFile, 'utf8').endsWith('\n'), 5000, 'long.pid');
  const pid = Number(fs.readFileSync(pidFile, 'utf8'));
  t.ok(alive(pid), 'running in the configured working directory');
  t.equal(await d.stop(), 0, 'a clean stop');
  await until(() => !alive(pid), 5000, 'the command ended with the daemon');
  t.pass('ended');
});

t.test('check-config: the command section is checked like every other', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gw-cmd-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = path.join(dir, 'gw.json');
  fs.writeFileSync(file, JSON.stringify({ dataDir: path.join(dir, 'data'), command: { 'command.enabled': 'yes', 'command.working.directory': '/etc', 'command.timeout': 3601, 'command.output.max.bytes': 262145, 'command.max.concurrent': 0, 'command.pasword': 'x' } }));
  const r = runCli(['check-config', '--config', file]);
  t.equal(r.status, 1);
  const errors = r.stdout.split('\n').filter((l) => l.startsWith('error: ')).sort();
  t.same(errors, [
    'error: command.command.enabled: expected true or false, got string',
    'error: command.command.max.concurrent: must be at least 1, got 0',
    'error: command.command.output.max.bytes: must be at most 262144, got 262145',
    'error: command.command.pasword: unknown key; did you mean "command.password"?',
    'error: command.command.timeout: must be between 1 and 3600 s (1 h), got 3601',
    `error: command.command.working.directory: must be inside dataDir (${path.join(dir, 'data')}), got "/etc"`,
  ]);
});

t.test('bare JSON: the parameters are the keys of an object body', mosquittoSkip(), async (t) => {
  const broker = await startMosquitto();
  t.teardown(() => broker.close());
  const d = await startDaemon(t, {
    mqtt: { enabled: true, 'broker-url': broker.url, 'client-id': DEVICE, 'topic.context.account-name': ACCOUNT, 'payload.encoding': 'json' },
    command: { 'command.enabled': true, 'command.password': PASSWORD },
  });
  await d.waitForLog(/msg="mqtt connected"/);
  const replies = new Map<string, string>();
  const me = new MqttClient({ url: broker.url, clientId: 'json-me', keepAlive: 30, clean: true, reconnectMin: 50, reconnectMax: 300, log: silentLogger });
  me.on('message', (topic: string, raw: Buffer) => replies.set(topic.split('/').pop()!, raw.toString()));
  me.start();
  await until(() => me.isConnected, 5000, 'connect');
  await me.subscribe(`$EDC/${ACCOUNT}/me/CMD-V1/REPLY/#`, 1);
  t.teardown(() => me.end());
  const ask = async (id: string, body: unknown) => {
    await me.publish(`$EDC/${ACCOUNT}/${DEVICE}/CMD-V1/EXEC/command/me/${id}`, Buffer.from(typeof body === 'string' ? body : JSON.stringify(body)), { qos: 0 });
    await until(() => replies.has(id), 10_000, `reply ${id}`);
    return JSON.parse(replies.get(id)!);
  };
  t.same(await ask('1', { 'command.command': 'printf', 'command.argument0': '%s', 'command.argument1': 'a b', 'command.timeout': 5, 'command.run.async': false, 'command.password': PASSWORD }), {
    'command.stderr': '',
    'command.stdout': 'a b',
    'command.exit.code': 0,
    'command.timedout': false,
  });
  t.same(await ask('2', { 'command.command': 'true', 'command.timeout': '5', 'command.password': PASSWORD }), { 'response.code': 400, 'response.exception.message': 'Bad request. command.timeout must be a 32-bit integer' });
  t.same(await ask('3', '["not","an","object"]'), { 'response.code': 400, 'response.exception.message': 'Bad request. the parameters must be metrics, or with the json encoding an object of them' });
  t.same(await ask('4', { 'command.command': 'true', 'command.password': 'nope' }), { 'response.code': 400, 'response.exception.message': 'Bad request. Password required but not correct and/or missing' });
});
