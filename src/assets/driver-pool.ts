// The driver instances of the `drivers` section (docs/configuration.md "`drivers`: driver instances"), by id: made
// from their factory when it is registered, detached while it is missing (a package's driver
// between its uninstall and its next install), made again when their properties change.

import type { Logger } from '../log.js';
import type { DriverInstanceConfig } from './config.js';
import type { Driver } from '../drivers/driver.js';
import { SharedLines } from '../drivers/lines.js';
import type { DriverRegistry } from '../drivers/registry.js';

interface DriverSlot {
  config: DriverInstanceConfig;
  driver?: Driver;
}

/** Configurations compared as validated: the same keys in the same order. */
export function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** Driver instances by id, created from their factory; detached while the factory is missing. */
export class DriverPool {
  private slots = new Map<string, DriverSlot>();
  private unsubscribe: () => void;
  /** Serial ports and converters shared by this pool's driver instances. */
  private readonly lines = new SharedLines();

  constructor(
    private readonly registry: DriverRegistry,
    private readonly log: Logger,
    private readonly dataDir: string,
  ) {
    this.unsubscribe = registry.onChange((name, added) => {
      for (const slot of this.slots.values()) {
        if (slot.config.factory !== name) continue;
        if (added) this.attach(slot);
        else this.detach(slot);
      }
    });
  }

  configure(drivers: Record<string, DriverInstanceConfig>): void {
    for (const [id, slot] of this.slots) {
      const next = drivers[id];
      if (!next || !sameJson(next, slot.config)) {
        this.detach(slot);
        this.slots.delete(id);
      }
    }
    for (const [id, cfg] of Object.entries(drivers)) {
      if (this.slots.has(id)) continue;
      const slot: DriverSlot = { config: cfg };
      this.slots.set(id, slot);
      this.attach(slot);
    }
  }

  get(id: string): Driver | undefined {
    return this.slots.get(id)?.driver;
  }

  /** Every driver instance: id, factory, whether it is attached, and its configured properties. */
  list(): { id: string; factory: string; driver: Driver | undefined; props: Record<string, unknown> }[] {
    return [...this.slots.values()].map((s) => ({ id: s.config.id, factory: s.config.factory, driver: s.driver, props: s.config.props }));
  }

  /** The factory name of driver instance `id`, attached or not; undefined for no such instance. */
  factoryOf(id: string): string | undefined {
    return this.slots.get(id)?.config.factory;
  }

  private attach(slot: DriverSlot): void {
    const f = this.registry.get(slot.config.factory);
    if (!f || slot.driver) return;
    try {
      slot.driver = f.create(slot.config.props, { id: slot.config.id, log: this.log.child({ driver: slot.config.id }), dataDir: this.dataDir, lines: this.lines });
      this.log.info('driver attached', { driver: slot.config.id, factory: slot.config.factory });
    } catch (err) {
      this.log.error('driver could not be created', { driver: slot.config.id, factory: slot.config.factory, error: (err as Error).message });
    }
  }

  private detach(slot: DriverSlot): void {
    const d = slot.driver;
    slot.driver = undefined;
    if (d) {
      d.close().catch((err) => this.log.warn('driver close failed', { driver: slot.config.id, error: (err as Error).message }));
      this.log.info('driver detached', { driver: slot.config.id });
    }
  }

  async close(): Promise<void> {
    this.unsubscribe();
    const all = [...this.slots.values()];
    this.slots.clear();
    await Promise.all(all.map((s) => s.driver?.close().catch(() => {})));
  }
}
