// Bundles the benchmark's entry points (bench/*.ts, baselines, load generators) into bench/out/*.mjs.
// npm packages stay external (fastify, modbus-serial, mqtt-packet load from node_modules): they are
// benchmark-only and must never reach dist/gatewayd.js.
import { build } from 'esbuild';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const entries = {
  run: 'run.ts',
  'profile-http': 'profile-http.ts',
  'bare-http': 'baselines/bare-http.ts',
  fastify: 'baselines/fastify.ts',
  'mqtt-echo': 'baselines/mqtt-echo.ts',
  'mqtt-load': 'load/mqtt-load.ts',
  'modbus-client': 'load/modbus-client.ts',
  'rtu-raw': 'load/rtu-raw.ts',
  'modbus-farm': 'load/modbus-farm.ts',
  'telemetry-sub': 'load/telemetry-sub.ts',
};

const outdir = path.join(here, 'out');
// Stale entry points of earlier layouts must not linger beside the fresh ones.
if (fs.existsSync(outdir)) for (const f of fs.readdirSync(outdir)) if (f.endsWith('.mjs')) fs.rmSync(path.join(outdir, f));

await build({
  entryPoints: Object.fromEntries(Object.entries(entries).map(([k, v]) => [k, path.join(here, v)])),
  outdir,
  outExtension: { '.js': '.mjs' },
  bundle: true,
  packages: 'external',
  platform: 'node',
  target: 'node20',
  format: 'esm',
  logLevel: 'warning',
});

// The pymodbus helper finds its device script beside itself; bundled, that is bench/out.
fs.copyFileSync(path.join(here, '..', 'test', 'helpers', 'pymodbus_server.py'), path.join(here, 'out', 'pymodbus_server.py'));
// The nodered section's device (a script of its own: it ticks and only counts requests).
fs.copyFileSync(path.join(here, 'load', 'ticking_device.py'), path.join(here, 'out', 'ticking_device.py'));
