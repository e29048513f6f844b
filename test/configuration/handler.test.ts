// configuration/v2 answers larger than the heap could hold are written as the client reads them
// (docs/configuration-v2.md "How large a configuration can grow"): complete and valid whatever their
// size, at most two at a time (the others wait their turn), never holding up changes or small
// requests, and a client that stops reading or goes away gives its turn back.
import t from 'tap';
import http from 'node:http';
import { startDaemon, type Daemon } from '../helpers/daemon.js';
import { launcherHeapOptions } from '../helpers/launch.mjs';
import { basic } from '../helpers/session-client.js';

const C = '/services/configuration/v2';
const AUTH = `Basic ${Buffer.from('admin:Admin-pass-12').toString('base64')}`;

/** A GET of every configuration whose answer is not read (paused) until `resume()`. */
function stalled(d: Daemon) {
  let status = 0;
  let bytes = 0;
  let res: http.IncomingMessage | undefined;
  const req = http.get({ host: '127.0.0.1', port: d.ports.http[0], path: `${C}/configurableComponents/configurations`, headers: { authorization: AUTH } });
  const headers = new Promise<void>((resolve) => {
    req.on('response', (r) => {
      res = r;
      status = r.statusCode ?? 0;
      r.on('data', (c: Buffer) => (bytes += c.length));
      r.pause();
      resolve();
    });
  });
  const ended = new Promise<string>((resolve) => {
    req.on('error', () => resolve('error'));
    req.on('response', (r) => {
      r.on('end', () => resolve('end'));
      r.on('close', () => resolve('close'));
    });
  });
  return { headers, ended, status: () => status, bytes: () => bytes, resume: () => res?.resume(), destroy: () => req.destroy() };
}

t.test('large configuration answers: complete, two at a time, changes never held up', async (t) => {
  const assets: Record<string, unknown> = {};
  for (const a of ['a1', 'a2', 'a3', 'a4']) {
    const channels: Record<string, unknown> = {};
    for (let i = 0; i < 2500; i++) channels[`c${i}`] = { type: 'READ', 'value.type': 'INTEGER', simulation: 'constant' };
    assets[a] = { 'driver.pid': 'sim', channels };
  }
  const d = await startDaemon(
    t,
    { identities: { admin: { password: 'Admin-pass-12', permissions: ['kura.admin'], passwordChangeNeeded: false } }, drivers: { sim: { factory: 'simulator' } }, assets },
    { env: { NODE_OPTIONS: launcherHeapOptions() } }, // the launcher's heap bound
  );
  const admin = basic(d, 'admin', 'Admin-pass-12');
  const call = (p: string, body?: unknown, method = body === undefined ? 'GET' : 'POST') =>
    admin.request(`${C}/${p}`, { method, body: body === undefined ? undefined : JSON.stringify(body), headers: { 'content-type': 'application/json' }, timeoutMs: 60_000 });

  // Before, these were refused 413 above a sixth of the heap bound (about 2,300 Modbus channels).
  const all = await call('configurableComponents/configurations');
  t.equal(all.status, 200);
  t.equal(all.headers['content-length'], undefined, 'written in pieces (chunked)');
  const configs = all.json().configs;
  t.same(configs.filter((c: { pid: string }) => /^a\d$/.test(c.pid)).map((c: { properties: object }) => Object.keys(c.properties).filter((k) => k.endsWith('#+name')).length), [2500, 2500, 2500, 2500]);
  t.ok(all.body.length > 8 * 1048576, `${(all.body.length / 1048576).toFixed(1)} MB, more than a sixth of the 48 MB heap bound`);
  const one = await call('configurableComponents/configurations/byPid', { pids: ['a2'] });
  t.same(one.json().configs, configs.filter((c: { pid: string }) => c.pid === 'a2'), 'byPid shows the same');
  t.equal((await call('configurableComponents/configurations/byPid/_default', { pids: ['a1', 'a2', 'a3', 'a4'] })).status, 200, 'definition defaults of all four');

  // Two clients that stop reading hold the two turns; a third waits, and the rest is served.
  const first = stalled(d);
  const second = stalled(d);
  await Promise.all([first.headers, second.headers]);
  t.same([first.status(), second.status()], [200, 200]);
  const third = stalled(d);
  let thirdAnswered = false;
  void third.headers.then(() => (thirdAnswered = true));
  const up = await call('configurableComponents/configurations/_update', { configs: [{ pid: 'a1', properties: { 'poll.interval': { type: 'INTEGER', value: 250 } } }], takeSnapshot: false }, 'PUT');
  t.equal(up.status, 200, 'a change is not held up by the stalled readers');
  t.equal((await admin.request('/services/assets/a1/_status')).json().pollInterval, 250, 'and applied');
  t.equal((await call('snapshots')).status, 200, 'a small request is answered');
  t.notOk(thirdAnswered, 'a third large answer is not begun while two are stalled');
  first.destroy();
  second.destroy();
  await third.headers;
  t.equal(third.status(), 200, 'a client gone gives its turn back');
  third.resume();
  t.equal(await third.ended, 'end', 'the waiting answer is written to its end');
  t.equal(d.proc.exitCode, null);
});
