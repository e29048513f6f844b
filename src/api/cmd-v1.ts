// CMD-V1: Kura's remote command (CommandCloudApp), as Eclipse Kapua's command tab and its "Command
// Exec" job step send it (docs/mqtt.md "CMD-V1"). MQTT only, on the request core in Kura's native
// style: `EXEC/command` with the parameters as typed metrics (or, with the bare-JSON encoding, the
// keys of a JSON object body), the answer as metrics.
//
// Registered only while `command.enabled` (the family's `active`), so it is in BIRTH's
// application_ids only then. Every request needs the requester permission `rest.command` (or
// kura.admin; docs/mqtt.md "Who may send requests") and then the device's `command.password`,
// compared in constant time, guessing slowed down; an empty configured password refuses every
// request. The program runs
// without a shell, in a working directory inside dataDir, for at most `command.timeout` seconds,
// its output bounded (src/command/runner.ts). Every run is logged with its exit status; its
// standard input, the password and the environment's values never are.
//
// Kura's reply (CommandCloudApp.prepareResponse): stdout, stderr, exit code and `command.timedout`
// false with 200 when the program exits 0; the same with 500 and stderr as the exception message
// when it exits otherwise; stdout, stderr and `command.timedout` true, no exit code, with 200 after
// a timeout. `command.run.async` answers 200 at once, without metrics.
//
// A body is a zip file (Kura's KuraCommandRequestPayload.getZipBytes), unpacked into the working
// directory before the command runs, as Kura's CommandCloudApp does: after the password, bounded
// (ZIP_LIMITS, the data partition's reserve), existing files replaced, nothing written outside the
// working directory (no `..` or absolute names, no writing through a link). See unpackZip.

import path from 'node:path';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import { nodeCrypto } from '../core/builtin.js';
import { monotonicNow } from '../core/clock.js';
import { RequestError, notSupported } from '../core/errors.js';
import { METHODS, PayloadReply, type CoreRequest, type Family } from '../core/family.js';
import type { KuraMetric, MetricType } from '../core/metrics.js';
import { MAX_ELEMENTS_PER_REQUEST } from '../core/limits.js';
import type { Logger } from '../log.js';
import { inside, workingDirectoryOf, type CommandConfig } from '../command/config.js';
import { CommandRunner, RunnerBusyError, type RunResult } from '../command/runner.js';
import { ZipArchive, ZipError, type ZipLimits } from '../deploy/zip.js';
import { ReserveError, spaceMeter } from '../store/reserve.js';

export const CMD_V1 = 'CMD-V1';

/** Kura's text for a refused password (CommandCloudApp.execute), answered as its BAD_REQUEST. */
const WRONG_PASSWORD = 'Password required but not correct and/or missing';

/** Environment names as POSIX shells accept them (IEEE Std 1003.1, "Environment Variables"). */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** What a command finds in its environment besides the request's pairs. */
const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** Characters of the arguments a log line carries: enough to say what ran, not a copy of a script. */
const LOGGED_ARGUMENTS_MAX = 1000;

/** What the family reads of the configuration in force, at each request. */
export type CommandSettings = () => { command: CommandConfig; dataDir: string };

type Value<T extends MetricType> = Extract<KuraMetric, { type: T }>['value'];

const bad = (detail: string) => new RequestError(400, detail);
const str = (name: string, value: string): KuraMetric => ({ name, type: 'STRING', value });
const int32 = (name: string, value: number): KuraMetric => ({ name, type: 'INT32', value });
const bool = (name: string, value: boolean): KuraMetric => ({ name, type: 'BOOL', value });

/** The request's parameters: typed metrics, or the keys of the bare-JSON encoding's object body. */
class Params {
  private constructor(
    private readonly metrics: ReadonlyMap<string, KuraMetric>,
    private readonly json: Record<string, unknown> | undefined,
  ) {}

  static async of(req: CoreRequest): Promise<Params> {
    const metrics = new Map((req.metrics ?? []).map((m) => [m.name, m]));
    // With metrics, a body is the zip file to unpack (execCommand); without (bare JSON), the parameters.
    if (metrics.size > 0) return new Params(metrics, undefined);
    const v = await req.body().catch(() => {
      throw bad('the parameters must be metrics, or with the json encoding an object of them');
    });
    if (v === undefined) return new Params(metrics, {});
    if (typeof v !== 'object' || v === null || Array.isArray(v)) throw bad('the parameters must be metrics, or with the json encoding an object of them');
    return new Params(metrics, v as Record<string, unknown>);
  }

