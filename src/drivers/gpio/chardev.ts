// GPIO through the character device (`/dev/gpiochipN`) with the libgpiod v2 command-line tools,
// which a Yocto or Buildroot image can include (docs/drivers.md "gpio", `gpio.backend` chardev).
//
// An input is read with `gpioget --numeric -c <chip> [-l] <offset>`. An output is driven by a
// `gpioset --banner -c <chip> [-l] <offset>=<0|1>` process that the driver keeps running: with the
// character device a line keeps its value only while it is requested ("the line output state is
// maintained until the process exits", libgpiod's gpioset), so each write replaces the holding
// process, and the banner tells that the request succeeded. An output never written since start
// is read as it is (`gpioget -a`, direction unchanged); one we hold reads back what we set.
// close() ends the holding processes: the kernel then keeps or resets the level, as the chip does.

import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { GpioError, type LineSetup } from './sysfs.js';

export interface ChardevLine {
  chip: string;
  offset: number;
}

function toolError(line: ChardevLine, tool: string, err: { code?: unknown; message: string; stderr?: string }): GpioError {
  if (err.code === 'ENOENT') return new GpioError(`${tool} not found (install the libgpiod v2 tools)`);
  const why = String(err.stderr ?? '').trim().split('\n').pop() || err.message;
  return new GpioError(`${line.chip} line ${line.offset}: ${tool}: ${why}`);
}

interface Holder {
  proc: ChildProcess;
  on: boolean;
  exited: Promise<void>;
}

export class ChardevGpio {
  private readonly holders = new Map<string, Holder>();
  // Writes to one line run one after the other (REST, MQTT and a poll's writes can overlap): two
  // gpioset processes at once would have the kernel refuse the second request as busy.
  private readonly writes = new Map<string, Promise<void>>();
  private closed = false;

  async getValue(line: ChardevLine, setup: LineSetup): Promise<boolean> {
    const held = this.holders.get(key(line));
    if (held && setup.direction === 'out') return held.on;
    const args = ['--numeric', '-c', line.chip, ...(setup.activeLow ? ['-l'] : []), ...(setup.direction === 'out' ? ['-a'] : []), String(line.offset)];
    const out = await new Promise<string>((resolve, reject) =>
      execFile('gpioget', args, { timeout: 5000 }, (err, stdout, stderr) => (err ? reject(toolError(line, 'gpioget', Object.assign(err, { stderr }))) : resolve(stdout))));
    const v = out.trim();
    if (v !== '0' && v !== '1') throw new GpioError(`${line.chip} line ${line.offset}: gpioget answered ${JSON.stringify(v.slice(0, 16))}`);
    return v === '1';
  }

  setValue(line: ChardevLine, on: boolean, setup: LineSetup): Promise<void> {
    const k = key(line);
    const run = (this.writes.get(k) ?? Promise.resolve()).then(() => this.hold(line, k, on, setup));
    const settled = run.then(() => {}, () => {});
    this.writes.set(k, settled);
    settled.then(() => this.writes.get(k) === settled && this.writes.delete(k));
    return run;
  }

  private async hold(line: ChardevLine, k: string, on: boolean, setup: LineSetup): Promise<void> {
    if (this.closed) throw new GpioError('driver closed');
    const old = this.holders.get(k);
    if (old) {
      this.holders.delete(k);
      old.proc.kill('SIGTERM');
      await old.exited;
    }
    const args = ['--banner', '-C', 'gatewayd', '-c', line.chip, ...(setup.activeLow ? ['-l'] : []), `${line.offset}=${on ? 1 : 0}`];
    const proc = spawn('gpioset', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise<void>((r) => proc.once('exit', () => r()));
    let stderr = '';
    proc.stderr!.on('data', (c: Buffer) => (stderr = (stderr + c.toString()).slice(-500)));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        proc.kill('SIGKILL');
        reject(new GpioError(`${line.chip} line ${line.offset}: gpioset did not confirm within 5000 ms`));
      }, 5000);
      // The banner is printed once the line is requested with its value.
      proc.stdout!.once('data', () => {
        clearTimeout(timer);
        resolve();
      });
      proc.once('error', (err) => {
        clearTimeout(timer);
        reject(toolError(line, 'gpioset', err));
      });
      proc.once('exit', (code) => {
        clearTimeout(timer);
        reject(toolError(line, 'gpioset', Object.assign(new Error(`exited with ${code}`), { stderr })));
      });
    });
    if (this.closed) {
      // close() came while this process started: it must not hold the line past close.
      proc.kill('SIGTERM');
      await exited;
      throw new GpioError('driver closed');
    }
    const holder: Holder = { proc, on, exited };
    this.holders.set(k, holder);
    // A holder that dies (killed from outside) no longer holds the line: read it as it is again.
    proc.once('exit', () => this.holders.get(k) === holder && this.holders.delete(k));
  }

  async close(): Promise<void> {
    this.closed = true;
    // Writes under way end first (one that already started its process ends it itself).
    await Promise.all(this.writes.values());
    const all = [...this.holders.values()];
    this.holders.clear();
    for (const h of all) h.proc.kill('SIGTERM');
    await Promise.all(all.map((h) => h.exited));
  }
}

const key = (line: ChardevLine) => `${line.chip}:${line.offset}`;
