// The bundle needs Node 18 (structuredClone and friends): on an older node it must say so and stop
// before any of its code runs, rather than crash later with a TypeError. No Node 16 binary is
// available here, so the real bundle runs on this node with the version it reports turned back to
// 16 by a preload (--import), which is all the check reads.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { BUNDLE, ensureBundle } from '../helpers/daemon.js';

ensureBundle();
const as = (version: string, args: string[]) => {
  const preload = `data:text/javascript,Object.defineProperty(process.versions,'node',{value:'${version}'});Object.defineProperty(process,'version',{value:'v${version}'});`;
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'NODE_OPTIONS'));
  return spawnSync(process.execPath, ['--import', preload, BUNDLE, ...args], { encoding: 'utf8', env, timeout: 20_000 });
};

t.test('Node 16: a clear refusal, exit 2, whatever the command', async (t) => {
  for (const args of [['--version'], ['--config', '/nonexistent.json'], ['check-config', '--config', '/nonexistent.json']]) {
    const r = as('16.20.2', args);
    t.equal(r.status, 2, args.join(' '));
    t.match(r.stderr, /^gatewayd: needs Node\.js 18 or newer; this is Node\.js v16\.20\.2 \(.*\)\. Install a newer nodejs/);
    t.equal(r.stdout, '', 'nothing else ran');
  }
});

t.test('Node 18 and later run', async (t) => {
  for (const v of ['18.0.0', '22.1.0']) {
    const r = as(v, ['--version']);
    t.equal(r.status, 0, r.stderr);
    t.match(r.stdout, /^gatewayd \d/);
  }
});
