// The request-handler core: one family of handlers mounted on a real HTTP server and as an MQTT
// application of a real MqttService (Mosquitto), answering the same requests with the same results
// and errors; applications added and removed at run time; the one JSON reader; the reply bound;
// what Kura's RequestHandlerContext gives a handler (the request's metrics, NOTIFY to the
// requester) and replies of metrics; a route's own role over REST and MQTT (src/core/family.ts
// "Roles").

import t from 'tap';
import fs from 'node:fs';
import { HttpServer } from '../../src/http/server.js';
import { createLogger, silentLogger } from '../../src/log.js';
import { RequestError } from '../../src/core/errors.js';
import { PayloadReply, rawJson, type Family } from '../../src/core/family.js';
import { mountRest } from '../../src/http/rest-family.js';
import { familyApplication } from '../../src/mqtt/family-application.js';
import { MqttApplications } from '../../src/mqtt/applications.js';
import { MAX_REPLY_BYTES } from '../../src/core/limits.js';
import { request } from '../helpers/daemon.js';
import { startMosquitto, mosquittoSkip } from '../helpers/mosquitto.js';
import { makeRuntime, makeService, mqttConfig, Requester, until } from '../helpers/mqtt-fixture.js';
import { decodeKuraPayload, type KuraMetric } from '../../src/mqtt/kura-payload.js';

/** A small family: named things with a value, in a map. */
function thingsFamily(things: Map<string, number>, calls: string[]): Family {
  return {
    name: 'things/v1',
    rest: '/services/things/v1',
    appId: 'THINGS-V1',
    errors: 'json',
    routes: [
      { method: 'GET', path: 'things', handler: () => ({ names: [...things.keys()] }) },
      {
        method: 'POST',
        path: 'things/byName',
        handler: async (req) => {
          const body = (await req.body()) as { name?: unknown } | undefined;
          if (!body || typeof body.name !== 'string') throw new RequestError(400, 'parameter "name" is required');
          const v = things.get(body.name);
          if (v === undefined) throw new RequestError(404, `Thing ${body.name} was not found.`);
          return { name: body.name, value: v };
        },
      },
      { method: 'PUT', path: 'things/:name', handler: async (req) => void things.set(req.params.name!, Number(((await req.body()) as { value: number }).value)) },
      { method: 'DEL', path: 'things/:name', handler: (req) => void things.delete(req.params.name!) },
      { method: 'EXEC', path: 'things/_reset', handler: (req) => void (calls.push(`${req.transport}:${req.identity?.via}:${req.resources.join('/')}`), things.clear()) },
      { method: 'GET', path: 'exact', handler: () => rawJson('{"big":9223372036854775807}') },
      { method: 'GET', path: 'huge', handler: () => 'x'.repeat(MAX_REPLY_BYTES + 10) },
      { method: 'GET', path: 'bug', handler: () => { throw new Error('secret detail'); } },
      { method: 'GET', path: 'whoami', handler: (req) => ({ identity: req.identity ?? null, resources: req.resources }) },
      {
        method: 'EXEC',
        path: 'things/_echo',
        // Reads the request's metrics, tells the requester, answers with metrics and a body that is no JSON.
        handler: (req) => {
          const x = req.metrics?.find((m) => m.name === 'x');
          req.notify('echo', { metrics: [{ name: 'seen', type: 'INT32', value: req.metrics?.length ?? -1 }] });
          return new PayloadReply({ status: x ? 200 : 500, metrics: x ? [x] : [], body: `<from>${req.clientId ?? req.transport}</from>` });
        },
      },
    ],
  };
}

/** A family with a role, one route of which needs another. */
const rolesFamily: Family = {
  name: 'roles/v1',
  rest: '/services/roles/v1',
  appId: 'ROLES-V1',
  role: 'things',
  errors: 'json',
  routes: [
    { method: 'GET', path: 'open', handler: () => ({ open: true }) },
    { method: 'GET', path: 'secret', role: 'secret', handler: () => ({ secret: true }) },
  ],
};

