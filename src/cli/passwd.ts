// `gatewayd passwd [--config FILE] [--clear-change-flag] NAME`: field recovery (docs/installation.md
// "Field recovery"). Sets an identity's password from standard input in the identity store of the
// configured dataDir (seeding the store first on a device that never started). A running daemon
// notices the changed file at the next password check; the identity's sessions then end. Run as
// root, it writes as the dataDir's owner (the daemon's user), so the daemon can still read what it
// wrote. On a terminal the password is read twice without echo.

import { createLogger } from '../log.js';
import { VERSION } from '../version.js';
import { errorsOf, loadConfigFile } from '../configuration/config.js';
import { DriverRegistry } from '../drivers/registry.js';
import { builtinDrivers } from '../drivers/builtin.js';
import { StringDecoder } from 'node:string_decoder';
import { actAsDataDirOwner, openDataDir } from '../store/datadir.js';
import { IdentityError, IdentityStore } from '../auth/identity-store.js';
import { passwordFailures, requirementsOf } from '../auth/password-policy.js';

/** The first line of standard input (without its line ending). */
async function readLine(): Promise<string> {
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

/** One line typed on the terminal, not echoed (raw mode); undefined on Ctrl-C or Ctrl-D. */
function readHidden(prompt: string): Promise<string | undefined> {
  const stdin = process.stdin;
  process.stderr.write(prompt);
  stdin.setRawMode(true);
  stdin.resume();
  const dec = new StringDecoder('utf8');
  let text = '';
  return new Promise((resolve) => {
    const done = (v: string | undefined) => {
      stdin.off('data', on);
      stdin.setRawMode(false);
      stdin.pause();
      process.stderr.write('\n');
      resolve(v);
    };
    const on = (b: Buffer) => {
      for (const ch of dec.write(b)) {
        if (ch === '\r' || ch === '\n') return done(text);
        if (ch === '\x03' || (ch === '\x04' && text === '')) return done(undefined);
        if (ch === '\x7f' || ch === '\b') text = [...text].slice(0, -1).join('');
        else if (ch === '\x15') text = '';
        else if (ch >= ' ' && text.length < 4096) text += ch;
      }
    };
    stdin.on('data', on);
  });
}

/** The new password: twice without echo on a terminal, else the first line of standard input. */
async function readPassword(): Promise<string | Error> {
  if (!process.stdin.isTTY) return readLine();
  const first = await readHidden('New password: ');
  if (first === undefined) return new Error('cancelled; nothing changed');
  if (first === '') return first;
  const again = await readHidden('Retype new password: ');
  if (again === undefined) return new Error('cancelled; nothing changed');
  return again === first ? first : new Error('the two passwords differ; nothing changed');
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
  if (errors.length > 0 || !config) return fail(`${file}: ${errors.map((e) => `${e.path || '(file)'}: ${e.message}`).join('; ')}`);
  const password = await readPassword();
  if (password instanceof Error) return fail(password.message);
  if (password === '') return fail('no password given on standard input');
  // The same strength rules as the session API, so recovery does not leave a weak password behind.
  const failures = passwordFailures(password, requirementsOf(config.console));
  if (failures.length > 0) return fail(`password refused: ${failures.join('; ')}`);
  const log = createLogger('warn', (line) => process.stderr.write(line + '\n'));
  try {
    const owner = actAsDataDirOwner(config.dataDir, process.env.GATEWAYD_USER || 'gatewayd');
    if (owner?.repaired) process.stderr.write(`gatewayd passwd: gave ${owner.repaired} root-owned file(s) in ${config.dataDir} back to uid ${owner.uid}\n`);
    openDataDir(config.dataDir, VERSION);
    const store = await IdentityStore.open(config.dataDir, config.identities, log);
    await store.setPassword(name, password, clearChangeFlag);
  } catch (err) {
    if (err instanceof IdentityError) return fail(`no identity named ${name} in ${config.dataDir}`);
    const hint = /EACCES|EPERM/.test(`${(err as NodeJS.ErrnoException).code} ${(err as Error).message}`) ? `; run it as root or as the owner of ${config.dataDir} (runuser -u ${process.env.GATEWAYD_USER || 'gatewayd'} -- gatewayd passwd --config ${file} ${name})` : '';
    return fail((err as Error).message + hint);
  }
  process.stdout.write(`password of ${name} set${clearChangeFlag ? '; password change no longer required' : ''}\n`);
  return 0;
}
