// The GPIO driver: channels read and written through a line back-end (sysfs.ts, or chardev.ts for
// `gpio.backend` chardev), with Kura's conversions between a level and every value type and Kura's
// failure messages.

import type { ChannelConfig, TypedValue, ValueType } from '../../channels/types.js';
import { closedResults, type ChannelResult, type Driver, type WriteRequest } from '../driver.js';
import { channelSpecs, SpecError, type ChannelSpec } from '../props.js';
import { parseChannel, type GpioChannelSpec, type GpioInstanceConfig } from './config.js';
import { ChardevGpio } from './chardev.js';
import { GpioError, SysfsGpio } from './sysfs.js';

// Kura's messages; we add what failed after a colon.
const READ_FAILED = 'GPIO read operation failed';
const WRITE_FAILED = 'GPIO write operation failed';

/** The pin level as the channel's type (Kura: numbers 1/0, "true"/"false", [1]/[0]). */
export function levelToValue(on: boolean, type: ValueType): TypedValue {
  switch (type) {
    case 'BOOLEAN': return { type, value: on };
    case 'INTEGER': return { type, value: on ? 1 : 0 };
    case 'LONG': return { type, value: on ? 1n : 0n };
    case 'FLOAT':
    case 'DOUBLE': return { type, value: on ? 1 : 0 };
    case 'STRING': return { type, value: on ? 'true' : 'false' };
    case 'BYTE_ARRAY': return { type, value: Buffer.from([on ? 1 : 0]) };
  }
}

/**
 * A value as a pin level (Kura: numbers > 0, any non-zero byte), or why it is none. Text must be
 * true/false in any letter case or 1/0, as for every BOOLEAN written (docs/rest-api.md "Writing
 * values"): Kura's "anything but true is low" would switch an output off for "on".
 */
export function valueToLevel(v: TypedValue): boolean | string {
  switch (v.type) {
    case 'BOOLEAN': return v.value;
    case 'LONG': return v.value > 0n;
    case 'STRING': {
      const s = v.value.length <= 5 ? v.value.toLowerCase() : '';
      if (s === 'true' || s === '1') return true;
      if (s === 'false' || s === '0') return false;
      return `${v.value.length > 64 ? `${v.value.slice(0, 64)}…` : v.value} is not a level (true, false, 1 or 0)`;
    }
    case 'BYTE_ARRAY': return v.value.some((b) => b !== 0);
    default: return v.value > 0;
  }
}

export class GpioDriver implements Driver {
  private readonly gpio: SysfsGpio;
  private readonly chardev?: ChardevGpio;
  private readonly spec: (ch: ChannelConfig) => ChannelSpec<GpioChannelSpec>;
  // sysfs lines set up as wanted (direction + active_low); forgotten on any error so that a line
  // whose files vanished is exported and configured again once they return.
  private ready = new Map<number, string>();
  private settingUp = new Map<number, Promise<void>>();
  private closed = false;

  constructor(config: GpioInstanceConfig) {
    this.gpio = new SysfsGpio(config.sysfsRoot);
    if (config.chardev) this.chardev = new ChardevGpio();
    this.spec = channelSpecs((ch, path) => parseChannel(ch.driverProps, path, config));
  }

  /** The channel's line set-up, or the reason it has none. */
  private plan(ch: ChannelConfig): GpioChannelSpec | string {
    const s = this.spec(ch);
    if (s instanceof SpecError) return s.error;
    return s.unset ?? s;
  }

  private async getValue(p: GpioChannelSpec): Promise<boolean> {
    if (this.chardev) return this.chardev.getValue({ chip: p.chip!, offset: p.line }, p);
    await this.prepare(p);
    return this.gpio.getValue(p.line);
  }

  private async setValue(p: GpioChannelSpec, on: boolean): Promise<void> {
    if (this.chardev) return this.chardev.setValue({ chip: p.chip!, offset: p.line }, on, p);
    await this.prepare(p);
    await this.gpio.setValue(p.line, on);
  }

  private async prepare(p: GpioChannelSpec): Promise<void> {
    const key = `${p.direction}/${p.activeLow}`;
    if (this.ready.get(p.line) === key) return;
    // One setup per line at a time: two exports of the same line would make the kernel say EBUSY.
    const pending = this.settingUp.get(p.line);
    if (pending) {
      await pending.catch(() => {});
      if (this.ready.get(p.line) === key) return;
    }
    const run = this.gpio.setup(p.line, p).then(() => {
      this.ready.set(p.line, key);
    });
    this.settingUp.set(p.line, run);
    try {
      await run;
    } finally {
      if (this.settingUp.get(p.line) === run) this.settingUp.delete(p.line);
    }
  }

  private fail(prefix: string, line: number | undefined, err: unknown): ChannelResult {
    if (line !== undefined) this.ready.delete(line);
    const msg = err instanceof GpioError ? err.message : (err as Error)?.message ?? String(err);
    return { ok: false, error: `${prefix}: ${msg}` };
  }

  async read(channels: ChannelConfig[]): Promise<ChannelResult[]> {
    if (this.closed) return closedResults(channels.length);
    // Each line is read once per batch, however many channels name it.
    const levels = new Map<string, Promise<boolean>>();
    return Promise.all(
      channels.map(async (ch): Promise<ChannelResult> => {
        const p = this.plan(ch);
        if (typeof p === 'string') return { ok: false, error: `${READ_FAILED}: ${p}` };
        try {
          const k = `${p.chip}:${p.line}`;
          let level = levels.get(k);
          if (!level) levels.set(k, (level = this.getValue(p)));
          const on = await level;
          return { ok: true, value: levelToValue(on, ch.valueType), timestamp: Date.now() };
        } catch (err) {
          return this.fail(READ_FAILED, p.line, err);
        }
      }),
    );
  }

  async write(requests: WriteRequest[]): Promise<ChannelResult[]> {
    const out: ChannelResult[] = [];
    // In request order: two writes to one line must land in the order they were asked for.
    for (const { channel: ch, value } of requests) {
      if (this.closed) {
        out.push(...closedResults(1));
        continue;
      }
      const p = this.plan(ch);
      if (typeof p === 'string') {
        out.push({ ok: false, error: `${WRITE_FAILED}: ${p}` });
        continue;
      }
      if (p.direction !== 'out') {
        out.push({ ok: false, error: `${WRITE_FAILED}: ${p.chip ? `${p.chip} ` : ''}line ${p.line} is an INPUT` });
        continue;
      }
      const level = valueToLevel(value);
      if (typeof level === 'string') {
        out.push({ ok: false, error: `${WRITE_FAILED}: ${level}` });
        continue;
      }
      try {
        await this.setValue(p, level);
        out.push({ ok: true, value, timestamp: Date.now() });
      } catch (err) {
        out.push(this.fail(WRITE_FAILED, p.line, err));
      }
    }
    return out;
  }

  async close(): Promise<void> {
    // Lines stay exported: unexporting would drop an output to its default level.
    this.closed = true;
    this.ready.clear();
    await this.chardev?.close();
  }
}
