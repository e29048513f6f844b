// The asset REST API end to end against the real daemon (docs/rest-api.md "assets"): Kura's
// behaviour, plus LONG beyond 2^53 both ways, the deviations of COMPATIBILITY.md, authorisation, a
// detached driver, single-flight reads, a slow device that blocks nothing, and GPIO through REST.
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { startDaemon, type Daemon } from '../helpers/daemon.js';
import { basic, type Client } from '../helpers/session-client.js';

const READ_HINT = 'Bad request, expected request format: { "channels": [ "channel-1", "channel-2"]}';
const WRITE_HINT = 'Bad request, expected request format: {"channels": [{"name": "channel-1", "type": "INTEGER", "value": 10 }]}';
const LONG_MAX = '9223372036854775807';

let d: Daemon;
let c: Client;
let gpioRoot: string;

t.before(async () => {
  d = await startDaemon(t, (_ports, dir) => {
    gpioRoot = path.join(dir, 'gpio');
    fs.mkdirSync(path.join(gpioRoot, 'gpio17'), { recursive: true });
    fs.writeFileSync(path.join(gpioRoot, 'export'), '');
    fs.writeFileSync(path.join(gpioRoot, 'gpio17', 'direction'), 'in\n');
    fs.writeFileSync(path.join(gpioRoot, 'gpio17', 'value'), '0\n');
    const ro = (vt: string, initial: unknown, extra = {}) => ({ type: 'READ', 'value.type': vt, simulation: 'constant', initial, ...extra });
    return {
      identities: {
        op: { password: 'secret123', permissions: ['rest.assets'] },
        deployer: { password: 'secret123', permissions: ['rest.deploy'] },
      },
      drivers: { sim: { factory: 'simulator' }, io: { factory: 'gpio', 'gpio.sysfs.root': gpioRoot, pins: { LED1: 17 } }, gone: { factory: 'not-installed' } },
      assets: {
        pump: {
          'driver.pid': 'sim',
          channels: {
            r_int: ro('INTEGER', 1, { unit: 'rpm' }),
            r_bool: ro('BOOLEAN', true),
            r_bytes: ro('BYTE_ARRAY', 'AQID'),
            r_long: ro('LONG', LONG_MAX),
            r_float: ro('FLOAT', 12.34),
            r_double: ro('DOUBLE', 1e7),
            r_str: ro('STRING', 'val', { scale: 3 }),
            scaled_int: ro('INTEGER', 10, { scale: 0.5 }),
            scaled_double: ro('DOUBLE', 10, { scale: 0.5 }),
            disabled: ro('INTEGER', 1, { enabled: false }),
            w: { type: 'WRITE', 'value.type': 'INTEGER' },
            rw_int: { type: 'READ_WRITE', 'value.type': 'INTEGER', unit: '' },
            rw_long: { type: 'READ_WRITE', 'value.type': 'LONG' },
            rw_bool: { type: 'READ_WRITE', 'value.type': 'BOOLEAN' },
            rw_double: { type: 'READ_WRITE', 'value.type': 'DOUBLE' },
            notype: { 'value.type': 'INTEGER' },
          },
        },
        slow: { 'driver.pid': 'sim', channels: { tick: { type: 'READ', 'value.type': 'INTEGER', simulation: 'counter', delay: 2000 } } },
        orphan: { 'driver.pid': 'gone', channels: { x: { type: 'READ', 'value.type': 'INTEGER', unit: 'C' } } },
        board: { 'driver.pid': 'io', channels: { led: { type: 'READ_WRITE', 'value.type': 'BOOLEAN', 'resource.name': 'LED1', 'resource.direction': 'OUTPUT' } } },
        polled: { 'driver.pid': 'sim', 'poll.interval': 50, channels: { n: { type: 'READ', 'value.type': 'LONG', simulation: 'counter' } } },
      },
    };
  });
  c = basic(d, 'op', 'secret123');
});

const post = (p: string, body: unknown, headers: Record<string, string> = { 'content-type': 'application/json' }) =>
  c.request(p, { method: 'POST', body: typeof body === 'string' ? body : JSON.stringify(body), headers });
const byName = (list: any[]) => Object.fromEntries(list.map((r) => [r.name, r]));

t.test('20: the list of asset pids', async (t) => {
  const r = await c.request('/services/assets');
  t.equal(r.status, 200);
  t.match(r.headers['content-type'], /^application\/json/);
  t.same(r.json(), ['pump', 'slow', 'orphan', 'board', 'polled']);
});