  get<T extends MetricType>(name: string, type: T): Value<T> | undefined {
    if (this.json) {
      if (!Object.hasOwn(this.json, name) || this.json[name] === null) return undefined;
      const v = this.json[name];
      const ok = type === 'STRING' ? typeof v === 'string' : type === 'BOOL' ? typeof v === 'boolean' : Number.isInteger(v) && Math.abs(v as number) < 2 ** 31;
      if (!ok) throw bad(`${name} must be ${type === 'STRING' ? 'a string' : type === 'BOOL' ? 'true or false' : 'a 32-bit integer'}`);
      return v as Value<T> | undefined;
    }
    const m = this.metrics.get(name);
    if (m === undefined) return undefined;
    if (m.type !== type) throw bad(`${name} must be a ${type} metric, got ${m.type}`);
    return m.value as Value<T> | undefined;
  }

  /** `<prefix>0`, `<prefix>1`, … up to the first absent one (or, with `stopAtEmpty`, empty one), as Kura reads them. */
  list(prefix: string, stopAtEmpty: boolean): string[] {
    const out: string[] = [];
    for (;;) {
      const v = this.get(`${prefix}${out.length}`, 'STRING');
      if (v === undefined || (stopAtEmpty && v === '')) return out;
      if (out.length === MAX_ELEMENTS_PER_REQUEST) throw bad(`more than ${MAX_ELEMENTS_PER_REQUEST} ${prefix}N metrics`);
      out.push(v);
    }
  }
}

/** Wrong passwords allowed before any wait: a typo or a few cost nothing. */
const FREE_FAILURES = 5;
const FIRST_WAIT_MS = 1000;
const LONGEST_WAIT_MS = 60_000;

/**
 * Guessing the password: after FREE_FAILURES wrong ones, each further one closes CMD-V1 to every
 * password for a while (1 s, doubling up to 60 s), whoever asks: a requester id is the client's
 * to choose, so it cannot be what is counted. Requests refused while closed are not checked and do
 * not count (they cannot push the wait beyond the longest); the right password clears the count.
 */
class PasswordThrottle {
  private failures = 0;
  private until = 0;

  /** Seconds until a password is checked again; 0: now. */
  wait(now: number): number {
    return now < this.until ? Math.ceil((this.until - now) / 1000) : 0;
  }

  failed(now: number): void {
    this.failures++;
    if (this.failures > FREE_FAILURES) this.until = now + Math.min(LONGEST_WAIT_MS, FIRST_WAIT_MS * 2 ** Math.min(16, this.failures - FREE_FAILURES - 1));
  }

  succeeded(): void {
    this.failures = 0;
    this.until = 0;
  }
}

/** Equal passwords, in a time that depends on neither (SHA-256 first: equal lengths for timingSafeEqual). */
function samePassword(given: string, expected: string): boolean {
  const c = nodeCrypto();
  const digest = (s: string) => c.createHash('sha256').update(s, 'utf8').digest();
  return c.timingSafeEqual(digest(given), digest(expected));
}

