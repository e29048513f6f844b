// Types of launch.mjs, the daemon launcher shared by test/, bench/ and robust/.
import type { ChildProcess } from 'node:child_process';

export const ROOT: string;
export const BUNDLE: string;
export const LAUNCHER: string;
export const READY: RegExp;

export function launcherNodeFlags(file?: string): string[] | undefined;
export function launcherHeapOptions(file?: string): string;
export function launcherEnv(file?: string): Record<string, string>;
export function deviceSettings(file?: string): { flags: string[]; env: Record<string, string> };
/** `argv` run with `nodeOptions` as NODE_OPTIONS and without the test runner's process hook. */
export function withoutRunnerHook(argv: string[], nodeOptions?: string): string[];
export function writeConfigFile(dir: string, config: unknown): string;
export function newestMtime(root: string, paths?: string[]): number;
export function bundleIsStale(root?: string, bundle?: string): boolean;
export function ensureFreshBundle(opts?: { root?: string; build?: string[]; timeoutMs?: number }): boolean;

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface LineWatch {
  /** All lines, or the last `keep` ones. */
  lines: string[];
  exited: Promise<Exit>;
  waitFor(re: RegExp, timeoutMs?: number): Promise<string>;
  onLine(fn: (line: string) => void): void;
}

export function watchLines(proc: ChildProcess, opts?: { keep?: 'all' | number; onLine?: (line: string) => void }): LineWatch;

export interface SpawnOptions {
  configFile: string;
  cwd?: string;
  args?: string[];
  env?: Record<string, string | undefined>;
  /** The launcher's node flags and environment, as on the device. */
  device?: boolean;
  /** Replaces `node [flags] BUNDLE`. */
  command?: string[];
  keep?: 'all' | number;
  onLine?: (line: string) => void;
}

export function spawnGatewayd(opts: SpawnOptions): LineWatch & { proc: ChildProcess; spawnedAt: bigint };
