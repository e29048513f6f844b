// CONF-V1 on a large device (docs/mqtt.md "CONF-V1", "Large configurations"), through the launcher
// (its heap bound, 48 MB of old space). 100 assets of 50 Modbus channels: GET/configurations (every configuration with its
// definitions, about 24 MB of XML, compressed while it is made) asked as Eclipse Kapua asks
// (test/helpers/kapua-requester.ts), against the same configurations over REST configuration/v2
// (JSON, streamed) from the same daemon; a CONF-V1 PUT of one property against the same change over
// CONF-V2, with the daemon's heap sampled meanwhile against the launcher's bound.

import { startMosquitto } from '../../test/helpers/mosquitto.js';
import { KapuaRequester } from '../../test/helpers/kapua-requester.js';
import { freePort } from '../../test/helpers/ports.js';
import { request, basicHeaders, type Target } from '../lib/client.js';
import { startGatewayd } from '../lib/gatewayd.js';
import { sleep, threadCpuMs } from '../lib/proc.js';
import type { Results } from '../lib/results.js';
import { withScope } from '../lib/scope.js';
import type { Options } from '../lib/setup.js';

const ASSETS = 100;
const CHANNELS = 50;
const USER = 'admin';
const PASSWORD = 'Bench-admin-1';
const DEVICE = 'gw-confv1';
/** The launcher's --max-old-space-size (rootfs/usr/bin/gatewayd). */
const HEAP_BOUND_MIB = 48;

function bigConfig(http: number, brokerUrl: string): Record<string, any> {
  const assets: Record<string, unknown> = {};
  for (let a = 0; a < ASSETS; a++) {
    const channels: Record<string, unknown> = {};
    for (let i = 0; i < CHANNELS; i++) channels[`ch${i}`] = { type: 'READ', 'value.type': 'INTEGER', 'unit.id': 1, 'primary.table': 'HOLDING_REGISTERS', 'memory.address': i + 1 };
    assets[`plc${a}`] = { 'driver.pid': 'modbus1', 'poll.interval': 0, channels };
  }
  return {
    'log.level': 'warn',
    http: { 'http.ports': [http], 'https.ports': [], 'https.client.auth.ports': [], 'bind.address': '127.0.0.1' },
    identities: { [USER]: { password: PASSWORD, permissions: ['kura.admin'], passwordChangeNeeded: false } },
    drivers: { modbus1: { factory: 'modbus', 'modbus.tcp-udp.ip': '127.0.0.1', 'modbus.tcp-udp.port': 1502 } },
    assets,
    mqtt: { enabled: true, 'broker-url': brokerUrl, 'client-id': DEVICE, 'topic.context.account-name': 'acct' },
  };
}

const putXml = (value: string) =>
  '<?xml version="1.0" encoding="UTF-8" standalone="yes"?><esf:configurations xmlns:ocd="http://www.osgi.org/xmlns/metatype/v1.2.0" xmlns:esf="http://eurotech.com/esf/2.0">' +
  `<esf:configuration pid="plc42"><esf:properties><esf:property name="ch7#+unit" array="false" encrypted="false" type="String"><esf:value>${value}</esf:value></esf:property></esf:properties></esf:configuration></esf:configurations>`;