export function commandFamily(settings: CommandSettings, logger: Logger): Family {
  const log = logger.child({ component: 'command' });
  const runner = new CommandRunner(() => settings().command['command.max.concurrent']);
  const throttle = new PasswordThrottle();

  /** The request's working directory: the configured one, or one given relative to it; inside dataDir, links resolved. */
  function workingDirectory(asked: string | undefined, cfg: CommandConfig): string {
    const dataDir = settings().dataDir;
    const base = workingDirectoryOf(cfg, dataDir);
    if (base === undefined) throw new RequestError(500, 'command.working.directory is outside dataDir');
    if (!asked) {
      try {
        fs.mkdirSync(base, { recursive: true, mode: 0o700 });
      } catch {
        // a file in its place: the checks below say so
      }
    }
    const dir = asked ? path.resolve(base, asked) : base;
    const shown = asked || cfg['command.working.directory'] || 'command';
    let real: string;
    try {
      real = fs.realpathSync(dir);
      if (!fs.statSync(real).isDirectory()) throw bad(`command.working.directory ${shown} is not a directory`);
    } catch (err) {
      if (err instanceof RequestError) throw err;
      throw bad(`command.working.directory ${shown} does not exist`);
    }
    // Links resolved on both sides: a link inside dataDir to /etc is outside.
    if (!inside(fs.realpathSync(dataDir), real)) throw bad(`command.working.directory ${shown} is outside the data directory`);
    return real;
  }

  async function execCommand(req: CoreRequest): Promise<PayloadReply | undefined> {
    const cfg = settings().command;
    const p = await Params.of(req);
    const requester = req.identity?.name ?? '';
    const password = p.get('command.password', 'STRING');
    // Kura accepts anything when its password is empty; here an empty password accepts nothing, so
    // switching the application on is not enough to open the device (docs/mqtt.md "CMD-V1").
    if (cfg['command.password'] === '') {
      log.warn('CMD-V1 request refused: command.password is not set on the device', { requester });
      throw bad('the device has no command.password: remote commands are refused until one is set');
    }
    const wait = throttle.wait(monotonicNow());
    if (wait > 0) {
      log.warn('CMD-V1 request refused: too many wrong passwords', { requester, wait });
      throw bad(`too many wrong passwords: no password is checked for ${wait} s`);
    }
    if (password === undefined || !samePassword(password, cfg['command.password'])) {
      throttle.failed(monotonicNow());
      log.warn('CMD-V1 request refused: wrong or missing password', { requester });
      throw bad(WRONG_PASSWORD);
    }
    throttle.succeeded();
    const program = p.get('command.command', 'STRING');
    if (program === undefined || program.trim() === '') throw bad('command.command is required');
    const args = p.list('command.argument', true);
    const pairs = p.list('command.environment.pair', false);
    // The kernel's execve takes C strings: a NUL would end one early (Node refuses them outright).
    const nul = [['command.command', program], ...args.map((a, i) => [`command.argument${i}`, a]), ...pairs.map((e, i) => [`command.environment.pair${i}`, e])].find(([, v]) => v.includes('\u0000'));
    if (nul) throw bad(`${nul[0]} contains a NUL character`);
    const env: Record<string, string> = { PATH: process.env.PATH || DEFAULT_PATH };
    for (const [i, pair] of pairs.entries()) {
      const eq = pair.indexOf('=');
      if (eq <= 0 || !ENV_NAME.test(pair.slice(0, eq))) throw bad(`command.environment.pair${i} must be NAME=value`);
      env[pair.slice(0, eq)] = pair.slice(eq + 1);
    }
    const cwd = workingDirectory(p.get('command.working.directory', 'STRING'), cfg);
    const zip = req.metrics?.length && req.payload?.length ? req.payload : undefined;
    if (zip) {
      const files = await unpackZip(zip, cwd);
      log.info('command zip unpacked', { requester, directory: path.relative(fs.realpathSync(settings().dataDir), cwd) || '.', files, bytes: zip.length });
    }
    const stdin = p.get('command.stdin', 'STRING');
    const asked = p.get('command.timeout', 'INT32');
    const maxS = cfg['command.timeout'];
    // Kapua's tab sends 60 s; none, zero or less is the configured timeout, more than it is cut to it.
    const timeoutS = asked === undefined || asked <= 0 ? maxS : Math.min(asked, maxS);
    const async = p.get('command.run.async', 'BOOL') === true;

    const fields = {
      requester,
      command: program,
      arguments: JSON.stringify(args).slice(0, LOGGED_ARGUMENTS_MAX),
      directory: path.relative(fs.realpathSync(settings().dataDir), cwd) || '.',
      environment: Object.keys(env).filter((k) => k !== 'PATH').join(','),
      timeout: timeoutS,
      async,
    };
    let run: Promise<RunResult>;
    try {
      run = runner.run({ program, args, cwd, env, stdin, timeoutMs: timeoutS * 1000, outputMaxBytes: cfg['command.output.max.bytes'] });
    } catch (err) {
      if (err instanceof RunnerBusyError) {
        log.warn('CMD-V1 request refused: too many commands running', { requester, command: program });
        throw new RequestError(500, `Busy: ${err.message}`);
      }
      throw err;
    }
    const logged = run.then((r) => {
      log.info('command run', { ...fields, 'exit.code': r.exitCode ?? '', timedout: r.timedOut, signal: r.signal ?? '', 'start.error': r.startError ?? '', ms: r.durationMs, 'stdout.bytes': r.stdoutBytes, 'stderr.bytes': r.stderrBytes });
      return r;
    });
    if (async) return undefined;
    return replyOf(program, await logged);
  }

  return {
    name: CMD_V1,
    appId: CMD_V1,
    // Kura's REST command service role (CommandRestService @RolesAllowed("command")): over MQTT a
    // requester needs rest.command, or kura.admin.
    role: 'command',
    errors: 'native',
    routes: [{ method: 'EXEC', path: 'command', handler: execCommand }],
    // Kura's CommandCloudApp: another resource 404, not exactly one resource 400; the other
    // methods are RequestHandler's defaults, which Kura answers as not supported.
    noMatch(method, resources) {
      if (!(METHODS as readonly string[]).includes(method) || resources.length !== 1) return bad('Expected one resource: command');
      if (method !== 'EXEC') return notSupported(method);
      return new RequestError(404, 'Not found.');
    },
    active: () => settings().command['command.enabled'],
    stop: () => runner.stopAll(),
  };
}

