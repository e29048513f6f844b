// A request over the 4 MiB request bound (docs/mqtt.md "Requests too large"), against the real daemon
// and a real Mosquitto, asked as Eclipse Kapua asks (KuraPayload, QoS 0): 4 MiB is served, 4 MiB + 1
// is answered 400 `Request too large` on the requester's REPLY topic (plain and gzipped), one whose
// request.id comes after its body gets no reply, and a packet beyond the client's bound (5 MiB) is
// skipped as it streams in, without a reply and without losing the connection; the daemon answers
// after each. Then the envelope alone for the two JSON encodings: bare JSON reads the requester and
// request id from the topic, simple-json from the `metrics` member in its first 64 KiB.

import t from 'tap';
import crypto from 'node:crypto';
import zlib from 'node:zlib';
import { Envelope, MAX_REQUEST_BYTES } from '../../src/mqtt/envelope.js';
import { MAX_PACKET_BYTES } from '../../src/mqtt/client.js';
import { Writer, decodeKuraPayloadRaw, encodeKuraPayload, writeMetricFields, type KuraMetric } from '../../src/mqtt/kura-payload.js';
import { decodeSimpleJsonHead } from '../../src/mqtt/simple-json-payload.js';
import { startDaemon } from '../helpers/daemon.js';
import { KapuaRequester, negativeRequestId } from '../helpers/kapua-requester.js';
import { startMosquitto, mosquittoSkip } from '../helpers/mosquitto.js';

const DEVICE = 'gw-big';
const LIMIT = 4 * 1024 * 1024;

/** A KuraPayload of `size` bytes exactly: the two metrics, then a body of JSON `[ … ]` filling the rest. */
function payloadOf(metrics: KuraMetric[], size: number): Buffer {
  const head = encodeKuraPayload({ metrics, body: Buffer.alloc(0) });
  // The body's length varint grows with the body: find the body length that makes `size`.
  for (let n = size - head.length; n > 0; n--) {
    const body = Buffer.alloc(n, 0x20);
    body[0] = 0x5b;
    body[n - 1] = 0x5d;
    const p = encodeKuraPayload({ metrics, body });
    if (p.length === size) return p;
    if (p.length < size) break;
  }
  throw new Error(`no payload of ${size} bytes`);
}

const idMetrics = (requester: string, id: string): KuraMetric[] => [
  { name: 'requester.client.id', type: 'STRING', value: requester },
  { name: 'request.id', type: 'STRING', value: id },
];

