// CONF-V1 (docs/mqtt.md "CONF-V1"): Kura's configuration application as Eclipse Kapua uses it,
// against the real daemon and a real Mosquitto. Requests are sent as Kapua's device-call layer
// sends them (QoS 0, a negative request.id, a KapuaPool-… requester) and every reply body is read by
// JAXB with Kapua's binding (test/helpers/KapuaConfPeer.java): namespaces, element names, the Java
// type of every value. One model behind three front ends: what CONF-V1 changes, REST configuration/v2
// and CONF-V2 show, and the other way round, with the same validation and messages; passwords are
// never shown and the placeholder keeps the stored one; snapshots and rollback; hostile XML refused
// with 400 while the daemon keeps serving; a limited requester refused.
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { startDaemon } from '../helpers/daemon.js';
import { basic } from '../helpers/session-client.js';
import { mosquittoSkip, startMosquitto } from '../helpers/mosquitto.js';
import { Requester, until, watchBirths } from '../helpers/mqtt-fixture.js';
import { KapuaRequester, type KapuaReply } from '../helpers/kapua-requester.js';
import { KapuaConfPeer, kapuaPeerSkip } from '../helpers/kapua-conf.js';
import { decodeKuraPayload, encodeKuraPayload } from '../../src/mqtt/kura-payload.js';

const C = '/services/configuration/v2';
const DEVICE = 'gw-c1';
const REST = 'org.eclipse.kura.internal.rest.provider.RestService';
const MQTT = 'org.eclipse.kura.core.data.transport.mqtt.MqttDataTransport';
const CLOUD = 'org.eclipse.kura.cloud.CloudService';
const SECRET = 'Mqtt-Secret-1';
const ESF = 'xmlns:esf="http://eurotech.com/esf/2.0"';
const xml = (inner: string) => `<?xml version="1.0" encoding="UTF-8"?><esf:configurations ${ESF}>${inner}</esf:configurations>`;
const one = (pid: string, name: string, type: string, value: string) =>
  xml(`<esf:configuration pid="${pid}"><esf:properties><esf:property name="${name}" array="false" encrypted="false" type="${type}"><esf:value>${value}</esf:value></esf:property></esf:properties></esf:configuration>`);

t.setTimeout(240_000);