/** Kura's CommandCloudApp.prepareResponse, with the start failure a shell would have reported. */
function replyOf(program: string, r: RunResult): PayloadReply {
  const stderr = r.startError ? `cannot run ${program}: ${r.startError === 'ENOENT' ? 'no such program' : r.startError === 'EACCES' ? 'permission denied' : r.startError}` : r.stderr;
  const metrics = [str('command.stderr', stderr), str('command.stdout', r.stdout)];
  if (r.truncated) metrics.push(bool('command.output.truncated', true));
  if (r.timedOut) return new PayloadReply({ metrics: [...metrics, bool('command.timedout', true)] });
  metrics.push(int32('command.exit.code', r.exitCode!), bool('command.timedout', false));
  if (r.exitCode === 0) return new PayloadReply({ metrics });
  // Kura answers a failed command as an error whose message is its stderr; Kapua shows only that.
  return new PayloadReply({ status: 500, metrics: [str('response.exception.message', stderr || `${program} exited with status ${r.exitCode}`), ...metrics] });
}

/**
 * Bounds of a command's zip file: as many entries as Kura takes (its `commandZipMaxUploadNumber`,
 * 1024), and what it unpacks to at most 64 MiB (the request itself is at most 4 MiB: docs/mqtt.md
 * "Requests too large").
 */
const ZIP_LIMITS: Partial<ZipLimits> = { maxEntries: 1024, maxEntrySize: 64 * 1024 * 1024, maxTotalSize: 64 * 1024 * 1024 };

/**
 * Unpacks `zip` into `cwd` (a real path, links resolved): folders made, files written (replacing
 * what is there, 0600), nothing outside `cwd`: the reader refuses absolute names and `..`
 * (src/deploy/zip.ts), every folder written to is checked to be inside `cwd` once its links are
 * resolved, and a file is never opened through a link (O_NOFOLLOW). 400 naming the fault, with
 * what was unpacked before it left in place (as Kura's does). Returns the number of files.
 */
async function unpackZip(zip: Buffer, cwd: string): Promise<number> {
  const fail = (why: string) => bad(`command zip: ${why}`);
  if (zip.length < 4 || zip.readUInt32LE(0) !== 0x04034b50) throw fail('the body is not a zip file (a command takes a zip file to unpack into its working directory as its body)');
  const tmp = path.join(os.tmpdir(), `gatewayd-cmd-${nodeCrypto().randomBytes(8).toString('hex')}.zip`);
  let archive: ZipArchive | undefined;
  let files = 0;
  try {
    await fsp.writeFile(tmp, zip, { mode: 0o600, flag: 'wx' });
    archive = await ZipArchive.open(tmp, ZIP_LIMITS);
    const wrote = spaceMeter(cwd);
    for (const entry of archive.entries) {
      const target = path.resolve(cwd, entry.name);
      if (target === cwd || !inside(cwd, target)) throw fail(`${JSON.stringify(entry.name)} is outside the working directory`);
      const dir = entry.isDirectory ? target : path.dirname(target);
      await fsp.mkdir(dir, { recursive: true, mode: 0o700 });
      // A folder that is (or passes through) a link out of the working directory is not written into.
      if (!inside(cwd, await fsp.realpath(dir))) throw fail(`${JSON.stringify(entry.name)}: a link leads outside the working directory`);
      if (entry.isDirectory) continue;
      let fh: fsp.FileHandle;
      try {
        fh = await fsp.open(target, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_TRUNC | fs.constants.O_NOFOLLOW, 0o600);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        throw fail(`${JSON.stringify(entry.name)}: ${code === 'ELOOP' ? 'a link is in its place' : code === 'EISDIR' ? 'a folder is in its place' : code ?? (err as Error).message}`);
      }
      try {
        for await (const chunk of archive.chunks(entry)) {
          wrote(chunk.length);
          await fh.write(chunk);
        }
      } finally {
        await fh.close();
      }
      files++;
    }
    return files;
  } catch (err) {
    if (err instanceof ZipError || err instanceof ReserveError) throw fail(err.message);
    throw err;
  } finally {
    await archive?.close();
    await fsp.rm(tmp, { force: true });
  }
}
