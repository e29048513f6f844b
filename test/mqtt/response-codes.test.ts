// Over MQTT a reply's `response.code` is one Eclipse Kapua reads: 200, 400, 404 or 500 (docs/mqtt.md
// "Response codes"). A request over a size bound is 400, a reply over one 500, any other code of an
// application 400 (4xx) or 500, the message always in `response.exception.message`; REST keeps its
// status. A table over the envelope (every encoding), then every application of the real daemon
// over a real Mosquitto, Kapua-style (kura-protobuf): ASSET-V1, CONF-V2, DEPLOY-V2 and a package's.

import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { Envelope, type MqttResponse } from '../../src/mqtt/envelope.js';
import { decodeKuraPayload, encodeKuraPayload, type KuraMetric } from '../../src/mqtt/kura-payload.js';
import { decodeSimpleJsonPayload } from '../../src/mqtt/simple-json-payload.js';
import { startDaemon } from '../helpers/daemon.js';
import { mosquittoSkip, startMosquitto } from '../helpers/mosquitto.js';
import { Requester } from '../helpers/mqtt-fixture.js';
import { buildDp } from '../helpers/dp.js';

const request = { appId: 'X-V1', method: 'GET', resources: ['r'], requestId: '1', requester: 'me', metrics: [] };

t.test('the envelope sends only Kapua\'s codes, whatever an application answers', async (t) => {
  const cases: [MqttResponse, number][] = [
    [{ code: 200 }, 200],
    [{ code: 201, message: 'created' }, 200],
    [{ code: 204 }, 200],
    [{ code: 302, message: 'moved' }, 500],
    [{ code: 400, message: 'bad' }, 400],
    [{ code: 401, message: 'who' }, 400],
    [{ code: 403, message: 'Forbidden' }, 400],
    [{ code: 404, message: 'Not found.' }, 404],
    [{ code: 409, message: 'busy' }, 400],
    [{ code: 413, message: 'Request too large: x' }, 400],
    [{ code: 413, message: 'Reply too large: y', replyTooLarge: true }, 500],
    [{ code: 415, message: 'type' }, 400],
    [{ code: 500 }, 500],
    [{ code: 503, message: 'later' }, 500],
    [{ code: 507, message: 'Insufficient storage' }, 500],
    [{ code: 999, message: 'odd' }, 500],
    [{ code: NaN }, 500],
  ];
  for (const encoding of ['kura-protobuf', 'simple-json', 'json'] as const) {
    const env = new Envelope({ prefix: '$EDC', account: 'a', clientId: 'gw', encoding, gzip: false });
    for (const [res, want] of cases) {
      const { payload } = env.reply(request, res);
      let code: unknown;
      let message: unknown;
      if (encoding === 'json') {
        const o = want === 200 ? undefined : JSON.parse(payload.toString());
        code = o ? o['response.code'] : 200;
        message = o?.['response.exception.message'];
      } else {
        const p = encoding === 'simple-json' ? decodeSimpleJsonPayload(payload) : (decodeKuraPayload(payload) as { ok: true; value: ReturnType<typeof decodeSimpleJsonPayload> }).value;
        const m = Object.fromEntries(p.metrics.map((x) => [x.name, x]));
        code = Number(m['response.code']?.value);
        message = m['response.exception.message']?.value;
        if (encoding === 'kura-protobuf') t.equal(m['response.code']?.type, 'INT32');
      }
      t.equal(code, want, `${encoding}: ${res.code} → ${want}`);
      if (want !== 200 && res.message) t.equal(message, res.message, `${encoding}: ${res.code} keeps its message`);
    }
  }
});

/** A request with `extra` metrics after request.id/requester (2000 of them: over the decoding bound). */
const metricFlood = (rid: string, requester: string): KuraMetric[] => [
  { name: 'request.id', type: 'STRING', value: rid },
  { name: 'requester.client.id', type: 'STRING', value: requester },
  ...Array.from({ length: 2000 }, (_, i) => ({ name: `m${i}`, type: 'INT32' as const, value: i })),
];