t.test('21: an unknown asset is 404 text/plain before any body validation', async (t) => {
  const cases: [string, string, string?][] = [
    ['GET', '/services/assets/nope'],
    ['GET', '/services/assets/nope/_read'],
    ['POST', '/services/assets/nope/_read', '{bad'],
    ['POST', '/services/assets/nope/_write', '{"channels":[{"name":"x","type":"integer"}]}'],
    ['POST', '/services/assets/nope/_write', ''],
  ];
  for (const [method, p, body] of cases) {
    const r = await c.request(p, { method, body, headers: { 'content-type': 'application/json' } });
    t.equal(r.status, 404, `${method} ${p}`);
    t.match(r.headers['content-type'], /^text\/plain/);
    t.equal(r.body, 'Asset not found: nope');
  }
});

t.test('22, 47: channel descriptions with Kura keys; a channel without type is left out', async (t) => {
  const r = await c.request('/services/assets/pump');
  t.equal(r.status, 200);
  t.ok(r.body.includes('{"name":"r_int","type":"READ","valueType":"INTEGER","valueScale":1.0,"valueOffset":0.0,"unit":"rpm","isEnabled":true}'), r.body);
  const ch = byName(r.json());
  t.notOk('notype' in ch, 'a channel without a value type is left out');
  t.same(Object.keys(ch.r_bool), ['name', 'type', 'valueType', 'valueScale', 'valueOffset', 'isEnabled'], 'no unit when none is configured, no configuration');
  t.equal(ch.rw_int.unit, '', 'an explicit empty unit is shown');
  t.same([ch.w.type, ch.rw_long.type, ch.disabled.isEnabled], ['WRITE', 'READ_WRITE', false]);
  t.ok(r.body.includes('"name":"scaled_double","type":"READ","valueType":"DOUBLE","valueScale":0.5,"valueOffset":0.0'));
  t.ok(r.body.includes('"name":"r_str","type":"READ","valueType":"STRING","valueScale":1.0'), 'non-numeric channels show the default scale');
});

t.test('23, 46: GET _read gives every enabled readable channel with Kura value encodings', async (t) => {
  const r = await c.request('/services/assets/pump/_read');
  t.equal(r.status, 200);
  const recs = byName(r.json());
  t.same(Object.keys(recs).sort(), ['r_bool', 'r_bytes', 'r_double', 'r_float', 'r_int', 'r_long', 'r_str', 'rw_bool', 'rw_double', 'rw_int', 'rw_long', 'scaled_double', 'scaled_int']);
  t.same(Object.keys(recs.r_int), ['channelStatus', 'name', 'valueType', 'value', 'timestamp', 'unit'], 'field order');
  t.same(recs.r_int.channelStatus, { channelFlag: 'SUCCESS' });
  t.ok(recs.r_int.timestamp > 0);
  t.same([recs.r_int.value, recs.r_bool.value, recs.r_bytes.value, recs.r_str.value], [1, true, 'AQID', 'val']);
  t.ok(r.body.includes(`"name":"r_long","valueType":"LONG","value":${LONG_MAX},`), 'LONG exact in the JSON text');
  t.ok(r.body.includes('"name":"r_float","valueType":"FLOAT","value":12.34,'), 'FLOAT in Java text');
  t.ok(r.body.includes('"name":"r_double","valueType":"DOUBLE","value":1.0E7,'), 'DOUBLE in Java text');
  t.equal(recs.scaled_int.value, 0, 'INTEGER scale 0.5 truncates to 0');
  t.ok(r.body.includes('"name":"scaled_double","valueType":"DOUBLE","value":5.0,'), 'DOUBLE scale 0.5 reads 5.0');
  t.equal(recs.r_str.value, 'val', 'scale ignored for STRING');
});

t.test('24: POST _read body validation', async (t) => {
  for (const body of ['{}', '{"channels":null}', '', 'null', '[]', '{"channels":"r_int"}', '{"channels":[{"name":"r_int"}]}']) {
    const r = await post('/services/assets/pump/_read', body);
    t.equal(r.status, 400, `body ${JSON.stringify(body)}`);
    t.equal(r.body, READ_HINT);
    t.match(r.headers['content-type'], /^text\/plain/);
  }
  const empty = await post('/services/assets/pump/_read', { channels: [] });
  t.equal(empty.status, 200);
  t.equal(empty.body, '[]');
  const malformed = await post('/services/assets/pump/_read', "{'channels':['r_int']}");
  t.equal(malformed.status, 400, 'single quotes are refused (strict JSON)');
  t.match(malformed.body, /^Malformed JSON: /);
  const wrongType = await post('/services/assets/pump/_read', '{"channels":[]}', { 'content-type': 'text/plain' });
  t.equal(wrongType.status, 415);
});