export async function confV1Section(res: Results, opt: Options): Promise<void> {
  await withScope(async (scope) => {
    const broker = await startMosquitto();
    scope.teardown(() => broker.close());
    const http = await freePort();
    const gw = await startGatewayd(scope, bigConfig(http, broker.url), { launcher: true });
    const target: Target = { port: http };
    const auth = basicHeaders(USER, PASSWORD);
    const kapua = new KapuaRequester(broker.url);
    await kapua.start();
    scope.teardown(() => kapua.end());
    // The ready line does not wait for MQTT (docs/mqtt.md): ask until gatewayd has subscribed.
    let up = false;
    for (let i = 0; i < 40 && !up; i++) up = (await kapua.ask(DEVICE, 'CONF-V1', 'GET/snapshots', undefined, { wait: 500 }))?.code === 200;
    if (!up) throw new Error(`gatewayd never answered CONF-V1; its log:\n${gw.logs.slice(-5).join('\n')}`);

    // A keep-alive connection the daemon closes as it is reused ("socket hang up"): a GET is asked once more.
    const getOnce = (p: string) => request(target, p, { headers: auth }).catch(() => request(target, p, { headers: auth }));
    const heap = async () => JSON.parse((await getOnce('/services/system/v1/status')).body.toString()).memory.heapUsed / 1048576;
    const reps = opt.quick ? 1 : opt.repeats;
    const get = { v1: [] as number[], rest: [] as number[], v1Cpu: [] as number[], restCpu: [] as number[] };
    const put = { v1: [] as number[], v2: [] as number[], heap: [] as number[], v1Cpu: [] as number[], v2Cpu: [] as number[] };
    let xmlBytes = 0;
    let sent = 0;
    for (let rep = 0; rep < reps; rep++) {
      let cpu0 = threadCpuMs(gw.pid);
      let t0 = performance.now();
      const r = await kapua.ask(DEVICE, 'CONF-V1', 'GET/configurations', undefined, { wait: 120_000 });
      if (r?.code !== 200) throw new Error(`CONF-V1 GET/configurations answered ${r?.code} ${r?.message ?? ''}`);
      get.v1.push(r.receivedAt - t0);
      get.v1Cpu.push(threadCpuMs(gw.pid) - cpu0);
      xmlBytes = r.body!.length;
      sent = r.raw.length;
      cpu0 = threadCpuMs(gw.pid);
      t0 = performance.now();
      const j = await getOnce('/services/configuration/v2/configurableComponents/configurations');
      if (j.status !== 200) throw new Error(`configuration/v2 answered ${j.status}`);
      get.rest.push(performance.now() - t0);
      get.restCpu.push(threadCpuMs(gw.pid) - cpu0);

      // Both PUTs with the heap sampled every 20 ms meanwhile (the same load on each; the samples land
      // between the request's steps: a figure of the heap in use then, not of its exact peak).
      const sampled = async <T>(fn: () => Promise<T>): Promise<{ value: T; ms: number; peak: number; cpu: number }> => {
        let peak = await heap();
        let sampling = true;
        const sampler = (async () => {
          while (sampling) {
            peak = Math.max(peak, await heap().catch(() => 0));
            await sleep(20);
          }
        })();
        const cpu0 = threadCpuMs(gw.pid);
        const start = performance.now();
        const value = await fn();
        const ms = performance.now() - start;
        // The samples' own requests are in it, alike for both PUTs.
        const cpu = threadCpuMs(gw.pid) - cpu0;
        sampling = false;
        await sampler;
        return { value, ms, peak, cpu };
      };
      // Which PUT comes first alternates per repetition, so that neither always follows the two large
      // reads (whose garbage the next request may find still to collect).
      const putV1 = () => sampled(() => kapua.ask(DEVICE, 'CONF-V1', 'PUT/configurations/plc42', putXml(`u${rep}`), { wait: 120_000 }));
      const body = JSON.stringify({ configs: [{ pid: 'plc42', properties: { 'ch7#+unit': { type: 'STRING', value: `v${rep}` } } }] });
      const putV2 = () => sampled(() => kapua.ask(DEVICE, 'CONF-V2', 'PUT/configurableComponents/configurations/_update', body, { wait: 120_000 }));
      let p: Awaited<ReturnType<typeof putV1>>;
      let q: Awaited<ReturnType<typeof putV2>>;
      if (rep % 2 === 0) {
        p = await putV1();
        q = await putV2();
      } else {
        q = await putV2();
        p = await putV1();
      }
      if (p.value?.code !== 200) throw new Error(`CONF-V1 PUT answered ${p.value?.code} ${p.value?.message ?? ''}`);
      if (q.value?.code !== 200) throw new Error(`CONF-V2 PUT answered ${q.value?.code}`);
      put.v1.push(p.ms);
      put.heap.push(p.peak);
      put.v2.push(q.ms);
      put.v1Cpu.push(p.cpu);
      put.v2Cpu.push(q.cpu);
      const peak = p.peak;
      process.stderr.write(`  CONF-V1 GET/configurations ${get.v1.at(-1)!.toFixed(0)} ms, ${get.v1Cpu.at(-1)!.toFixed(0)} ms CPU (REST ${get.rest.at(-1)!.toFixed(0)} ms, ${get.restCpu.at(-1)!.toFixed(0)} ms CPU); PUT ${put.v1.at(-1)!.toFixed(0)} ms, ${put.v1Cpu.at(-1)!.toFixed(0)} ms CPU (CONF-V2 ${put.v2.at(-1)!.toFixed(0)} ms, ${put.v2Cpu.at(-1)!.toFixed(0)} ms CPU), heap up to ${peak.toFixed(1)} MiB\n`);
    }
    if (gw.proc.exitCode !== null) throw new Error('gatewayd exited during the section');
    const device = `${ASSETS} assets × ${CHANNELS} Modbus channels`;
    res.add('Configuration', 'confv1-get', `CONF-V1 GET/configurations, ${device}, through the launcher (request sent → reply received)`, 'ms', get.v1, 'configuration/v2 REST GET configurableComponents/configurations, the same daemon (read whole)', get.rest, { op: '<=', value: 1000, text: '≤ 1 s', on: 'value' },
      `${(xmlBytes / 1048576).toFixed(1)} MB of XML, ${(sent / 1024).toFixed(0)} KB sent (kura-protobuf, gzip); asked as Kapua asks (QoS 0, negative request.id)`);
    res.add('Configuration', 'confv1-get-cpu', `CPU of gatewayd (all threads) for that CONF-V1 GET/configurations`, 'ms', get.v1Cpu, 'the same for the configuration/v2 REST read', get.restCpu, undefined,
      'what answering costs the daemon, whatever else runs on the machine: on an idle machine the wall time above is about this');
    res.add('Configuration', 'confv1-put', `CONF-V1 PUT of one property, ${device}`, 'ms', put.v1, 'the same change over CONF-V2 (JSON)', put.v2, { op: '<=', value: 1.5, text: '≤ 1.5× CONF-V2' }, 'both take a snapshot of the whole configuration, as Kura does');
    res.add('Configuration', 'confv1-put-cpu', `CPU of gatewayd (all threads) for that CONF-V1 PUT`, 'ms', put.v1Cpu, 'the same for the CONF-V2 change', put.v2Cpu, undefined,
      'what the change costs the daemon whatever else runs on the machine (the heap samples every 20 ms included, alike for both)');
    res.add('Configuration', 'confv1-put-heap', `heap in use during the CONF-V1 PUT (sampled every 20 ms through /services/system/v1/status)`, 'MiB', put.heap, "the launcher's heap bound (--max-old-space-size)", [HEAP_BOUND_MIB], { op: '<=', value: 1, text: 'within the bound; the daemon answered and still runs' });
  });
}
