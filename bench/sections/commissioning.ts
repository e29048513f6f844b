// Commissioning (bench/README.md "Commissioning"): a channel CSV import of 1,000 Modbus channels
// (docs/rest-api.md "Channels as CSV", `PUT /services/assets/{pid}/_channels.csv?mode=replace`)
// against the same 1,000 channels given as one configuration/v2 `_update` (JSON, the change every
// other configuration client makes), both through the launcher (its heap bound and flags), both
// taking their snapshot, both judged by the same validation.
//
// Each repetition starts one fresh gatewayd per contender (the order alternates), so that each
// contender's first change is made cold, as a technician's one import on a running device is; a
// second change of the same size (other addresses) on the same daemon is the warm figure. The
// daemon's CPU (all threads, from /proc) is reported beside the wall time: on a busy machine the
// wall time is mostly waiting for a core.

import { freePort } from '../../test/helpers/ports.js';
import { basicHeaders, request, type Target } from '../lib/client.js';
import { startGatewayd } from '../lib/gatewayd.js';
import { threadCpuMs } from '../lib/proc.js';
import type { Results } from '../lib/results.js';
import { withScope } from '../lib/scope.js';
import type { Options } from '../lib/setup.js';
import { median } from '../lib/stats.js';

const CHANNELS = 1000;
const USER = 'admin';
const PASSWORD = 'Bench-admin-1';
const PID = 'meter';

