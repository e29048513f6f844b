// The resource families (docs/architecture.md "Front ends: the resource families"), driven from the
// list the daemon mounts (src/api/families.ts), against the real daemon and a real Mosquitto:
// - the daemon mounts that list: every REST route of every family is reached (a request without
//   credentials gets past route matching), BIRTH's application_ids are the list's application ids
//   in its order, and besides the list only session/v1, the package upload and the field console's
//   files are HTTP routes;
// - a family with both a REST base and an MQTT application answers each of its routes alike over
//   both: the REST status as `response.code` by the mapping of docs/mqtt.md "Response codes", the
//   same body, and its errors in its style (docs/configuration-v2.md "configuration/v2 (REST) and
//   CONF-V2 (MQTT)"). Every such family has its cases below, for every route, successes and errors,
//   a limited identity's refused request among them; a family or a route without one fails here.
import t, { type Test } from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, startDaemon, type Daemon, type Response } from '../helpers/daemon.js';
import { basic } from '../helpers/session-client.js';
import { mosquittoSkip, startMosquitto } from '../helpers/mosquitto.js';
import { Requester, until, type Reply, watchBirths } from '../helpers/mqtt-fixture.js';
import { families } from '../../src/api/families.js';
import { restOf, type CoreRoute, type Family } from '../../src/core/family.js';

/**
 * The daemon's family list. families() only builds route tables, its dependencies are used when a
 * request arrives: a stand-in that answers every use with itself lists them without a daemon.
 */
function familyList(): Family[] {
  const inert: any = new Proxy(function () {}, { get: (_t, key) => (key === 'then' ? undefined : inert), apply: () => inert, construct: () => inert });
  return families(inert);
}

const bothTransports = (f: Family) => f.rest !== undefined && f.appId !== undefined;
const routeKey = (r: CoreRoute) => `${r.method} ${r.path}`;

/** docs/mqtt.md "Response codes": the `response.code` of an answer with this REST status. */
function documentedResponseCode(status: number): number {
  if ([200, 400, 404, 500].includes(status)) return status;
  if (status >= 200 && status < 300) return 200;
  if (status >= 400 && status < 500) return 400;
  return 500;
}

interface SampleContext {
  transport: 'rest' | 'mqtt';
  /** A REST GET below the family's base, as the administrator (to find an id to ask for). */
  get(resource: string): Promise<any>;
}

interface Sample {
  /** What it shows. */
  what: string;
  /** The REST status it must produce: a sample meant as an error is one. */
  status: number;
  /** Values of the route's `:name` segments. */
  params?: Record<string, string>;
  /** The body: a JSON value, text sent as it is (malformed JSON), or made per transport. */
  body?: unknown | ((c: SampleContext) => unknown | Promise<unknown>);
  /** Makes two answers comparable where they differ by design (the id of a snapshot just taken). */
  normalise?: (text: string) => string;
}

interface FamilyCase {
  /** What the REST identity and the MQTT requester both may do. */
  permissions: string[];
  /** Samples by route, `METHOD path` as the family declares it. */
  routes: Record<string, Sample[]>;
}

const RESTPID = 'org.eclipse.kura.internal.rest.provider.RestService';
const MQTTPID = 'org.eclipse.kura.core.data.transport.mqtt.MqttDataTransport';
const SIMULATOR = 'org.eclipse.kura.driver.simulator';
const snapshotIds = (text: string) => text.replace(/\d{13}/g, '<id>');
const newest = async (c: SampleContext): Promise<number> => (await c.get('snapshots')).ids.at(-1);

