// Owns everything a benchmark section starts (processes, temp dirs, brokers) and stops it in
// reverse order. It also stands in for tap's `t` where the test helpers (pymodbus, daemon) want one.

/** Scopes not closed yet, so that an interrupted run (Ctrl-C) still stops what it started. */
const open = new Set<Scope>();

export async function closeAllScopes(): Promise<void> {
  for (const s of [...open].reverse()) await s.close();
}

export class Scope {
  private fns: (() => unknown)[] = [];

  constructor() {
    open.add(this);
  }

  teardown(fn: () => unknown): void {
    this.fns.push(fn);
  }

  // The pymodbus helper reports a missing peer through these; in a benchmark that is an error.
  fail(msg: string): void {
    throw new Error(msg);
  }

  plan(_n: number, comment?: string): void {
    throw new Error(comment ?? 'peer missing');
  }

  async close(): Promise<void> {
    open.delete(this);
    while (this.fns.length > 0) {
      const fn = this.fns.pop()!;
      try {
        await fn();
      } catch (err) {
        process.stderr.write(`bench: cleanup failed: ${(err as Error).message}\n`);
      }
    }
  }
}

/** Runs `fn` with a fresh scope and always cleans up, also on failure. */
export async function withScope<T>(fn: (s: Scope) => Promise<T>): Promise<T> {
  const s = new Scope();
  try {
    return await fn(s);
  } finally {
    await s.close();
  }
}
