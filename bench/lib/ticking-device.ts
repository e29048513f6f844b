// The nodered section's Modbus TCP device (bench/load/ticking_device.py, Debian's pymodbus): values
// that change every TICK_MS and follow the wall clock, requests counted. It can be killed and
// started again on the same port (a device that disappears).

import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { CHANNELS } from './nodered.js';

export const TICK_MS = 50;
export const PYTHON = '/usr/bin/python3';
const here = path.dirname(fileURLToPath(import.meta.url));
// Bundled, this module runs from bench/out (bench/build.mjs copies the script there); from the
// sources (the tests), the script is in bench/load.
const SCRIPT = [path.join(here, 'ticking_device.py'), path.join(here, '..', 'load', 'ticking_device.py')].find((f) => fs.existsSync(f))!;

/** The ticking device: a Python process that can be killed and started again on the same port. */
export class TickingDevice {
  private proc: ChildProcess | undefined;
  private waiting: ((n: number) => void)[] = [];
  constructor(readonly port: number, readonly epoch: number, readonly channels = CHANNELS) {}

  async start(): Promise<void> {
    const proc = spawn(PYTHON, [SCRIPT, '--port', String(this.port), '--epoch', String(this.epoch), '--channels', String(this.channels), '--tick-ms', String(TICK_MS)], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.proc = proc;
    let stderr = '';
    proc.stderr!.on('data', (d) => (stderr = (stderr + d).slice(-2000)));
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the Modbus device did not start: ${stderr}`)), 15_000);
      proc.once('exit', (code) => reject(new Error(`the Modbus device exited with ${code}: ${stderr}`)));
      readline.createInterface({ input: proc.stdout! }).on('line', (line) => {
        const ev = JSON.parse(line) as { ev: string; requests?: number };
        if (ev.ev === 'ready') {
          clearTimeout(timer);
          resolve();
        } else if (ev.ev === 'count') this.waiting.shift()?.(ev.requests!);
      });
    });
  }

  /** Requests the device has answered since this process started. */
  count(): Promise<number> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the Modbus device did not answer count')), 10_000);
      this.waiting.push((n) => {
        clearTimeout(timer);
        resolve(n);
      });
      this.proc!.stdin!.write('{"cmd":"count"}\n');
    });
  }

  seqAt(ms: number): number {
    return Math.floor((ms - this.epoch) / TICK_MS);
  }

  async stop(): Promise<void> {
    const proc = this.proc;
    this.proc = undefined;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    proc.removeAllListeners('exit');
    await new Promise<void>((resolve) => {
      proc.once('exit', () => resolve());
      proc.kill('SIGKILL');
    });
  }
}
