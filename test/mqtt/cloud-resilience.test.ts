// The cloud applications keep answering across broker restarts, with clean and with persistent
// sessions, and a download that trickles never holds up another application's reply: the real
// daemon, a real Mosquitto restarted under it, KuraPayload requests as a cloud platform sends them.

import t from 'tap';
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startDaemon } from '../helpers/daemon.js';
import { startMosquitto, mosquittoSkip } from '../helpers/mosquitto.js';
import { until } from '../helpers/mqtt-fixture.js';
import { buildDp } from '../helpers/dp.js';
import { MqttClient } from '../../src/mqtt/client.js';
import { decodeKuraPayload, encodeKuraPayload, type KuraMetric } from '../../src/mqtt/kura-payload.js';
import { silentLogger } from '../../src/log.js';

const ACCOUNT = 'acct';

for (const clean of [true, false]) {
  t.test(`${clean ? 'clean' : 'persistent'} session: ASSET-V1 and DEPLOY-V2 answer after broker restarts; a trickling download delays no reply`, mosquittoSkip(), async (t) => {
    const broker = await startMosquitto();
    t.teardown(() => broker.close());
    const device = `gw-res-${clean ? 'c' : 'p'}`;
    const pkg = buildDp({ name: 'org.example.slow', version: '1.0.0', files: { 'a.bin': crypto.randomBytes(4096) } });
    // A server that sends 64 bytes a second: the download lasts over a minute.
    let served = 0;
    const server = http.createServer((req, res) => {
      res.writeHead(200, { 'content-length': pkg.length });
      const timer = setInterval(() => {
        res.write(pkg.subarray(served, served + 64));
        served += 64;
      }, 1000);
      res.on('close', () => clearInterval(timer));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    t.teardown(() => {
      server.closeAllConnections();
      server.close();
    });

    const d = await startDaemon(t, {
      assets: { demo: { 'driver.pid': 'sim', channels: { v: { type: 'READ', 'value.type': 'INTEGER', simulation: 'constant', initial: 7 } } } },
      mqtt: { enabled: true, 'broker-url': broker.url, 'client-id': device, 'topic.context.account-name': ACCOUNT, 'keep-alive': 5, 'clean-session': clean, 'payload.encoding': 'kura-protobuf' },
    });
    await d.waitForLog(/msg="mqtt connected"/);
    const replies = new Map<string, Map<string, unknown>>();
    const notes: Map<string, unknown>[] = [];
    const cloud = new MqttClient({ url: broker.url, clientId: 'cloud', keepAlive: 30, clean: true, reconnectMin: 50, reconnectMax: 300, log: silentLogger });
    cloud.on('message', (topic: string, raw: Buffer) => {
      const p = decodeKuraPayload(raw);
      if (!p.ok) return;
      const m = new Map(p.value.metrics.map((x) => [x.name, x.value] as [string, unknown]));
      if (topic.includes('/NOTIFY/')) notes.push(m);
      else replies.set(topic.split('/').pop()!, m);
    });
    cloud.start();
    await until(() => cloud.isConnected, 5000, 'cloud connect');
    await cloud.subscribe(`$EDC/${ACCOUNT}/cloud/#`, 1);
    t.teardown(() => cloud.end());
    let n = 0;
    const ask = async (app: string, res: string, metrics: KuraMetric[] = [], body?: string, wait = 10_000) => {
      const rid = `${++n}`;
      const payload = encodeKuraPayload({ metrics: [{ name: 'request.id', type: 'STRING', value: rid }, { name: 'requester.client.id', type: 'STRING', value: 'cloud' }, ...metrics], body: body === undefined ? undefined : Buffer.from(body) });
      // The daemon may still be resubscribing after a restart: ask again until the reply comes.
      const deadline = Date.now() + wait;
      while (!replies.has(rid)) {
        if (Date.now() > deadline) throw new Error(`no reply to ${app}/${res}`);
        await cloud.publish(`$EDC/${ACCOUNT}/${device}/${app}/${res}`, payload, { qos: 1 }).catch(() => {});
        await until(() => replies.has(rid), 1500, 'reply').catch(() => {});
      }
      return replies.get(rid)!;
    };

    const job = 31n;
    const dl = await ask('DEPLOY-V2', 'EXEC/download', [
      { name: 'dp.uri', type: 'STRING', value: `http://127.0.0.1:${(server.address() as AddressInfo).port}/slow.dp` },
      { name: 'dp.name', type: 'STRING', value: 'org.example.slow' },
      { name: 'dp.version', type: 'STRING', value: '1.0.0' },
      { name: 'dp.download.protocol', type: 'STRING', value: 'HTTP' },
      { name: 'job.id', type: 'INT64', value: job },
      { name: 'dp.install.system.update', type: 'BOOL', value: false },
    ]);
    t.equal(dl.get('response.code'), 200);
    await until(() => served > 0, 10_000, 'the download to start');
    const read = await ask('ASSET-V1', 'EXEC/read', [], '[{"name":"demo"}]');
    t.equal(read.get('response.code'), 200, 'ASSET-V1 answers while the download trickles');
    t.equal((await ask('DEPLOY-V2', 'GET/download')).get('dp.download.status'), 'IN_PROGRESS', '… and the download is still under way');

    for (const round of [1, 2]) {
      const connects = d.logs.filter((l) => l.includes('msg="mqtt connected"')).length;
      await broker.restart();
      await until(() => d.logs.filter((l) => l.includes('msg="mqtt connected"')).length > connects, 20_000, `reconnect ${round}`);
      await until(() => cloud.isConnected, 10_000, 'cloud reconnect');
      await cloud.subscribe(`$EDC/${ACCOUNT}/cloud/#`, 1);
      t.equal((await ask('ASSET-V1', 'EXEC/read', [], '[{"name":"demo"}]', 20_000)).get('response.code'), 200, `ASSET-V1 after restart ${round}`);
      t.equal((await ask('DEPLOY-V2', 'GET/packages', [], undefined, 20_000)).get('response.code'), 200, `DEPLOY-V2 after restart ${round}`);
    }
    // The download went on across the restarts (the broker is not on its path); cancel it now.
    t.equal((await ask('DEPLOY-V2', 'DEL/download')).get('response.code'), 200);
    await until(() => notes.some((m) => m.get('dp.download.status') === 'CANCELLED' && m.get('job.id') === job), 10_000, 'CANCELLED');
    t.pass('cancelled after the restarts');
  });
}
