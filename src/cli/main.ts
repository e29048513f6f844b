// The command line (docs/installation.md "The program"): run (default), check-config, passwd,
// --version.

import path from 'node:path';
import { createLogger, type Logger } from '../log.js';
import { VERSION } from '../version.js';
import { DEFAULT_CONFIG_FILE, errorsOf } from '../configuration/config.js';
import { loadEffective } from '../configuration/service.js';
import { runtimeListenerProblems } from '../configuration/listeners.js';
import { heapBound, heapWarning } from '../configuration/heap.js';
import { DriverRegistry } from '../drivers/registry.js';
import { builtinDrivers } from '../drivers/builtin.js';
import { Daemon } from '../daemon.js';
import { DataDirError } from '../store/datadir.js';
import { runPasswd } from './passwd.js';
import { KeystoreStore } from '../keystores/store.js';
import { keystoreReferenceProblems } from '../keystores/tls-source.js';

interface Args {
  command: 'run' | 'check-config' | 'passwd' | 'config' | 'version' | 'help';
  config?: string;
  rest: string[];
  flags: Set<string>;
}

const USAGE = `usage: gatewayd [--config FILE]              start the daemon
       gatewayd check-config [--config FILE] validate a configuration
       gatewayd passwd [--config FILE] [--clear-change-flag] NAME   set a password from standard input
       gatewayd config reset [--config FILE]  drop the runtime configuration (daemon stopped)
       gatewayd --version
The configuration file is --config, else $GATEWAYD_CONFIG, else ${DEFAULT_CONFIG_FILE}.`;

export function parseArgs(argv: string[]): Args | string {
  const args: Args = { command: 'run', rest: [], flags: new Set() };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--config' || a === '-c') {
      if (i + 1 >= argv.length) return '--config needs a file name';
      args.config = argv[++i];
    } else if (a.startsWith('--config=')) args.config = a.slice(9);
    else if (a === '--version' || a === '-v') args.command = 'version';
    else if (a === '--help' || a === '-h') args.command = 'help';
    else if (a === '--clear-change-flag') args.flags.add(a);
    else if (a.startsWith('-')) return `unknown option ${a}`;
    else if (args.command === 'run' && args.rest.length === 0 && (a === 'check-config' || a === 'passwd' || a === 'config' || a === 'run')) args.command = a as Args['command'];
    else args.rest.push(a);
  }
  return args;
}

function configFile(args: Args): string {
  return args.config ?? process.env.GATEWAYD_CONFIG ?? DEFAULT_CONFIG_FILE;
}

function checkConfig(file: string): number {
  // The file and the runtime layer in dataDir/config together (docs/configuration-v2.md).
  const loaded = loadEffective(file, new DriverRegistry(builtinDrivers()));
  const problems = [...loaded.problems, ...loaded.layerProblems];
  // The runtime layer's listener settings: whether they can open, and whether the last start could
  // (docs/configuration-v2.md "Listener settings").
  if (loaded.store && errorsOf(problems).length === 0) problems.push(...runtimeListenerProblems(loaded.image, file, loaded.config, loaded.store));
  // Keys naming a keystore entry: whether dataDir's keystores have it (read only, beside a running daemon).
  if (loaded.config && errorsOf(problems).length === 0) problems.push(...keystoreReferenceProblems(new KeystoreStore(path.join(loaded.config.dataDir, 'keystores'), createLogger('warn', (line) => process.stderr.write(`${line}\n`)), undefined, false), loaded.config));
  for (const p of problems) {
    const where = p.path ? `${p.path}: ` : '';
    process.stdout.write(`${p.severity === 'warning' ? 'warning' : 'error'}: ${where}${p.message}\n`);
  }
  const errors = errorsOf(problems).length;
  if (errors > 0) {
    process.stdout.write(`${file}: ${errors} error(s)\n`);
    return 1;
  }
  process.stdout.write(`${file}: ok\n`);
  return 0;
}