function config(http: number): Record<string, any> {
  return {
    'log.level': 'warn',
    http: { 'http.ports': [http], 'https.ports': [], 'https.client.auth.ports': [], 'bind.address': '127.0.0.1' },
    identities: { [USER]: { password: PASSWORD, permissions: ['kura.admin'], passwordChangeNeeded: false } },
    drivers: { plc: { factory: 'modbus', 'access.type': 'TCP', 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': 1502 } },
    assets: { [PID]: { 'driver.pid': 'plc', channels: { first: { type: 'READ', 'value.type': 'INTEGER', 'memory.address': 1 } } } },
    mqtt: { enabled: false },
  };
}

/** Channel i of change k: FLOAT32 and INT32 channels over five units, each change at other addresses. */
function channel(i: number, k: number) {
  const float = i % 2 === 0;
  return {
    name: `r${i}`, type: 'READ', valueType: float ? 'FLOAT' : 'INTEGER', unit: 1 + (i % 5), address: 1 + 2 * i + 4000 * k, dataType: float ? 'FLOAT32' : 'INT32', units: 'kW', scale: 0.1,
  };
}

export function csvFile(k: number): string {
  const rows = ['name,type,value.type,unit.id,primary.table,memory.address,data.type,data.order,unit,scale'];
  for (let i = 0; i < CHANNELS; i++) {
    const c = channel(i, k);
    rows.push(`${c.name},${c.type},${c.valueType},${c.unit},HOLDING_REGISTERS,${c.address},${c.dataType},BIG_ENDIAN,${c.units},${c.scale}`);
  }
  return `${rows.join('\r\n')}\r\n`;
}

/** The same channels as configuration/v2 properties of the asset (docs/configuration-v2.md). */
export function v2Update(k: number): string {
  const properties: Record<string, { type: string; value: unknown }> = {};
  for (let i = 0; i < CHANNELS; i++) {
    const c = channel(i, k);
    const p = (key: string, type: string, value: unknown) => (properties[`${c.name}#${key}`] = { type, value });
    p('+type', 'STRING', c.type);
    p('+value.type', 'STRING', c.valueType);
    p('unit.id', 'INTEGER', c.unit);
    p('primary.table', 'STRING', 'HOLDING_REGISTERS');
    p('memory.address', 'INTEGER', c.address);
    p('data.type', 'STRING', c.dataType);
    p('data.order', 'STRING', 'BIG_ENDIAN');
    p('+unit', 'STRING', c.units);
    p('+scale', 'DOUBLE', c.scale);
  }
  return JSON.stringify({ configs: [{ pid: PID, properties }], takeSnapshot: true });
}

type Kind = 'csv' | 'v2';

async function change(t: Target, kind: Kind, k: number): Promise<void> {
  const auth = basicHeaders(USER, PASSWORD);
  const r = kind === 'csv'
    ? await request(t, `/services/assets/${PID}/_channels.csv?mode=replace`, { method: 'PUT', headers: { ...auth, 'content-type': 'text/csv' }, body: csvFile(k) })
    : await request(t, '/services/configuration/v2/configurableComponents/configurations/_update', { method: 'PUT', headers: { ...auth, 'content-type': 'application/json' }, body: v2Update(k) });
  const body = r.body.toString();
  if (r.status !== 200 && r.status !== 204) throw new Error(`${kind} change ${k}: HTTP ${r.status} ${body.slice(0, 300)}`);
  if (kind === 'csv' && JSON.parse(body).changed !== true) throw new Error(`csv change ${k} changed nothing: ${body}`);
}

export async function commissioningSection(res: Results, opt: Options): Promise<void> {
  const runs = { csv: { cold: [] as number[], warm: [] as number[], coldCpu: [] as number[], warmCpu: [] as number[] }, v2: { cold: [] as number[], warm: [] as number[], coldCpu: [] as number[], warmCpu: [] as number[] } };
  for (let rep = 0; rep < opt.repeats; rep++) {
    for (const kind of (rep % 2 ? ['v2', 'csv'] : ['csv', 'v2']) as Kind[]) {
      await withScope(async (scope) => {
        const http = await freePort();
        const gw = await startGatewayd(scope, config(http), { launcher: true });
        const t: Target = { port: http };
        for (const [k, phase] of [[0, 'cold'], [1, 'warm']] as const) {
          const c0 = threadCpuMs(gw.pid);
          const t0 = process.hrtime.bigint();
          await change(t, kind, k);
          runs[kind][phase].push(Number(process.hrtime.bigint() - t0) / 1e6);
          runs[kind][`${phase}Cpu`].push(threadCpuMs(gw.pid) - c0);
        }
        // Both contenders end with the same 1,000 channels (the v2 update keeps the asset's first one).
        const listed = JSON.parse((await request(t, `/services/assets/${PID}`, { headers: basicHeaders(USER, PASSWORD) })).body.toString()) as { name: string }[];
        const expected = kind === 'csv' ? CHANNELS : CHANNELS + 1;
        if (listed.length !== expected) throw new Error(`${kind}: the asset has ${listed.length} channels after the change, not ${expected}`);
        if (gw.proc.exitCode !== null) throw new Error(`gatewayd exited during the ${kind} changes`);
      });
    }
    const last = (xs: number[]) => xs.at(-1)!.toFixed(0);
    process.stderr.write(`  CSV import ${last(runs.csv.cold)} ms (${last(runs.csv.coldCpu)} ms CPU), warm ${last(runs.csv.warm)} ms (${last(runs.csv.warmCpu)}); configuration/v2 ${last(runs.v2.cold)} ms (${last(runs.v2.coldCpu)}), warm ${last(runs.v2.warm)} ms (${last(runs.v2.warmCpu)})\n`);
  }
  const what = `Channel CSV import of ${CHANNELS.toLocaleString('en-US')} Modbus channels (PUT _channels.csv?mode=replace), through the launcher`;
  const base = `configuration/v2 PUT _update of the same ${CHANNELS.toLocaleString('en-US')} channels`;
  const how = 'request sent → reply received; a fresh gatewayd per contender and repetition (order alternating); both take a snapshot';
  res.add('Commissioning', 'commissioning-csv', `${what}: the first change of a fresh daemon`, 'ms', runs.csv.cold, `${base}, the first change of a fresh daemon`, runs.v2.cold, { op: '<=', value: 1000, text: '≤ 1 s', on: 'value' },
    `${how}; daemon CPU (all threads) for it ${median(runs.csv.coldCpu).toFixed(0)} ms (configuration/v2 ${median(runs.v2.coldCpu).toFixed(0)} ms)`);
  res.add('Commissioning', 'commissioning-csv-warm', `${what}: a second import of the same size on that daemon`, 'ms', runs.csv.warm, `${base}, a second one on that daemon`, runs.v2.warm, undefined,
    `other addresses, so that it changes every channel; daemon CPU ${median(runs.csv.warmCpu).toFixed(0)} ms (configuration/v2 ${median(runs.v2.warmCpu).toFixed(0)} ms)`);
  res.add('Commissioning', 'commissioning-csv-cpu', `${what}: gatewayd CPU (all threads) for the first change`, 'ms', runs.csv.coldCpu, `${base}: the same`, runs.v2.coldCpu, undefined,
    'what the import costs the daemon whatever else runs on the machine: on an idle machine the wall time above is about this');
}
