// One conversion (docs/architecture.md "Asset values: one conversion"; docs/rest-api.md "Writing values";
// docs/mqtt.md "ASSET-V1"): the same write over REST `_write` (the value as a JSON string, and as
// a JSON number or boolean where it is one) and over ASSET-V1 EXEC/write in every request encoding
// (bare JSON, simple-json, KuraPayload protobuf, the same gzipped) is accepted or refused alike,
// writes the same value and reports it alike: what was written, in the channel's type, on success;
// the same message when the value is refused (the whole request, nothing written) or when that
// channel fails. The real daemon, three of them (one per `payload.encoding`), behind a real Mosquitto.

import t, { type Test } from 'tap';
import zlib from 'node:zlib';
import { startDaemon, type Daemon } from '../helpers/daemon.js';
import { basic, type Client } from '../helpers/session-client.js';
import { startMosquitto, mosquittoSkip } from '../helpers/mosquitto.js';
import { Requester, type Reply } from '../helpers/mqtt-fixture.js';
import { encodeKuraPayload } from '../../src/mqtt/kura-payload.js';
import { CHANNELS, WRITE_CASES, type ChannelName, type WriteCase } from './write-cases.js';

const ENCODINGS = ['json', 'simple-json', 'kura-protobuf'] as const;
type Encoding = (typeof ENCODINGS)[number];
const FRONTS = ['rest', 'rest-literal', 'json', 'simple-json', 'kura-protobuf', 'kura-protobuf-gzip'] as const;
type Front = (typeof FRONTS)[number];
const ASSET = 'plant';
const PASSWORD = 'Op-pass-123';

/** Values a REST client may also send as a JSON number or boolean literal (Gson keeps their text). */
const isJsonLiteral = (v: string) => v === 'true' || v === 'false' || /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/.test(v);

/** A value other than the case's expected one, written first so that any write shows, and how it reads back. */
function sentinel(c: WriteCase): { text: string; reads: string } {
  const written = 'written' in c.outcome ? c.outcome.written : undefined;
  const flag = written === 'true' ? 'false' : 'true';
  const base: Record<ChannelName, [string, string]> = { flag: [flag, flag], n: ['99', '99'], l: ['99', '99'], f: ['99', '99.0'], x: ['99', '99.0'], s: ['zz', 'zz'], b: ['enp6', 'enp6'] };
  const [text, reads] = base[c.channel];
  return { text, reads };
}

// The fronts that reach each daemon: run one after the other on it, the three daemons at once.
const GROUPS: Front[][] = [['rest', 'rest-literal', 'json'], ['simple-json'], ['kura-protobuf', 'kura-protobuf-gzip']];

