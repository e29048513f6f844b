// Types of memory-cgroup.mjs (a plain JavaScript module, shared with robust/).

export interface MemoryCgroup {
  readonly dir: string;
  readonly version: 1 | 2;
  /** The command prefix that runs `argv` inside the cgroup: `[...wrap, ...argv]`. */
  readonly wrap: string[];
  /** Anonymous memory charged to the cgroup now, bytes. */
  rss(): number;
  /** Processes the kernel's OOM killer ended in this cgroup. */
  oomKills(): number;
  /** Removes the cgroup (no process may be left in it). */
  remove(): void;
}

export function makeMemoryCgroup(name: string, limitBytes: number): MemoryCgroup | undefined;
export function unitMemoryMax(root: string): number;
export function processRss(pid: number): { now: number; peak: number };
