// What a benchmark run produces: one row per figure, with the gatewayd figure, the baseline it is
// compared with (measured in the same run), their ratio, every repetition, and its goal (bench/README.md).

import os from 'node:os';
import { spawnSync } from 'node:child_process';
import { median, round } from './stats.js';

export type Section = 'HTTP' | 'Modbus' | 'MQTT' | 'Footprint' | 'Node-RED' | 'Scale' | 'Configuration' | 'Commissioning' | 'Console';

export interface Goal {
  /** The ratio must be at least (`>=`), at most (`<=`), or above (`>`) `value`. */
  op: '>=' | '<=' | '>';
  value: number;
  text: string;
  /** Judge the gatewayd figure itself instead of the ratio (e.g. requests on the wire). */
  on?: 'value';
}

export interface Row {
  section: Section;
  id: string;
  what: string;
  unit: string;
  /** Median of the repetitions, null when not measured. */
  gatewayd: number | null;
  baseline: string;
  baselineValue: number | null;
  /** gatewayd / baseline. */
  ratio: number | null;
  goal?: Goal;
  verdict: 'met' | 'missed' | 'no goal' | 'not measured';
  runs?: { gatewayd: number[]; baseline: number[] };
  note?: string;
}

export class Results {
  rows: Row[] = [];
  notes: string[] = [];
  sectionSeconds: Record<string, number> = {};

  /** Adds a figure measured `runs` times on each side; the medians and their ratio are reported. */
  add(section: Section, id: string, what: string, unit: string, gw: number[], baseline: string, base: number[], goal?: Goal, note?: string): Row {
    const g = median(gw);
    const b = base.length ? median(base) : NaN;
    const ratio = Number.isFinite(g) && Number.isFinite(b) && b !== 0 ? g / b : NaN;
    let verdict: Row['verdict'] = 'no goal';
    if (goal) {
      const x = goal.on === 'value' ? g : ratio;
      verdict = !Number.isFinite(x) ? 'not measured' : (goal.op === '>=' ? x >= goal.value : goal.op === '<=' ? x <= goal.value : x > goal.value) ? 'met' : 'missed';
    }
    const row: Row = {
      section, id, what, unit,
      gatewayd: Number.isFinite(g) ? round(g) : null,
      baseline,
      baselineValue: Number.isFinite(b) ? round(b) : null,
      ratio: Number.isFinite(ratio) ? round(ratio) : null,
      goal, verdict,
      runs: { gatewayd: gw.map((x) => round(x)), baseline: base.map((x) => round(x)) },
      note,
    };
    this.rows.push(row);
    return row;
  }

  notMeasured(section: Section, id: string, what: string, baseline: string, reason: string, goal?: Goal): void {
    this.rows.push({ section, id, what, unit: '', gatewayd: null, baseline, baselineValue: null, ratio: null, goal, verdict: 'not measured', note: reason });
  }
}

function version(cmd: string, args: string[], re: RegExp): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  const m = re.exec(`${r.stdout ?? ''}${r.stderr ?? ''}`);
  return m ? m[1] : 'unknown';
}

export function machine(): Record<string, string | number> {
  const cpus = os.cpus();
  return {
    cpu: cpus[0]?.model ?? 'unknown',
    cores: cpus.length,
    memoryMiB: Math.round(os.totalmem() / 1048576),
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    wrk: version('wrk', ['--version'], /wrk (\S+)/),
    mosquitto: version('/usr/sbin/mosquitto', ['-h'], /mosquitto version (\S+)/),
    pymodbus: version('/usr/bin/python3', ['-c', 'import pymodbus; print(pymodbus.__version__)'], /(\S+)/),
  };
}

const fmt = (x: number | null, unit = ''): string => (x === null ? '—' : `${x.toLocaleString('en-US', { maximumFractionDigits: 3 })}${unit ? ` ${unit}` : ''}`);

export function markdown(run: { generatedAt: string; machine: Record<string, string | number>; repeats: number; durationS: number; commit: string; loadAverage: { start: number; end: number } }, res: Results): string {
  const m = run.machine;
  const lines = [
    '# gatewayd benchmark results',
    '',
    `Produced by \`make bench\` (bench/run.ts) on ${run.generatedAt}, commit ${run.commit}, in ${Math.round(run.durationS)} s.`,
    `Machine: ${m.cpu}, ${m.cores} cores, ${m.memoryMiB} MiB RAM, ${m.os}; Node ${m.node}, wrk ${m.wrk}, Mosquitto ${m.mosquitto}, pymodbus ${m.pymodbus}.`,
    `1-minute load average at the start ${run.loadAverage.start.toFixed(2)}, at the end ${run.loadAverage.end.toFixed(2)} (anything above ~0.5 means other work shared the cores, and the absolute figures, more than the ratios, suffer).`,
    '',
    `Seconds per section: ${Object.entries(res.sectionSeconds).map(([k, v]) => `${k} ${v}`).join(', ')}.`,
    '',
    `Every figure is the median of ${run.repeats} repetitions (footprint: idle RSS and start-up from 3 and 5 lives, loaded RSS from 2); the baseline runs in the same \`make bench\`,`,
    'interleaved with gatewayd (gatewayd, baseline, gatewayd, …), on the same machine. Ratio = gatewayd ÷ baseline.',
    'Load generators run in processes of their own (wrk with one thread for HTTP, so client and server have a core each).',
    '`bench/results.json` has every repetition.',
    '',
    'On a shared machine judge HTTP by the requests-per-server-CPU-second rows: they charge each server only for the CPU it used, while the wall-clock rows also measure whoever else had the cores (their ratios moved by ±30 % between otherwise identical runs here).',
    '',
    '## Where the goals stand',
    '',
    ...res.rows.filter((r) => r.goal).map((r) => `- ${r.verdict === 'met' ? 'met' : r.verdict === 'missed' ? '**missed**' : r.verdict}: ${r.what} — ${r.goal!.on === 'value' ? fmt(r.gatewayd, r.unit) : r.ratio === null ? 'no figure' : `${fmt(r.ratio)}× ${r.baseline}`} (goal ${r.goal!.text})`),
    '',
    '## All figures',
    '',
    '| Section | Measure | gatewayd | Baseline | Baseline figure | Ratio | Goal | Status |',
    '|---|---|---|---|---|---|---|---|',
  ];
  for (const r of res.rows) {
    lines.push(`| ${r.section} | ${r.what} | ${fmt(r.gatewayd, r.unit)} | ${r.baseline} | ${fmt(r.baselineValue, r.unit)} | ${r.ratio === null ? '—' : `${fmt(r.ratio)}×`} | ${r.goal?.text ?? ''} | ${r.verdict} |`);
  }
  const noted = res.rows.filter((r) => r.note);
  if (noted.length || res.notes.length) {
    lines.push('', '## Notes', '');
    for (const r of noted) lines.push(`- **${r.what}** (${r.verdict}): ${r.note}`);
    for (const n of res.notes) lines.push(`- ${n}`);
  }
  return lines.join('\n') + '\n';
}