t.test('the same write over REST and ASSET-V1 in every encoding, through the daemon', { ...mosquittoSkip(), timeout: 240_000 }, async (t) => {
  const broker = await startMosquitto();
  t.teardown(() => broker.close());
  const channels = Object.fromEntries(Object.entries(CHANNELS).map(([name, vt]) => [name, { type: 'READ_WRITE', 'value.type': vt, simulation: 'memory' }]));
  const daemons = {} as Record<Encoding, { d: Daemon; rest: Client }>;
  await Promise.all(
    ENCODINGS.map(async (encoding) => {
      const d = await startDaemon(t, {
        identities: { op: { password: PASSWORD, permissions: ['rest.assets'] } },
        drivers: { sim: { factory: 'simulator' } },
        assets: { [ASSET]: { 'driver.pid': 'sim', channels } },
        mqtt: { enabled: true, 'broker-url': broker.url, 'client-id': `gw-${encoding}`, 'topic.context.account-name': 'acct', 'payload.encoding': encoding },
      });
      daemons[encoding] = { d, rest: basic(d, 'op', PASSWORD) };
    }),
  );
  const req = new Requester(broker.url, 'Q');
  await req.start();
  t.teardown(() => req.end());

  const mqttSend = (front: Exclude<Front, 'rest' | 'rest-literal'>, body: string, wait: number): Promise<Reply | undefined> => {
    if (front === 'json') return req.json('gw-json', 'EXEC/write', body, wait);
    if (front === 'simple-json') return req.kura('gw-simple-json', 'EXEC/write', body, { encoding: 'simple-json', wait });
    if (front === 'kura-protobuf') return req.kura('gw-kura-protobuf', 'EXEC/write', body, { wait });
    const requestId = req.nextId();
    const metrics = [
      { name: 'request.id', type: 'STRING' as const, value: requestId },
      { name: 'requester.client.id', type: 'STRING' as const, value: 'Q' },
    ];
    return req.kura('gw-kura-protobuf', 'EXEC/write', undefined, { requestId, wait, raw: zlib.gzipSync(encodeKuraPayload({ metrics, body: Buffer.from(body) })) });
  };
  const daemonOf = (front: Front) => daemons[front === 'rest' || front === 'rest-literal' ? 'json' : front === 'kura-protobuf-gzip' ? 'kura-protobuf' : front];

  // Each daemon subscribes to its requests once connected: ask until every one answers.
  for (const front of ['json', 'simple-json', 'kura-protobuf'] as const) {
    let reply: Reply | undefined;
    for (let i = 0; i < 30 && !reply; i++) reply = await mqttSend(front, '[]', 1000);
    t.equal(reply?.code, 200, `${front}: the daemon answers ASSET-V1`);
    if (!reply) return;
  }

  /** The value text a channel reads back over REST (Java's text; strings and base64 unquoted). */
  const readBack = async (front: Front, ch: ChannelName): Promise<string> => {
    const r = await daemonOf(front).rest.request(`/services/assets/${ASSET}/_read`, { method: 'POST', body: { channels: [ch] } });
    const m = /"value":("(?:[^"\\]|\\.)*"|[^,}]+)/.exec(r.body);
    return m ? (m[1]!.startsWith('"') ? JSON.parse(m[1]!) : m[1]!) : `(no value: ${r.body})`;
  };
  const put = async (front: Front, ch: ChannelName, text: string) => {
    const r = await daemonOf(front).rest.request(`/services/assets/${ASSET}/_write`, { method: 'POST', body: { channels: [{ name: ch, type: 'STRING', value: text }] } });
    if (r.status !== 200 || r.json()[0].channelStatus.channelFlag !== 'SUCCESS') throw new Error(`setting ${ch} to ${text}: ${r.body}`);
  };

  /** What a front end answered: `written <TYPE> <text>`, `fails <message>` or `refused <message>`. */
  const restOutcome = async (front: 'rest' | 'rest-literal', c: WriteCase, t: Test): Promise<string> => {
    const value = front === 'rest' ? JSON.stringify(c.value) : c.value;
    const r = await daemonOf(front).rest.request(`/services/assets/${ASSET}/_write`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: `{"channels":[{"name":"${c.channel}","type":"${c.type}","value":${value}}]}`,
    });
    if (r.status === 400) {
      const suffix = ` (channel ${c.channel})`;
      t.ok(r.body.endsWith(suffix), `${front}: the 400 names the channel: ${r.body}`);
      return `refused ${r.body.slice(0, r.body.length - suffix.length)}`;
    }
    if (r.status !== 200) return `HTTP ${r.status} ${r.body}`;
    const rec = r.json()[0];
    if (rec.channelStatus.channelFlag !== 'SUCCESS') return `fails ${rec.channelStatus.exceptionMessage}`;
    // The value's JSON text, exact (a LONG beyond 2^53 must not go through a double here either).
    const text = /"value":("(?:[^"\\]|\\.)*"|[^,}]+)/.exec(r.body)![1]!;
    return `written ${rec.valueType} ${text.startsWith('"') ? JSON.parse(text) : text}`;
  };
  const mqttOutcome = async (front: Exclude<Front, 'rest' | 'rest-literal'>, c: WriteCase, t: Test): Promise<string> => {
    const r = await mqttSend(front, JSON.stringify([{ name: ASSET, channels: [{ name: c.channel, type: c.type, value: c.value }] }]), 5000);
    if (!r) return 'no reply';
    if (r.code === 400) {
      const m = /^Bad request\. ([^]*) \(channel (.*) of asset (.*)\)\.$/.exec(r.message ?? '');
      t.ok(m && m[2] === c.channel && m[3] === ASSET, `${front}: the 400 names the channel and asset: ${r.message}`);
      return `refused ${m ? m[1] : r.message}`;
    }
    if (r.code !== 200) return `code ${r.code} ${r.message}`;
    const entry = JSON.parse(r.body!)[0].channels[0];
    return entry.error !== undefined ? `fails ${entry.error}` : `written ${entry.type} ${entry.value}`;
  };

  for (const c of WRITE_CASES) {
    t.test(`${c.type} ${JSON.stringify(c.value)} to ${CHANNELS[c.channel]} channel ${c.channel}`, async (t) => {
      const fronts = FRONTS.filter((f) => f !== 'rest-literal' || isJsonLiteral(c.value));
      const expected =
        'written' in c.outcome ? `written ${CHANNELS[c.channel]} ${c.outcome.written}` : 'refused' in c.outcome ? `refused ${c.outcome.refused}` : `fails ${c.outcome.fails}`;
      const results = await Promise.all(
        GROUPS.map(async (group) => {
          const out: { front: Front; outcome: string; after: string }[] = [];
          for (const front of group.filter((f) => fronts.includes(f))) {
            await put(front, c.channel, sentinel(c).text);
            const outcome = front === 'rest' || front === 'rest-literal' ? await restOutcome(front, c, t) : await mqttOutcome(front, c, t);
            out.push({ front, outcome, after: await readBack(front, c.channel) });
          }
          return out;
        }),
      );
      for (const { front, outcome, after } of results.flat()) {
        t.equal(outcome, expected, `${front}: ${expected}`);
        if ('written' in c.outcome) t.equal(after, c.outcome.written, `${front}: ${c.outcome.written} was written`);
        else t.equal(after, sentinel(c).reads, `${front}: nothing written`);
      }
    });
  }

  t.test('one refused value refuses the whole request: the valid one is not written either', async (t) => {
    for (const front of FRONTS.filter((f) => f !== 'rest-literal')) {
      await put(front, 'n', '5');
      await put(front, 'flag', 'true');
      const items = [{ name: 'n', type: 'INTEGER', value: '6' }, { name: 'flag', type: 'BOOLEAN', value: 'on' }];
      if (front === 'rest') {
        const r = await daemonOf(front).rest.request(`/services/assets/${ASSET}/_write`, { method: 'POST', body: { channels: items } });
        t.same([r.status, r.body], [400, 'on cannot be converted into a TypedValue of type BOOLEAN (channel flag)'], 'REST: 400 naming the value, type and channel');
      } else {
        const r = await mqttSend(front, JSON.stringify([{ name: ASSET, channels: items }]), 5000);
        t.same([r?.code, r?.message], [400, `Bad request. on cannot be converted into a TypedValue of type BOOLEAN (channel flag of asset ${ASSET}).`], `${front}: the request's error`);
      }
      t.same([await readBack(front, 'n'), await readBack(front, 'flag')], ['5', 'true'], `${front}: nothing written`);
    }
  });
});