const CASES: Record<string, FamilyCase> = {
  'configuration/v2': {
    permissions: ['rest.configuration'],
    routes: {
      'GET snapshots': [{ what: 'the snapshot ids', status: 200 }],
      'POST snapshots/byId': [
        { what: 'a snapshot', status: 200, body: async (c: SampleContext) => ({ id: await newest(c) }) },
        { what: 'an unknown id', status: 500, body: { id: 1 } },
        { what: 'malformed JSON', status: 400, body: '{"id":' },
      ],
      'EXEC snapshots/_write': [{ what: 'a new snapshot', status: 200, normalise: snapshotIds }],
      'EXEC snapshots/_rollback': [{ what: 'back to the second newest', status: 200, normalise: snapshotIds }],
      'EXEC snapshots/byId/_rollback': [
        { what: 'back to a snapshot', status: 200, body: async (c: SampleContext) => ({ id: await newest(c) }), normalise: snapshotIds },
        { what: 'an unknown id', status: 500, body: { id: 1 } },
      ],
      'GET factoryComponents': [{ what: 'the factory pids', status: 200 }],
      'POST factoryComponents': [
        {
          what: 'a driver created',
          status: 200,
          body: (c: SampleContext) => ({ configs: [{ factoryPid: SIMULATOR, pid: `sim-over-${c.transport}`, properties: {} }], takeSnapshot: false }),
        },
        { what: 'an existing pid', status: 400, body: { configs: [{ factoryPid: SIMULATOR, pid: 'sim', properties: {} }], takeSnapshot: false } },
        { what: 'no pid', status: 400, body: { configs: [{ factoryPid: SIMULATOR }] } },
      ],
      'DEL factoryComponents/byPid': [
        { what: 'a driver deleted', status: 200, body: (c: SampleContext) => ({ pids: [`sim-over-${c.transport}`], takeSnapshot: false }) },
        { what: 'no pids', status: 400, body: {} },
      ],
      'GET factoryComponents/ocd': [{ what: 'the factory definitions', status: 200 }],
      'POST factoryComponents/ocd/byFactoryPid': [
        { what: 'one factory', status: 200, body: { pids: [SIMULATOR, 'x.y'] } },
        { what: 'no pids', status: 400, body: {} },
      ],
      'GET configurableComponents': [{ what: 'the pids', status: 200 }],
      'GET configurableComponents/pidsWithFactory': [{ what: 'pids and factories', status: 200 }],
      'GET configurableComponents/configurations': [{ what: 'every configuration with its definition', status: 200 }],
      'POST configurableComponents/configurations/byPid': [
        { what: 'in request order, secrets masked', status: 200, body: { pids: [MQTTPID, RESTPID, 'nope'] } },
        { what: 'no pids', status: 400, body: {} },
      ],
      'POST configurableComponents/configurations/byPid/_default': [
        { what: 'the defaults', status: 200, body: { pids: [RESTPID] } },
        { what: 'no pids', status: 400, body: {} },
      ],
      'POST configurableComponents/channelDefinitions/byPid': [
        { what: "an asset's channel definitions", status: 200, body: { pids: ['demo', 'nope'] } },
        { what: 'no pids', status: 400, body: {} },
      ],
      'PUT configurableComponents/configurations/_update': [
        { what: 'a property changed', status: 200, body: { configs: [{ pid: RESTPID, properties: { 'session.inactivity.interval': { type: 'INTEGER', value: 1700 } } }], takeSnapshot: false } },
        { what: 'a value outside its definition', status: 400, body: { configs: [{ pid: RESTPID, properties: { 'session.inactivity.interval': { type: 'INTEGER', value: 0 } } }] } },
        // docs/configuration-v2.md "Reserved to kura.admin": a limited identity asks for the administrator's change.
        { what: "a property reserved to kura.admin, by rest.configuration", status: 403, body: { configs: [{ pid: RESTPID, properties: { 'auth.basic.enabled': { type: 'BOOLEAN', value: false } } }] } },
        { what: 'malformed JSON', status: 400, body: '{bad' },
      ],
      'EXEC _reset': [{ what: "back to the image's configuration", status: 200, body: { takeSnapshot: false } }],
    },
  },
};

t.test('every family with REST and MQTT has its cases, for every route it has', async (t) => {
  const list = familyList();
  t.ok(list.length >= 8, `${list.length} families listed`);
  const dual = list.filter(bothTransports);
  t.ok(dual.length > 0, `families on both transports: ${dual.map((f) => f.name).join(', ')}`);
  for (const f of dual) {
    const c = CASES[f.name];
    if (!c) {
      t.fail(`${f.name} has a REST base and an MQTT application but no case in this suite: add one`);
      continue;
    }
    const declared = f.routes.map(routeKey);
    t.same(declared.filter((k) => !(k in c.routes) || c.routes[k]!.length === 0), [], `${f.name}: every route has a sample`);
    t.same(Object.keys(c.routes).filter((k) => !declared.includes(k)), [], `${f.name}: every sample names a route of the family`);
  }
  t.same(Object.keys(CASES).filter((name) => !dual.some((f) => f.name === name)), [], 'every case is a family on both transports');
});

