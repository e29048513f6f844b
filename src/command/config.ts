// The `command` section of the configuration (docs/configuration.md "command"): Kura's remote
// command, CMD-V1 (docs/mqtt.md "CMD-V1"). Off unless `command.enabled`; the keys are Kura's
// CommandCloudApp properties under the names gatewayd gives them, plus the bounds Kura lacks: how
// long a run may take at most, how much output is kept, how many run at once.

import path from 'node:path';
import { bool, duration, num, problem, section, str, type Problem, type Validator } from '../core/schema.js';

export interface CommandConfig {
  /** CMD-V1 is registered (and in BIRTH) only while true. */
  'command.enabled': boolean;
  /** What a request's `command.password` must equal; empty: every request is refused. */
  'command.password': string;
  /** Where commands run: relative to dataDir, and inside it; empty: `<dataDir>/command`. */
  'command.working.directory': string;
  /** Seconds: a request's timeout when it names none, and the most it may ask for. */
  'command.timeout': number;
  /** Bytes of stdout, and of stderr, kept for the reply; the rest is read and dropped. */
  'command.output.max.bytes': number;
  /** Commands running at once (asynchronous ones included); more are refused. */
  'command.max.concurrent': number;
}

/** A PASSWORD property (docs/configuration-v2.md "Secrets"): shown as `placeholder`, never logged. */
const secret: Validator<string> = Object.assign(str(), { ad: { type: 'PASSWORD' } });

/**
 * Two streams at the largest bound, with each character's UTF-8 at most the bound, stay well under
 * the 1 MiB an MQTT reply may carry (docs/mqtt.md "Response codes").
 */
export const OUTPUT_MAX_BYTES = 262_144;

export const commandSection = section<CommandConfig>({
  'command.enabled': [bool, false],
  'command.password': [secret, ''],
  'command.working.directory': [str(), ''],
  // Kura's command.timeout counts seconds (its default is 60, as Kapua's command tab sends).
  'command.timeout': [duration('s', 1, 3600), 60],
  'command.output.max.bytes': [num({ int: true, min: 1024, max: OUTPUT_MAX_BYTES }), 65_536],
  'command.max.concurrent': [num({ int: true, min: 1, max: 16 }), 2],
});

/** The folder the configured `command.working.directory` names, or undefined when it leaves `dataDir`. */
export function workingDirectoryOf(c: CommandConfig, dataDir: string): string | undefined {
  const dir = path.resolve(dataDir, c['command.working.directory'] || 'command');
  return inside(dataDir, dir) ? dir : undefined;
}

/** Whether `file` is `dir` or below it (both absolute; symbolic links are the caller's to resolve). */
export function inside(dir: string, file: string): boolean {
  const rel = path.relative(dir, file);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}

export function validateCommandSection(raw: unknown, dataDir: string, keyPath = 'command'): { value: CommandConfig; problems: Problem[] } {
  const problems: Problem[] = [];
  const value = commandSection(raw, keyPath, problems);
  if (workingDirectoryOf(value, dataDir) === undefined) {
    problem(problems, `${keyPath}.command.working.directory`, `must be inside dataDir (${dataDir}), got ${JSON.stringify(value['command.working.directory'])}`);
  }
  return { value, problems };
}
