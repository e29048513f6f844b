// DEPLOY-V2 against the real daemon and a real Mosquitto, driven as Eclipse Kapua drives it: a
// KuraPayload requester with `request.id` (a random signed long as text), `requester.client.id`,
// `job.id` as INT64 and the dp.* metrics typed as Kura casts them. Packages come from an HTTP
// server of the test that can break a transfer half-way (answering the Range request that takes
// it up again) or trickle; every NOTIFY is collected and checked in order.

import t from 'tap';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startDaemon } from '../helpers/daemon.js';
import { startMosquitto, mosquittoSkip } from '../helpers/mosquitto.js';
import { until } from '../helpers/mqtt-fixture.js';
import { buildDp, exampleDriverExtension } from '../helpers/dp.js';
import { MqttClient } from '../../src/mqtt/client.js';
import { decodeKuraPayload, encodeKuraPayload, type KuraMetric, type KuraPayload } from '../../src/mqtt/kura-payload.js';
import { silentLogger } from '../../src/log.js';

const ACCOUNT = 'acct';
const DEVICE = 'gw-dp';
const KAPUA = 'kapua-broker-client';

interface Message {
  topic: string;
  payload: KuraPayload;
  metrics: Record<string, unknown>;
}

const metricsOf = (p: KuraPayload) => Object.fromEntries(p.metrics.map((m) => [m.name, m.value]));
const typesOf = (p: KuraPayload) => Object.fromEntries(p.metrics.map((m) => [m.name, m.type]));

/** Eclipse Kapua's side of the conversation (docs/mqtt.md "DEPLOY-V2"). */
class Kapua {
  readonly client: MqttClient;
  readonly replies = new Map<string, Message>();
  readonly notifications: Message[] = [];

  constructor(url: string) {
    this.client = new MqttClient({ url, clientId: KAPUA, keepAlive: 30, clean: true, reconnectMin: 50, reconnectMax: 300, log: silentLogger });
    this.client.on('message', (topic: string, raw: Buffer) => {
      const d = decodeKuraPayload(raw);
      if (!d.ok) return;
      const m = { topic, payload: d.value, metrics: metricsOf(d.value) };
      if (topic.includes('/REPLY/')) this.replies.set(topic.split('/').pop()!, m);
      else this.notifications.push(m);
    });
  }

  async start(): Promise<void> {
    this.client.start();
    await until(() => this.client.isConnected, 5000, 'kapua connect');
    await this.client.subscribe(`$EDC/${ACCOUNT}/${KAPUA}/DEPLOY-V2/#`, 1);
  }

  async request(methodResource: string, metrics: KuraMetric[] = [], body?: Buffer): Promise<Message> {
    // Kapua: String.valueOf(random long), which may be negative.
    const rid = String(crypto.randomBytes(8).readBigInt64BE());
    const p: KuraPayload = {
      timestamp: BigInt(Date.now()),
      metrics: [{ name: 'request.id', type: 'STRING', value: rid }, { name: 'requester.client.id', type: 'STRING', value: KAPUA }, ...metrics],
    };
    if (body) p.body = body;
    await this.client.publish(`$EDC/${ACCOUNT}/${DEVICE}/DEPLOY-V2/${methodResource}`, encodeKuraPayload(p), { qos: 1 });
    await until(() => this.replies.has(rid), 8000, `reply to ${methodResource}`);
    return this.replies.get(rid)!;
  }

  notified(resource: string, jobId: bigint): Message[] {
    return this.notifications.filter((n) => n.topic === `$EDC/${ACCOUNT}/${KAPUA}/DEPLOY-V2/NOTIFY/${DEVICE}/${resource}` && n.metrics['job.id'] === jobId);
  }
}

const s = (name: string, value: string): KuraMetric => ({ name, type: 'STRING', value });
const b = (name: string, value: boolean): KuraMetric => ({ name, type: 'BOOL', value });
const i32 = (name: string, value: number): KuraMetric => ({ name, type: 'INT32', value });
const i64 = (name: string, value: bigint): KuraMetric => ({ name, type: 'INT64', value });

function downloadMetrics(url: string, name: string, version: string, jobId: bigint, extra: KuraMetric[] = []): KuraMetric[] {
  return [s('dp.uri', url), s('dp.name', name), s('dp.version', version), s('dp.download.protocol', 'HTTP'), i64('job.id', jobId), b('dp.install.system.update', false), ...extra];
}