t.test('requests over the bound against the real daemon', mosquittoSkip(), async (t) => {
  t.equal(MAX_REQUEST_BYTES, LIMIT);
  const broker = await startMosquitto();
  t.teardown(() => broker.close());
  const d = await startDaemon(t, {
    assets: { demo: { 'driver.pid': 'sim', channels: { v: { type: 'READ', 'value.type': 'INTEGER', simulation: 'constant', initial: 1 } } } },
    mqtt: { enabled: true, 'broker-url': broker.url, 'client-id': DEVICE, 'topic.context.account-name': 'acct' },
  });
  const kapua = new KapuaRequester(broker.url);
  await kapua.start();
  t.teardown(() => kapua.end());
  let up = false;
  for (let i = 0; i < 40 && !up; i++) up = (await kapua.ask(DEVICE, 'ASSET-V1', 'GET/assets', undefined, { wait: 500 }))?.code === 200;
  t.ok(up, 'answers ASSET-V1');
  const connects = () => d.logs.filter((l) => /msg="mqtt connected"/.test(l)).length;
  const connected = connects();
  const ask = (payload: Buffer, requestId: string, wait = 30_000) => kapua.ask(DEVICE, 'ASSET-V1', 'EXEC/read', undefined, { payload, requestId, wait });
  const stillServes = async (what: string) => t.equal((await kapua.ask(DEVICE, 'ASSET-V1', 'GET/assets'))?.code, 200, `still answers after ${what}`);

  let id = negativeRequestId();
  const atBound = await ask(payloadOf(idMetrics(kapua.id, id), LIMIT), id);
  t.equal(atBound?.code, 200, '4 MiB exactly is served (a read of no assets)');

  id = negativeRequestId();
  const over = await ask(payloadOf(idMetrics(kapua.id, id), LIMIT + 1), id);
  t.same([over?.code, over?.message], [400, `Request too large: ${LIMIT + 1} bytes, the limit is ${LIMIT}`], '4 MiB + 1: 400 with the reason');
  t.equal(over?.topic, `$EDC/acct/${kapua.id}/ASSET-V1/REPLY/${id}`, "on the requester's REPLY topic");
  await stillServes('4 MiB + 1');

  // Gzipped: incompressible bytes, so that the compressed payload is over the bound too.
  id = negativeRequestId();
  const gz = zlib.gzipSync(encodeKuraPayload({ metrics: idMetrics(kapua.id, id), body: crypto.randomBytes(LIMIT + 1024) }), { level: 1 });
  t.ok(gz.length > LIMIT);
  const overGz = await ask(gz, id);
  t.same([overGz?.code, overGz?.message], [400, `Request too large: ${gz.length} bytes, the limit is ${LIMIT}`], 'gzipped and over the bound: 400');

  // The request id after the body: not in the head that is read, so no reply (and a log line).
  id = negativeRequestId();
  const w = new Writer();
  w.bytesField(5001, Buffer.alloc(LIMIT + 10, 0x20));
  for (const m of idMetrics(kapua.id, id)) {
    const at = w.begin(5000);
    writeMetricFields(w, m);
    w.end(at);
  }
  const late = w.finish();
  const decoded = decodeKuraPayloadRaw(late);
  t.same(decoded.ok && [decoded.value.metrics, decoded.value.body?.length], [idMetrics(kapua.id, id), LIMIT + 10], 'a KuraPayload whose metrics follow its body');
  t.equal(await ask(late, id, 3000), undefined, 'request.id after the body: no reply');
  await d.waitForLog(/MQTT request dropped without reply.*without string metrics request.id and requester.client.id in its first 65536 bytes/, 5000);
  await stillServes('a request id it could not read');

  // Beyond the client's packet bound: skipped as it streams in, acknowledged, no reply; the connection stays.
  id = negativeRequestId();
  t.equal(await ask(payloadOf(idMetrics(kapua.id, id), MAX_PACKET_BYTES + 1), id, 3000), undefined, "beyond the client's bound: no reply");
  await d.waitForLog(/mqtt message over the size limit skipped and acknowledged/, 5000);
  await stillServes("a packet beyond the client's bound");
  t.equal(connects(), connected, 'the connection was never lost');
});