t.test('25, 26: POST _read: refused channels fail alone, in request order, de-duplicated', async (t) => {
  const r = await post('/services/assets/pump/_read', { channels: ['r_bool', 'w', 'nope', 'disabled', 'r_int', 'r_bool'] });
  t.equal(r.status, 200);
  const list = r.json();
  t.same(list.map((x: any) => x.name), ['r_bool', 'w', 'nope', 'disabled', 'r_int']);
  t.same(list[1].channelStatus, { channelFlag: 'FAILURE', exceptionMessage: 'Channel type not within expected types (READ or READ_WRITE)' });
  t.same(list[2].channelStatus.exceptionMessage, 'Channel not available');
  t.same(list[3].channelStatus.exceptionMessage, 'Channel is not enabled');
  for (const x of list.slice(1, 4)) {
    t.same(Object.keys(x), ['channelStatus', 'name', 'timestamp'], `${x.name}: no valueType, value or unit`);
    t.ok(x.timestamp > 0);
  }
  t.equal(list[0].value, true);
  const ba = await post('/services/assets/pump/_read', { channels: ['r_str', 'r_int', 'r_str'] });
  t.same(ba.json().map((x: any) => x.name), ['r_str', 'r_int']);
});

t.test('27-29: _write echoes the request; Kura hints and refusals', async (t) => {
  for (const value of [10, '10']) {
    const r = await post('/services/assets/pump/_write', { channels: [{ name: 'rw_int', type: 'INTEGER', value }] });
    t.equal(r.status, 200);
    const [rec] = r.json();
    t.same(Object.keys(rec), ['channelStatus', 'name', 'valueType', 'value', 'timestamp'], 'no unit on write records');
    t.same([rec.channelStatus.channelFlag, rec.valueType, rec.value], ['SUCCESS', 'INTEGER', 10], `value ${JSON.stringify(value)}`);
  }
  const read = await post('/services/assets/pump/_read', { channels: ['rw_int'] });
  t.equal(read.json()[0].value, 10, 'the write landed');
  const bad = [
    { channels: [{ name: 'rw_int', type: 'integer', value: '1' }] },
    { channels: [{ name: 'rw_int', type: 'NUMBER', value: '1' }] },
    { channels: [{ type: 'INTEGER', value: '1' }] },
    { channels: [{ name: 'rw_int', type: 'INTEGER' }] },
    { channels: [{ name: 'rw_int', type: 'INTEGER', value: null }] },
    { channels: null },
    {},
  ];
  for (const body of bad) {
    const r = await post('/services/assets/pump/_write', body);
    t.equal(r.status, 400, JSON.stringify(body));
    t.equal(r.body, WRITE_HINT);
  }
  const empty = await post('/services/assets/pump/_write', { channels: [] });
  t.same([empty.status, empty.body], [200, '[]']);
  const ro = await post('/services/assets/pump/_write', { channels: [{ name: 'r_int', type: 'INTEGER', value: 3 }, { name: 'nope', type: 'STRING', value: 'x' }] });
  t.equal(ro.status, 200);
  const [a, b] = ro.json();
  t.same(a.channelStatus, { channelFlag: 'FAILURE', exceptionMessage: 'Channel type not within expected types (WRITE or READ_WRITE)' });
  t.same([a.valueType, a.value], ['INTEGER', 3], 'failure records echo the request too');
  t.equal(b.channelStatus.exceptionMessage, 'Channel not available');
});