t.test('every application of the daemon, over Mosquitto', mosquittoSkip(), async (t) => {
  const broker = await startMosquitto();
  t.teardown(() => broker.close());
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-codes-'));
  t.teardown(() => fs.rmSync(tmp, { recursive: true, force: true }));
  // A package whose MQTT application answers the status it is asked for (the codes of future
  // applications go through the same envelope).
  const dp = path.join(tmp, 'codes.dp');
  fs.writeFileSync(
    dp,
    buildDp({
      name: 'org.example.codes',
      version: '1.0.0',
      files: { 'codes.mjs': `export function activate(api) { api.registerRequestHandler({ appId: 'CODES-V1', async handle(req) { const code = Number(req.resources[0]); return { code, message: 'status ' + code }; } }); }` },
      extensions: ['codes.mjs'],
    }),
  );
  // Ten STRING channels of 120,000 characters: a read of the asset is 1.2 MB, over the 1 MiB
  // reply bound, and so is CONF-V2's list of configurations.
  const long = 'x'.repeat(120_000);
  const channels = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`s${i}`, { type: 'READ', 'value.type': 'STRING', simulation: 'constant', initial: long }]));
  const d = await startDaemon(t, {
    rest: { 'auth.basic.enabled': true, 'login.throttle.max.delay': 0 },
    identities: { admin: { password: 'Adm1n-Secret!', passwordChangeNeeded: false, permissions: ['kura.admin'] } },
    assets: { big: { 'driver.pid': 'sim', channels }, small: { 'driver.pid': 'sim', channels: { v: { type: 'READ', 'value.type': 'INTEGER', simulation: 'constant', initial: 1 } } } },
    mqtt: { enabled: true, 'broker-url': broker.url, 'client-id': 'gw-codes', 'topic.context.account-name': 'acct', 'payload.encoding': 'kura-protobuf' },
  });
  await d.waitForLog(/msg="mqtt connected"/);
  const req = new Requester(broker.url, 'kapua-codes', 'acct');
  await req.start();
  t.teardown(() => req.end());
  const admin = { authorization: `Basic ${Buffer.from('admin:Adm1n-Secret!').toString('base64')}` };
  const ask = async (app: string, mr: string, body?: string, opts: { metrics?: KuraMetric[]; raw?: Buffer; requestId?: string } = {}) =>
    (await req.kura('gw-codes', mr, body, { app, wait: 15_000, ...opts }))!;

  await t.test('ASSET-V1: a reply over 1 MiB is 500; a gzip bomb and a metric flood are 400', async (t) => {
    const r = await ask('ASSET-V1', 'EXEC/read', '[{"name":"big"}]');
    t.equal(r.code, 500);
    t.match(r.message, /^Reply too large: \d+ bytes, the limit is 1048576/);

    const rid = req.nextId();
    const head = encodeKuraPayload({ metrics: metricFlood(rid, 'kapua-codes').slice(0, 2) });
    const tiny = Buffer.from('c2b802040a001003', 'hex'); // metric: name '', INT32, no value
    const bomb = zlib.gzipSync(Buffer.concat([head, Buffer.alloc(1_900_000 * tiny.length).fill(tiny)]), { level: 9 });
    const b = await ask('ASSET-V1', 'GET/assets', undefined, { raw: bomb, requestId: rid });
    t.equal(b.code, 400, 'gzip bomb');
    t.match(b.message, /^Request too large: payload inflates to more than 4194304 bytes/);
    const fid = req.nextId();
    const f = await ask('ASSET-V1', 'GET/assets', undefined, { metrics: metricFlood(fid, 'kapua-codes'), requestId: fid });
    t.equal(f.code, 400, '2000 metrics');
    t.match(f.message, /more than 1024 metrics/);
    t.equal((await ask('ASSET-V1', 'EXEC/read', '[{"name":"small"}]')).code, 200, 'still serving');
  });

  await t.test('CONF-V2: a reply over 1 MiB is 500 with the message in response.exception.message too; a flood is 400', async (t) => {
    const r = await ask('CONF-V2', 'GET/configurableComponents/configurations');
    t.equal(r.code, 500);
    t.match(r.message, /^Reply too large/);
    t.match(JSON.parse(r.body!).message, /^Reply too large/, 'and in the JSON body, as the REST proxy answers');
    const fid = req.nextId();
    const f = await ask('CONF-V2', 'GET/snapshots', undefined, { metrics: metricFlood(fid, 'kapua-codes'), requestId: fid });
    t.equal(f.code, 400);
    t.match(f.message, /^Request too large: .*more than 1024 metrics/);
    const nf = await ask('CONF-V2', 'GET/nothing/here');
    t.same([nf.code, nf.message], [404, undefined], 'a code Kapua reads keeps Kura\'s form (404, JSON body only)');
  });

  await t.test('DEPLOY-V2: a request over the metric bound is 400', async (t) => {
    const fid = req.nextId();
    const f = await ask('DEPLOY-V2', 'EXEC/download', undefined, { metrics: metricFlood(fid, 'kapua-codes'), requestId: fid });
    t.equal(f.code, 400);
    t.match(f.message, /more than 1024 metrics/);
    t.equal((await ask('DEPLOY-V2', 'GET/packages')).code, 200, 'still serving');
  });

  await t.test('a package\'s application: its codes are mapped too, its message kept', async (t) => {
    const inst = await d.request('/services/deploy/v2/_install', { method: 'POST', headers: admin, body: { url: `file://${dp}` } });
    t.equal(inst.status, 200);
    let r;
    for (let i = 0; i < 50 && !r; i++) r = await req.kura('gw-codes', 'GET/201', undefined, { app: 'CODES-V1', wait: 300 });
    t.equal(r?.code, 200, '201 → 200');
    for (const [asked, sent] of [[204, 200], [403, 400], [404, 404], [409, 400], [413, 400], [415, 400], [503, 500], [507, 500], [302, 500]]) {
      const x = await ask('CODES-V1', `GET/${asked}`);
      t.equal(x.code, sent, `${asked} → ${sent}`);
      if (sent !== 200) t.equal(x.message, `status ${asked}`);
    }
  });
});