function configCommand(file: string, rest: string[]): number {
  if (rest.length !== 1 || rest[0] !== 'reset') {
    process.stderr.write(`gatewayd: config needs a subcommand: reset\n${USAGE}\n`);
    return 64;
  }
  const loaded = loadEffective(file, new DriverRegistry(builtinDrivers()));
  if (!loaded.store) {
    for (const p of errorsOf(loaded.problems)) process.stderr.write(`error: ${p.path ? `${p.path}: ` : ''}${p.message}\n`);
    return 1;
  }
  const dropped = loaded.store.resetSync();
  process.stdout.write(dropped ? `runtime configuration in ${loaded.store.dir} dropped; snapshots kept\n` : `no runtime configuration in ${loaded.store.dir}\n`);
  return 0;
}

async function run(file: string, log: Logger): Promise<number> {
  const registry = new DriverRegistry(builtinDrivers());
  const loaded = loadEffective(file, registry);
  const { config, problems, layerProblems } = loaded;
  // A runtime layer that no longer fits the image (e.g. after an update) is not applied: the
  // device starts with the image's configuration and says why.
  for (const p of layerProblems) log.error('runtime configuration not applied', { key: p.path || '(layer)', problem: p.message });
  for (const p of problems) {
    if (p.severity === 'warning') log.warn('configuration warning', { key: p.path, problem: p.message });
  }
  const errors = errorsOf(problems);
  if (errors.length > 0 || !config) {
    for (const p of errors) log.error('configuration error', { key: p.path || '(file)', problem: p.message });
    log.error('not starting: invalid configuration', { file, errors: errors.length });
    return 2;
  }
  log.setLevel(config.logLevel);
  const channels = config.assets.reduce((n, a) => n + a.channels.length, 0);
  // node:v8 is loaded only for a configuration large enough to matter (start-up time).
  const tight = channels >= 10_000 ? heapWarning(channels, heapBound()) : undefined;
  if (tight) log.warn('configuration: many channels for the heap bound', tight);
  const daemon = new Daemon({ config, loaded, log, registry });

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info('signal received', { signal });
    // Stop within 5 s whatever happens (docs/installation.md "The program", signals).
    const force = setTimeout(() => {
      log.error('graceful stop took too long; exiting');
      process.exit(1);
    }, 4500);
    force.unref();
    daemon.stop(3000).then(
      () => process.exit(0),
      (err) => {
        log.error('stop failed', { error: (err as Error).message });
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGHUP', () => {
    log.info('signal received', { signal: 'SIGHUP' });
    daemon.reload().catch((err) => log.error('reload failed', { error: (err as Error).message }));
  });
  // Bad input must never take the process down; a bug shows up as one log line, not an outage.
  process.on('uncaughtException', (err) => log.error('uncaught exception', { error: err?.message ?? String(err) }));
  process.on('unhandledRejection', (err) => log.error('unhandled rejection', { error: (err as Error)?.message ?? String(err) }));

  try {
    await daemon.start();
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (err instanceof DataDirError) log.error('not starting', { error: e.message });
    else if (e.code === 'EADDRINUSE' || e.code === 'EACCES') log.error('not starting: cannot listen', { error: e.message });
    else log.error('not starting', { error: e.message });
    await daemon.stop(0).catch(() => {});
    return 1;
  }
  return -1; // keep running
}

export async function main(argv: string[]): Promise<number> {
  const args = parseArgs(argv);
  if (typeof args === 'string') {
    process.stderr.write(`gatewayd: ${args}\n${USAGE}\n`);
    return 64;
  }
  switch (args.command) {
    case 'version':
      process.stdout.write(`gatewayd ${VERSION}\n`);
      return 0;
    case 'help':
      process.stdout.write(USAGE + '\n');
      return 0;
    case 'check-config':
      return checkConfig(configFile(args));
    case 'config':
      return configCommand(configFile(args), args.rest);
    case 'passwd':
      return runPasswd(configFile(args), args.rest, args.flags.has('--clear-change-flag'));
    default: {
      if (args.rest.length > 0) {
        process.stderr.write(`gatewayd: unexpected argument ${args.rest[0]}\n${USAGE}\n`);
        return 64;
      }
      return run(configFile(args), createLogger('info'));
    }
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`gatewayd: ${(err as Error).message}\n`);
    process.exitCode = 1;
  },
);
