// Runs the programs of remote commands (docs/mqtt.md "CMD-V1"): without a shell (the program and
// its arguments as given, so `;`, `|`, `$(…)` and `*` are only characters), in a process group of
// its own so that a timeout ends every process the command started, with its output kept up to a
// bound and the rest read and dropped (a full pipe would stall the program), and with a bound on how
// many run at once. Kura runs the same request through a shell (its Command.setExecuteInAShell);
// COMPATIBILITY.md "CMD-V1" says why gatewayd does not.

import type { ChildProcess, spawn as Spawn } from 'node:child_process';
import { lazyBuiltin } from '../core/builtin.js';
import { monotonicNow } from '../core/clock.js';

const childProcess = lazyBuiltin<{ spawn: typeof Spawn }>('node:child_process');

/** After a timeout's SIGTERM, the group's processes get this long before SIGKILL. */
const KILL_GRACE_MS = 2000;

/** The shell's convention for a program it could not run (POSIX, "Command Search and Execution"). */
const NOT_FOUND_EXIT = 127;
const NOT_EXECUTABLE_EXIT = 126;

export interface RunSpec {
  program: string;
  args: readonly string[];
  cwd: string;
  env: Record<string, string>;
  /** Written to the program's standard input, which is then closed; undefined: an empty input. */
  stdin: string | undefined;
  timeoutMs: number;
  /** Bytes kept of stdout, and of stderr. */
  outputMaxBytes: number;
}

export interface RunResult {
  /** The exit status; a signal's death as 128 + its number (the shell's convention); undefined after a timeout. */
  exitCode: number | undefined;
  /** The signal that ended the program, if one did. */
  signal: NodeJS.Signals | undefined;
  timedOut: boolean;
  stdout: string;
  stderr: string;
  /** Bytes each stream produced in all (more than kept when `truncated`). */
  stdoutBytes: number;
  stderrBytes: number;
  truncated: boolean;
  /** Why the program could not be started (ENOENT, EACCES, …); exitCode is then 127 or 126. */
  startError: string | undefined;
  durationMs: number;
}

/** More commands asked to run than `command.max.concurrent` allows. */
export class RunnerBusyError extends Error {}

/** Collects the first `max` bytes of a stream and counts the rest. */
class BoundedOutput {
  private chunks: Buffer[] = [];
  private kept = 0;
  total = 0;

  constructor(private readonly max: number) {}

  add(chunk: Buffer): void {
    this.total += chunk.length;
    if (this.kept >= this.max) return;
    const part = chunk.length <= this.max - this.kept ? chunk : chunk.subarray(0, this.max - this.kept);
    this.chunks.push(part);
    this.kept += part.length;
  }

  get truncated(): boolean {
    return this.total > this.kept;
  }

  /**
   * The text kept, at most `max` bytes of UTF-8 once encoded again: bytes that are no UTF-8 become
   * U+FFFD (as Java's `new String(bytes, UTF_8)` in Kura) and take three bytes each, so the text
   * is cut again where it would exceed the bound.
   */
  text(): string {
    let s = Buffer.concat(this.chunks).toString('utf8');
    // A sequence cut by the bound is not the program's: drop its replacement character.
    if (this.truncated && s.endsWith('\uFFFD')) s = s.slice(0, -1);
    while (Buffer.byteLength(s) > this.max) s = s.slice(0, Math.max(0, Math.floor((s.length * this.max) / Buffer.byteLength(s)) - 1));
    return s;
  }
}

const killGroup = (child: ChildProcess, signal: NodeJS.Signals) => {
  try {
    // The negative pid is the process group the child leads (spawn's `detached`).
    if (child.pid !== undefined) process.kill(-child.pid, signal);
  } catch {
    // ESRCH: the group is gone already
  }
};

export class CommandRunner {
  private readonly running = new Set<ChildProcess>();

  /** `maxConcurrent` is read at each run: a configuration change applies to the next one. */
  constructor(private readonly maxConcurrent: () => number) {}