t.test('one family over REST and MQTT', mosquittoSkip(), async (t) => {
  const things = new Map([['a', 1], ['b', 2]]);
  const calls: string[] = [];
  const family = thingsFamily(things, calls);

  const http = new HttpServer(createLogger('error'));
  // A stand-in for the authentication stage: the principal named by a header.
  http.use((ctx) => {
    const name = ctx.header('x-test-user');
    if (name) ctx.principal = { name, via: 'test' };
  });
  mountRest(http, family, { permissionsOf: (name) => (name === 'op' ? ['rest.things'] : undefined) });
  mountRest(http, rolesFamily, { permissionsOf: () => undefined });
  await http.listen([{ port: 0, kind: 'http' }], '127.0.0.1');
  const ports = { http: http.listeners().map((l) => l.port), https: [], clientAuth: [] };

  const broker = await startMosquitto();
  const { runtime, dataDir } = makeRuntime();
  const apps = new MqttApplications();
  apps.register(familyApplication(family, silentLogger));
  apps.register(familyApplication(rolesFamily, silentLogger));
  const changes: string[][] = [];
  apps.onChange(() => changes.push(apps.ids()));
  const start = async (encoding: string, clientId: string, permissions?: string[]) => {
    const svc = makeService(runtime, dataDir, mqttConfig({ 'broker-url': broker.url, 'topic.context.account-name': 'acct', 'client-id': clientId, 'payload.encoding': encoding, ...(permissions ? { 'requester.permissions': permissions } : {}) }), silentLogger, apps);
    await svc.start();
    await until(() => svc.isConnected, 5000, 'device connect');
    return svc;
  };
  const dev = await start('kura-protobuf', 'dev');
  const bare = await start('json', 'bare');
  const limited = await start('kura-protobuf', 'limited', ['rest.things']);
  await new Promise((r) => setTimeout(r, 150));
  const req = new Requester(broker.url, 'Q');
  await req.start();
  const notices: { topic: string; payload: Buffer }[] = [];
  req.client.on('message', (topic: string, payload: Buffer) => {
    if (topic.includes('/NOTIFY/')) notices.push({ topic, payload });
  });
  await req.client.subscribe('$EDC/acct/Q/+/NOTIFY/#', 1);
  t.teardown(async () => {
    await req.end();
    await dev.stop();
    await bare.stop();
    await limited.stop();
    await runtime.close();
    await http.close(0);
    await broker.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  const mqtt = (mr: string, body?: string) => req.kura('dev', mr, body, { app: 'THINGS-V1' });
  const json = { 'content-type': 'application/json' };

  t.test('same results', async (t) => {
    const rest = await request(ports, '/services/things/v1/things');
    t.equal(rest.status, 200);
    t.same(rest.json(), { names: ['a', 'b'] });
    const m = await mqtt('GET/things');
    t.equal(m!.code, 200);
    t.equal(m!.body, rest.body, 'the same JSON text over MQTT');
    const byName = await request(ports, '/services/things/v1/things/byName', { method: 'POST', body: { name: 'b' } });
    t.same(byName.json(), { name: 'b', value: 2 });
    t.equal((await mqtt('POST/things/byName', '{"name":"b"}'))!.body, byName.body);
    const exact = await request(ports, '/services/things/v1/exact');
    t.equal(exact.body, '{"big":9223372036854775807}', 'raw JSON text is sent as is');
    t.equal((await mqtt('GET/exact'))!.body, exact.body);
  });

  t.test('same errors, in the family style', async (t) => {
    const rest = await request(ports, '/services/things/v1/things/byName', { method: 'POST', body: { name: 'zz' } });
    t.equal(rest.status, 404);
    t.same(rest.json(), { message: 'Thing zz was not found.' });
    const m = await mqtt('POST/things/byName', '{"name":"zz"}');
    t.equal(m!.code, 404);
    t.equal(m!.body, rest.body, 'JSON error body over MQTT (Kura REST proxy)');
    t.equal(m!.message, undefined, 'no response.exception.message for a REST-proxy family');
    const missing = await request(ports, '/services/things/v1/things/byName', { method: 'POST', body: '', headers: json });
    t.equal(missing.status, 400);
    t.same(missing.json(), { message: 'parameter "name" is required' });
    t.equal((await mqtt('POST/things/byName'))!.code, 400, 'no body over MQTT: the same 400');
    const malformed = await request(ports, '/services/things/v1/things/byName', { method: 'POST', body: '{"name":', headers: json });
    t.equal(malformed.status, 400);
    t.match(malformed.json().message, /^Malformed JSON/);
    const mm = await mqtt('POST/things/byName', '{"name":');
    t.equal(mm!.code, 400);
    t.match(JSON.parse(mm!.body!).message, /^Malformed JSON/, 'the one JSON reader over MQTT too');
    const badUtf8 = await req.kura('dev', 'POST/things/byName', Buffer.from([0x7b, 0xff, 0x7d]), { app: 'THINGS-V1' });
    t.same(JSON.parse(badUtf8!.body!), { message: 'Request body is not valid UTF-8' });
    const noType = await request(ports, '/services/things/v1/things/byName', { method: 'POST', body: '{"name":"a"}' });
    t.equal(noType.status, 415, 'REST requires application/json');
    const bug = await request(ports, '/services/things/v1/bug');
    t.equal(bug.status, 500);
    t.notMatch(bug.body, /secret/);
    const mbug = await mqtt('GET/bug');
    t.equal(mbug!.code, 500);
    t.notMatch(mbug!.raw.toString('latin1'), /secret/);
  });

  t.test("Kura's method mapping: EXEC is POST over REST, DEL is DELETE", async (t) => {
    const put = await request(ports, '/services/things/v1/things/c', { method: 'PUT', body: { value: 3 } });
    t.equal(put.status, 200);
    t.equal(put.body, '', 'success without payload: 200, empty body');
    t.equal((await mqtt('PUT/things/d', '{"value":4}'))!.code, 200);
    t.same([...things.keys()], ['a', 'b', 'c', 'd']);
    t.equal((await request(ports, '/services/things/v1/things/c', { method: 'DELETE' })).status, 200);
    t.equal((await mqtt('DEL/things/d'))!.code, 200);
    t.same([...things.keys()], ['a', 'b']);
    const postOverMqtt = await mqtt('POST/things/_reset');
    t.equal(postOverMqtt!.code, 404, 'an EXEC resource answers only EXEC over MQTT');
    t.same(JSON.parse(postOverMqtt!.body!), { message: 'Not found.' });
    t.equal((await mqtt('GET/nothing'))!.code, 404);
    t.equal((await mqtt('FOO/things'))!.code, 404);
    t.equal((await mqtt('EXEC/things/_reset'))!.code, 200);
    things.set('a', 1);
    t.equal((await request(ports, '/services/things/v1/things/_reset', { method: 'POST' })).status, 200);
    t.equal(things.size, 0);
    t.same(calls, ['mqtt:mqtt:things/_reset', 'rest:undefined:things/_reset'], 'transport, identity and resources reach the handler');
  });

  t.test('who is asking: the identity and its permissions', async (t) => {
    const op = await request(ports, '/services/things/v1/whoami', { headers: { 'x-test-user': 'op' } });
    t.same(op.json(), { identity: { name: 'op', via: 'test', permissions: ['rest.things'] }, resources: ['whoami'] });
    const stranger = await request(ports, '/services/things/v1/whoami', { headers: { 'x-test-user': 'nobody' } });
    t.same(stranger.json().identity, { name: 'nobody', via: 'test', permissions: [] }, 'an unknown name has no permissions');
    t.same((await request(ports, '/services/things/v1/whoami')).json().identity, null, 'anonymous');
    const m = await mqtt('GET/whoami');
    t.same(JSON.parse(m!.body!), { identity: { name: 'Q', via: 'mqtt', permissions: ['kura.admin'] }, resources: ['whoami'] }, 'over MQTT: the requester, trusted as Kura trusts it');
  });

  t.test("the request's metrics, a NOTIFY to the requester, a reply of metrics", async (t) => {
    const metrics: KuraMetric[] = [
      { name: 'request.id', type: 'STRING', value: 'echo-1' },
      { name: 'requester.client.id', type: 'STRING', value: 'Q' },
      { name: 'x', type: 'INT64', value: 9007199254740993n },
    ];
    const r = await req.kura('dev', 'EXEC/things/_echo', undefined, { app: 'THINGS-V1', metrics, requestId: 'echo-1' });
    t.equal(r!.code, 200);
    t.same(r!.metrics.find((m) => m.name === 'x'), { name: 'x', type: 'INT64', value: 9007199254740993n }, 'a typed metric back, exact');
    t.equal(r!.body, '<from>dev</from>', "the body as given, and the device's client id reached the handler");
    await until(() => notices.length > 0, 5000, 'NOTIFY');
    t.equal(notices[0]!.topic, '$EDC/acct/Q/THINGS-V1/NOTIFY/dev/echo', 'NOTIFY to the requester, naming the device and the resource');
    const n = decodeKuraPayload(notices[0]!.payload);
    t.ok(n.ok && n.value.metrics.some((m) => m.name === 'seen' && m.value === 3), 'the handler saw the three metrics');
    const failed = await req.kura('dev', 'EXEC/things/_echo', undefined, { app: 'THINGS-V1' });
    t.equal(failed!.code, 500, "a native reply's status");
    t.equal(failed!.message, undefined, 'no exception message: the reply is what the handler made');
    const rest = await request(ports, '/services/things/v1/things/_echo', { method: 'POST' });
    t.equal(rest.status, 500, 'over REST: no metrics, the status and the body as text');
    t.equal(rest.body, '<from>rest</from>');
    t.match(rest.headers['content-type'], /^text\/plain/);
  });

  t.test("a route's own role, over REST and MQTT", async (t) => {
    const found = (path: string) => {
      const m = http.routes.find('GET', path);
      return m.kind === 'found' ? m.handler.role : 'not found';
    };
    t.equal(found('/services/roles/v1/open'), 'things', "REST: the family's role");
    t.equal(found('/services/roles/v1/secret'), 'secret', "REST: the route's own");
    const open = await req.kura('limited', 'GET/open', undefined, { app: 'ROLES-V1' });
    t.equal(open!.code, 200, "a requester with rest.things reaches the family's routes");
    const secret = await req.kura('limited', 'GET/secret', undefined, { app: 'ROLES-V1' });
    t.equal(secret!.code, 400);
    t.equal(secret!.message, 'Forbidden: requires rest.secret', "but not the route that needs its own role");
    t.equal((await req.kura('limited', 'GET/nothing', undefined, { app: 'ROLES-V1' }))!.code, 404, "an unknown resource: the family's role passed, then 404");
    t.equal((await req.kura('dev', 'GET/secret', undefined, { app: 'ROLES-V1' }))!.code, 200, 'kura.admin passes every role');
  });

  t.test('bare JSON: the code and the error fields in one object', async (t) => {
    const ok = await req.json('bare', 'GET/things', undefined, 5000, 'THINGS-V1');
    t.equal(ok!.code, 200);
    t.same(JSON.parse(ok!.body!), { names: [] });
    const nf = await req.json('bare', 'POST/things/byName', '{"name":"zz"}', 5000, 'THINGS-V1');
    t.equal(nf!.code, 404);
    t.same(JSON.parse(nf!.body!), { 'response.code': 404, message: 'Thing zz was not found.' });
  });

  t.test('a reply beyond the bound is an error reply, response.code 500 (Kapua reads no 413)', async (t) => {
    const r = await mqtt('GET/huge');
    t.equal(r!.code, 500);
    t.match(JSON.parse(r!.body!).message, new RegExp(`^Reply too large: \\d+ bytes, the limit is ${MAX_REPLY_BYTES}`));
    t.match(r!.message, /^Reply too large/, 'the message in response.exception.message too');
    t.equal((await mqtt('GET/things'))!.code, 200, 'still serving');
  });

  t.test('applications added and removed at run time', async (t) => {
    t.same(apps.ids(), ['THINGS-V1', 'ROLES-V1']);
    apps.register(familyApplication({ name: 'late', appId: 'LATE-V1', errors: 'native', routes: [{ method: 'GET', path: 'hello', handler: () => ({ hi: true }) }] }, silentLogger));
    t.same(apps.ids(), ['THINGS-V1', 'ROLES-V1', 'LATE-V1']);
    t.same(changes.at(-1), ['THINGS-V1', 'ROLES-V1', 'LATE-V1'], 'listeners told (BIRTH application_ids)');
    // The subscription goes out at once; publish until the broker has it in place.
    let r;
    for (let i = 0; i < 20 && !r; i++) r = await req.kura('dev', 'GET/hello', undefined, { app: 'LATE-V1', wait: 500 });
    t.equal(r?.code, 200);
    t.same(JSON.parse(r!.body!), { hi: true });
    const nf = await req.kura('dev', 'GET/nope', undefined, { app: 'LATE-V1' });
    t.equal(nf!.code, 404);
    t.equal(nf!.message, 'Not found.', 'native style: response.exception.message');
    t.ok(apps.unregister('LATE-V1'));
    t.same(apps.ids(), ['THINGS-V1', 'ROLES-V1']);
    await new Promise((r) => setTimeout(r, 300));
    t.equal(await req.kura('dev', 'GET/hello', undefined, { app: 'LATE-V1', wait: 800 }), undefined, 'no longer answered');
    t.throws(() => apps.register({ appId: 'A/B', handle: async () => ({ code: 200 }) }), /cannot be a topic level/);
  });
});