t.test('CONF-V1 as Kapua uses it', { ...mosquittoSkip(), ...kapuaPeerSkip() }, async (t) => {
  const broker = await startMosquitto();
  t.teardown(() => broker.close());
  const peer = new KapuaConfPeer();
  t.teardown(() => peer.close());

  // BIRTH's application_ids, as Kapua's console reads them (exact entries).
  const births = await watchBirths(t, broker.url, `$EDC/acct/${DEVICE}/MQTT/#`, 'birth-watcher-c1');

  const d = await startDaemon(t, {
    identities: { admin: { password: 'Adm1n-Secret!', passwordChangeNeeded: false, permissions: ['kura.admin'] } },
    rest: { 'login.throttle.max.delay': 0 },
    assets: { demo: { 'driver.pid': 'sim', 'poll.interval': 0, channels: { setpoint: { type: 'READ_WRITE', 'value.type': 'DOUBLE', simulation: 'memory', initial: 20, scale: 2.5 } } } },
    mqtt: { enabled: true, 'broker-url': broker.url, 'client-id': DEVICE, 'topic.context.account-name': 'acct', username: 'u', password: SECRET, 'keep-alive': 30 },
  });
  await d.waitForLog(/msg="mqtt connected"/);
  const admin = basic(d, 'admin', 'Adm1n-Secret!');
  const rest = (p: string, body?: unknown, method = body === undefined ? 'GET' : 'POST') =>
    admin.request(`${C}/${p}`, { method, body: body === undefined ? undefined : JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  const restProps = async (pid: string) => (await rest('configurableComponents/configurations/byPid', { pids: [pid] })).json().configs[0].properties;
  const kapua = new KapuaRequester(broker.url);
  await kapua.start();
  t.teardown(() => kapua.end());
  const conf = async (mr: string, body?: string | Buffer) => (await kapua.ask(DEVICE, 'CONF-V1', mr, body))!;
  const text = (r: KapuaReply) => r.body?.toString('utf8') ?? '';

  await until(() => births.length > 0, 10_000, 'BIRTH');

  t.test('in BIRTH whenever CONF-V2 is', async (t) => {
    const ids = births.at(-1)!.split(',');
    t.ok(ids.includes('CONF-V1') && ids.includes('CONF-V2'), `application_ids ${births.at(-1)}`);
  });

  t.test('replies as Kapua requires them: topic, INT32 response.code, gzip', async (t) => {
    const r = await conf('GET/snapshots');
    t.ok(r, 'a reply to a QoS 0 request with a negative request.id');
    const levels = r.topic.split('/');
    t.equal(levels.length, 6, 'exactly six levels');
    t.same(levels.slice(0, 5), ['$EDC', 'acct', kapua.id, 'CONF-V1', 'REPLY']);
    t.match(levels[5], /^-\d+$/, 'the request id as sent');
    t.equal(r.metrics.find((m) => m.name === 'response.code')?.type, 'INT32');
    t.equal(r.code, 200);
  });

  t.test('GET/configurations: every component with its ocd:OCD, as JAXB reads it; the same as REST', async (t) => {
    const r = await conf('GET/configurations');
    t.equal(r.code, 200);
    t.equal(r.raw[0], 0x1f, 'gzip-compressed (kura-protobuf with encode.gzip)');
    t.notOk(zlib.gunzipSync(r.raw).includes(SECRET), 'the MQTT password is nowhere in the reply');
    const configs = await peer.configurations(r.body!);
    const v2 = (await rest('configurableComponents/configurations')).json().configs as { pid: string; definition?: { ad: unknown[] }; properties: Record<string, { type: string; value: unknown }> }[];
    t.same(configs.map((c) => c.pid), v2.filter((c) => c.definition).map((c) => c.pid), 'the components of configuration/v2, in its order');
    for (const c of configs) t.same([c.definition?.ad.length], [v2.find((x) => x.pid === c.pid)!.definition!.ad?.length ?? 0], `${c.pid}: a definition with the ADs of configuration/v2`);
    t.ok(configs.every((c) => c.definition!.id), 'every definition has an id');
    const mqtt = configs.find((c) => c.pid === MQTT)!;
    t.same(mqtt.properties.password, { class: 'String', value: 'placeholder' }, 'the password as the placeholder');
    t.equal(mqtt.definition!.ad.find((a) => a.id === 'password')?.type, 'Password');
    t.equal(mqtt.definition!.ad.find((a) => a.id === 'keep-alive')?.name, 'Keep-alive', "the daemon's own components' ADs named by their labels");
    t.same(mqtt.properties['keep-alive'], { class: 'Integer', value: '30' });
    const restC = configs.find((c) => c.pid === REST)!;
    t.same(restC.properties['session.inactivity.interval'], { class: 'Integer', value: String(v2.find((c) => c.pid === REST)!.properties['session.inactivity.interval'].value) });
    const demo = configs.find((c) => c.pid === 'demo')!;
    t.same(demo.properties['setpoint#+scale'], { class: 'Double', value: '2.5' }, 'a Double as Java writes it');
    t.same(demo.properties['setpoint#+value.type'], { class: 'String', value: 'DOUBLE' });
    t.same(demo.properties['driver.pid'], { class: 'String', value: 'sim' });
    const ad = demo.definition!.ad.find((a) => a.id === 'setpoint#+type')!;
    t.same([ad.type, ad.required, ad.options.map((o) => o[1])], ['String', true, ['READ', 'WRITE', 'READ_WRITE']], 'a channel AD with its options');
    t.equal(ad.name, 'Mode', "a channel AD named by its label (its description is configuration/v2's)");
    t.equal(demo.definition!.ad.find((a) => a.id === 'poll.interval')?.name, 'Poll interval', 'an asset AD too');
    // Every value of every component as configuration/v2 shows it.
    for (const c of configs) {
      const other = v2.find((x) => x.pid === c.pid)!;
      for (const [k, p] of Object.entries(c.properties)) {
        const v = other.properties[k]?.value;
        t.ok(v !== undefined, `${c.pid} ${k} is a configuration/v2 property too`);
        const asText = (x: unknown) => (typeof x === 'number' && /Double|Float/.test(p.class) && Number.isInteger(x) ? `${x}.0` : String(x));
        if (other.properties[k].type !== 'PASSWORD') t.same(p.value, Array.isArray(v) ? v.map(asText) : asText(v), `${c.pid} ${k}`);
      }
    }
  });

  t.test('GET/configurations/<pid>: that one; an unknown pid is an empty list', async (t) => {
    const r = await conf(`GET/configurations/${REST}`);
    t.equal(r.code, 200);
    t.same((await peer.configurations(r.body!)).map((c) => c.pid), [REST]);
    const none = await conf('GET/configurations/nope');
    t.equal(none.code, 200);
    t.same(await peer.configurations(none.body!), [], 'Kura: an empty esf:configurations');
  });

  t.test("a Kapua-shaped PUT of one property, as Kapua's marshaller writes it; seen over REST and CONF-V2", async (t) => {
    const before = (await rest('snapshots')).json().ids.length;
    const body = await peer.putBody(REST, [{ name: 'session.inactivity.interval', type: 'integerType', values: ['1200'] }]);
    t.match(body, /^<\?xml version="1.0" encoding="UTF-8" standalone="yes"\?><esf:configurations /);
    const r = await conf(`PUT/configurations/${REST}`, body);
    t.same([r.code, r.message], [200, undefined]);
    t.same((await restProps(REST))['session.inactivity.interval'], { value: 1200, type: 'INTEGER' }, 'REST shows it');
    const v2 = await kapua.ask(DEVICE, 'CONF-V2', 'POST/configurableComponents/configurations/byPid', JSON.stringify({ pids: [REST] }));
    t.same(JSON.parse(text(v2!)).configs[0].properties['session.inactivity.interval'], { value: 1200, type: 'INTEGER' }, 'CONF-V2 shows it');
    t.equal((await rest('snapshots')).json().ids.length, before + 1, 'a snapshot after the change (Kura)');
    t.equal((await restProps(REST))['auth.basic.enabled']?.value, true, 'the other properties unchanged');
  });

  t.test('a change over REST is seen over CONF-V1', async (t) => {
    const u = await rest('configurableComponents/configurations/_update', { configs: [{ pid: REST, properties: { 'session.inactivity.interval': { type: 'INTEGER', value: 1500 } } }], takeSnapshot: false }, 'PUT');
    t.equal(u.status, 200);
    const [c] = await peer.configurations((await conf(`GET/configurations/${REST}`)).body!);
    t.same(c.properties['session.inactivity.interval'], { class: 'Integer', value: '1500' });
  });

  t.test('the same validation and messages as CONF-V2', async (t) => {
    const cases: [string, string, string, string, unknown][] = [
      [REST, 'session.inactivity.interval', 'Integer', '0', { type: 'INTEGER', value: 0 }],
      [MQTT, 'keep-alive', 'Integer', '-5', { type: 'INTEGER', value: -5 }],
      ['demo', 'setpoint#+type', 'String', 'SIDEWAYS', { type: 'STRING', value: 'SIDEWAYS' }],
    ];
    for (const [pid, key, type, value, prop] of cases) {
      const v1 = await conf('PUT/configurations', one(pid, key, type, value));
      const v2 = await kapua.ask(DEVICE, 'CONF-V2', 'PUT/configurableComponents/configurations/_update', JSON.stringify({ configs: [{ pid, properties: { [key]: prop } }] }));
      t.equal(v1.code, 400, `${pid} ${key}=${value} refused`);
      t.equal(v1.message, JSON.parse(text(v2!)).message, 'with the message CONF-V2 gives');
    }
    const b = await conf('PUT/configurations', one(REST, 'auth.basic.enabled', 'Boolean', 'maybe'));
    t.equal(b.code, 400);
    t.match(b.message, /maybe cannot be converted into a TypedValue of type BOOLEAN/, 'a boolean other than true/false/1/0');
    t.same((await restProps(REST))['session.inactivity.interval'], { value: 1500, type: 'INTEGER' }, 'nothing applied');
  });

  t.test('passwords: the placeholder keeps the stored one, a new one is stored and never shown', async (t) => {
    const layer = () => fs.readFileSync(path.join(d.dataDir, 'config', 'runtime.json'), 'utf8');
    const connects = () => d.logs.filter((l) => /msg="mqtt connected"/.test(l)).length;
    // What Kapua sends back after showing the form: every property, the password as it was shown.
    const form = await peer.putBody(MQTT, [
      { name: 'password', type: 'passwordType', values: ['placeholder'] },
      { name: 'keep-alive', type: 'integerType', values: ['25'] },
    ]);
    t.match(form, /encrypted="true" type="Password"><esf:value>cGxhY2Vob2xkZXI=</, 'Kapua sends it base64-encoded');
    const before = connects();
    t.equal((await conf(`PUT/configurations/${MQTT}`, form)).code, 200);
    await until(() => connects() > before, 10_000, 'reconnect for keep-alive');
    t.notOk(layer().includes('placeholder'), 'the placeholder is not stored');
    t.notOk(/"password"/.test(JSON.stringify(JSON.parse(layer()).components?.[MQTT]?.props ?? {})), 'the stored password untouched');
    const next = connects();
    const changed = await peer.putBody(MQTT, [{ name: 'password', type: 'passwordType', values: ['N3w-Secret'] }]);
    t.equal((await conf(`PUT/configurations/${MQTT}`, changed)).code, 200);
    await until(() => connects() > next, 10_000, 'reconnect with the new password');
    t.match(layer(), /N3w-Secret/, 'the new password stored');
    const shown = await conf(`GET/configurations/${MQTT}`);
    t.notOk(zlib.gunzipSync(shown.raw).includes('N3w-Secret'), 'and never shown');
    t.same((await peer.configurations(shown.body!))[0].properties.password, { class: 'String', value: 'placeholder' });
    t.notOk(d.logs.some((l) => l.includes('N3w-Secret') || l.includes(SECRET)), 'no password in the log');
  });

  t.test('snapshots: ids as Kura writes them, a snapshot as configurations, rollback', async (t) => {
    const ids = await peer.snapshotIds(text(await conf('GET/snapshots')));
    t.same(ids, (await rest('snapshots')).json().ids.map(String), 'the REST ids, as Java longs, oldest first');
    const taken = await conf('EXEC/snapshot');
    t.equal(taken.code, 200);
    const [id] = await peer.snapshotIds(text(taken));
    t.equal(id, String((await rest('snapshots')).json().ids.at(-1)), 'the new id');
    const snap = await conf(`GET/snapshots/${id}`);
    t.equal(snap.code, 200);
    const configs = await peer.configurations(snap.body!);
    t.ok(configs.every((c) => c.definition === null), 'without definitions');
    t.same(configs.find((c) => c.pid === REST)!.properties['session.inactivity.interval'], { class: 'Integer', value: '1500' });
    t.same(configs.find((c) => c.pid === MQTT)!.properties.password, { class: 'String', value: 'placeholder' }, 'a snapshot shows no password');
    t.notOk(zlib.gunzipSync(snap.raw).includes('N3w-Secret'));

    t.equal((await conf('PUT/configurations', one(REST, 'session.inactivity.interval', 'Integer', '777'))).code, 200);
    t.equal((await restProps(REST))['session.inactivity.interval'].value, 777);
    const back = await conf(`EXEC/rollback/${id}`);
    t.same([back.code, back.message], [200, undefined]);
    t.equal((await restProps(REST))['session.inactivity.interval'].value, 1500, 'back to the snapshot');
    const v2 = await kapua.ask(DEVICE, 'CONF-V2', 'POST/configurableComponents/configurations/byPid', JSON.stringify({ pids: [REST] }));
    t.equal(JSON.parse(text(v2!)).configs[0].properties['session.inactivity.interval'].value, 1500, 'CONF-V2 shows the rollback');

    const abc = await conf('GET/snapshots/abc');
    t.same([abc.code, abc.message], [400, 'The snapshot id abc is not a number']);
    t.equal((await conf('EXEC/rollback/x1')).code, 400);
    const missing = await conf('EXEC/rollback/12345');
    t.same([missing.code, missing.message], [500, 'Configuration snapshot 12345 was not found.']);
    t.same([(await conf('GET/snapshots/12345')).code], [500]);
  });

  t.test("Kura's answers to other requests", async (t) => {
    const post = await conf('POST/configurations', one(REST, 'x', 'String', 'y'));
    t.same([post.code, post.message], [500, 'Operation post not supported.']);
    t.same([(await conf('DEL/snapshots')).message], ['Operation delete not supported.']);
    t.same([(await conf('GET/nothing')).code, (await conf('GET/nothing')).message], [404, 'Not found.']);
    t.equal((await conf('GET/configurations/a/b')).code, 400, 'too many resources');
    t.equal((await conf('EXEC/snapshot/1')).code, 400);
    const empty = await conf('PUT/configurations');
    t.equal(empty.code, 400);
    t.match(empty.message, /no body/);
    const wrongPid = await conf('PUT/configurations/other', one(REST, 'session.inactivity.interval', 'Integer', '60'));
    t.same([wrongPid.code, wrongPid.message], [400, 'The body has no configuration of pid other']);
  });

  t.test('hostile XML: 400 with the reason, nothing applied, the daemon keeps serving', async (t) => {
    // Inside an ocd:OCD, whose content a PUT does not read: only the reader's depth bound stops it.
    const deep = `<esf:configurations ${ESF}><esf:configuration pid="p"><ocd:OCD xmlns:ocd="http://www.osgi.org/xmlns/metatype/v1.2.0">${'<x>'.repeat(5000)}${'</x>'.repeat(5000)}</ocd:OCD></esf:configuration></esf:configurations>`;
    const bodies: [string, string | Buffer, RegExp][] = [
      ['a DTD', `<?xml version="1.0"?><!DOCTYPE esf:configurations [<!ENTITY x "y">]>${one(REST, 'session.inactivity.interval', 'Integer', '60').replace(/^<\?xml[^>]*\?>/, '')}`, /DOCTYPE|DTD/i],
      ['an external entity', `<?xml version="1.0"?><!DOCTYPE r [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><r>&xxe;</r>`, /DOCTYPE|DTD/i],
      ['an undeclared entity', one(REST, 'session.inactivity.interval', 'Integer', '&x;'), /entit/i],
      ['nesting 5,000 deep', deep, /depth|deep|nest/i],
      // 1 MB, within the request bound: only the reader's element count stops it.
      ['250,001 elements', `<esf:configurations ${ESF}><esf:configuration pid="p"><ocd:OCD xmlns:ocd="http://www.osgi.org/xmlns/metatype/v1.2.0">${'<x/>'.repeat(250_001)}</ocd:OCD></esf:configuration></esf:configurations>`, /elements/i],
      ['not UTF-8', Buffer.concat([Buffer.from(one(REST, 'session.inactivity.interval', 'String', '').slice(0, 150)), Buffer.from([0xc3, 0x28]), Buffer.from('</esf:value></esf:property></esf:properties></esf:configuration></esf:configurations>')]), /UTF-8/i],
      ['not XML', 'configurations please', /./],
      ['another root', '<configurations xmlns="urn:other"/>', /esf:configurations/],
      ['an unknown type', one(REST, 'session.inactivity.interval', 'Integr', '60'), /unknown type/],
      ['an Integer out of range', one(REST, 'session.inactivity.interval', 'Integer', '2147483648'), /not a Integer|Integer/],
      ['a property twice', xml(`<esf:configuration pid="${REST}"><esf:properties>${'<esf:property name="session.inactivity.interval" type="Integer"><esf:value>60</esf:value></esf:property>'.repeat(2)}</esf:properties></esf:configuration>`), /twice/],
    ];
    for (const [what, body, reason] of bodies) {
      const r = await conf('PUT/configurations', body);
      t.equal(r.code, 400, `${what}: 400`);
      t.match(r.message, reason, `${what}: ${r.message?.slice(0, 160)}`);
    }
    // A gzipped request body that inflates beyond the request bound (a "zip bomb"): refused, not inflated.
    const bomb = zlib.gzipSync(encodeKuraPayload({ metrics: [{ name: 'requester.client.id', type: 'STRING', value: kapua.id }, { name: 'request.id', type: 'STRING', value: '-77' }], body: Buffer.alloc(32 * 1024 * 1024, 0x20) }));
    t.ok(bomb.length < 256 * 1024, `the bomb is ${bomb.length} bytes`);
    const replyTopic = `$EDC/acct/${kapua.id}/CONF-V1/REPLY/-77`;
    const got: Buffer[] = [];
    kapua.client.on('message', (topic: string, p: Buffer) => topic === replyTopic && got.push(p));
    await kapua.client.subscribe(replyTopic, 1);
    await kapua.client.publish(`$EDC/acct/${DEVICE}/CONF-V1/PUT/configurations`, bomb, { qos: 0 });
    await until(() => got.length > 0, 10_000, 'the bomb refused');
    const refused = decodeKuraPayload(got[0]);
    t.ok(refused.ok && refused.value.metrics.find((m) => m.name === 'response.code')?.value === 400, 'a payload inflating beyond the bound: 400');
    t.same((await restProps(REST))['session.inactivity.interval'], { value: 1500, type: 'INTEGER' }, 'nothing applied');
    t.equal((await conf('GET/snapshots')).code, 200, 'the daemon keeps serving');
    t.equal(d.proc.exitCode, null);
  });

  t.test('requesters in parallel: every one answered, the changes applied one at a time', async (t) => {
    const others = await Promise.all(
      [1, 2, 3, 4].map(async () => {
        const k = new KapuaRequester(broker.url);
        await k.start();
        t.teardown(() => k.end());
        return k;
      }),
    );
    const before = (await rest('snapshots')).json().ids.length;
    const asked = await Promise.all(
      others.flatMap((k, i) => [
        k.ask(DEVICE, 'CONF-V1', 'GET/configurations', undefined, { wait: 30_000 }),
        k.ask(DEVICE, 'CONF-V1', 'PUT/configurations/demo', one('demo', 'setpoint#+unit', 'String', `u${i}`), { wait: 30_000 }),
      ]),
    );
    t.same(asked.map((r) => r?.code), [200, 200, 200, 200, 200, 200, 200, 200], 'every request answered 200');
    t.ok(asked.every((r, i) => r!.topic.split('/')[2] === others[Math.floor(i / 2)].id), 'each on its own requester topic');
    for (const r of asked.filter((_, i) => i % 2 === 0)) {
      const demo = (await peer.configurations(r!.body!)).find((c) => c.pid === 'demo')!;
      t.ok(['C', 'u0', 'u1', 'u2', 'u3', undefined].includes(demo.properties['setpoint#+unit']?.value as string), 'a whole configuration, before or after a change');
    }
    t.match((await restProps('demo'))['setpoint#+unit'].value, /^u[0-3]$/, 'one of the changes is in force');
    t.equal((await rest('snapshots')).json().ids.length, Math.min(before + 4, 10), 'a snapshot per change (up to configuration.snapshots.max)');
  });

  t.test('the bare-JSON encoding: the XML is the payload, an error the JSON object', async (t) => {
    const connects = () => d.logs.filter((l) => /msg="mqtt connected"/.test(l)).length;
    const encoding = async (value: string) => {
      const before = connects();
      const u = await rest('configurableComponents/configurations/_update', { configs: [{ pid: CLOUD, properties: { 'payload.encoding': { type: 'STRING', value } } }], takeSnapshot: false }, 'PUT');
      t.equal(u.status, 200);
      await until(() => connects() > before, 10_000, 'reconnect');
    };
    await encoding('json');
    const bare = new Requester(broker.url, 'bare');
    await bare.start();
    t.teardown(() => bare.end());
    let ids: Awaited<ReturnType<Requester['json']>>;
    // The new subscription may take a moment after the reconnect: ask until it answers.
    for (let i = 0; i < 10 && !ids!; i++) ids = await bare.json(DEVICE, 'GET/snapshots', undefined, 1500, 'CONF-V1');
    t.match(ids!.body, /^<\?xml version="1.0" encoding="UTF-8"\?><esf:snapshot-ids /);
    t.same(await peer.snapshotIds(ids!.body!), (await rest('snapshots')).json().ids.map(String));
    const put = await bare.json(DEVICE, 'PUT/configurations', one(REST, 'session.inactivity.interval', 'Integer', '1400'), 5000, 'CONF-V1');
    t.same([put!.code, put!.body], [200, ''], 'a PUT: an empty payload');
    t.equal((await restProps(REST))['session.inactivity.interval'].value, 1400);
    const bad = await bare.json(DEVICE, 'PUT/configurations', one(REST, 'session.inactivity.interval', 'Integer', '0'), 5000, 'CONF-V1');
    t.equal(bad!.code, 400);
    t.match(JSON.parse(bad!.body!), { 'response.code': 400, 'response.exception.message': /session.inactivity.interval/ });
    t.comment(bad!.body!);
    const c = await bare.json(DEVICE, `GET/configurations/${REST}`, undefined, 5000, 'CONF-V1');
    t.same((await peer.configurations(c!.body!)).map((x) => x.pid), [REST]);
    await encoding('kura-protobuf');
  });

  t.test('requester permissions and the properties reserved to kura.admin apply to CONF-V1', async (t) => {
    // The last subtest reconnected: ask until the subscription is back.
    for (let i = 0; i < 10 && (await kapua.ask(DEVICE, 'CONF-V1', 'GET/snapshots', undefined, { wait: 1500 }))?.code !== 200; i++);
    const birthsBefore = births.length;
    const set = (props: Record<string, unknown>) => rest('configurableComponents/configurations/_update', { configs: [{ pid: CLOUD, properties: props }], takeSnapshot: false }, 'PUT');
    t.equal((await set({ 'requester.permissions': { type: 'STRING', value: ['rest.configuration'] } })).status, 200);
    const reserved = await conf('PUT/configurations', one(MQTT, 'broker-url', 'String', 'mqtt://attacker.example:1883'));
    t.same([reserved.code, reserved.message], [400, `Only kura.admin may change ${MQTT} property broker-url`]);
    t.equal((await conf('PUT/configurations', one(REST, 'session.inactivity.interval', 'Integer', '1600'))).code, 200, 'another property is changed');
    t.equal((await set({ 'requester.permissions': { type: 'STRING', value: ['rest.assets'] } })).status, 200);
    const refused = await conf('GET/configurations');
    t.same([refused.code, refused.message], [400, 'Forbidden: requires rest.configuration'], 'a limited requester refused');
    t.same([(await conf('PUT/configurations', one(REST, 'session.inactivity.interval', 'Integer', '60'))).code], [400]);
    t.equal((await restProps(REST))['session.inactivity.interval'].value, 1600, 'nothing changed');
    // applications.disabled: CONF-V1 leaves BIRTH and gets no reply.
    t.equal((await set({ 'requester.permissions': { type: 'STRING', value: ['kura.admin'] }, 'applications.disabled': { type: 'STRING', value: ['CONF-V1'] } })).status, 200);
    await until(() => births.length > birthsBefore && !births.at(-1)!.split(',').includes('CONF-V1'), 10_000, 'BIRTH without CONF-V1');
    t.ok(births.at(-1)!.split(',').includes('CONF-V2'), 'CONF-V2 still announced');
    t.equal(await kapua.ask(DEVICE, 'CONF-V1', 'GET/snapshots', undefined, { wait: 2000 }), undefined, 'no reply');
  });
});