t.test('BOOLEAN "yes" and any other unparsable value is 400 and nothing is written (docs/rest-api.md "Writing values")', async (t) => {
  await post('/services/assets/pump/_write', { channels: [{ name: 'rw_bool', type: 'BOOLEAN', value: true }] });
  const yes = await post('/services/assets/pump/_write', { channels: [{ name: 'rw_bool', type: 'BOOLEAN', value: 'yes' }] });
  t.same([yes.status, yes.body], [400, 'yes cannot be converted into a TypedValue of type BOOLEAN (channel rw_bool)']);
  t.equal((await post('/services/assets/pump/_read', { channels: ['rw_bool'] })).json()[0].value, true, 'the output keeps its state');

  await post('/services/assets/pump/_write', { channels: [{ name: 'rw_int', type: 'INTEGER', value: 5 }] });
  const r = await post('/services/assets/pump/_write', { channels: [{ name: 'rw_int', type: 'INTEGER', value: 6 }, { name: 'rw_bool', type: 'INTEGER', value: 'abc' }] });
  t.equal(r.status, 400, '400, not 500 (COMPATIBILITY.md)');
  t.equal(r.body, 'abc cannot be converted into a TypedValue of type INTEGER (channel rw_bool)');
  t.equal((await post('/services/assets/pump/_read', { channels: ['rw_int'] })).json()[0].value, 5, 'the valid value was not written either');
  const frac = await post('/services/assets/pump/_write', { channels: [{ name: 'rw_int', type: 'INTEGER', value: 1.5 }] });
  t.equal(frac.status, 400);
  t.match(frac.body, /^1\.5 cannot be converted into a TypedValue of type INTEGER/);
  const mismatch = await post('/services/assets/pump/_write', { channels: [{ name: 'rw_int', type: 'DOUBLE', value: 2.5 }] });
  t.equal(mismatch.status, 200);
  t.same(mismatch.json()[0].channelStatus, { channelFlag: 'FAILURE', exceptionMessage: '2.5 does not fit a INTEGER channel' });
});

t.test('LONG beyond 2^53 is exact both ways', async (t) => {
  for (const text of [LONG_MAX, '-9223372036854775808', '9007199254740993']) {
    const body = `{"channels":[{"name":"rw_long","type":"LONG","value":${text}}]}`;
    const w = await post('/services/assets/pump/_write', body);
    t.equal(w.status, 200);
    t.ok(w.body.includes(`"valueType":"LONG","value":${text},`), `echo ${text}: ${w.body}`);
    const r = await post('/services/assets/pump/_read', { channels: ['rw_long'] });
    t.ok(r.body.includes(`"value":${text},`), `reads back ${text}: ${r.body}`);
  }
  const asString = await post('/services/assets/pump/_write', { channels: [{ name: 'rw_long', type: 'LONG', value: '9223372036854775806' }] });
  t.ok(asString.body.includes('"value":9223372036854775806,'));
  const over = await post('/services/assets/pump/_write', '{"channels":[{"name":"rw_long","type":"LONG","value":9223372036854775808}]}');
  t.equal(over.status, 400);
  const toDouble = await post('/services/assets/pump/_write', `{"channels":[{"name":"rw_double","type":"LONG","value":${LONG_MAX}}]}`);
  // A write reports what was written: the LONG converted to the DOUBLE channel's type.
  t.ok(toDouble.body.includes(`"valueType":"DOUBLE","value":9.223372036854776E18,`), `the reply reports the DOUBLE written: ${toDouble.body}`);
  t.ok((await post('/services/assets/pump/_read', { channels: ['rw_double'] })).body.includes('"value":9.223372036854776E18,'));
});

t.test('a detached driver gives per-channel failures with HTTP 200', async (t) => {
  const r = await c.request('/services/assets/orphan/_read');
  t.equal(r.status, 200);
  t.same(r.json(), [{ channelStatus: { channelFlag: 'FAILURE', exceptionMessage: 'Configuration Error: Driver not attached' }, name: 'x', valueType: 'INTEGER', timestamp: r.json()[0].timestamp, unit: 'C' }]);
});

t.test('authorisation: role assets on every route', async (t) => {
  const routes: [string, string][] = [['GET', '/services/assets'], ['GET', '/services/assets/pump'], ['GET', '/services/assets/pump/_read'], ['POST', '/services/assets/pump/_read'], ['POST', '/services/assets/pump/_write']];
  const other = basic(d, 'deployer', 'secret123');
  for (const [method, p] of routes) {
    const body = method === 'POST' ? '{"channels":[]}' : undefined;
    const none = await d.request(p, { method, body, headers: { 'content-type': 'application/json' } });
    t.equal(none.status, 401, `${method} ${p} without credentials`);
    const denied = await other.request(p, { method, body, headers: { 'content-type': 'application/json' } });
    t.equal(denied.status, 403, `${method} ${p} without rest.assets`);
  }
});

