// One conversion: a value written to a channel of another type is converted once, by the asset
// runtime, whatever the front end. The same write over REST `_write` and over ASSET-V1 EXEC/write in
// every encoding (KuraPayload protobuf, the same gzipped, simple-json, bare JSON) writes the same
// value and gives the same reply (what was written, in the channel's type, on success; the same
// message on failure). Real HTTP server, real Mosquitto, simulator memory channels.

import t from 'tap';
import fs from 'node:fs';
import zlib from 'node:zlib';
import { HttpServer } from '../../src/http/server.js';
import { assetsFamily } from '../../src/api/assets.js';
import { mountRest } from '../../src/core/rest.js';
import { valueText } from '../../src/assets/values.js';
import { silentLogger } from '../../src/log.js';
import { encodeKuraPayload } from '../../src/mqtt/kura-payload.js';
import { request } from '../helpers/daemon.js';
import { startMosquitto, mosquittoSkip } from '../helpers/mosquitto.js';
import { channel, makeRuntime, makeService, mqttConfig, Requester, until, type Reply } from '../helpers/mqtt-fixture.js';

const mem = { simulation: 'memory' };
const CASES: { type: string; value: string; channel: string; written?: string; error?: RegExp }[] = [
  { type: 'INTEGER', value: '5', channel: 'flag', written: 'true' },
  { type: 'INTEGER', value: '0', channel: 'flag', written: 'false' },
  { type: 'DOUBLE', value: '2.0', channel: 'n', written: '2' },
  { type: 'DOUBLE', value: '2.5', channel: 'n', error: /^2\.5 does not fit a INTEGER channel$/ },
  { type: 'STRING', value: '7', channel: 'n', written: '7' },
  { type: 'STRING', value: 'seven', channel: 'n', error: /^seven cannot be converted into a TypedValue of type INTEGER$/ },
  { type: 'BOOLEAN', value: 'true', channel: 'x', written: '1.0' },
  { type: 'LONG', value: '9007199254740993', channel: 'l', written: '9007199254740993' },
  { type: 'LONG', value: '9007199254740993', channel: 'n', error: /does not fit a INTEGER channel/ },
  { type: 'INTEGER', value: '-3', channel: 's', written: '-3' },
  { type: 'INTEGER', value: '12', channel: 'x', written: '12.0' },
];

