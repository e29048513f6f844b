// `make bench`: measures gatewayd (dist/gatewayd.js) against baselines in the same run and writes
// bench/results.json and bench/RESULTS.md (bench/README.md).
//
//   node bench/out/run.mjs [--only http,modbus,mqtt,footprint,nodered,scale,confv1,commissioning] [--repeats N] [--seconds S] [--quick]
//
// --quick (1 repetition, 1 s runs) is for trying the harness. It, and a run of some sections only
// (--only), write to bench/out/, so that the committed figures are always those of a whole run.

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT } from './lib/proc.js';
import { machine, markdown, Results } from './lib/results.js';
import { closeAllScopes } from './lib/scope.js';
import type { Options } from './lib/setup.js';
import { httpSection } from './sections/http.js';
import { modbusSection } from './sections/modbus.js';
import { mqttSection } from './sections/mqtt.js';
import { footprintSection } from './sections/footprint.js';
import { noderedSection } from './sections/nodered.js';
import { scaleSection } from './sections/scale.js';
import { confV1Section } from './sections/confv1.js';
import { commissioningSection } from './sections/commissioning.js';
import { consoleSection } from './sections/console.js';

const SECTIONS = { http: httpSection, modbus: modbusSection, mqtt: mqttSection, footprint: footprintSection, nodered: noderedSection, scale: scaleSection, confv1: confV1Section, commissioning: commissioningSection, console: consoleSection } as const;
type Name = keyof typeof SECTIONS;

function parse(argv: string[]): { only: Name[]; whole: boolean; opt: Options } {
  let only = Object.keys(SECTIONS) as Name[];
  const opt: Options = { repeats: 5, seconds: 2, quick: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--only') {
      only = argv[++i].split(',') as Name[];
      for (const n of only) if (!(n in SECTIONS)) throw new Error(`unknown section ${n}; expected ${Object.keys(SECTIONS).join(', ')}`);
    } else if (a === '--repeats') opt.repeats = Number(argv[++i]);
    else if (a === '--seconds') opt.seconds = Number(argv[++i]);
    else if (a === '--quick') Object.assign(opt, { quick: true, repeats: 1, seconds: 1 });
    else throw new Error(`unknown argument ${a}`);
  }
  const whole = !opt.quick && Object.keys(SECTIONS).every((n) => only.includes(n as Name));
  return { only, whole, opt };
}

const { only, whole, opt } = parse(process.argv.slice(2));
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    process.stderr.write(`bench: ${sig}: stopping what the run started\n`);
    void closeAllScopes().finally(() => process.exit(130));
  });
}
const started = Date.now();
const loadStart = os.loadavg()[0];
const res = new Results();
let failed = 0;
for (const name of only) {
  process.stderr.write(`bench: ${name}\n`);
  const t0 = Date.now();
  try {
    await SECTIONS[name](res, opt);
    res.sectionSeconds[name] = Math.round((Date.now() - t0) / 1000);
  } catch (err) {
    // One broken section must not lose the others' figures; the failure is in the report.
    failed++;
    const msg = (err as Error).message.split('\n')[0];
    process.stderr.write(`bench: ${name} failed: ${(err as Error).stack}\n`);
    res.notes.push(`Section ${name} failed: ${msg}`);
  }
}

const commit = (() => {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
})();
const run = { generatedAt: new Date().toISOString(), machine: machine(), repeats: opt.repeats, seconds: opt.seconds, durationS: (Date.now() - started) / 1000, commit, loadAverage: { start: loadStart, end: os.loadavg()[0] }, sections: only };
const outDir = whole ? path.join(ROOT, 'bench') : path.join(ROOT, 'bench', 'out');
fs.mkdirSync(outDir, { recursive: true });
fs.writeFileSync(path.join(outDir, 'results.json'), JSON.stringify({ ...run, sectionSeconds: res.sectionSeconds, notes: res.notes, rows: res.rows }, null, 2) + '\n');
const md = markdown(run, res);
fs.writeFileSync(path.join(outDir, 'RESULTS.md'), md);
process.stdout.write(md);
process.stderr.write(`bench: wrote ${path.relative(ROOT, outDir) || '.'}/results.json and RESULTS.md in ${Math.round(run.durationS)} s\n`);
// The figures are written either way, but a section that failed fails `make bench`.
// (Exiting also closes the keep-alive agents' sockets, which would keep the process up.)
process.exit(failed > 0 ? 1 : 0);