/** Serves packages: `/<file>` whole, `/break/<file>` cut after half the first time, `/slow/<file>` a chunk a second. */
async function packageServer(files: Map<string, Buffer>) {
  const stats = { ranges: [] as string[], broken: new Set<string>() };
  const server = http.createServer((req, res) => {
    const parts = req.url!.split('/').filter(Boolean);
    const mode = parts.length > 1 ? parts[0] : 'plain';
    const body = files.get(parts[parts.length - 1]!);
    if (!body) return res.writeHead(404).end();
    const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    if (range) {
      stats.ranges.push(req.headers.range!);
      const start = Number(range[1]);
      res.writeHead(206, { 'content-length': body.length - start, 'content-range': `bytes ${start}-${body.length - 1}/${body.length}` });
      return res.end(body.subarray(start));
    }
    res.writeHead(200, { 'content-length': body.length });
    if (mode === 'break' && !stats.broken.has(req.url!)) {
      stats.broken.add(req.url!);
      res.write(body.subarray(0, body.length >> 1), () => setTimeout(() => req.socket.destroy(), 50));
      return;
    }
    if (mode === 'slow') {
      let at = 0;
      const timer = setInterval(() => {
        if (res.destroyed) return clearInterval(timer);
        res.write(body.subarray(at, at + 64));
        at += 64;
        if (at >= body.length) {
          clearInterval(timer);
          res.end();
        }
      }, 1000);
      res.on('close', () => clearInterval(timer));
      return;
    }
    res.end(body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, stats, close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }) };
}

