// deploy/v2 over real HTTP: an in-process HttpServer with the deployment service, a local package
// server (downloads, redirects, a slow endpoint, a gate to hold an install "pending"), a local
// marketplace stub for descriptors, and curl for multipart uploads.

import t from 'tap';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import http from 'node:http';
import { execFile } from 'node:child_process';
import { HttpServer } from '../../src/http/server.js';
import { silentLogger } from '../../src/log.js';
import { DriverRegistry } from '../../src/drivers/registry.js';
import { PluginHost } from '../../src/plugins/host.js';
import { DeploymentService } from '../../src/deploy/service.js';
import { validateDeploySection } from '../../src/deploy/config.js';
import { mountDeployApi } from '../helpers/deploy-api.js';
import { buildDp, buildZip, exampleDriverExtension, commandWorks } from '../helpers/dp.js';
import { SharedLines } from '../../src/drivers/lines.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-deploy-api-'));
t.teardown(() => fs.rmSync(tmp, { recursive: true, force: true }));
const allowed = path.join(tmp, 'allowed');
const outside = path.join(tmp, 'outside');
fs.mkdirSync(allowed);
fs.mkdirSync(outside);

const hasCurl = commandWorks('curl', ['--version']);
if (!hasCurl && process.env.CI === 'true') t.fail('curl is required under CI');

// ---- the package server and marketplace stub ----
const files = new Map<string, Buffer>();
const descriptors = new Map<string, string>();
const seen: string[] = [];
let releaseGate: () => void = () => {};
let gate = new Promise<void>((r) => (releaseGate = r));
const origin = http.createServer(async (req, res) => {
  const url = req.url ?? '/';
  seen.push(url);
  const m = /^\/redirect\/(\d+)$/.exec(url);
  if (m) {
    const left = Number(m[1]);
    res.writeHead(left % 2 ? 302 : 307, { location: left > 1 ? `/redirect/${left - 1}` : '/pkg/redirected.dp' });
    return res.end();
  }
  if (url === '/slow') return; // never answers: the download times out
  if (url === '/empty-location') {
    res.writeHead(302);
    return res.end();
  }
  if (url.startsWith('/gate/')) await gate;
  const nodeMatch = /^\/node\/([^/]+)\/api\/p$/.exec(url);
  if (nodeMatch) {
    const xml = descriptors.get(decodeURIComponent(nodeMatch[1]!));
    res.writeHead(xml ? 200 : 404, { 'content-type': 'application/xml' });
    return res.end(xml ?? 'not found');
  }
  const body = files.get(url.replace(/^\/gate/, '').replace(/\?.*$/, ''));
  if (!body) {
    res.writeHead(404);
    return res.end();
  }
  res.writeHead(200, { 'content-type': 'application/octet-stream' });
  res.end(body);
});
await new Promise<void>((r) => origin.listen(0, '127.0.0.1', r));
const originUrl = `http://127.0.0.1:${(origin.address() as { port: number }).port}`;
t.teardown(() => new Promise<void>((r) => origin.close(() => r())));

// ---- the daemon parts under test ----
function makeStack(dataDir: string, overrides: Record<string, unknown> = {}) {
  const { value: config, problems } = validateDeploySection({
    'marketplace.url': originUrl,
    'gateway.version': '5.4.0',
    'upload.max.bytes': 300_000,
    'download.timeout': 500,
    'file.allowed.dirs': [allowed],
    ...overrides,
  });
  if (problems.length) throw new Error(JSON.stringify(problems));
  const registry = new DriverRegistry();
  const plugins = new PluginHost({ log: silentLogger, drivers: registry });
  const deploy = new DeploymentService({ dataDir, config, log: silentLogger, plugins });
  const server = new HttpServer(silentLogger);
  mountDeployApi(server, { deploy, log: silentLogger });
  return { registry, plugins, deploy, server };
}

const dataDir = path.join(tmp, 'data');
fs.mkdirSync(dataDir);
const stack = makeStack(dataDir);
await stack.deploy.start();
await stack.server.listen([{ port: 0, kind: 'http' }], '127.0.0.1');
const port = stack.server.listeners()[0]!.port;
t.teardown(async () => {
  await stack.server.close(100);
  await stack.deploy.stop();
});
const { deploy, registry, plugins } = stack;

