// Lines shared between driver instances: two Modbus instances naming the same serial port (or the
// same RTU-over-TCP converter) must use one open line and one transaction queue, so that only one
// transaction is on the wire at a time. The registry belongs to whoever creates drivers (the
// daemon's DriverPool) and is handed to each factory in DriverContext: no module-level state, so
// two daemons (or two tests) in one process never share a line by accident.

export interface LineLease<T> {
  line: T;
  /** True when another instance had opened the line (its settings apply). */
  shared: boolean;
  /** Gives the line back; the last lease closes it. Idempotent. */
  release(): Promise<void>;
}

export class SharedLines {
  private readonly lines = new Map<string, { line: unknown; users: number; close(): Promise<void> }>();

  /** The line under `key`, opened with `open` when nobody holds it; `close` runs when the last lease is released. */
  acquire<T>(key: string, open: () => T, close: (line: T) => Promise<void>): LineLease<T> {
    let entry = this.lines.get(key);
    const shared = !!entry;
    if (!entry) {
      const line = open();
      entry = { line, users: 0, close: () => close(line) };
      this.lines.set(key, entry);
    }
    entry.users++;
    const held = entry;
    let released = false;
    return {
      line: held.line as T,
      shared,
      release: async () => {
        if (released) return;
        released = true;
        if (--held.users > 0) return;
        if (this.lines.get(key) === held) this.lines.delete(key);
        await held.close();
      },
    };
  }

  /** Keys of the lines open now (diagnostics, tests). */
  keys(): string[] {
    return [...this.lines.keys()];
  }
}
