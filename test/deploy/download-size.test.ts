// DEPLOY-V2 download notifications carry the package's size as Kura's do (docs/mqtt.md
// "DEPLOY-V2"): `dp.download.size` is the server's Content-Length in every download NOTIFY, the
// first IN_PROGRESS included, and in GET/download while the transfer runs; −1 only when the server
// declares no length (chunked). And an EXEC/download while the deployment queue is full is answered
// 500 naming `deploy.queue.max.jobs`, leaving DEPLOY-V2 free for the next download. Real Mosquitto,
// the real daemon, a package server of the test's own.

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
const DEVICE = 'gw-size';
const REQUESTER = 'kapua-size';

type Metrics = Record<string, unknown>;

t.test('dp.download.size is the declared Content-Length, −1 only for a chunked answer', mosquittoSkip(), async (t) => {
  const broker = await startMosquitto();
  t.teardown(() => broker.close());
  // A package of a few hundred bytes (one chunk, as in the case reported: 378 bytes), and a bigger
  // one (random, so it does not compress) that arrives in many chunks.
  const small = buildDp({ name: 'org.example.small', version: '1.0.0', files: { 'a.txt': 'x'.repeat(120) } });
  const big = buildDp({ name: 'org.example.big', version: '1.0.0', files: { 'blob.bin': crypto.randomBytes(200 * 1024) } });
  let release = () => {};
  const held = new Promise<void>((r) => (release = r));
  const server = http.createServer(async (req, res) => {
    const [mode, file] = (req.url ?? '').split('/').filter(Boolean) as [string, string];
    const body = file === 'small.dp' ? small : big;
    if (mode === 'never') return; // answers nothing: a job that stays in the download lane
    if (mode === 'length') {
      res.writeHead(200, { 'content-length': body.length });
      res.end(body);
    } else if (mode === 'chunked') {
      // No Content-Length: Node sends Transfer-Encoding: chunked.
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      for (let at = 0; at < body.length; at += 16 * 1024) res.write(body.subarray(at, at + 16 * 1024));
      res.end();
    } else {
      // `held`: the headers and half of the body, the rest once the test has asked GET/download.
      res.writeHead(200, { 'content-length': body.length });
      res.write(body.subarray(0, body.length >> 1));
      await held;
      res.end(body.subarray(body.length >> 1));
    }
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const d = await startDaemon(t, {
    identities: { admin: { password: 'Size-Admin-1', permissions: ['kura.admin'], passwordChangeNeeded: false } },
    deploy: { 'queue.max.jobs': 2 },
    mqtt: { enabled: true, 'broker-url': broker.url, 'client-id': DEVICE, 'topic.context.account-name': ACCOUNT, 'payload.encoding': 'kura-protobuf' },
  });
  await d.waitForLog(/msg="mqtt connected"/);
  const admin = { authorization: `Basic ${Buffer.from('admin:Size-Admin-1').toString('base64')}` };

  const replies = new Map<string, Metrics>();
  const notices: { resource: string; metrics: Metrics }[] = [];
  const client = new MqttClient({ url: broker.url, clientId: REQUESTER, keepAlive: 30, clean: true, reconnectMin: 50, reconnectMax: 300, log: silentLogger });
  client.on('message', (topic: string, raw: Buffer) => {
    const p = decodeKuraPayload(raw);
    if (!p.ok) return;
    const metrics = Object.fromEntries(p.value.metrics.map((m) => [m.name, m.value]));
    if (topic.includes('/REPLY/')) replies.set(topic.split('/').pop()!, metrics);
    else notices.push({ resource: topic.split('/').pop()!, metrics });
  });
  client.start();
  t.teardown(() => client.end());
  await until(() => client.isConnected, 5000, 'requester connect');
  await client.subscribe(`$EDC/${ACCOUNT}/${REQUESTER}/DEPLOY-V2/#`, 1);
  let n = 0;
  const request = async (methodResource: string, metrics: KuraMetric[] = []): Promise<Metrics> => {
    const rid = `size-${++n}`;
    const payload = encodeKuraPayload({ timestamp: BigInt(Date.now()), metrics: [{ name: 'request.id', type: 'STRING', value: rid }, { name: 'requester.client.id', type: 'STRING', value: REQUESTER }, ...metrics] });
    await client.publish(`$EDC/${ACCOUNT}/${DEVICE}/DEPLOY-V2/${methodResource}`, payload, { qos: 1 });
    await until(() => replies.has(rid), 8000, `reply to ${methodResource}`);
    return replies.get(rid)!;
  };
  const download = (url: string, name: string, jobId: bigint): Promise<Metrics> =>
    request('EXEC/download', [
      { name: 'dp.uri', type: 'STRING', value: url },
      { name: 'dp.name', type: 'STRING', value: name },
      { name: 'dp.version', type: 'STRING', value: '1.0.0' },
      { name: 'dp.download.protocol', type: 'STRING', value: 'HTTP' },
      { name: 'job.id', type: 'INT64', value: jobId },
      { name: 'dp.install.system.update', type: 'BOOL', value: false },
      { name: 'dp.install', type: 'BOOL', value: false },
      { name: 'dp.download.force', type: 'BOOL', value: true },
    ]);
  const downloadNotices = (jobId: bigint) => notices.filter((x) => x.resource === 'download' && x.metrics['job.id'] === jobId).map((x) => x.metrics);
  const ended = (jobId: bigint) => until(() => downloadNotices(jobId).some((m) => m['dp.download.status'] !== 'IN_PROGRESS'), 20_000, `end of download ${jobId}`);

  const cases: [string, string, Buffer, number][] = [
    ['Content-Length, one chunk', `${base}/length/small.dp`, small, small.length],
    ['Content-Length, many chunks', `${base}/length/big.dp`, big, big.length],
    ['chunked, one chunk', `${base}/chunked/small.dp`, small, -1],
    ['chunked, many chunks', `${base}/chunked/big.dp`, big, -1],
  ];
  t.ok(small.length < 1024, `the small package (${small.length} bytes) arrives in one chunk`);
  let job = 500n;
  for (const [what, url, body, size] of cases) {
    await t.test(what, async (t) => {
      const id = ++job;
      t.equal((await download(url, body === small ? 'org.example.small' : 'org.example.big', id))['response.code'], 200);
      await ended(id);
      const seen = downloadNotices(id);
      t.same(seen.map((m) => m['dp.download.status']).filter((s, i, a) => s !== a[i - 1]), ['IN_PROGRESS', 'COMPLETED'], 'IN_PROGRESS … COMPLETED');
      t.equal(seen[0]!['dp.download.progress'], 0, 'the first notification is at 0 %');
      t.same(seen.map((m) => m['dp.download.size']), seen.map(() => size), `every notification says ${size}`);
      t.equal(seen.at(-1)!['dp.download.progress'], 100);
    });
  }

  await t.test('GET/download during the transfer reports the declared size', async (t) => {
    const id = ++job;
    await download(`${base}/held/big.dp`, 'org.example.big', id);
    await until(() => downloadNotices(id).length > 0, 8000, 'first notification');
    const state = await request('GET/download');
    t.match(state, { 'response.code': 200, 'dp.download.status': 'IN_PROGRESS', 'dp.download.size': big.length, 'job.id': id });
    t.equal(downloadNotices(id)[0]!['dp.download.size'], big.length, 'the first IN_PROGRESS carries it');
    release();
    await ended(id);
    t.equal(downloadNotices(id).at(-1)!['dp.download.status'], 'COMPLETED');
  });

  await t.test('EXEC/download while the deployment queue is full: 500 naming the bound, then the next one works', async (t) => {
    // Two REST installs fill a queue of two: one downloading from a server that never answers, one waiting behind it.
    for (const q of ['a', 'b']) {
      const r = await d.request('/services/deploy/v2/_install', { method: 'POST', body: { url: `${base}/never/${q}.dp` }, headers: admin });
      t.equal(r.body, '"REQUEST_RECEIVED"');
    }
    const id = ++job;
    const full = await download(`${base}/length/small.dp`, 'org.example.small', id);
    t.match(full, { 'response.code': 500, 'response.exception.message': 'Insufficient storage: the deployment queue holds its limit of 2 jobs (deploy.queue.max.jobs); try again once one has ended' });
    t.match(await request('GET/download'), { 'dp.download.status': 'ALREADY DONE' }, 'no download was started');
    for (const j of (await d.request('/services/deploy/v2/_jobs', { headers: admin })).json()) {
      if (j.state === 'QUEUED' || j.state === 'RUNNING') await d.request(`/services/deploy/v2/_jobs/${j.id}`, { method: 'DELETE', headers: admin });
    }
    const next = ++job;
    let r: Metrics = {};
    for (let i = 0; i < 100; i++) {
      r = await download(`${base}/length/small.dp`, 'org.example.small', next);
      if (r['response.code'] === 200) break;
      await new Promise((res) => setTimeout(res, 50)); // the cancelled jobs' places come back once their files are gone
    }
    t.equal(r['response.code'], 200, 'the next EXEC/download is taken');
    await ended(next);
    t.equal(downloadNotices(next).at(-1)!['dp.download.status'], 'COMPLETED');
  });
});
