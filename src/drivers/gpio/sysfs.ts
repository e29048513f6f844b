// The Linux sysfs GPIO interface (Documentation/admin-guide/gpio/sysfs.rst): `export` a line
// number, then `gpioN/direction` ("in" | "out"), `gpioN/active_low` ("0" | "1") and `gpioN/value`
// ("0" | "1", already inverted by the kernel when active_low is 1). Every operation opens the
// files afresh, so a line that is unexported (its directory vanishes) and exported again is found
// again without a restart. `root` is `/sys/class/gpio` on a device and a plain directory in tests.

import fs from 'node:fs/promises';
import path from 'node:path';

export type Direction = 'in' | 'out';

export interface LineSetup {
  direction: Direction;
  activeLow: boolean;
}

function reason(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  if (e?.code === 'ENOENT') return `${e.path ?? 'file'} does not exist`;
  if (e?.code === 'EACCES' || e?.code === 'EPERM') return `${e.path ?? 'file'}: permission denied`;
  return e?.code ? `${e.path ?? 'file'}: ${e.code}` : (e?.message ?? String(err));
}

// No O_CREAT: writing a sysfs attribute that is gone must fail, not create a plain file.
async function writeAttribute(file: string, text: string): Promise<void> {
  const h = await fs.open(file, 'r+');
  try {
    await h.truncate(0).catch(() => {}); // a no-op on sysfs; a plain file in a test tree needs it
    await h.write(text, 0);
  } finally {
    await h.close();
  }
}

/** An error whose message names the line and what went wrong, never a stack. */
export class GpioError extends Error {}

export class SysfsGpio {
  constructor(readonly root: string) {}

  private file(line: number, name: string): string {
    return path.join(this.root, `gpio${line}`, name);
  }

  private async exists(p: string): Promise<boolean> {
    try {
      await fs.access(p);
      return true;
    } catch {
      return false;
    }
  }

  private async read(line: number, name: string): Promise<string> {
    try {
      return (await fs.readFile(this.file(line, name), 'utf8')).trim();
    } catch (err) {
      throw new GpioError(`line ${line}: ${reason(err)}`);
    }
  }

  private async write(line: number, name: string, text: string): Promise<void> {
    try {
      await writeAttribute(this.file(line, name), text);
    } catch (err) {
      throw new GpioError(`line ${line}: ${reason(err)}`);
    }
  }

  /**
   * Exports the line when its directory is missing, then sets direction and active_low only when
   * they differ (rewriting "out" would glitch an output low on every call).
   */
  async setup(line: number, want: LineSetup): Promise<void> {
    const dir = path.join(this.root, `gpio${line}`);
    if (!(await this.exists(dir))) {
      try {
        await writeAttribute(path.join(this.root, 'export'), String(line));
      } catch (err) {
        // EBUSY: exported meanwhile (by us or someone else); the check below decides.
        if ((err as NodeJS.ErrnoException).code !== 'EBUSY') throw new GpioError(`line ${line}: cannot export: ${reason(err)}`);
      }
      // udev may take a moment to create the directory and fix its permissions.
      for (let i = 0; i < 5 && !(await this.exists(dir)); i++) await new Promise((r) => setTimeout(r, 20));
      if (!(await this.exists(dir))) throw new GpioError(`line ${line}: not exported (${dir} does not exist)`);
    }
    if ((await this.read(line, 'direction')) !== want.direction) await this.write(line, 'direction', want.direction);
    const al = want.activeLow ? '1' : '0';
    // Older kernels and some test trees have no active_low; only insist when it must be set.
    if (want.activeLow || (await this.exists(this.file(line, 'active_low')))) {
      if ((await this.read(line, 'active_low')) !== al) await this.write(line, 'active_low', al);
    }
  }

  async getValue(line: number): Promise<boolean> {
    const v = await this.read(line, 'value');
    if (v === '1') return true;
    if (v === '0') return false;
    throw new GpioError(`line ${line}: unexpected value ${JSON.stringify(v.slice(0, 16))}`);
  }

  async setValue(line: number, on: boolean): Promise<void> {
    await this.write(line, 'value', on ? '1' : '0');
  }
}
