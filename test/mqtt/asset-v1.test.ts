// ASSET-V1 over a real Mosquitto: Kura's behaviour (docs/mqtt.md "ASSET-V1"), the three
// encodings, gzip, concurrency and garbage. The device is an MqttService over a real AssetRuntime
// (simulator driver); the requester is a second MQTT client or mosquitto_pub/mosquitto_sub.

import t from 'tap';
import fs from 'node:fs';
import zlib from 'node:zlib';
import { execFile, spawn } from 'node:child_process';
import { startMosquitto, mosquittoSkip, type Broker } from '../helpers/mosquitto.js';
import { makeRuntime, makeService, mqttConfig, Requester, until } from '../helpers/mqtt-fixture.js';
import { encodeKuraPayload, isGzip } from '../../src/mqtt/kura-payload.js';
import type { MqttService } from '../../src/mqtt/service.js';
import type { AssetRuntime } from '../../src/assets/service.js';

const parse = (s: string | undefined) => JSON.parse(s ?? 'null');

t.test('ASSET-V1', mosquittoSkip(), async (t) => {
  const broker: Broker = await startMosquitto();
  const { runtime, dataDir } = makeRuntime();
  const services: MqttService[] = [];
  const start = async (raw: Record<string, unknown>) => {
    const svc = makeService(runtime, dataDir, mqttConfig({ 'broker-url': broker.url, 'topic.context.account-name': 'acct', ...raw }));
    services.push(svc);
    await svc.start();
    await until(() => svc.isConnected, 5000, 'device connect');
    // The subscription is sent right after CONNACK; give the broker a moment to register it.
    await new Promise((r) => setTimeout(r, 150));
    return svc;
  };
  await start({ 'client-id': 'dev' });
  const req = new Requester(broker.url, 'Q');
  await req.start();
  t.teardown(async () => {
    await req.end();
    for (const s of services) await s.stop();
    await runtime.close();
    await broker.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  t.test('32: GET/assets with string metrics is answered on the requester topic', async (t) => {
    const r = await req.kura('dev', 'GET/assets', undefined, { requestId: 'R32' });
    t.ok(r, 'reply');
    t.equal(r!.topic, '$EDC/acct/Q/ASSET-V1/REPLY/R32');
    t.equal(r!.code, 200);
    t.equal(r!.metrics.find((m) => m.name === 'response.code')!.type, 'INT32', 'response.code is int32');
  });

  t.test('33: no request.id, or request.id as int64: no reply', async (t) => {
    const none = await req.kura('dev', 'GET/assets', undefined, {
      metrics: [{ name: 'requester.client.id', type: 'STRING', value: 'Q' }],
      requestId: 'R33a',
      wait: 500,
    });
    t.equal(none, undefined, 'missing request.id');
    const int = await req.kura('dev', 'GET/assets', undefined, {
      metrics: [
        { name: 'request.id', type: 'INT64', value: 33n },
        { name: 'requester.client.id', type: 'STRING', value: 'Q' },
      ],
      requestId: '33',
      wait: 500,
    });
    t.equal(int, undefined, 'int64 request.id');
  });

  t.test('34: GET/assets metadata; unknown asset', async (t) => {
    const all = parse((await req.kura('dev', 'GET/assets', undefined))!.body);
    t.same(
      all.map((a: { name: string }) => a.name),
      ['a', 'detached', 'slow'],
    );
    const a = all[0];
    t.same(a.channels[0], { name: 'c1', type: 'INTEGER', mode: 'READ_WRITE' }, 'type = value type, mode = channel mode');
    t.ok(a.channels.some((c: { name: string }) => c.name === 'dis'), 'disabled channels listed');
    t.same(Object.keys(a.channels[0]), ['name', 'type', 'mode']);
    const empty = parse((await req.kura('dev', 'GET/assets', '[]'))!.body);
    t.equal(empty.length, 3, '[] means all');
    const x = await req.kura('dev', 'GET/assets', '[{"name":"x"},{"name":"a"},{"name":"x"}]');
    const body = parse(x!.body);
    t.same(body[0], { name: 'x', error: 'Asset not found' });
    t.equal(body[1].name, 'a');
    t.equal(body.length, 3, 'request order, duplicates kept');
  });

  t.test('35: GET/assets bad bodies give 400 with a message naming the problem', async (t) => {
    for (const b of ['["a"]', '{bad[body}', '{}', '[{"name":1}]']) {
      const r = await req.kura('dev', 'GET/assets', b);
      t.equal(r!.code, 400, b);
      t.match(r!.message, /^Bad request\. \S/, `${b}: message`);
      t.notMatch(r!.message, /\{0\}/);
    }
  });

  t.test('36: unknown resources and methods', async (t) => {
    for (const mr of ['GET/topic', 'GET/assets/x', 'EXEC/assets', 'EXEC/assets/read', 'EXEC/foo']) {
      const r = await req.kura('dev', mr, undefined);
      t.equal(r!.code, 400, mr);
    }
    const put = await req.kura('dev', 'PUT/assets', undefined);
    t.equal(put!.code, 500);
    t.equal(put!.message, 'Operation put not supported.');
    t.equal((await req.kura('dev', 'POST/assets', undefined))!.message, 'Operation post not supported.');
    t.equal((await req.kura('dev', 'DEL/assets', undefined))!.message, 'Operation delete not supported.');
    const foo = await req.kura('dev', 'FOO/assets', undefined);
    t.equal(foo!.code, 400);
    t.equal(foo!.message, undefined, 'unknown method: no message');
    const slash = await req.kura('dev', 'GET/assets/', undefined);
    t.equal(slash!.code, 200, 'trailing empty level dropped as Java split does');
  });

  t.test('37: EXEC/read with no body or [] reads everything; values are strings', async (t) => {
    for (const body of [undefined, '[]']) {
      const r = await req.kura('dev', 'EXEC/read', body);
      t.equal(r!.code, 200);
      const res = parse(r!.body);
      t.same(
        res.map((x: { name: string }) => x.name),
        ['a', 'detached', 'slow'],
      );
      const a = Object.fromEntries(res[0].channels.map((c: { name: string }) => [c.name, c]));
      t.same(Object.keys(a).sort(), ['b', 'bytes', 'c1', 'd', 'f', 'l', 's', 't'], 'enabled READ/READ_WRITE only');
      t.equal(a.c1.value, '432');
      t.equal(a.b.value, 'true');
      t.equal(a.bytes.value, 'AQID', 'BYTE_ARRAY base64');
      t.equal(a.d.value, '1.0E7', 'Java Double.toString');
      t.equal(a.f.value, '0.1', 'Java Float.toString');
      t.equal(a.l.value, '9007199254740993', 'LONG exact');
      t.equal(a.c1.type, 'INTEGER');
      t.equal(a.t.unit, 'C');
      t.notOk('unit' in a.c1, 'no unit when none configured');
      t.same(Object.keys(a.t), ['name', 'timestamp', 'value', 'type', 'unit']);
      for (const c of Object.values(a) as { timestamp: number }[]) t.ok(c.timestamp > 0, 'timestamp never 0');
    }
  });

  t.test('38: read of a WRITE-only channel is a per-channel error with code 200', async (t) => {
    const r = await req.kura('dev', 'EXEC/read', '[{"name":"a","channels":[{"name":"w"},{"name":"c1"},{"name":"nope"},{"name":"dis"}]},{"name":"zz"}]');
    t.equal(r!.code, 200);
    const [a, zz] = parse(r!.body);
    const by = Object.fromEntries(a.channels.map((c: { name: string }) => [c.name, c]));
    t.equal(by.w.error, 'Channel type not within expected types (READ or READ_WRITE)');
    t.ok(by.w.timestamp > 0);
    t.same(Object.keys(by.w), ['name', 'timestamp', 'error']);
    t.equal(by.c1.value, '432');
    t.equal(by.nope.error, 'Channel not available');
    t.equal(by.dis.error, 'Channel is not enabled');
    t.same(zz, { name: 'zz', error: 'Asset not found' });
  });

  t.test('39: channels given as strings is 400', async (t) => {
    t.equal((await req.kura('dev', 'EXEC/read', '[{"name":"a","channels":["c1"]}]'))!.code, 400);
    t.equal((await req.kura('dev', 'EXEC/read', '{"name":"a"}'))!.code, 400);
  });

  t.test('40: EXEC/write without a body is 400, [] is 200 []', async (t) => {
    const none = await req.kura('dev', 'EXEC/write', undefined);
    t.equal(none!.code, 400);
    t.match(none!.message, /^Bad request\. /);
    const empty = await req.kura('dev', 'EXEC/write', '[]');
    t.equal(empty!.code, 200);
    t.equal(empty!.body, '[]');
  });

  t.test('41: EXEC/write with string values; numbers refused; type case-insensitive', async (t) => {
    const r = await req.kura('dev', 'EXEC/write', '[{"name":"a","channels":[{"name":"c1","type":"INTEGER","value":"10"}]}]');
    t.equal(r!.code, 200);
    const [a] = parse(r!.body);
    t.equal(a.name, 'a');
    t.same(Object.keys(a.channels[0]), ['name', 'timestamp', 'value', 'type']);
    t.match(a.channels[0], { name: 'c1', value: '10', type: 'INTEGER' });
    const back = parse((await req.kura('dev', 'EXEC/read', '[{"name":"a","channels":[{"name":"c1"}]}]'))!.body);
    t.equal(back[0].channels[0].value, '10', 'really written');
    t.equal((await req.kura('dev', 'EXEC/write', '[{"name":"a","channels":[{"name":"c1","type":"INTEGER","value":10}]}]'))!.code, 400, 'number value');
    const lower = await req.kura('dev', 'EXEC/write', '[{"name":"a","channels":[{"name":"c1","type":"integer","value":"11"}]}]');
    t.equal(lower!.code, 200, 'lower-case type accepted');
    t.equal(parse(lower!.body)[0].channels[0].type, 'INTEGER');
    const bytes = await req.kura('dev', 'EXEC/write', '[{"name":"a","channels":[{"name":"bytes","type":"BYTE_ARRAY","value":"BAUG"}]}]');
    t.equal(parse(bytes!.body)[0].channels[0].value, 'BAUG');
    const ro = await req.kura('dev', 'EXEC/write', '[{"name":"a","channels":[{"name":"b","type":"BOOLEAN","value":"true"}]},{"name":"nope","channels":[]}]');
    const [ra, rn] = parse(ro!.body);
    t.equal(ra.channels[0].error, 'Channel type not within expected types (WRITE or READ_WRITE)');
    t.same(rn, { name: 'nope', error: 'Asset not found' });
    await req.kura('dev', 'EXEC/write', '[{"name":"a","channels":[{"name":"c1","type":"INTEGER","value":"5"}]},{"name":"a","channels":[{"name":"c1","type":"INTEGER","value":"6"}]}]');
    const seq = parse((await req.kura('dev', 'EXEC/read', '[{"name":"a","channels":[{"name":"c1"}]}]'))!.body);
    t.equal(seq[0].channels[0].value, '6', 'entries written in request order');
    const emptyCh = await req.kura('dev', 'EXEC/write', '[{"name":"a","channels":[]}]');
    t.same(parse(emptyCh!.body), [{ name: 'a', channels: [] }]);
  });

  t.test('42: one unparseable value rejects the whole write, nothing is written', async (t) => {
    await req.kura('dev', 'EXEC/write', '[{"name":"a","channels":[{"name":"c1","type":"INTEGER","value":"1"},{"name":"s","type":"STRING","value":"one"}]}]');
    for (const bad of [
      '{"name":"l","type":"LONG","value":"1.5"}',
      '{"name":"bytes","type":"BYTE_ARRAY","value":"!!"}',
      '{"name":"c1","type":"INTEGER","value":"99999999999"}',
      '{"name":"c1","type":"NUMBER","value":"1"}',
    ]) {
      const r = await req.kura(
        'dev',
        'EXEC/write',
        `[{"name":"a","channels":[{"name":"c1","type":"INTEGER","value":"2"},{"name":"s","type":"STRING","value":"two"}]},{"name":"a","channels":[${bad}]}]`,
      );
      t.equal(r!.code, 400, bad);
      t.match(r!.message, /^Bad request\. /);
    }
    const back = parse((await req.kura('dev', 'EXEC/read', '[{"name":"a","channels":[{"name":"c1"},{"name":"s"}]}]'))!.body);
    t.same(
      back[0].channels.map((c: { value: string }) => c.value),
      ['1', 'one'],
      'nothing written',
    );
  });

  t.test('43: an asset whose driver is not attached: every channel has the Kura error', async (t) => {
    const r = await req.kura('dev', 'EXEC/read', '[{"name":"detached"}]');
    t.equal(r!.code, 200);
    const [d] = parse(r!.body);
    t.same(
      d.channels.map((c: { name: string; error: string }) => [c.name, c.error]),
      [
        ['x', 'Configuration Error: Driver not attached'],
        ['y', 'Configuration Error: Driver not attached'],
      ],
    );
  });

  t.test('45: protobuf replies are gzipped when shorter; gzipped requests are accepted', async (t) => {
    const big = await req.kura('dev', 'EXEC/read', undefined);
    t.ok(isGzip(big!.raw), 'long reply gzipped (1f 8b)');
    const small = await req.kura('dev', 'GET/assets', '[{"name":"x"}]');
    t.notOk(isGzip(small!.raw), 'short reply plain');
    const rid = req.nextId();
    const gz = zlib.gzipSync(
      encodeKuraPayload({
        metrics: [
          { name: 'request.id', type: 'STRING', value: rid },
          { name: 'requester.client.id', type: 'STRING', value: 'Q' },
        ],
        body: Buffer.from('[{"name":"x"}]'),
      }),
    );
    const r = await req.kura('dev', 'GET/assets', undefined, { raw: gz, requestId: rid });
    t.equal(r!.code, 200);
    t.same(parse(r!.body), [{ name: 'x', error: 'Asset not found' }]);
  });

  t.test('a gzip bomb (1.9 M metrics in ~22 KB) is answered 400 at once (a request over a bound); the device keeps serving', async (t) => {
    const rid = req.nextId();
    const head = encodeKuraPayload({
      metrics: [
        { name: 'request.id', type: 'STRING', value: rid },
        { name: 'requester.client.id', type: 'STRING', value: 'Q' },
      ],
    });
    const tiny = Buffer.from('c2b802040a001003', 'hex'); // metric: name '', INT32, no value
    const bomb = zlib.gzipSync(Buffer.concat([head, Buffer.alloc(1_900_000 * tiny.length).fill(tiny)]), { level: 9 });
    t.ok(bomb.length < 32 * 1024, `${bomb.length} bytes on the wire`);
    const r = await req.kura('dev', 'GET/assets', undefined, { raw: bomb, requestId: rid });
    t.equal(r?.code, 400);
    t.match(r?.message, /^Request too large: payload inflates to more than 4194304 bytes/);
    const fid = req.nextId();
    const flood = await req.kura('dev', 'GET/assets', undefined, {
      requestId: fid,
      metrics: [
        { name: 'request.id', type: 'STRING', value: fid },
        { name: 'requester.client.id', type: 'STRING', value: 'Q' },
        ...Array.from({ length: 2000 }, (_, i) => ({ name: `m${i}`, type: 'INT32' as const, value: i })),
      ],
    });
    t.equal(flood?.code, 400, 'plain protobuf with 2000 metrics');
    t.match(flood?.message, /more than 1024 metrics/);
    t.equal((await req.kura('dev', 'GET/assets', '[{"name":"x"}]'))?.code, 200, 'still serving');
  });

  t.test('44: simple-json encoding', async (t) => {
    await start({ 'client-id': 'devjson', 'payload.encoding': 'simple-json' });
    const raw = Buffer.from(JSON.stringify({ metrics: { 'request.id': '1', 'requester.client.id': 'Q' }, body: Buffer.from('[]').toString('base64') }));
    const r = await req.kura('devjson', 'GET/assets', undefined, { raw, requestId: '1', encoding: 'simple-json' });
    t.equal(r!.code, 200);
    const obj = JSON.parse(r!.raw.toString());
    t.equal(obj.metrics['response.code'], 200);
    t.equal(Buffer.from(obj.body, 'base64').toString(), r!.body);
    t.equal(parse(r!.body).length, 3);
    const bad = await req.kura('devjson', 'EXEC/write', '[{"name":"a","channels":[{"name":"c1","type":"INTEGER","value":"x"}]}]', { encoding: 'simple-json' });
    t.equal(bad!.code, 400);
    t.match(bad!.message, /^Bad request\. x cannot be converted into a TypedValue of type INTEGER/);
    // An unknown top-level key makes the whole text the body: no metrics, no reply.
    const extra = Buffer.from(JSON.stringify({ metrics: { 'request.id': '2', 'requester.client.id': 'Q' }, extra: 1 }));
    t.equal(await req.kura('devjson', 'GET/assets', undefined, { raw: extra, requestId: '2', wait: 400, encoding: 'simple-json' }), undefined);
    // Over the 4 MiB request bound (docs/mqtt.md "Requests too large"): refused with a reply, the metrics read from the head.
    const huge = Buffer.concat([Buffer.from('{"sentOn":1,"metrics":{"request.id":"3","requester.client.id":"Q"},"body":"'), Buffer.alloc(4 * 1024 * 1024, 0x41), Buffer.from('"}')]);
    const tooLarge = await req.kura('devjson', 'EXEC/read', undefined, { raw: huge, requestId: '3', encoding: 'simple-json', wait: 15_000 });
    t.same([tooLarge?.code, tooLarge?.message], [400, `Request too large: ${huge.length} bytes, the limit is 4194304`], 'a simple-json request over the bound: 400 with the reason');
    t.equal((await req.kura('devjson', 'GET/assets', undefined, { encoding: 'simple-json' }))?.code, 200, 'still serving');
  });

  t.test('bare JSON: the example of docs/mqtt.md works from a shell', async (t) => {
    await start({ 'client-id': 'gatewayd', 'payload.encoding': 'json' });
    const out = await new Promise<string>((resolve, reject) => {
      const sub = spawn('/usr/bin/mosquitto_sub', ['-p', String(broker.port), '-h', '127.0.0.1', '-t', '$EDC/acct/me/ASSET-V1/REPLY/1', '-C', '1', '-W', '15', '-d']);
      let text = '';
      // A read is idempotent: publish until the reply shows up, so a loaded machine (subscriber or
      // daemon not subscribed yet) cannot lose the one request.
      const publish = () =>
        execFile('/usr/bin/mosquitto_pub', ['-p', String(broker.port), '-h', '127.0.0.1', '-t', '$EDC/acct/gatewayd/ASSET-V1/EXEC/read/me/1', '-m', '[{"name":"a","channels":[{"name":"b"}]}]']);
      const timer = setInterval(publish, 500);
      setTimeout(publish, 300);
      let err = '';
      sub.stdout.on('data', (d) => (text += d));
      sub.stderr.on('data', (d) => (err += d));
      // 'close', not 'exit': 'exit' can come before the last of stdout has been read.
      sub.on('close', (code) => {
        clearInterval(timer);
        if (!text.split('\n').some((l) => l.startsWith('['))) reject(new Error(`mosquitto_sub exited ${code} without a reply: ${text} ${err}`));
        else resolve(text);
      });
      sub.on('error', reject);
    });
    // -d prints debug lines around the payload, which has a line of its own.
    const res = JSON.parse(out.split('\n').find((l) => l.startsWith('['))!);
    t.equal(res[0].name, 'a');
    t.match(res[0].channels[0], { name: 'b', value: 'true', type: 'BOOLEAN' });

    const jr = new Requester(broker.url, 'me', 'acct');
    await jr.start();
    t.teardown(() => jr.end());
    const ok = await jr.json('gatewayd', 'GET/assets', '');
    t.equal(ok!.code, 200);
    t.equal(parse(ok!.body).length, 3, 'empty payload = everything');
    const bad = await jr.json('gatewayd', 'EXEC/write', '');
    t.equal(bad!.code, 400);
    t.match(bad!.message, /^Bad request\. /);
    t.same(JSON.parse(bad!.raw.toString()), { 'response.code': 400, 'response.exception.message': bad!.message }, 'error object shape');
    const put = await jr.json('gatewayd', 'PUT/assets', '[]');
    t.equal(put!.code, 500);
    // Without the two extra levels: no reply.
    const before = jr.replies.size;
    await jr.client.publish('$EDC/acct/gatewayd/ASSET-V1/GET/assets', Buffer.from('[]'), { qos: 1 });
    await new Promise((r) => setTimeout(r, 400));
    t.equal(jr.replies.size, before, 'no reply without requester/request-id levels');
  });

  t.test('a slow device delays only its own replies', async (t) => {
    const slowP = req.kura('dev', 'EXEC/read', '[{"name":"slow"}]', { wait: 8000 });
    await new Promise((r) => setTimeout(r, 50));
    let fastAt = 0;
    let slowAt = 0;
    const fastP = req.kura('dev', 'EXEC/read', '[{"name":"a","channels":[{"name":"b"}]}]').then((r) => {
      fastAt = Date.now();
      return r;
    });
    const [slow, fast] = await Promise.all([slowP.then((r) => ((slowAt = Date.now()), r)), fastP]);
    t.equal(fast!.code, 200);
    t.equal(slow!.code, 200);
    t.equal(parse(slow!.body)[0].channels[0].value, '7');
    t.ok(fastAt < slowAt, 'the fast request was answered first');
  });

  t.test('garbage payloads never take the device down', async (t) => {
    let seed = 7;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff), seed / 0x7fffffff);
    for (let i = 0; i < 60; i++) {
      const junk = Buffer.from(Array.from({ length: Math.floor(rnd() * 80) }, () => Math.floor(rnd() * 256)));
      const topic = ['EXEC/read', 'EXEC/write', 'GET/assets', 'x/y/z', ''][i % 5];
      await req.client.publish(`$EDC/acct/dev/ASSET-V1/${topic}`, junk, { qos: 0 });
      await req.client.publish(`$EDC/acct/gatewayd/ASSET-V1/${topic}/Q/${i}`, junk, { qos: 0 });
    }
    // Valid protobuf with a body that is not JSON, and with metrics of the right name but wrong type.
    const r = await req.kura('dev', 'EXEC/write', Buffer.from([0xff, 0xfe, 0x00]));
    t.equal(r!.code, 400);
    const alive = await req.kura('dev', 'GET/assets', '[{"name":"a"}]');
    t.equal(alive!.code, 200, 'still answering');
  });
});

export type { AssetRuntime };
