// DEPLOY-V2: deployment packages managed from the cloud, as Kura's CloudDeploymentHandlerV2 answers
// Eclipse Kapua (docs/mqtt.md "DEPLOY-V2"). A request-core family (src/core/family.ts), MQTT only,
// in Kura's native style: parameters come as the request's metrics (typed strictly, as Kura casts
// them), answers as metrics or an XML body (PayloadReply), progress as NOTIFY messages to the
// requester (`req.notify`), errors as RequestError with Kura's texts. Downloads, installs and
// uninstalls run on the deployment service's one job queue, so they show in REST
// `GET /services/deploy/v2/_jobs` too (src/api/deploy/rest.ts), and never hold up a reply.
// `GET/bundles` lists the daemon as bundle 0 beside each package's plug-in, which EXEC/start/<id>
// and EXEC/stop/<id> start and stop (docs/packages.md "Bundles").
//
// Where gatewayd differs from Kura (COMPATIBILITY.md): packages go to `<dataDir>/downloads`, system
// updates (shell scripts) and deployment hooks (`request.type`) are refused with 400, a broken
// transfer is taken up again with a Range request, and a package must be signed when
// `deploy.trust.anchors` is set, as over REST.

import { nodeCrypto } from '../../core/builtin.js';
import fs from 'node:fs';
import path from 'node:path';
import { RequestError } from '../../core/errors.js';
import { METHODS, PayloadReply, type CoreRequest, type Family, type Method } from '../../core/family.js';
import type { KuraMetric, MetricType } from '../../core/metrics.js';
import type { DeploymentService } from '../../deploy/service.js';
import { QueueFullError, type Job } from '../../deploy/jobs.js';
import type { Logger } from '../../log.js';
import { VERSION } from '../../version.js';

export const DEPLOY_V2 = 'DEPLOY-V2';

const noSystemUpdates = () => new RequestError(400, 'Bad request. System updates (shell scripts) are not supported by gatewayd');

/** What Kura answers 400 with no details (IllegalArgumentException, ClassCastException). */
const badRequest = () => new RequestError(400);

type Value<T extends MetricType> = Extract<KuraMetric, { type: T }>['value'];

/**
 * The request's parameters: its metrics, or (bare-JSON encoding, which has no metrics) the keys of
 * a JSON object body read by the one JSON reader, whose integers stand for either integer type. A
 * body that is no JSON object gives no parameters (the required ones are then missing: 400).
 */
class Params {
  private constructor(
    private readonly metrics: readonly KuraMetric[],
    private readonly json: Record<string, unknown> | undefined,
  ) {}

  static async of(req: CoreRequest): Promise<Params> {
    const metrics = req.metrics ?? [];
    let json: Record<string, unknown> | undefined;
    if (metrics.length === 0) {
      const v = await req.body().catch((err) => {
        if (err instanceof RequestError) return undefined;
        throw err;
      });
      if (v && typeof v === 'object' && !Array.isArray(v)) json = v as Record<string, unknown>;
    }
    return new Params(metrics, json);
  }

  get<T extends MetricType>(name: string, type: T, required = false): Value<T> | undefined {
    let v: unknown;
    if (this.json) {
      v = this.json[name];
      if (typeof v === 'number' && Number.isInteger(v) && (type === 'INT32' || type === 'INT64')) v = type === 'INT64' ? BigInt(v) : v;
      else if (v !== undefined && typeof v !== ({ STRING: 'string', BOOL: 'boolean' } as Record<string, string>)[type]) throw badRequest();
    } else {
      const m = this.metrics.find((x) => x.name === name);
      if (m && m.type !== type) throw badRequest();
      v = m?.value;
    }
    if (v === undefined && required) throw badRequest();
    return v as Value<T> | undefined;
  }
}

const int32 = (name: string, value: number): KuraMetric => ({ name, type: 'INT32', value: Math.max(-2147483648, Math.min(2147483647, Math.round(value))) });
const str = (name: string, value: string): KuraMetric => ({ name, type: 'STRING', value });
const int64 = (name: string, value: bigint): KuraMetric => ({ name, type: 'INT64', value });

/** An install or uninstall notification (Kura's InstallImpl/UninstallImpl). */
function jobNotice(req: CoreRequest, op: 'install' | 'uninstall', jobId: bigint, name: string, job: Pick<Job, 'state' | 'error'>): void {
  const ok = job.state === 'SUCCEEDED';
  const metrics = [str('client.id', req.clientId ?? ''), str(`dp.${op}.status`, ok ? 'COMPLETED' : 'FAILED'), int32(`dp.${op}.progress`, ok ? 100 : 0), int64('job.id', jobId), str('dp.name', name)];
  if (!ok) metrics.push(str(`dp.${op}.error.message`, job.error ?? `${op} failed`));
  req.notify(op, { metrics });
}

