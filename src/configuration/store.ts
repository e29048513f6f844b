// dataDir/config/: the runtime layer (`runtime.json`) and the snapshots (`snapshot_<id>.json`), each
// written atomically (docs/configuration-v2.md): after a power cut the old or the new file is there.

import fs from 'node:fs';
import path from 'node:path';
import { cleanTempFiles, ensurePrivateDir, readJsonFile, writeFileAtomic, writeFileAtomicSync } from '../store/atomic.js';
import { emptyLayer, type Component, type Layer } from './model.js';

const LAYER = 'runtime.json';
/** Why the last start ran the image file's listener settings instead of the runtime layer's. */
const LISTENERS_REFUSED = 'listeners-refused.json';

/** The record of a start whose runtime listener settings could not open (docs/configuration-v2.md "Listener settings"). */
export interface ListenerRefusal {
  /** When that start was, in ms since the epoch. */
  at: number;
  /** Configuration file key paths whose runtime value was set aside (`http.bind.address`). */
  properties: string[];
  /** Why the listeners did not open. */
  error: string;
  /** The refused settings as compared text: the record is about the stored layer only while this matches. */
  settings: string;
}
const SNAP = /^snapshot_(\d{1,16})\.json$/;

export class ConfigStore {
  readonly dir: string;

  constructor(dataDir: string) {
    this.dir = path.join(dataDir, 'config');
  }

  open(): void {
    ensurePrivateDir(this.dir);
    cleanTempFiles(this.dir);
  }

  /** The runtime layer; an empty one when none was written. Throws on an unreadable file. */
  readLayer(): Layer {
    const l = readJsonFile<Layer>(path.join(this.dir, LAYER));
    if (l === undefined) return emptyLayer();
    if (typeof l !== 'object' || l === null || l.formatVersion !== 1 || typeof l.components !== 'object' || !Array.isArray(l.deleted)) {
      throw new Error(`${path.join(this.dir, LAYER)} is not a runtime configuration layer`);
    }
    return l;
  }

  writeLayer(layer: Layer): Promise<void> {
    return writeFileAtomic(path.join(this.dir, LAYER), JSON.stringify(layer) + '\n');
  }

  readListenerRefusal(): ListenerRefusal | undefined {
    try {
      const r = readJsonFile<ListenerRefusal>(path.join(this.dir, LISTENERS_REFUSED));
      return r && typeof r.settings === 'string' && Array.isArray(r.properties) ? r : undefined;
    } catch {
      return undefined; // a torn or foreign file says nothing about the last start
    }
  }

  writeListenerRefusal(r: ListenerRefusal): Promise<void> {
    return writeFileAtomic(path.join(this.dir, LISTENERS_REFUSED), JSON.stringify(r) + '\n');
  }

  /** A start whose listeners opened as configured: the record of an earlier refusal is out of date. */
  clearListenerRefusal(): void {
    fs.rmSync(path.join(this.dir, LISTENERS_REFUSED), { force: true });
  }

  /** `gatewayd config reset`: the image's configuration again; snapshots are kept. */
  resetSync(): boolean {
    if (!fs.existsSync(path.join(this.dir, LAYER))) return false;
    writeFileAtomicSync(path.join(this.dir, LAYER), JSON.stringify(emptyLayer()) + '\n');
    return true;
  }

  snapshotIds(): number[] {
    let names: string[] = [];
    try {
      names = fs.readdirSync(this.dir);
    } catch {
      return [];
    }
    return names.map((n) => SNAP.exec(n)?.[1]).filter((x): x is string => x !== undefined).map(Number).sort((a, b) => a - b);
  }

  readSnapshot(id: number): Component[] | undefined {
    const s = readJsonFile<{ components: Component[] }>(path.join(this.dir, `snapshot_${id}.json`));
    return s?.components;
  }

  /** Saves a snapshot (id: ms since the epoch, above every existing id) and drops the oldest beyond `max`. */
  async writeSnapshot(components: Iterable<Component>, max: number): Promise<number> {
    const ids = this.snapshotIds();
    const id = Math.max(Date.now(), (ids[ids.length - 1] ?? 0) + 1);
    // The text of JSON.stringify({ id, components }), written a component at a time.
    const parts = function* (): Generator<string> {
      let sep = '';
      yield `{"id":${id},"components":[`;
      for (const c of components) {
        yield sep + JSON.stringify(c);
        sep = ',';
      }
      yield ']}\n';
    };
    await writeFileAtomic(path.join(this.dir, `snapshot_${id}.json`), parts());
    const all = [...ids, id];
    for (const old of all.slice(0, Math.max(0, all.length - max))) fs.rmSync(path.join(this.dir, `snapshot_${old}.json`), { force: true });
    return id;
  }
}
