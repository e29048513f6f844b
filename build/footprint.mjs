// Measures the RSS of the bundle idle and after load, once per set of node flags, to choose the
// launcher's flags (docs/installation.md "Footprint"). Usage:
//   node build/footprint.mjs [--bundle dist/gatewayd.js] [--requests 10000] [--logins 200]
//        [--flags "--max-old-space-size=32 --max-semi-space-size=1"] ...
// A --flags word NAME=value is an environment setting. Without --flags it compares no flags against the launcher's (read from rootfs/usr/bin/gatewayd).
// Load: keep-alive GET /services/assets/demo/_read with BASIC, 10 at a time, then password logins
// (each one scrypt) 4 at a time. Figures are VmRSS after settling and VmHWM (peak) from /proc.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
};
const bundle = path.resolve(opt('--bundle', path.join(root, 'dist', 'gatewayd.js')));
const REQUESTS = Number(opt('--requests', 10000));
const LOGINS = Number(opt('--logins', 200));

/** The launcher's settings as one string: its exported NAME=value lines, then NODE_FLAGS. */
export function launcherFlags(file = path.join(root, 'rootfs', 'usr', 'bin', 'gatewayd')) {
  const text = fs.readFileSync(file, 'utf8');
  const env = [...text.matchAll(/^export ([A-Z_]+)=\$\{[A-Z_]+:-([^}]*)\}/gm)].map((m) => `${m[1]}=${m[2]}`);
  const m = /^NODE_FLAGS="([^"]*)"/m.exec(text);
  return [...env, m ? m[1] : ''].join(' ').trim();
}

const flagSets = [];
for (let i = 0; i < args.length; i++) if (args[i] === '--flags') flagSets.push(args[i + 1]);
if (flagSets.length === 0) flagSets.push('', launcherFlags());

const freePort = () =>
  new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

function status(pid) {
  const s = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(s)?.[1] ?? NaN);
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 10 });
function request(port, pathname, { method = 'GET', headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: pathname, method, agent, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function pool(n, concurrency, fn) {
  let next = 0;
  const bad = [];
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < n) {
      const code = await fn(next++);
      if (code !== 200) bad.push(code);
    }
  }));
  if (bad.length) throw new Error(`${bad.length} requests failed (first status ${bad[0]})`);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function measure(flags) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-footprint-'));
  const port = await freePort();
  const config = {
    dataDir: path.join(dir, 'data'),
    'log.level': 'warn',
    http: { 'http.ports': [port], 'bind.address': '127.0.0.1' },
    identities: { admin: { password: 'footprint-pass', permissions: ['kura.admin'], passwordChangeNeeded: false } },
    rest: { 'auth.basic.enabled': true, 'login.throttle.max.delay': 0 },
    drivers: { sim: { factory: 'simulator' } },
    assets: { demo: { 'driver.pid': 'sim', channels: {
      temperature: { type: 'READ', 'value.type': 'DOUBLE', simulation: 'sine' },
      counter: { type: 'READ', 'value.type': 'INTEGER', simulation: 'counter' },
      setpoint: { type: 'READ_WRITE', 'value.type': 'DOUBLE', simulation: 'memory', initial: 21.5 },
    } } },
    mqtt: { enabled: false },
  };
  fs.writeFileSync(path.join(dir, 'gatewayd.json'), JSON.stringify(config));
  // NAME=value words are environment settings (as the launcher exports them), the rest node flags.
  const words = flags.split(/\s+/).filter(Boolean);
  const env = Object.fromEntries(words.filter((w) => /^[A-Z_]+=/.test(w)).map((w) => [w.slice(0, w.indexOf('=')), w.slice(w.indexOf('=') + 1)]));
  const nodeFlags = words.filter((w) => !/^[A-Z_]+=/.test(w));
  const proc = spawn(process.execPath, [...nodeFlags, bundle, '--config', path.join(dir, 'gatewayd.json')], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, ...env } });
  let out = '';
  proc.stdout.on('data', (d) => (out += d));
  try {
    for (let i = 0; !out.includes('gatewayd ready'); i++) {
      if (i > 300 || proc.exitCode !== null) throw new Error(`not ready: ${out}`);
      await sleep(50);
    }
    await sleep(2000);
    const idle = status(proc.pid);
    const basic = { authorization: 'Basic ' + Buffer.from('admin:footprint-pass').toString('base64') };
    // One read alone first: its password check hashes (then the daemon knows the header), and ten at
    // once from one address would be more checks than the daemon lets one client queue.
    await pool(1, 1, () => request(port, '/services/assets/demo/_read', { headers: basic }));
    await pool(REQUESTS - 1, 10, () => request(port, '/services/assets/demo/_read', { headers: basic }));
    const body = JSON.stringify({ username: 'admin', password: 'footprint-pass' });
    await pool(LOGINS, 4, () => request(port, '/services/session/v1/login/password', { method: 'POST', body, headers: { 'content-type': 'application/json' } }));
    await sleep(2000);
    const loaded = status(proc.pid);
    return { flags: flags || '(none)', idleRssKB: idle.rss, loadedRssKB: loaded.rss, peakRssKB: loaded.hwm };
  } finally {
    proc.kill('SIGTERM');
    await new Promise((r) => (proc.exitCode !== null ? r() : proc.once('exit', r)));
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const rows = [];
for (const f of flagSets) rows.push(await measure(f));
agent.destroy();
const mb = (kb) => (kb / 1024).toFixed(1);
console.log(`node ${process.version} ${process.arch}, ${REQUESTS} reads + ${LOGINS} logins, bundle ${fs.statSync(bundle).size} bytes`);
console.log('| node flags | idle RSS MB | RSS after load MB | peak RSS MB |\n|---|---|---|---|');
for (const r of rows) console.log(`| \`${r.flags}\` | ${mb(r.idleRssKB)} | ${mb(r.loadedRssKB)} | ${mb(r.peakRssKB)} |`);