interface Res {
  status: number;
  type: string;
  body: string;
}
function request(method: string, p: string, body?: string, headers: Record<string, string> = {}): Promise<Res> {
  return new Promise((resolve, reject) => {
    const req = http.request({ agent: false, host: '127.0.0.1', port, method, path: p, headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type'] ?? ''), body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(body);
  });
}
const BASE = '/services/deploy/v2';
const install = (url: unknown) => request('POST', `${BASE}/_install`, JSON.stringify({ url }));
const list = async () => JSON.parse((await request('GET', BASE)).body) as { name: string; version: string }[];
const lastJob = () => deploy.recentJobs().at(-1)!;

function curlUpload(file: string | undefined, field = 'file', extra: string[] = []): Promise<Res> {
  const args = ['-s', '-o', '-', '-w', '\n%{http_code} %{content_type}', ...extra, `http://127.0.0.1:${port}${BASE}/_upload`];
  if (file !== undefined) args.unshift('-F', `${field}=@${file}`);
  return new Promise((resolve, reject) => {
    execFile('curl', args, (err, stdout) => {
      if (err) return reject(err);
      const nl = stdout.lastIndexOf('\n');
      const [code, type] = stdout.slice(nl + 1).split(' ');
      resolve({ status: Number(code), type: type ?? '', body: stdout.slice(0, nl) });
    });
  });
}
function save(name: string, buf: Buffer, dir = tmp): string {
  const f = path.join(dir, name);
  fs.writeFileSync(f, buf);
  return f;
}

files.set('/pkg/a.dp', buildDp({ name: 'a', version: '1', files: { 'x.txt': 'a' } }));
files.set('/pkg/b.dp', buildDp({ name: 'b', version: '4.2' }));
files.set('/pkg/redirected.dp', buildDp({ name: 'redirected', version: '1.0.1' }));
files.set('/pkg/gated.dp', buildDp({ name: 'gated', version: '1' }));
files.set('/pkg/evil.dp', buildDp({ name: 'evil', version: '1' }, [{ name: '../evil.txt', data: 'x' }]));
files.set('/pkg/big.dp', Buffer.alloc(400_000));

t.test('list starts empty', async (t) => {
  const r = await request('GET', BASE);
  t.same([r.status, r.type, r.body], [200, 'application/json', '[]']);
  t.equal((await request('GET', `${BASE}/`)).body, '[]', 'the documented trailing slash works too');
});

t.test('_install validation: 400 text/plain', async (t) => {
  const cases: [string, string | undefined, RegExp][] = [
    ['no body', undefined, /^Bad request$/],
    ['empty object', '{}', /^Bad request$/],
    ['null url', '{"url":null}', /^Bad request$/],
    ['empty url', '{"url":""}', /^Bad request$/],
    ['number url', '{"url":10}', /^Bad request$/],
    ['array body', '[]', /^Bad request$/],
    ["single quotes (Kura's lenient JSON)", "{'url':'http://h/p.dp'}", /Malformed JSON/],
    ['unsupported scheme', '{"url":"ftp://h/p.dp"}', /unsupported URL scheme ftp:/],
    ['not a URL', '{"url":"testPackage"}', /not a URL: testPackage/],
    ['file outside the allowed folders', JSON.stringify({ url: `file://${outside}/x.dp` }), /is not inside deploy\.file\.allowed\.dirs/],
    ['file escaping with ..', JSON.stringify({ url: `file://${allowed}/../outside/x.dp` }), /is not inside deploy\.file\.allowed\.dirs/],
  ];
  for (const [name, body, re] of cases) {
    const r = await request('POST', `${BASE}/_install`, body);
    t.equal(r.status, 400, name);
    t.match(r.type, /^text\/plain/, `${name}: text/plain`);
    t.match(r.body, re, name);
  }
  t.equal(deploy.recentJobs().length, 0, 'nothing was queued');
});

t.test('install over HTTP, then the list shows it', async (t) => {
  const r = await install(`${originUrl}/pkg/a.dp`);
  t.same([r.status, r.type, r.body], [200, 'application/json', '"REQUEST_RECEIVED"']);
  await deploy.idle();
  await install(`${originUrl}/pkg/b.dp`);
  await deploy.idle();
  t.equal((await request('GET', BASE)).body, '[{"name":"a","version":"1.0.0"},{"name":"b","version":"4.2.0"}]');
  const job = lastJob();
  t.match(job, { kind: 'install', url: `${originUrl}/pkg/b.dp`, name: 'b', version: '4.2.0', state: 'SUCCEEDED' });
  const jobs = await request('GET', `${BASE}/_jobs`);
  t.equal(jobs.status, 200);
  t.match(JSON.parse(jobs.body).at(-1), { state: 'SUCCEEDED', name: 'b' });
  t.same(fs.readdirSync(path.join(dataDir, 'packages/.incoming')), [], 'downloads are cleaned up');
});

t.test("repeat semantics: INSTALLING while the exact URL is pending", async (t) => {
  gate = new Promise<void>((r) => (releaseGate = r));
  const url = `${originUrl}/gate/pkg/gated.dp`;
  t.equal((await install(url)).body, '"REQUEST_RECEIVED"');
  t.equal((await install(url)).body, '"INSTALLING"');
  t.equal((await install(url)).body, '"INSTALLING"');
  t.equal((await install(`${url}?`)).body, '"REQUEST_RECEIVED"', 'a trailing ? is a different request');
  t.equal((await install(url.replace('gated', 'GATED'))).body, '"REQUEST_RECEIVED"', 'case matters');
  // an uninstall queued behind the held install is pending as well
  t.equal((await request('DELETE', `${BASE}/gated`)).body, '"REQUEST_RECEIVED"');
  t.equal((await request('DELETE', `${BASE}/gated`)).body, '"UNINSTALLING"');
  t.equal(deploy.recentJobs().filter((j) => j.url === url).length, 1, 'the repeat queued nothing');
  releaseGate();
  await deploy.idle();
  t.equal((await install(url)).body, '"REQUEST_RECEIVED"', 'forgotten once finished');
  await deploy.idle();
  t.ok((await list()).some((p) => p.name === 'gated'));
  await request('DELETE', `${BASE}/gated`);
  await deploy.idle();
});

t.test('redirects are followed up to the limit; failures are visible in _jobs', async (t) => {
  await install(`${originUrl}/redirect/5`);
  await deploy.idle();
  t.match(lastJob(), { state: 'SUCCEEDED', name: 'redirected' });
  const cases: [string, RegExp][] = [
    [`${originUrl}/redirect/6`, /too many redirects \(limit 5\)/],
    [`${originUrl}/slow`, /timed out after 500 ms/],
    [`${originUrl}/empty-location`, /redirect without a Location header/],
    [`${originUrl}/pkg/missing.dp`, /HTTP 404 from/],
    [`${originUrl}/pkg/big.dp`, /larger than 300000 bytes/],
    [`${originUrl}/pkg/evil.dp`, /unsafe entry name "\.\.\/evil\.txt"/],
    ['http://127.0.0.1:1/x.dp', /ECONNREFUSED/],
    [`http://user:s3cret@127.0.0.1:1/x.dp`, /ECONNREFUSED/],
  ];
  for (const [url, re] of cases) {
    t.equal((await install(url)).body, '"REQUEST_RECEIVED"', url);
    await deploy.idle();
    const job = lastJob();
    t.equal(job.state, 'FAILED', url);
    t.match(job.error, re, url);
  }
  const jobsText = (await request('GET', `${BASE}/_jobs`)).body;
  t.notMatch(jobsText, /s3cret/, 'credentials in URLs never reach the jobs list');
  t.notOk((await list()).some((p) => p.name === 'evil'));
  t.notOk(fs.existsSync(path.join(dataDir, 'evil.txt')));
});

t.test('file: installs copy, never move, and stay inside the allowed folders', async (t) => {
  const src = save('..c.dp', buildDp({ name: 'c', version: '2' }), allowed); // a name starting with `..` is still inside
  t.equal((await install(`file://${src}`)).body, '"REQUEST_RECEIVED"');
  await deploy.idle();
  t.match(lastJob(), { state: 'SUCCEEDED', name: 'c' });
  t.ok(fs.existsSync(src), 'the source file is still there');
  fs.symlinkSync(save('secret.dp', buildDp({ name: 'secret', version: '1' }), outside), path.join(allowed, 'link.dp'));
  await install(`file://${allowed}/link.dp`);
  await deploy.idle();
  t.match(lastJob(), { state: 'FAILED', error: /resolves outside deploy\.file\.allowed\.dirs/ });
  await install(`file://${allowed}/missing.dp`);
  await deploy.idle();
  t.match(lastJob(), { state: 'FAILED', error: /file not found/ });
});

t.test('DELETE uninstalls; an unknown name is still REQUEST_RECEIVED', async (t) => {
  const r = await request('DELETE', `${BASE}/c`);
  t.same([r.status, r.body], [200, '"REQUEST_RECEIVED"']);
  await deploy.idle();
  t.notOk((await list()).some((p) => p.name === 'c'));
  const before = await list();
  t.equal((await request('DELETE', `${BASE}/nope`)).body, '"REQUEST_RECEIVED"');
  await deploy.idle();
  t.match(lastJob(), { kind: 'uninstall', name: 'nope', state: 'FAILED', error: /no deployment package named nope/ });
  t.same(await list(), before);
});

t.test('_upload with curl', { skip: !hasCurl && 'curl is not installed' }, async (t) => {
  const d = save('d.dp', buildDp({ name: 'd', version: '0.1' }));
  let r = await curlUpload(d);
  t.same([r.status, r.type, r.body], [200, 'application/json', '"REQUEST_RECEIVED"']);
  await deploy.idle();
  t.match(lastJob(), { url: 'upload:d.dp', state: 'SUCCEEDED', name: 'd', version: '0.1.0' });

  // Kura's test: an empty mock.dp is accepted; the install then fails
  r = await curlUpload(save('mock.dp', Buffer.alloc(0)));
  t.same([r.status, r.body], [200, '"REQUEST_RECEIVED"']);
  await deploy.idle();
  t.match(lastJob(), { url: 'upload:mock.dp', state: 'FAILED', error: /not a zip archive/ });

  r = await curlUpload(save('evil.dp', files.get('/pkg/evil.dp')!));
  t.equal(r.status, 200);
  await deploy.idle();
  t.match(lastJob(), { state: 'FAILED', error: /unsafe entry name/ });

  r = await curlUpload(save('big.dp', Buffer.alloc(400_000)));
  t.same([r.status, r.body], [413, 'Upload larger than 300000 bytes']);
  t.match(r.type, /^text\/plain/);
  // chunked, so the declared-length shortcut cannot answer: the stream limit must
  r = await curlUpload(path.join(tmp, 'big.dp'), 'file', ['-H', 'Transfer-Encoding: chunked']);
  t.equal(r.status, 413, 'chunked upload over the limit');

  r = await curlUpload(d, 'other');
  t.same([r.status, r.body], [400, 'Bad request: no part named "file"']);
  r = await request('POST', `${BASE}/_upload`, '{}');
  t.equal(r.status, 400, 'not multipart');

  await deploy.idle();
  t.same(fs.readdirSync(path.join(dataDir, 'packages/.incoming')), [], 'no upload left behind');
  t.ok((await list()).some((p) => p.name === 'd'));
});

t.test('_packageDescriptor: Kura checks, messages and compatibility', async (t) => {
  const put = (body: string | undefined) => request('PUT', `${BASE}/_packageDescriptor`, body);
  const MP = 'https://marketplace.eclipse.org/marketplace-client-intro?mpc_install=';
  const bad: [string | undefined, string][] = [
    [undefined, 'Bad request'],
    ['{}', 'Bad request'],
    ['{"url":null}', 'Bad request'],
    ['{"url":""}', 'Missing URL parameter'],
    ['{"url":"https://marketplace.ellipse.org/marketplace-client-intro?mpc_install=69"}', 'The URL passed as argument does not belong to the Eclipse Marketplace'],
    ['{"url":"ftp://marketplace.eclipse.org/marketplace-client-intro?mpc_install=69"}', 'The URL passed as argument does not belong to the Eclipse Marketplace'],
    [JSON.stringify({ url: MP }), 'The URL passed as argument does not contain a valid node id'],
    [JSON.stringify({ url: `${MP}1&a=b` }), 'The URL passed as argument does not contain a valid node id'],
    [JSON.stringify({ url: `${MP}=1` }), 'The URL passed as argument does not contain a valid node id'],
  ];
  for (const [body, msg] of bad) {
    const r = await put(body);
    t.same([r.status, r.body], [400, msg], String(body));
    t.match(r.type, /^text\/plain/);
  }

  descriptors.set('5514714', `<?xml version="1.0" encoding="UTF-8"?>
<marketplace><!-- a comment --><node id="5514714" name="AI Wire" url="https://marketplace.eclipse.org/content/ai-wire-component-eclipse-kura-5">
<updateurl><![CDATA[https://download.example/ai.dp]]></updateurl>
<versioncompatibility><FROM>5.1.0</FROM><to></to></versioncompatibility></node></marketplace>`);
  seen.length = 0;
  let r = await put(JSON.stringify({ url: `${MP.replace('https', 'http')}5514714` }));
  t.equal(r.status, 200);
  t.equal(r.body, '{"nodeId":"5514714","url":"https://marketplace.eclipse.org/content/ai-wire-component-eclipse-kura-5","dpUrl":"https://download.example/ai.dp","minGatewayVersion":"5.1.0","maxGatewayVersion":"","currentGatewayVersion":"5.4.0","isCompatible":true}');
  t.same(seen, ['/node/5514714/api/p'], 'fetched from deploy.marketplace.url, http input or not');

  // Kura: a trailing `=` is dropped by Java's split, so `69=` is node 69
  descriptors.set('69', '<marketplace><node id="69" url="U"/><updateurl>D&amp;x</updateurl><versioncompatibility><from>1.1.0</from><to>5.3.0</to></versioncompatibility></marketplace>');
  r = await put(JSON.stringify({ url: `${MP}69=` }));
  t.equal(r.body, '{"nodeId":"69","url":"U","dpUrl":"D&x","minGatewayVersion":"1.1.0","maxGatewayVersion":"5.3.0","currentGatewayVersion":"5.4.0","isCompatible":false}', 'above the upper bound');

  descriptors.set('70', '<marketplace><node url="U"></node><updateurl>D</updateurl></marketplace>');
  r = await put(JSON.stringify({ url: `${MP}70` }));
  t.equal(r.body, '{"url":"U","dpUrl":"D","currentGatewayVersion":"5.4.0","isCompatible":false}', 'no versioncompatibility: bounds omitted, not compatible; missing id omitted');

  descriptors.set('71', '<marketplace><updateurl>D</updateurl><versioncompatibility><to>5.4.0</to></versioncompatibility></marketplace>');
  r = await put(JSON.stringify({ url: `${MP}71` }));
  t.equal(r.body, '{"nodeId":"","url":"","dpUrl":"D","maxGatewayVersion":"5.4.0","currentGatewayVersion":"5.4.0","isCompatible":true}', 'no <node>: empty strings; bounds inclusive');

  const errors: [string, string | undefined][] = [
    ['72', '<marketplace><node id="72" url="U"/></marketplace>'],
    ['73', '<!DOCTYPE x [<!ENTITY a "b">]><marketplace><updateurl>&a;</updateurl></marketplace>'],
    ['74', '<marketplace><updateurl>D</marketplace>'],
    ['75', undefined],
  ];
  for (const [id, xml] of errors) {
    if (xml) descriptors.set(id, xml);
    const url = `${MP}${id}`;
    r = await put(JSON.stringify({ url }));
    t.same([r.status, r.body], [500, `Error checking package descriptor for ${url}`], `node ${id}`);
  }
});

t.test('a driver plug-in registers its factory, and uninstall stops it', async (t) => {
  const dp = buildDp({ name: 'org.example.driver', version: '1.0.0', files: { 'ext/driver.js': exampleDriverExtension('example') }, extensions: ['ext/driver.js'] });
  files.set('/pkg/driver.dp', dp);
  const changes: string[] = [];
  const off = registry.onChange((name, added) => changes.push(`${added ? '+' : '-'}${name}`));
  t.teardown(off);
  await install(`${originUrl}/pkg/driver.dp`);
  await deploy.idle();
  t.match(lastJob(), { state: 'SUCCEEDED' });
  const factory = registry.get('example');
  t.ok(factory, 'factory registered at once');
  const driver = factory!.create({}, { id: 'x', log: silentLogger, dataDir, lines: new SharedLines() });
  const res = await driver.read([{ name: 'c', enabled: true, mode: 'READ', valueType: 'INTEGER', scale: 1, offset: 0, deadband: 0, driverProps: { value: 7 } }]);
  t.same(res, [{ ok: true, value: { type: 'INTEGER', value: 7 } }]);
  t.same(plugins.factoriesOf('org.example.driver'), ['example']);

  // replacing the package stops the old code before the new one registers the same name
  files.set('/pkg/driver2.dp', buildDp({ name: 'org.example.driver', version: '1.1', files: { 'ext/driver.js': exampleDriverExtension('example', 9) }, extensions: ['ext/driver.js'] }));
  await install(`${originUrl}/pkg/driver2.dp`);
  await deploy.idle();
  t.match(lastJob(), { state: 'SUCCEEDED', version: '1.1.0' });
  t.same(changes, ['+example', '-example', '+example']);

  await request('DELETE', `${BASE}/org.example.driver`);
  await deploy.idle();
  t.equal(registry.get('example'), undefined, 'factory gone after uninstall');
  t.same(plugins.active(), []);
  t.ok((globalThis as Record<string, unknown>).__gatewaydExampleDeactivated, 'deactivate() was called');

  // an extension that throws in activate: installed, but the job says its code did not start
  files.set('/pkg/broken.dp', buildDp({ name: 'broken', version: '1', files: { 'x.mjs': 'export function activate() { throw new Error("boom"); }' }, extensions: ['x.mjs'] }));
  await install(`${originUrl}/pkg/broken.dp`);
  await deploy.idle();
  t.match(lastJob(), { state: 'FAILED', error: /installed, but its code did not start: package broken: extension x\.mjs failed to activate: boom/ });
  // a package may not take a built-in or another package's factory name
  registry.register({ ...factory!, name: 'taken' });
  files.set('/pkg/clash.dp', buildDp({ name: 'clash', version: '1', files: { 'x.js': exampleDriverExtension('taken') }, extensions: ['x.js'] }));
  await install(`${originUrl}/pkg/clash.dp`);
  await deploy.idle();
  t.match(lastJob(), { state: 'FAILED', error: /driver factory "taken" is already registered/ });
  t.same(plugins.active(), []);
});

t.test('restart: packages come back in order and their code starts again', async (t) => {
  const dir2 = path.join(tmp, 'data2');
  fs.mkdirSync(dir2);
  const first = makeStack(dir2);
  await first.deploy.start();
  const ext = exampleDriverExtension('persisted');
  const pkgFile = save('p.dp', buildDp({ name: 'p', version: '3', files: { 'e.js': ext }, extensions: ['e.js'] }), allowed);
  first.deploy.requestInstall(`file://${save('z.dp', buildDp({ name: 'z', version: '1' }), allowed)}`);
  first.deploy.requestInstall(`file://${pkgFile}`);
  await first.deploy.idle();
  t.ok(first.registry.get('persisted'));
  await first.deploy.stop();
  t.equal(first.registry.get('persisted'), undefined, 'stop() stops package code');

  const second = makeStack(dir2);
  await second.deploy.start();
  t.same(second.deploy.list(), [{ name: 'z', version: '1.0.0' }, { name: 'p', version: '3.0.0' }]);
  t.ok(second.registry.get('persisted'), 'the plug-in driver is back after the restart');
  await second.deploy.stop();
});

t.test('stop aborts a running download instead of waiting for its timeout', async (t) => {
  const dir3 = path.join(tmp, 'data3');
  fs.mkdirSync(dir3);
  const s = makeStack(dir3, { 'download.timeout': 60_000 });
  await s.deploy.start();
  s.deploy.requestInstall(`${originUrl}/slow`);
  s.deploy.requestInstall(`${originUrl}/pkg/a.dp`);
  await new Promise((r) => setTimeout(r, 50));
  t.equal(s.deploy.recentJobs()[0]!.state, 'RUNNING');
  // Without the abort this would wait for the 60 s download timeout (and tap's own timeout).
  await s.deploy.stop();
  t.match(s.deploy.recentJobs().map((j) => [j.state, j.error]), [['FAILED', /abort/i], ['FAILED', /cancelled: the daemon is stopping/]]);
  t.same(fs.readdirSync(path.join(dir3, 'packages/.incoming')), [], 'the partial download is removed');
});
