// `gatewayd passwd [--config FILE] [--clear-change-flag] NAME` (contract §1): field recovery. Sets
// an identity's password from standard input in the identity store of the configured dataDir
// (seeding the store first on a device that never started). A running daemon notices the changed
// file at the next password check; the identity's sessions then end.

import { createLogger } from '../log.js';
import { VERSION } from '../version.js';
import { errorsOf, loadConfigFile } from '../config/config.js';
import { DriverRegistry } from '../drivers/registry.js';
import { builtinDrivers } from '../drivers/builtin.js';
import { openDataDir } from '../store/datadir.js';
import { IdentityError, IdentityStore } from './identity-store.js';
import { passwordFailures, requirementsOf } from './password-policy.js';

/** The first line of standard input (without its line ending). */
async function readPassword(): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write('New password: ');
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of process.stdin) {
    chunks.push(c as Buffer);
    size += (c as Buffer).length;
    if ((c as Buffer).includes(10) || size > 64 * 1024) break;
  }
  const text = Buffer.concat(chunks).toString('utf8');
  const nl = text.indexOf('\n');
  return (nl >= 0 ? text.slice(0, nl) : text).replace(/\r$/, '');
}

export async function runPasswd(file: string, rest: string[], clearChangeFlag: boolean): Promise<number> {
  const fail = (msg: string, code = 1) => {
    process.stderr.write(`gatewayd passwd: ${msg}\n`);
    return code;
  };
  if (rest.length !== 1) return fail('usage: gatewayd passwd [--config FILE] [--clear-change-flag] NAME', 64);
  const name = rest[0];
  const { config, problems } = loadConfigFile(file, new DriverRegistry(builtinDrivers()));
  const errors = errorsOf(problems);
  if (errors.length > 0) return fail(`${file}: ${errors.map((e) => `${e.path || '(file)'}: ${e.message}`).join('; ')}`);
  const password = await readPassword();
  if (password === '') return fail('no password given on standard input');
  // The same strength rules as the session API, so recovery does not leave a weak password behind.
  const failures = passwordFailures(password, requirementsOf(config.console));
  if (failures.length > 0) return fail(`password refused: ${failures.join('; ')}`);
  const log = createLogger('warn', (line) => process.stderr.write(line + '\n'));
  try {
    openDataDir(config.dataDir, VERSION);
    const store = await IdentityStore.open(config.dataDir, config.identities, log);
    await store.setPassword(name, password, clearChangeFlag);
  } catch (err) {
    if (err instanceof IdentityError) return fail(`no identity named ${name} in ${config.dataDir}`);
    return fail((err as Error).message);
  }
  process.stdout.write(`password of ${name} set${clearChangeFlag ? '; password change no longer required' : ''}\n`);
  return 0;
}