t.test('the same write over REST and ASSET-V1 in every encoding', mosquittoSkip(), async (t) => {
  const { runtime, dataDir } = makeRuntime([
    {
      pid: 'plant',
      driverPid: 'sim',
      description: '',
      pollInterval: 0,
      publishMaxInterval: 0,
      channels: [
        channel('flag', 'BOOLEAN', 'READ_WRITE', mem),
        channel('n', 'INTEGER', 'READ_WRITE', mem),
        channel('x', 'DOUBLE', 'READ_WRITE', mem),
        channel('l', 'LONG', 'READ_WRITE', mem),
        channel('s', 'STRING', 'READ_WRITE', mem),
      ],
    },
  ]);
  const http = new HttpServer(silentLogger);
  mountRest(http, assetsFamily(runtime), { permissionsOf: () => [] });
  await http.listen([{ port: 0, kind: 'http' }], '127.0.0.1');
  const ports = { http: http.listeners().map((l) => l.port), https: [], clientAuth: [] };
  const broker = await startMosquitto();
  const services = await Promise.all(
    [['pb', 'kura-protobuf'], ['sj', 'simple-json'], ['bare', 'json']].map(async ([id, encoding]) => {
      const svc = makeService(runtime, dataDir, mqttConfig({ 'broker-url': broker.url, 'topic.context.account-name': 'acct', 'client-id': id, 'payload.encoding': encoding }));
      await svc.start();
      await until(() => svc.isConnected, 5000, `${id} connect`);
      return svc;
    }),
  );
  await new Promise((r) => setTimeout(r, 200));
  const req = new Requester(broker.url, 'Q');
  await req.start();
  t.teardown(async () => {
    await req.end();
    for (const s of services) await s.stop();
    await runtime.close();
    await http.close(0);
    await broker.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  /** What a front end reports: `ok <type> <value text>` or `error <message>`. */
  type Outcome = string;
  const viaRest = async (c: (typeof CASES)[number]): Promise<Outcome> => {
    const r = await request(ports, '/services/assets/plant/_write', { method: 'POST', body: { channels: [{ name: c.channel, type: c.type, value: c.value }] } });
    t.equal(r.status, 200, `REST ${c.type} ${c.value}`);
    const rec = r.json()[0];
    if (rec.channelStatus.channelFlag !== 'SUCCESS') return `error ${rec.channelStatus.exceptionMessage}`;
    // The value's JSON text, exact (a LONG beyond 2^53 must not go through a double here either).
    const text = /"value":("(?:[^"\\]|\\.)*"|[^,}]+)/.exec(r.body)![1]!;
    return `ok ${rec.valueType} ${text.startsWith('"') ? JSON.parse(text) : text}`;
  };
  const viaMqtt = async (c: (typeof CASES)[number], how: 'protobuf' | 'gzip' | 'simple-json' | 'json'): Promise<Outcome> => {
    const body = JSON.stringify([{ name: 'plant', channels: [{ name: c.channel, type: c.type, value: c.value }] }]);
    let r: Reply | undefined;
    if (how === 'json') r = await req.json('bare', 'EXEC/write', body);
    else if (how === 'simple-json') r = await req.kura('sj', 'EXEC/write', body, { encoding: 'simple-json' });
    else if (how === 'protobuf') r = await req.kura('pb', 'EXEC/write', body);
    else {
      const rid = req.nextId();
      const metrics = [
        { name: 'request.id', type: 'STRING' as const, value: rid },
        { name: 'requester.client.id', type: 'STRING' as const, value: 'Q' },
      ];
      r = await req.kura('pb', 'EXEC/write', undefined, { requestId: rid, raw: zlib.gzipSync(encodeKuraPayload({ metrics, body: Buffer.from(body) })) });
    }
    t.equal(r?.code, 200, `${how} ${c.type} ${c.value}`);
    const entry = JSON.parse(r!.body!)[0].channels[0];
    return entry.error !== undefined ? `error ${entry.error}` : `ok ${entry.type} ${entry.value}`;
  };
  const written = async (ch: string): Promise<string> => {
    const [rec] = await runtime.read('plant', [ch]);
    return rec!.value ? valueText(rec!.value) : `(${rec!.error})`;
  };
  const reset = async (ch: string) => {
    const cfg = runtime.get('plant')!.channels.find((c) => c.name === ch)!;
    const zero = { BOOLEAN: 'false', INTEGER: '99', DOUBLE: '99', LONG: '99', STRING: 'zz' }[cfg.valueType as 'INTEGER'];
    await runtime.write('plant', [{ name: ch, value: { type: 'STRING', value: zero } }]);
  };

  for (const c of CASES) {
    t.test(`${c.type} ${c.value} to channel ${c.channel}`, async (t) => {
      const outcomes: Record<string, Outcome> = {};
      const values: Record<string, string> = {};
      for (const front of ['rest', 'protobuf', 'gzip', 'simple-json', 'json'] as const) {
        await reset(c.channel);
        const before = await written(c.channel);
        outcomes[front] = front === 'rest' ? await viaRest(c) : await viaMqtt(c, front);
        values[front] = await written(c.channel);
        if (c.error) t.equal(values[front], before, `${front}: nothing written`);
      }
      if (c.written !== undefined) {
        t.same(new Set(Object.values(values)), new Set([c.written]), `every front end wrote ${c.written}`);
        // The reply reports what was written: the converted value, in the channel's type.
        const type = { flag: 'BOOLEAN', n: 'INTEGER', x: 'DOUBLE', l: 'LONG', s: 'STRING' }[c.channel];
        t.same(new Set(Object.values(outcomes)), new Set([`ok ${type} ${c.written}`]), `every reply reports what was written: ${type} ${c.written}`);
      } else {
        const texts = new Set(Object.values(outcomes));
        t.equal(texts.size, 1, `one failure message for all: ${[...texts].join(' | ')}`);
        t.match([...texts][0], /^error /);
        t.match([...texts][0]!.slice(6), c.error!);
      }
    });
  }
});