const xmlText = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const element = (tag: string, text: string) => (text === '' ? '' : `<${tag}>${xmlText(text)}</${tag}>`);
const XML = '<?xml version="1.0" encoding="UTF-8"?>';

/** A package file name from request values: one path segment, never `..`. */
function fileNameOf(name: string, version: string): string {
  const f = `${name}_${version}.dp`;
  if (/[/\\\u0000]/.test(f) || name === '' || name.startsWith('.')) throw badRequest();
  return f;
}

interface Download {
  job: Job;
  jobId: bigint;
  file: string;
  size: number;
  received: number;
  status: 'IN_PROGRESS' | 'COMPLETED' | 'FAILED' | 'CANCELLED';
  notify: (status: Download['status'], error?: string) => void;
}

export function deployV2Family(deploy: DeploymentService, log: Logger): Family {
  /** The download under way, or the last one (Kura keeps one download at a time). */
  let current: Download | undefined;

  const downloading = () => current !== undefined && current.status === 'IN_PROGRESS';
  const installing = () => deploy.recentJobs().find((j) => j.kind === 'install' && j.phase === 'apply');

  function packagesXml(): string {
    const pkgs = deploy.list().map((p) => `<package>${element('name', p.name)}${element('version', p.version)}<bundles><bundle>${element('name', p.name)}${element('version', p.version)}</bundle></bundles></package>`);
    return `${XML}<packages>${pkgs.join('')}</packages>`;
  }

  // Kapua's KuraBundles reads `<bundles>` with one `<bundle>` per bundle (name, version, id, state)
  // and fails on a list without one; bundle 0, the daemon itself, is always there.
  function bundlesXml(): string {
    const list = deploy.bundles(VERSION).map((b) => `<bundle>${element('name', b.name)}${element('version', b.version)}<id>${b.id}</id><state>${b.state}</state></bundle>`);
    return `${XML}<bundles>${list.join('')}</bundles>`;
  }

  /** EXEC/start/<id> and EXEC/stop/<id>: a package's plug-in by bundle id (Kura: Bundle.start/stop). */
  async function execStartStop(req: CoreRequest, start: boolean): Promise<undefined> {
    const text = req.params.id;
    // Kura: Long.valueOf of the resource; no id or another text is a bad request.
    if (text === undefined || !/^[+-]?\d{1,19}$/.test(text)) throw new RequestError(400, `Bad request. ${text === undefined ? 'No bundle id' : `${JSON.stringify(text)} is no bundle id`}`);
    const id = Number(text);
    const bundle = deploy.bundles(VERSION).find((b) => b.id === id);
    if (!bundle) throw new RequestError(404, `Not found. No bundle has the id ${text}`);
    if (bundle.system) throw new RequestError(400, `Bad request. Bundle 0 is gatewayd itself (the system bundle): it cannot be started or stopped`);
    try {
      await deploy.setBundleStarted(bundle.name, start);
    } catch (err) {
      // Kura answers a BundleException as a bad request.
      throw new RequestError(400, `Bad request. ${(err as Error).message}`);
    }
    log.info(`DEPLOY-V2 bundle ${start ? 'started' : 'stopped'}`, { id, package: bundle.name });
    return undefined;
  }

  function getDownload(): PayloadReply {
    if (!downloading()) return new PayloadReply({ metrics: [int32('dp.download.size', 0), int32('dp.download.progress', 100), str('dp.download.status', 'ALREADY DONE')] });
    const d = current!;
    return new PayloadReply({ metrics: [int32('dp.download.size', d.size), int32('dp.download.progress', progressOf(d)), str('dp.download.status', d.status), int64('job.id', d.jobId)] });
  }

  function getInstall(): PayloadReply {
    const job = installing();
    if (!job) return new PayloadReply({ metrics: [str('dp.install.status', 'IDLE')] });
    return new PayloadReply({ metrics: [str('dp.install.status', 'IN_PROGRESS'), ...(job.name ? [str('dp.name', job.name)] : []), ...(job.version ? [str('dp.version', job.version)] : [])] });
  }

  function execDownload(p: Params, req: CoreRequest): PayloadReply | undefined {
    const uri = p.get('dp.uri', 'STRING', true)!;
    const name = p.get('dp.name', 'STRING', true)!;
    const version = p.get('dp.version', 'STRING', true)!;
    const protocol = p.get('dp.download.protocol', 'STRING', true)!;
    const jobId = p.get('job.id', 'INT64', true)!;
    const systemUpdate = p.get('dp.install.system.update', 'BOOL', true)!;
    const notifyBlock = p.get('dp.download.notify.block.size', 'INT32');
    const timeout = p.get('dp.download.timeout', 'INT32');
    const username = p.get('dp.download.username', 'STRING');
    const password = p.get('dp.download.password', 'STRING');
    const hash = p.get('dp.download.hash', 'STRING');
    const install = p.get('dp.install', 'BOOL') ?? true;
    const force = p.get('dp.download.force', 'BOOL') ?? false;
    for (const [n, t] of [['dp.download.block.size', 'INT32'], ['dp.download.block.delay', 'INT32'], ['dp.download.resume', 'BOOL'], ['dp.reboot', 'BOOL'], ['dp.reboot.delay', 'INT32'], ['dp.install.verifier.uri', 'STRING']] as const) p.get(n, t);
    if (systemUpdate) throw noSystemUpdates();
    if (p.get('request.type', 'STRING') !== undefined) throw new RequestError(400, 'Bad request. No deployment hook is configured for request.type');
    const file = path.join(deploy.downloadsDir(), fileNameOf(name, version));
    // Kura's answer carries the state as a metric and the reason as the body, no exception message.
    if (downloading()) return new PayloadReply({ status: 500, metrics: [str('download.status', 'IN_PROGRESS')], body: 'Another resource is already in download' });

    const notify = (status: Download['status'], error?: string, size = d.size, progress = progressOf(d)) => {
      const metrics = [str('client.id', req.clientId ?? ''), int32('dp.download.size', size), int32('dp.download.progress', progress), str('dp.download.status', status), int64('job.id', jobId), int32('dp.download.index', 0)];
      if (error !== undefined) metrics.push(str('dp.download.error.message', error));
      req.notify('download', { metrics });
    };
    const d: Download = { job: undefined as unknown as Job, jobId, file, size: -1, received: 0, status: 'IN_PROGRESS', notify };
    let url: URL | undefined;
    try {
      url = new URL(uri);
    } catch {
      url = undefined;
    }
    // Kura has a downloader for the protocol `HTTP` only (http: and https: URLs); anything else is
    // accepted, then reported FAILED.
    if (protocol !== 'HTTP' || !url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
      setImmediate(() => notify('FAILED', protocol !== 'HTTP' ? `Unsupported download protocol ${protocol}` : `Unsupported URI ${uri}`, 0, 0));
      return undefined;
    }
    const reuse = !force && fs.existsSync(file);
    const headers = username !== undefined ? { authorization: `Basic ${Buffer.from(`${username}:${password ?? ''}`).toString('base64')}` } : undefined;
    let nextNotice = 0;
    let fetched = false;
    let verified = false;
    // The first IN_PROGRESS notification goes out when the server's answer starts (onProgress), so
    // that it carries the declared size as Kura's does; −1 only when the server sends no length.
    const job = queued(() => deploy.requestDownload({
      url,
      file,
      install,
      reuse,
      timeoutMs: timeout,
      headers,
      onProgress: (received, total) => {
        d.received = received;
        d.size = total ?? -1;
        const block = notifyBlock ?? (total ? Math.max(1, Math.floor(total / 20)) : 256 * 1024);
        if (received >= nextNotice) {
          nextNotice = received + block;
          notify('IN_PROGRESS');
        }
      },
      afterFetch: async () => {
        fetched = true;
        d.status = 'COMPLETED';
        if (reuse) notify('COMPLETED', undefined, 0, 100);
        else notify('COMPLETED', undefined, d.size, 100);
        if (hash !== undefined) await checkHash(file, hash);
        verified = true;
      },
      onEnd: (job) => {
        if (!fetched && job.state === 'CANCELLED') {
          d.status = 'CANCELLED';
          notify('CANCELLED', 'Download cancelled');
        } else if (!fetched || !verified) {
          // Kura: the transfer's own error (when there was one), then the verification failure.
          d.status = 'FAILED';
          if (!fetched) notify('FAILED', job.error ?? 'download failed');
          notify('FAILED', 'Error during download process and verification!', 0, 0);
        } else if (install) {
          jobNotice(req, 'install', jobId, path.basename(file), job);
        }
      },
    }));
    d.job = job;
    current = d;
    log.info('DEPLOY-V2 download requested', { job: d.job.id, url: d.job.url, file: path.basename(file), install });
    return undefined;
  }

  function delDownload(): undefined {
    // Kura: KuraException OS_COMMAND_ERROR when no download was ever started.
    if (!current) throw new RequestError(500, 'Unable to execute system process {0}');
    if (downloading()) deploy.cancelJob(current.job.id);
    else fs.rmSync(current.file, { force: true });
    return undefined;
  }

  function execInstall(p: Params, req: CoreRequest): undefined {
    const name = p.get('dp.name', 'STRING', true)!;
    const version = p.get('dp.version', 'STRING', true)!;
    const jobId = p.get('job.id', 'INT64', true)!;
    if (p.get('dp.install.system.update', 'BOOL', true)) throw noSystemUpdates();
    // Kura checks the last EXEC/download's file, not this request's (and fails without one).
    if (!current) throw new RequestError(500);
    if (!fs.existsSync(current.file) || installing()) throw badRequest();
    const file = path.join(deploy.downloadsDir(), fileNameOf(name, version));
    const notify = (job: Pick<Job, 'state' | 'error'>) => jobNotice(req, 'install', jobId, path.basename(file), job);
    if (!fs.existsSync(file)) setImmediate(() => notify({ state: 'FAILED', error: `${path.basename(file)} has not been downloaded` }));
    else queued(() => deploy.requestFileInstall(file, notify));
    return undefined;
  }

  function execUninstall(p: Params, req: CoreRequest): undefined {
    const name = p.get('dp.name', 'STRING', true)!;
    const jobId = p.get('job.id', 'INT64', true)!;
    p.get('dp.version', 'STRING');
    const notify = (job: Pick<Job, 'state' | 'error'>) => jobNotice(req, 'uninstall', jobId, name, job);
    // Kura reports COMPLETED for a package that is not installed.
    if (!deploy.list().some((x) => x.name === name)) setImmediate(() => notify({ state: 'SUCCEEDED' }));
    else queued(() => deploy.requestUninstall(name, notify));
    return undefined;
  }

  /** A route whose handler reads the request's parameters first (as Kura builds them before it looks at the resource). */
  const withParams = (method: Method, resource: string, fn: (p: Params, req: CoreRequest) => PayloadReply | undefined) => ({
    method,
    path: resource,
    handler: async (req: CoreRequest) => fn(await Params.of(req), req),
  });

  return {
    name: DEPLOY_V2,
    appId: DEPLOY_V2,
    // REST deploy/v2's role (src/api/deploy/rest.ts): over MQTT a requester needs rest.deploy.
    role: 'deploy',
    errors: 'native',
    routes: [
      { method: 'GET', path: 'packages', handler: () => new PayloadReply({ body: packagesXml() }) },
      { method: 'GET', path: 'bundles', handler: () => new PayloadReply({ body: bundlesXml() }) },
      { method: 'GET', path: 'download', handler: getDownload },
      { method: 'GET', path: 'install', handler: getInstall },
      withParams('EXEC', 'download', execDownload),
      { method: 'DEL', path: 'download', handler: delDownload },
      { method: 'EXEC', path: 'start', handler: (req) => execStartStop(req, true) },
      { method: 'EXEC', path: 'start/:id', handler: (req) => execStartStop(req, true) },
      { method: 'EXEC', path: 'stop', handler: (req) => execStartStop(req, false) },
      { method: 'EXEC', path: 'stop/:id', handler: (req) => execStartStop(req, false) },
      withParams('EXEC', 'install', execInstall),
      withParams('EXEC', 'uninstall', execUninstall),
    ],
    // Kura's CloudDeploymentHandlerV2: no resource is a bad request; an unknown resource (or a
    // known one with more levels, or another method) of a Kura method is 404 `Not found.`; any
    // other method a bad request.
    noMatch(method, resources) {
      if (resources.length === 0 || !(METHODS as readonly string[]).includes(method)) return badRequest();
      return new RequestError(404, 'Not found.');
    },
  };
}

/** A job queued; at a bound of the queue, 500 with the message naming the bound. */
function queued<T>(enqueue: () => T): T {
  try {
    return enqueue();
  } catch (err) {
    if (err instanceof QueueFullError) throw new RequestError(500, err.message);
    throw err;
  }
}

function progressOf(d: Download): number {
  if (d.status === 'COMPLETED') return 100;
  if (d.size > 0) return Math.floor((d.received * 100) / d.size);
  return d.received > 0 ? 50 : 0;
}

/** `dp.download.hash`: `<Java algorithm>:<lower-case hex>`, compared case-sensitively as Kura does. */
async function checkHash(file: string, spec: string): Promise<void> {
  const at = spec.indexOf(':');
  const alg = spec.slice(0, at).toLowerCase().replace(/^sha-/, 'sha');
  const want = spec.slice(at + 1);
  if (at < 0 || !nodeCrypto().getHashes().includes(alg)) throw new Error(`unsupported hash ${spec.slice(0, Math.max(at, 0))}`);
  const h = nodeCrypto().createHash(alg);
  for await (const chunk of fs.createReadStream(file)) h.update(chunk as Buffer);
  const got = h.digest('hex');
  if (got !== want) throw new Error(`hash mismatch: ${got}`);
}