  get size(): number {
    return this.running.size;
  }

  /**
   * Starts `spec` and resolves when it ended and its output streams closed. Throws RunnerBusyError
   * (synchronously, before anything starts) when `command.max.concurrent` commands are running.
   */
  run(spec: RunSpec): Promise<RunResult> {
    const max = this.maxConcurrent();
    if (this.running.size >= max) throw new RunnerBusyError(`${this.running.size} commands are running, the most command.max.concurrent allows`);
    const started = monotonicNow();
    const stdout = new BoundedOutput(spec.outputMaxBytes);
    const stderr = new BoundedOutput(spec.outputMaxBytes);
    const child = childProcess().spawn(spec.program, [...spec.args], {
      cwd: spec.cwd,
      env: spec.env,
      shell: false,
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
      windowsHide: true,
    });
    this.running.add(child);
    return new Promise((resolve) => {
      let timedOut = false;
      let startError: string | undefined;
      let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
      let killTimer: NodeJS.Timeout | undefined;
      let closeTimer: NodeJS.Timeout | undefined;
      // A process that left the group (setsid) may hold the output pipes open after the program
      // ended and its group was killed: the run ends anyway, its output as far as it came.
      const closeSoon = () => {
        closeTimer ??= setTimeout(() => {
          child.stdout!.destroy();
          child.stderr!.destroy();
        }, KILL_GRACE_MS);
      };
      const timer = setTimeout(() => {
        timedOut = true;
        killGroup(child, 'SIGTERM');
        killTimer = setTimeout(() => {
          killGroup(child, 'SIGKILL');
          closeSoon();
        }, KILL_GRACE_MS);
      }, spec.timeoutMs);
      child.stdout!.on('data', (c: Buffer) => stdout.add(c));
      child.stderr!.on('data', (c: Buffer) => stderr.add(c));
      // A program that exits without reading its input closes the pipe: not the request's error.
      child.stdin!.on('error', () => {});
      child.stdin!.end(spec.stdin ?? '');
      child.on('error', (err: NodeJS.ErrnoException) => {
        startError ??= err.code ?? err.message;
      });
      child.on('exit', (code, signal) => {
        exit = { code, signal };
        // The program has ended: the timeout no longer applies to it, and what it left running in
        // its group ends with it: nothing outlives its run.
        if (!timedOut) clearTimeout(timer);
        killGroup(child, 'SIGKILL');
        closeSoon();
      });
      child.on('close', (code: number | null, signal: NodeJS.Signals | null) => {
        clearTimeout(timer);
        clearTimeout(killTimer);
        clearTimeout(closeTimer);
        this.running.delete(child);
        const e = exit ?? { code, signal };
        const exitCode = startError !== undefined ? (startError === 'EACCES' ? NOT_EXECUTABLE_EXIT : NOT_FOUND_EXIT) : timedOut ? undefined : e.code ?? 128 + signalNumber(e.signal);
        resolve({
          exitCode,
          signal: e.signal ?? undefined,
          timedOut,
          stdout: stdout.text(),
          stderr: stderr.text(),
          stdoutBytes: stdout.total,
          stderrBytes: stderr.total,
          truncated: stdout.truncated || stderr.truncated,
          startError,
          durationMs: Math.round(monotonicNow() - started),
        });
      });
    });
  }

  /** Ends every running command's process group (the daemon stops, or CMD-V1 was switched off). */
  stopAll(): void {
    for (const child of this.running) killGroup(child, 'SIGKILL');
  }
}

function signalNumber(signal: NodeJS.Signals | null): number {
  if (!signal) return 0;
  // os.constants.signals would need node:os at start-up; the common ones cover the report.
  return ({ SIGHUP: 1, SIGINT: 2, SIGQUIT: 3, SIGABRT: 6, SIGKILL: 9, SIGSEGV: 11, SIGPIPE: 13, SIGALRM: 14, SIGTERM: 15 } as Record<string, number>)[signal] ?? 0;
}
