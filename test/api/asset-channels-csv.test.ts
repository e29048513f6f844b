// Channel CSV over REST through the real daemon (docs/rest-api.md "Channels as CSV"): download,
// upload in replace and merge mode through the runtime configuration (configuration/v2 and
// snapshots see it), problems by row and column with nothing applied, a round trip that changes
// nothing, the role, the body bound and content type, and 1,000 Modbus channels in one upload.
import t from 'tap';
import { performance } from 'node:perf_hooks';
import { startDaemon } from '../helpers/daemon.js';
import { basic } from '../helpers/session-client.js';

const C = '/services/configuration/v2';

t.test('channels as CSV', async (t) => {
  const config = {
    rest: { 'login.throttle.max.delay': 0 },
    identities: {
      admin: { password: 'admin', permissions: ['kura.admin'] },
      conf: { password: 'conf', permissions: ['rest.configuration'] },
      op: { password: 'op', permissions: ['rest.assets'] },
    },
    drivers: { sim: { factory: 'simulator' }, plc: { factory: 'modbus', 'access.type': 'TCP', 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': 1 } },
    assets: {
      demo: {
        'driver.pid': 'sim',
        channels: {
          temperature: { enabled: true, type: 'READ', 'value.type': 'DOUBLE', scale: 1.0, offset: 0.0, unit: 'C', simulation: 'sine' },
          setpoint: { type: 'READ_WRITE', 'value.type': 'DOUBLE', unit: 'C', simulation: 'memory', initial: 21.5 },
          label: { type: 'READ_WRITE', 'value.type': 'STRING', initial: 'pump room' },
        },
      },
      meter: {
        'driver.pid': 'plc',
        channels: {
          power: { type: 'READ', 'value.type': 'FLOAT', 'unit.id': 3, 'primary.table': 'HOLDING_REGISTERS', 'memory.address': 101, 'data.type': 'FLOAT32', 'data.order': 'LITTLE_ENDIAN_BYTE_SWAP' },
          run: { type: 'READ_WRITE', 'value.type': 'BOOLEAN', 'primary.table': 'COILS', 'memory.address': 1 },
        },
      },
    },
    mqtt: { enabled: false },
  };
  const d = await startDaemon(t, config);
  const conf = basic(d, 'conf', 'conf');
  const csvOf = async (pid: string) => {
    const r = await conf.request(`/services/assets/${pid}/_channels.csv`);
    t.equal(r.status, 200, `GET ${pid} channels`);
    return r.body;
  };
  const put = (pid: string, body: string | Buffer, mode: string | null = 'replace', type = 'text/csv', who = conf) =>
    who.request(`/services/assets/${pid}/_channels.csv${mode === null ? '' : `?mode=${mode}`}`, { method: 'PUT', body, headers: { 'content-type': type } });
  const snapshots = async (): Promise<number[]> => (await conf.request(`${C}/snapshots`)).json().ids;
  const byPid = async (pid: string) =>
    (await conf.request(`${C}/configurableComponents/configurations/byPid`, { method: 'POST', body: JSON.stringify({ pids: [pid] }), headers: { 'content-type': 'application/json' } })).json().configs[0].properties;
  const listed = async (pid: string): Promise<string[]> => (await basic(d, 'op', 'op').request(`/services/assets/${pid}`)).json().map((c: { name: string }) => c.name);

  t.test('download: Kura header, CRLF rows, text/csv as an attachment', async (t) => {
    const r = await conf.request('/services/assets/meter/_channels.csv');
    t.equal(r.status, 200);
    t.match(r.headers['content-type'], /^text\/csv/);
    t.match(r.headers['content-disposition'], /attachment; filename="meter\.channels\.csv"/);
    const lines = r.body.split('\r\n');
    t.equal(lines[0], 'name,enabled,type,value.type,scale,offset,unit,unit.id,primary.table,memory.address,data.type,data.order,array.data.length,deadband,scale.on.write');
    t.equal(lines[1], 'power,true,READ,FLOAT,,,,3,HOLDING_REGISTERS,101,FLOAT32,LITTLE_ENDIAN_BYTE_SWAP,,,');
    t.equal(lines.at(-1), '', 'every row ends with CRLF');
    t.ok((await conf.request('/services/assets/meter/_channels.csv?bom=true')).body.startsWith('\uFEFF'), 'a byte order mark on request');
  });

  t.test('role configuration; unknown asset 404', async (t) => {
    t.equal((await d.request('/services/assets/meter/_channels.csv')).status, 401);
    t.equal((await basic(d, 'op', 'op').request('/services/assets/meter/_channels.csv')).status, 403, 'rest.assets alone may not read the configuration');
    t.equal((await put('meter', 'name\r\nx\r\n', 'merge', 'text/csv', basic(d, 'op', 'op'))).status, 403, 'nor change it');
    t.equal((await basic(d, 'admin', 'admin').request('/services/assets/meter/_channels.csv')).status, 200, 'kura.admin passes');
    const r = await conf.request('/services/assets/nope/_channels.csv');
    t.equal(r.status, 404);
    t.equal(r.body, 'Asset not found: nope');
    t.equal((await put('nope', 'name\r\nx\r\n')).status, 404);
  });

  t.test('a round trip changes nothing: no change, no snapshot', async (t) => {
    for (const pid of ['demo', 'meter']) {
      const text = await csvOf(pid);
      const props = await byPid(pid);
      const ids = await snapshots();
      const r = await put(pid, text);
      t.equal(r.status, 200, r.body);
      t.same(r.json(), { changed: false, channels: pid === 'demo' ? 3 : 2 });
      t.same(await snapshots(), ids, 'no snapshot taken');
      t.same(await byPid(pid), props, 'configuration/v2 shows the same properties');
      t.equal(await csvOf(pid), text, 'and the file reads the same');
    }
  });

  t.test('replace: the file, in its order, through the runtime configuration', async (t) => {
    const ids = await snapshots();
    const file = 'name,type,value.type,unit.id,primary.table,memory.address,data.type\r\nrun,READ_WRITE,BOOLEAN,1,COILS,1,\r\nflow,READ,INTEGER,7,INPUT_REGISTERS,5,UINT16\r\n';
    const r = await put('meter', file);
    t.equal(r.status, 200, r.body);
    t.same(r.json(), { changed: true, channels: 2 });
    t.same(await listed('meter'), ['run', 'flow'], 'the running asset has the file channels, in its order');
    const props = await byPid('meter');
    t.same(props['flow#unit.id'], { value: 7, type: 'INTEGER' }, 'configuration/v2 shows them');
    t.equal(props['power#unit.id'], undefined, 'the channel the file lacks is gone');
    t.equal((await snapshots()).length, ids.length + 1, 'a snapshot was taken');
    t.match(await csvOf('meter'), /\r\nflow,true,READ,INTEGER,,,,7,INPUT_REGISTERS,5,UINT16,/);
  });

  t.test('merge: kept channels in place, named ones replaced whole, new ones appended', async (t) => {
    const r = await put('meter', 'name,type,value.type,primary.table,memory.address\r\nrun,READ,BOOLEAN,DISCRETE_INPUTS,9\r\nlevel,READ,INTEGER,HOLDING_REGISTERS,20\r\n', 'merge');
    t.equal(r.status, 200, r.body);
    t.same(await listed('meter'), ['run', 'flow', 'level']);
    const props = await byPid('meter');
    t.same(props['run#primary.table'], { value: 'DISCRETE_INPUTS', type: 'STRING' });
    t.same(props['flow#unit.id'], { value: 7, type: 'INTEGER' }, 'a channel the file does not name is kept');
    t.same((await put('meter', await csvOf('meter'))).json(), { changed: false, channels: 3 }, 'its export round-trips');
  });

  t.test('problems name row and column; nothing is applied', async (t) => {
    const before = await csvOf('meter');
    const ids = await snapshots();
    const cases: [string, string, RegExp][] = [
      ['a value outside its range', 'name,type,value.type,unit.id\r\na,READ,INTEGER,1\r\nb,READ,INTEGER,256\r\n', /row 3, column D \(unit\.id\): .*256/],
      ['an unknown option', 'name,type,value.type\r\na,READ,INTEGER\r\nb,READING,INTEGER\r\n', /row 3, column B \(type\): .*READING/],
      ['an unknown column', 'name,type,value.type,colour\r\na,READ,INTEGER,red\r\n', /row 1, column D \(colour\): unknown column/],
      ['the driver refuses the channel', 'name,type,value.type,primary.table,memory.address\r\nok,READ,INTEGER,HOLDING_REGISTERS,1\r\nbad,READ,INTEGER,COILS,1\r\n', /row 3, column C \(value\.type\): .*COILS are single bits/],
      ['a STRING without its length', 'name,type,value.type,data.type\r\ns,READ,STRING,STRING\r\n', /row 2, column array\.data\.length: .*required/],
      ['a duplicate name', 'name,type,value.type\r\na,READ,INTEGER\r\na,READ,INTEGER\r\n', /row 3, column A \(name\): .*also on row 2/],
      ['garbage bytes', '\u0000\u00ff"unbalanced,\r\n', /./],
      ['not UTF-8', Buffer.from([0x6e, 0x61, 0x6d, 0x65, 0x0d, 0x0a, 0xe9, 0x0d, 0x0a]).toString('latin1'), /UTF-8/],
    ];
    for (const [what, file, re] of cases) {
      const r = await put('meter', what === 'not UTF-8' ? Buffer.from(file, 'latin1') : file);
      t.equal(r.status, 400, what);
      t.match(r.body, /^The file was not applied/, what);
      t.match(r.body, re, `${what}: ${r.body.split('\n')[1]}`);
    }
    t.equal(await csvOf('meter'), before, 'the asset is unchanged');
    t.same(await snapshots(), ids, 'no snapshot');
  });

  t.test('mode, content type, empty body and size bound', async (t) => {
    const file = await csvOf('meter');
    let r = await put('meter', file, null);
    t.equal(r.status, 400);
    t.match(r.body, /mode must be replace or merge/);
    r = await put('meter', file, 'append');
    t.equal(r.status, 400);
    t.match(r.body, /not "append"/);
    t.equal((await put('meter', file, 'replace', 'application/json')).status, 415);
    t.equal((await put('meter', file, 'replace', 'text/plain')).status, 415, 'a form-encodable type is refused');
    t.equal((await put('meter', '', 'replace')).status, 400, 'an empty body');
    r = await put('meter', `name,type,value.type\r\n${'x'.repeat(4 * 1024 * 1024)}\r\n`);
    t.equal(r.status, 413, 'a file over 4 MiB');
    t.equal(await csvOf('meter'), file, 'nothing applied');
  });

  t.test('1,000 Modbus channels in one upload (time reported, not asserted)', async (t) => {
    const rows = ['name,type,value.type,unit.id,primary.table,memory.address,data.type,data.order,unit,scale'];
    for (let i = 0; i < 1000; i++) rows.push(`r${i},READ,${i % 2 ? 'INTEGER' : 'FLOAT'},${1 + (i % 5)},HOLDING_REGISTERS,${1 + 2 * i},${i % 2 ? 'INT32' : 'FLOAT32'},BIG_ENDIAN,kW,0.1`);
    const file = `${rows.join('\r\n')}\r\n`;
    const start = performance.now();
    const r = await put('meter', file);
    t.comment(`1,000 channels imported in ${(performance.now() - start).toFixed(0)} ms`);
    t.equal(r.status, 200, r.body.slice(0, 300));
    t.same(r.json(), { changed: true, channels: 1000 });
    const names = await listed('meter');
    t.equal(names.length, 1000);
    t.equal(names[999], 'r999');
    const back = await csvOf('meter');
    const again = await put('meter', back);
    t.same(again.json(), { changed: false, channels: 1000 }, 'and its export round-trips');
  });

  t.test('the upload is kept over a restart (runtime layer)', async (t) => {
    const before = await listed('meter');
    await d.stop();
    const again = await startDaemon(t, { ...config, dataDir: d.dataDir }, { dir: d.dir });
    t.teardown(() => again.stop());
    t.same(await (basic(again, 'op', 'op').request('/services/assets/meter')).then((r) => r.json().map((c: { name: string }) => c.name)), before);
  });
});