t.test('concurrent identical reads share one driver call; a slow device blocks nothing else', async (t) => {
  const order: string[] = [];
  const slow1 = c.request('/services/assets/slow/_read').then((r) => (order.push('slow'), r));
  const slow2 = c.request('/services/assets/slow/_read');
  await new Promise((r) => setTimeout(r, 100));
  const fast = await c.request('/services/assets/pump/_read');
  order.push('pump');
  t.equal(fast.status, 200);
  const [a, b] = await Promise.all([slow1, slow2]);
  t.same(order, ['pump', 'slow'], 'the other asset answered while the slow one was still reading');
  t.equal(a.json()[0].value, b.json()[0].value, 'both got the same counter value: one transaction');
  const after = await c.request('/services/assets/slow/_read');
  t.equal(after.json()[0].value, a.json()[0].value + 1, 'the next read is a new transaction');
});

t.test('poll.interval keeps reading in the background', async (t) => {
  const first = Number((await c.request('/services/assets/polled/_read')).json()[0].value);
  let now = first;
  for (let i = 0; i < 50 && now < first + 3; i++) {
    await new Promise((r) => setTimeout(r, 50));
    now = Number((await c.request('/services/assets/polled/_read')).json()[0].value);
  }
  t.ok(now >= first + 3, `the counter advanced between our reads (${first} → ${now})`);
});

t.test('GPIO through REST: a write lands in the sysfs value file', async (t) => {
  const w = await post('/services/assets/board/_write', { channels: [{ name: 'led', type: 'BOOLEAN', value: true }] });
  t.equal(w.json()[0].channelStatus.channelFlag, 'SUCCESS');
  t.equal(fs.readFileSync(path.join(gpioRoot, 'gpio17', 'value'), 'utf8'), '1');
  t.equal(fs.readFileSync(path.join(gpioRoot, 'gpio17', 'direction'), 'utf8'), 'out');
  const r = await c.request('/services/assets/board/_read');
  t.equal(r.json()[0].value, true);
});

t.test('hostile bodies are answered and forgotten', async (t) => {
  const deep = await post('/services/assets/pump/_write', '['.repeat(100_000));
  t.equal(deep.status, 400);
  t.match(deep.body, /^Malformed JSON: Nesting deeper than 64/);
  const digits = await post('/services/assets/pump/_write', `{"channels":[{"name":"rw_long","type":"LONG","value":${'9'.repeat(500_000)}}]}`);
  t.equal(digits.status, 400);
  t.equal(digits.body.length < 200, true, 'the message does not echo half a megabyte');
  const big = await post('/services/assets/pump/_read', `{"channels":["${'x'.repeat(2 * 1024 * 1024)}"]}`);
  t.equal(big.status, 413);
  const badUtf8 = await c.request('/services/assets/pump/_read', { method: 'POST', body: Buffer.from([0x7b, 0xff, 0x7d]), headers: { 'content-type': 'application/json' } });
  t.equal(badUtf8.status, 400);
  t.equal((await c.request('/services/assets')).status, 200, 'still serving');
});

t.test('SIGHUP applies a changed assets section; a bad one keeps the running assets', async (t) => {
  const cfg = (channels: Record<string, unknown>) => ({
    identities: { op: { password: 'secret123', permissions: ['rest.assets'] } },
    drivers: { sim: { factory: 'simulator' } },
    assets: { a: { 'driver.pid': 'sim', channels } },
  });
  const d2 = await startDaemon(t, cfg({ x: { type: 'READ_WRITE', 'value.type': 'INTEGER', initial: 1 } }));
  const c2 = basic(d2, 'op', 'secret123');
  t.same((await c2.request('/services/assets/a')).json().map((ch: any) => ch.name), ['x']);
  const written = JSON.parse(fs.readFileSync(d2.configFile, 'utf8'));
  written.assets = cfg({ y: { type: 'READ', 'value.type': 'STRING', simulation: 'constant', initial: 'new' } }).assets;
  written.assets.b = { 'driver.pid': 'sim', channels: {} };
  fs.writeFileSync(d2.configFile, JSON.stringify(written));
  d2.signal('SIGHUP');
  await d2.waitForLog(/configuration reloaded/);
  t.same((await c2.request('/services/assets')).json(), ['a', 'b']);
  t.same((await c2.request('/services/assets/a/_read')).json().map((r: any) => [r.name, r.value]), [['y', 'new']]);
  written.assets.a.channels.y['value.type'] = 'NUMBER';
  fs.writeFileSync(d2.configFile, JSON.stringify(written));
  d2.signal('SIGHUP');
  await d2.waitForLog(/reload refused: keeping the running configuration/);
  t.same((await c2.request('/services/assets/a/_read')).json().map((r: any) => r.value), ['new'], 'still the previous assets');
});
