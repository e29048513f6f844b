// Driver factories by name: the built-in ones plus those registered by deployment packages.

import type { DriverFactory } from './driver.js';

export class DriverRegistry {
  private factories = new Map<string, DriverFactory>();
  private listeners = new Set<(name: string, added: boolean) => void>();

  constructor(builtins: DriverFactory[] = []) {
    for (const f of builtins) this.factories.set(f.name, f);
  }

  get(name: string): DriverFactory | undefined {
    return this.factories.get(name);
  }

  names(): string[] {
    return [...this.factories.keys()];
  }

  /** Adds a factory (from a package). Refuses to shadow an existing name. */
  register(factory: DriverFactory): void {
    if (this.factories.has(factory.name)) throw new Error(`driver factory "${factory.name}" is already registered`);
    this.factories.set(factory.name, factory);
    for (const l of this.listeners) l(factory.name, true);
  }

  unregister(name: string): void {
    if (this.factories.delete(name)) for (const l of this.listeners) l(name, false);
  }

  /** Told when a factory appears or disappears, so assets can attach or detach their drivers. */
  onChange(listener: (name: string, added: boolean) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