t.test('docs/architecture.md lists the families as the daemon does: names, REST bases, applications, error styles, in order', async (t) => {
  const md = fs.readFileSync(path.join(ROOT, 'docs/architecture.md'), 'utf8');
  const section = md.slice(md.indexOf('## Front ends: the resource families'), md.indexOf('### Adding a family'));
  const cell = (c: string) => /`([^`]+)`/.exec(c)?.[1];
  const documented = section
    .split('\n')
    .map((l) => l.split('|').slice(1, -1))
    .filter((cells) => cells.length === 5 && cell(cells[0]!) !== undefined)
    .map(([name, rest, app, errors]) => ({ name: cell(name!), rest: cell(rest!), appId: cell(app!), errors: cell(errors!) }));
  t.same(documented, familyList().map((f) => ({ name: f.name, rest: f.rest, appId: f.appId, errors: f.errors })));
});

t.test('besides the family list only session/v1, the package upload and the console files are HTTP routes; only families and packages MQTT applications', async (t) => {
  const callers = (pattern: RegExp): string[] => {
    const out: string[] = [];
    const walk = (dir: string) => {
      for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else if (p.endsWith('.ts') && fs.readFileSync(p, 'utf8').split('\n').some((l) => !/^\s*(\/\/|\*)/.test(l) && pattern.test(l))) out.push(path.relative(ROOT, p));
      }
    };
    walk(path.join(ROOT, 'src'));
    return out.sort();
  };
  // HttpServer.route, called from outside its own file.
  t.same(callers(/\.route\(/).filter((f) => f !== 'src/http/server.ts'), ['src/api/deploy/upload.ts', 'src/api/session.ts', 'src/console/serve.ts', 'src/http/rest-family.ts']);
  t.same(callers(/applications\.register\(/), ['src/daemon.ts', 'src/plugins/host.ts'], 'the daemon for its families, the plug-in host for packages');
});

t.test('against the daemon and Mosquitto', mosquittoSkip(), async (t) => {
  const broker = await startMosquitto();
  t.teardown(() => broker.close());
  const list = familyList();

  // BIRTH as Kapua reads it, watched from before the daemon connects.
  const births = await watchBirths(t, broker.url, '$EDC/acct/dev1/MQTT/#', 'birth-watcher');

  const permissions = [...new Set(Object.values(CASES).flatMap((c) => c.permissions))];
  const d = await startDaemon(t, {
    identities: {
      admin: { password: 'Adm1n-Secret!', passwordChangeNeeded: false, permissions: ['kura.admin'] },
      peer: { password: 'Peer-Secret-1', passwordChangeNeeded: false, permissions },
    },
    rest: { 'auth.basic.enabled': true, 'login.throttle.max.delay': 0 },
    drivers: { sim: { factory: 'simulator' } },
    assets: { demo: { 'driver.pid': 'sim', channels: { setpoint: { type: 'READ_WRITE', 'value.type': 'DOUBLE', simulation: 'memory', initial: 20 } } } },
    mqtt: {
      enabled: true,
      'broker-url': broker.url,
      'client-id': 'dev1',
      'topic.context.account-name': 'acct',
      'payload.encoding': 'kura-protobuf',
      password: 'Mqtt-Secret-1',
      username: 'u',
      // The requester may do what the REST identity may: the answers compared are one identity's.
      'requester.permissions': permissions,
    },
  });
  await d.waitForLog(/msg="mqtt connected"/);
  const admin = basic(d, 'admin', 'Adm1n-Secret!');
  const peer = basic(d, 'peer', 'Peer-Secret-1');
  const requester = new Requester(broker.url, 'kapua');
  await requester.start();
  t.teardown(() => requester.client.end());

  t.test('the daemon mounts the family list', async (t) => {
    await until(() => births.length > 0, 10_000, 'BIRTH');
    // A family with `active` (CMD-V1, off by default as here) is an application only while it is on.
    t.equal(births.at(-1), list.flatMap((f) => (f.appId && !f.active ? [f.appId] : [])).join(','), "BIRTH's application_ids: the list's, in its order");
    // Route matching comes before authentication: a route the daemon has answers an anonymous
    // request with its challenge (or, open, its answer), a path it has not with the router's 404.
    t.equal((await d.request('/services/no-such-family/v1/x')).status, 404, 'an unknown path: 404');
    for (const f of list.filter((f) => f.rest !== undefined)) {
      for (const route of f.routes) {
        const { method, path: p } = restOf(f, route);
        const r = await d.request(p.replace(/:(\w+)/g, 'x'), { method, body: method === 'GET' ? undefined : {} });
        t.not(r.status, 404, `${f.name}: ${method} ${p} is mounted`);
        t.not(r.status, 405, `${f.name}: ${method} ${p} has its method`);
      }
    }
  });

  for (const f of list.filter(bothTransports)) {
    const c = CASES[f.name];
    if (!c) continue; // reported by the first test
    t.test(`${f.name} over REST and ${f.appId}: the same answers, errors in the ${f.errors} style`, async (t) => {
      const get = async (resource: string) => (await admin.request(`${f.rest}/${resource}`)).json();
      for (const route of f.routes) {
        const { method, path: restPath } = restOf(f, route);
        for (const s of c.routes[routeKey(route)] ?? []) {
          await t.test(`${routeKey(route)}: ${s.what}`, async (t) => {
            const fill = (p: string) => p.replace(/:(\w+)/g, (_m, name: string) => s.params?.[name] ?? 'x');
            const bodyFor = async (transport: SampleContext['transport']) => {
              const b = typeof s.body === 'function' ? await s.body({ transport, get }) : s.body;
              return b === undefined ? undefined : typeof b === 'string' ? b : JSON.stringify(b);
            };
            const restBody = await bodyFor('rest');
            const rest: Response = await peer.request(fill(restPath), { method, body: restBody, headers: restBody === undefined ? {} : { 'content-type': 'application/json' } });
            const mqttBody = await bodyFor('mqtt');
            const resource = fill(route.path);
            const mqtt: Reply | undefined = await requester.kura('dev1', resource === '' ? route.method : `${route.method}/${resource}`, mqttBody, { app: f.appId, wait: 10_000 });
            t.equal(rest.status, s.status, `REST ${rest.status}: ${rest.body.slice(0, 200)}`);
            if (!mqtt) return t.fail('no MQTT reply');
            t.equal(mqtt.code, documentedResponseCode(rest.status), `response.code ${mqtt.code} for REST ${rest.status}`);
            const norm = s.normalise ?? ((x: string) => x);
            t.equal(norm(mqtt.body ?? ''), norm(rest.body), 'the same body');
            if (rest.status < 300) {
              t.equal(mqtt.message, undefined, 'no response.exception.message on a success');
              return;
            }
            checkErrorStyle(t, f, rest, mqtt);
          });
        }
      }
    });
  }
});

/**
 * An error in the family's style. json (Kura's JAX-RS services, docs/rest-api.md and
 * docs/configuration-v2.md): REST `{"message": …}` as application/json, the same body over MQTT
 * and no response.exception.message while the REST status is one Kapua reads (docs/mqtt.md
 * "Response codes": otherwise the message may be repeated there).
 */
function checkErrorStyle(t: Test, f: Family, rest: Response, mqtt: Reply): void {
  if (f.errors !== 'json') {
    t.fail(`${f.name}: docs/mqtt.md says how a ${f.errors}-style error looks over MQTT for no family on both transports: document it, then check it here`);
    return;
  }
  t.match(String(rest.headers['content-type']), /^application\/json/, 'REST: JSON');
  const body = JSON.parse(rest.body);
  t.same(Object.keys(body), ['message'], 'REST: {"message": …} alone');
  t.type(body.message, 'string');
  t.ok(body.message.length > 0, `the message names the problem: ${body.message}`);
  if ([200, 400, 404, 500].includes(rest.status)) t.equal(mqtt.message, undefined, 'no response.exception.message');
  else t.ok(mqtt.message === undefined || mqtt.message === body.message, 'response.exception.message, if any, is the message');
}