t.test('the envelope: bare JSON and simple-json payloads over the bound', async (t) => {
  const big = Buffer.alloc(LIMIT + 1, 0x20);
  const json = new Envelope({ prefix: '$EDC', account: 'a', clientId: 'gw', encoding: 'json', gzip: false });
  const p = json.parse('$EDC/a/gw/ASSET-V1/EXEC/read/me/7', big);
  t.match(p, { ok: false, refused: { request: { requester: 'me', requestId: '7', appId: 'ASSET-V1', body: undefined }, response: { code: 413, message: `Request too large: ${LIMIT + 1} bytes, the limit is ${LIMIT}` } } });
  const reply = json.reply((p as any).refused.request, (p as any).refused.response);
  t.same([reply.topic, JSON.parse(reply.payload.toString())], ['$EDC/a/me/ASSET-V1/REPLY/7', { 'response.code': 400, 'response.exception.message': `Request too large: ${LIMIT + 1} bytes, the limit is ${LIMIT}` }]);
  t.match(json.parse('$EDC/a/gw/ASSET-V1/EXEC/read/me/7', big.subarray(0, LIMIT)), { ok: true }, 'at the bound: served');
  // simple-json: the members before `metrics` are stepped over in the first 64 KiB, `metrics` is read.
  const simple = new Envelope({ prefix: '$EDC', account: 'a', clientId: 'gw', encoding: 'simple-json', gzip: false });
  const sj = (head: string, tail = '"}') => simple.parse('$EDC/a/gw/ASSET-V1/EXEC/read', Buffer.concat([Buffer.from(head), Buffer.alloc(LIMIT, 0x41), Buffer.from(tail)]));
  const tooLarge = (n: number) => ({ code: 413, message: `Request too large: ${n} bytes, the limit is ${LIMIT}` });
  const head1 = '{"metrics":{"request.id":"1","requester.client.id":"me"},"body":"';
  let s = sj(head1);
  t.match(s, { ok: false, ignore: false, refused: { request: { requester: 'me', requestId: '1', appId: 'ASSET-V1', body: undefined }, response: tooLarge(head1.length + LIMIT + 2) } }, 'metrics first: refused with a reply');
  const sReply = simple.reply((s as any).refused.request, (s as any).refused.response);
  t.same([sReply.topic, JSON.parse(sReply.payload.toString()).metrics], ['$EDC/a/me/ASSET-V1/REPLY/1', { 'response.code': 400, 'response.exception.message': `Request too large: ${head1.length + LIMIT + 2} bytes, the limit is ${LIMIT}` }], 'the reply in simple-json, 400');
  // Kura's encoder's order, with what a byte scanner could trip on: nesting, braces, quotes and
  // non-ASCII inside strings, spaces and new lines between tokens.
  const head2 = ' {\n "sentOn" : 1796157835548 , "position":{"latitude":46.1,"longitude":[1,{"x":"}"}]},\n "metrics" : { "x":"a\\"}\\\\", "requester.client.id" : "mé}", "request.id":"-42", "n": 7.5 } ,"body":"';
  s = sj(head2);
  t.match(s, { refused: { request: { requester: 'mé}', requestId: '-42' }, response: { code: 413 } } }, 'sentOn and position stepped over, escapes and braces in strings');
  const cases: [string, string, string?][] = [
    ['the body before the metrics', '{"body":"', `","metrics":{"request.id":"1","requester.client.id":"me"}}`],
    ['a request id that is a number (no string metric, as Kura)', '{"metrics":{"request.id":1,"requester.client.id":"me"},"body":"'],
    ['not an object', '["'],
    ['not JSON', 'metrics'],
    ['a metrics object cut by the head', `{"metrics":{"request.id":"1","requester.client.id":"me","pad":"${'x'.repeat(70_000)}`],
    ['a bad key', '{metrics:{"request.id":"1","requester.client.id":"me"},"body":"'],
    ['metrics an array', '{"metrics":["request.id"],"body":"'],
  ];
  // Cut or mutated heads never throw, and any reply goes to a requester read from the text.
  const src = Buffer.from(head2);
  let threw = 0;
  for (let k = 0; k < 3000; k++) {
    const b = Buffer.from(src.subarray(0, 1 + (k % src.length)));
    if (k % 2) b[k % b.length] = (k * 37) & 0xff;
    try {
      const r = decodeSimpleJsonHead(b, 'x');
      const who = r.metrics.find((m) => m.name === 'requester.client.id');
      if (who && !b.includes(Buffer.from(JSON.stringify(who.value).slice(1, -1)))) threw++;
    } catch {
      threw++;
    }
  }
  t.equal(threw, 0, '3000 cut or mutated heads: none threw, every requester read is in the text');
  for (const [what, head, tail] of cases) {
    const r = sj(head, tail);
    t.match(r, { ok: false, ignore: false, reason: /without string metrics request\.id and requester\.client\.id in its first 65536 bytes/ }, `${what}: not served`);
    t.equal((r as any).refused, undefined, `${what}: no reply`);
  }
});