t.test('DEPLOY-V2 as Kapua drives it', mosquittoSkip(), async (t) => {
  const broker = await startMosquitto();
  t.teardown(() => broker.close());
  // A package of a few hundred KB (stored, random bytes), so progress has something to report.
  const filler = crypto.randomBytes(300 * 1024);
  const files = new Map<string, Buffer>([
    ['drv.dp', buildDp({ name: 'org.example.drv', version: '1.0.0', files: { 'driver/extension.js': exampleDriverExtension('dpdrv'), 'blob.bin': filler }, extensions: ['driver/extension.js'] })],
    ['other.dp', buildDp({ name: 'org.example.other', version: '2.0.0', files: { 'x.txt': 'x' } })],
    ['app.dp', buildDp({ name: 'org.example.app', version: '1.0.0', files: { 'app.mjs': `export function activate(api) { api.registerRequestHandler({ appId: 'HELLO-V1', async handle() { return { code: 200, body: 'hello' }; } }); }` }, extensions: ['app.mjs'] })],
  ]);
  const pkgs = await packageServer(files);
  t.teardown(() => pkgs.close());

  const watcher = new MqttClient({ url: broker.url, clientId: 'birth-watcher', keepAlive: 30, clean: true, reconnectMin: 50, reconnectMax: 300, log: silentLogger });
  const births: KuraPayload[] = [];
  watcher.on('message', (topic: string, raw: Buffer) => {
    const d = decodeKuraPayload(raw);
    if (d.ok && /\/MQTT\/(BIRTH|APPS)$/.test(topic)) births.push(d.value);
  });
  watcher.start();
  await until(() => watcher.isConnected, 5000, 'watcher');
  await watcher.subscribe(`$EDC/${ACCOUNT}/${DEVICE}/MQTT/#`, 1);
  t.teardown(() => watcher.end());

  const d = await startDaemon(t, {
    'log.level': 'debug',
    rest: { 'auth.basic.enabled': true },
    identities: { admin: { password: 'Adm1n-Secret!', passwordChangeNeeded: false, permissions: ['kura.admin'] } },
    mqtt: { enabled: true, 'broker-url': broker.url, 'client-id': DEVICE, 'topic.context.account-name': ACCOUNT, 'keep-alive': 5, 'payload.encoding': 'kura-protobuf' },
  });
  await d.waitForLog(/msg="mqtt connected"/);
  const kapua = new Kapua(broker.url);
  await kapua.start();
  t.teardown(() => kapua.client.end());
  const auth = { authorization: `Basic ${Buffer.from('admin:Adm1n-Secret!').toString('base64')}` };

  await t.test('idle state: GET/download, GET/install, GET/packages', async (t) => {
    const dl = await kapua.request('GET/download');
    t.equal(dl.metrics['response.code'], 200);
    t.match(dl.metrics, { 'dp.download.size': 0, 'dp.download.progress': 100, 'dp.download.status': 'ALREADY DONE' });
    t.same(typesOf(dl.payload)['dp.download.size'], 'INT32');
    t.match((await kapua.request('GET/install')).metrics, { 'dp.install.status': 'IDLE' });
    const p = await kapua.request('GET/packages');
    t.equal(p.payload.body!.toString(), '<?xml version="1.0" encoding="UTF-8"?><packages></packages>');
    t.equal((await kapua.request('DEL/download')).metrics['response.code'], 500, 'DEL/download before any download: Kura 500');
  });

  await t.test('EXEC/download with install: every NOTIFY until the install completes; the job shows in REST _jobs', async (t) => {
    const job = 1001n;
    const r = await kapua.request('EXEC/download', downloadMetrics(`${pkgs.url}/drv.dp`, 'org.example.drv', '1.0.0', job, [i32('dp.download.notify.block.size', 64 * 1024)]));
    t.equal(r.metrics['response.code'], 200);
    await until(() => kapua.notified('install', job).length > 0, 20_000, 'install notification');
    const dl = kapua.notified('download', job);
    t.same(dl.map((n) => n.metrics['dp.download.status']).filter((x, i, a) => x !== a[i - 1]), ['IN_PROGRESS', 'COMPLETED'], 'IN_PROGRESS … then COMPLETED');
    // The first IN_PROGRESS (0 %) goes out once the server answered, with its size; then one per
    // notify block the transfer passed (at most one per chunk the network delivered).
    t.ok(dl.filter((n) => n.metrics['dp.download.status'] === 'IN_PROGRESS').length >= 3, 'progress per notify block');
    t.ok(dl.every((n) => n.metrics['dp.download.size'] === files.get('drv.dp')!.length), 'every notification carries the Content-Length');
    const progress = dl.map((n) => n.metrics['dp.download.progress'] as number);
    t.same(progress, [...progress].sort((a, b) => a - b), 'progress never goes back');
    const done = dl.at(-1)!;
    t.match(done.metrics, { 'client.id': DEVICE, 'dp.download.size': files.get('drv.dp')!.length, 'dp.download.progress': 100, 'dp.download.index': 0, 'job.id': job });
    t.match(typesOf(done.payload), { 'client.id': 'STRING', 'dp.download.size': 'INT32', 'dp.download.progress': 'INT32', 'dp.download.status': 'STRING', 'job.id': 'INT64', 'dp.download.index': 'INT32' });
    const inst = kapua.notified('install', job)[0]!;
    t.match(inst.metrics, { 'client.id': DEVICE, 'dp.install.status': 'COMPLETED', 'dp.install.progress': 100, 'job.id': job, 'dp.name': 'org.example.drv_1.0.0.dp' });
    const pk = (await kapua.request('GET/packages')).payload.body!.toString();
    t.match(pk, '<package><name>org.example.drv</name><version>1.0.0</version><bundles><bundle><name>org.example.drv</name><version>1.0.0</version></bundle></bundles></package>');
    t.match((await kapua.request('GET/bundles')).payload.body!.toString(), '<bundle><name>org.example.drv</name><version>1.0.0</version><id>1</id><state>ACTIVE</state></bundle>');
    const jobs = (await d.request('/services/deploy/v2/_jobs', { headers: auth })).json();
    t.ok(jobs.some((j: any) => j.kind === 'install' && j.name === 'org.example.drv' && j.state === 'SUCCEEDED'), 'the same job engine as REST');
    t.same((await d.request('/services/deploy/v2', { headers: auth })).json().find((p: any) => p.name === 'org.example.drv'), { name: 'org.example.drv', version: '1.0.0' });
  });

  await t.test('a transfer broken half-way is taken up again with a Range request', async (t) => {
    const job = 1002n;
    await kapua.request('EXEC/download', downloadMetrics(`${pkgs.url}/break/other.dp`, 'org.example.other', '2.0.0', job, [b('dp.install', false), s('dp.download.hash', `SHA-256:${crypto.createHash('sha256').update(files.get('other.dp')!).digest('hex')}`)]));
    await until(() => kapua.notified('download', job).some((n) => n.metrics['dp.download.status'] !== 'IN_PROGRESS'), 20_000, 'download end');
    t.equal(kapua.notified('download', job).at(-1)!.metrics['dp.download.status'], 'COMPLETED');
    t.ok(pkgs.stats.ranges.some((r) => r !== 'bytes=0-'), `resumed with ${pkgs.stats.ranges.join(', ')}`);
    t.same(kapua.notified('install', job), [], 'dp.install=false: downloaded only');
    // EXEC/install of that download, then EXEC/uninstall.
    const r = await kapua.request('EXEC/install', [s('dp.name', 'org.example.other'), s('dp.version', '2.0.0'), i64('job.id', 1003n), b('dp.install.system.update', false)]);
    t.equal(r.metrics['response.code'], 200);
    await until(() => kapua.notified('install', 1003n).length > 0, 15_000, 'install notification');
    t.match(kapua.notified('install', 1003n)[0]!.metrics, { 'dp.install.status': 'COMPLETED', 'dp.name': 'org.example.other_2.0.0.dp' });
    const u = await kapua.request('EXEC/uninstall', [s('dp.name', 'org.example.other'), i64('job.id', 1004n)]);
    t.equal(u.metrics['response.code'], 200);
    await until(() => kapua.notified('uninstall', 1004n).length > 0, 15_000, 'uninstall notification');
    t.match(kapua.notified('uninstall', 1004n)[0]!.metrics, { 'client.id': DEVICE, 'dp.uninstall.status': 'COMPLETED', 'dp.uninstall.progress': 100, 'job.id': 1004n, 'dp.name': 'org.example.other' });
    t.notOk((await d.request('/services/deploy/v2', { headers: auth })).json().some((p: any) => p.name === 'org.example.other'), 'gone');
    await kapua.request('EXEC/uninstall', [s('dp.name', 'never.installed'), i64('job.id', 1005n)]);
    await until(() => kapua.notified('uninstall', 1005n).length > 0, 8000, 'uninstall notification');
    t.equal(kapua.notified('uninstall', 1005n)[0]!.metrics['dp.uninstall.status'], 'COMPLETED', 'Kura: COMPLETED for a package that is not installed');
  });

  await t.test('a second download while one runs is refused as Kura refuses it; DEL/download cancels; ASSET-V1-style replies are not delayed', async (t) => {
    const job = 1006n;
    await kapua.request('EXEC/download', downloadMetrics(`${pkgs.url}/slow/other.dp`, 'org.example.other', '2.0.1', job, [b('dp.download.force', true)]));
    await until(() => kapua.notified('download', job).length > 0, 8000, 'first notification');
    const busy = await kapua.request('EXEC/download', downloadMetrics(`${pkgs.url}/drv.dp`, 'org.example.drv', '1.0.0', 1007n));
    t.equal(busy.metrics['response.code'], 500);
    t.equal(busy.metrics['download.status'], 'IN_PROGRESS');
    t.equal(busy.payload.body!.toString(), 'Another resource is already in download');
    const state = await kapua.request('GET/download');
    t.match(state.metrics, { 'dp.download.status': 'IN_PROGRESS', 'job.id': job });
    t.equal((await kapua.request('GET/packages')).metrics['response.code'], 200, 'answered while a download trickles');
    t.equal((await kapua.request('DEL/download')).metrics['response.code'], 200);
    await until(() => kapua.notified('download', job).some((n) => n.metrics['dp.download.status'] === 'CANCELLED'), 8000, 'cancel notification');
    t.match(kapua.notified('download', job).at(-1)!.metrics, { 'dp.download.status': 'CANCELLED', 'dp.download.error.message': 'Download cancelled' });
    const jobs = (await d.request('/services/deploy/v2/_jobs', { headers: auth })).json();
    t.ok(jobs.some((j: any) => j.state === 'CANCELLED' && /slow\/other\.dp/.test(j.url)), 'the cancelled job in REST _jobs');
  });

  await t.test('bad requests: wrong metric types, missing metrics, unknown resources', async (t) => {
    const bad = downloadMetrics(`${pkgs.url}/drv.dp`, 'x', '1', 1n).map((m) => (m.name === 'job.id' ? i32('job.id', 1) : m));
    t.equal((await kapua.request('EXEC/download', bad)).metrics['response.code'], 400, 'job.id must be INT64');
    t.equal((await kapua.request('EXEC/download', [s('dp.uri', 'http://x/')])).metrics['response.code'], 400, 'missing metrics');
    t.equal((await kapua.request('EXEC/download', downloadMetrics(`${pkgs.url}/drv.dp`, '../evil', '1', 9n))).metrics['response.code'], 400, 'a name that leaves the downloads folder');
    const nf = await kapua.request('GET/nothing');
    t.match(nf.metrics, { 'response.code': 404, 'response.exception.message': 'Not found.' });
    const proto = await kapua.request('EXEC/download', downloadMetrics(`${pkgs.url}/drv.dp`, 'p', '1', 77n).map((m) => (m.name === 'dp.download.protocol' ? s(m.name, 'FTP') : m)));
    t.equal(proto.metrics['response.code'], 200, 'Kura accepts another protocol…');
    await until(() => kapua.notified('download', 77n).length > 0, 8000, 'failure notification');
    t.equal(kapua.notified('download', 77n)[0]!.metrics['dp.download.status'], 'FAILED', '…then reports it FAILED');
  });

  await t.test('a package that adds an MQTT application: BIRTH re-published with it in application_ids', async (t) => {
    const before = births.length;
    await kapua.request('EXEC/download', downloadMetrics(`${pkgs.url}/app.dp`, 'org.example.app', '1.0.0', 2001n));
    await until(() => kapua.notified('install', 2001n).length > 0, 15_000, 'install');
    t.equal(kapua.notified('install', 2001n)[0]!.metrics['dp.install.status'], 'COMPLETED');
    await until(() => births.slice(before).some((p) => String(metricsOf(p).application_ids).split(',').includes('HELLO-V1')), 40_000, 'BIRTH with HELLO-V1');
    const ids = String(metricsOf(births.at(-1)!).application_ids).split(',');
    t.ok(ids.includes('DEPLOY-V2') && ids.includes('ASSET-V1') && ids.includes('HELLO-V1'), ids.join(','));
  });
  t.ok(fs.existsSync(d.dataDir));
});
