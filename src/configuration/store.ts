// dataDir/config/: the runtime layer (`runtime.json`) and the snapshots (`snapshot_<id>.json`), each
// written atomically (docs/configuration-v2.md): after a power cut the old or the new file is there.

import fs from 'node:fs';
import path from 'node:path';
import { cleanTempFiles, ensurePrivateDir, readJsonFile, writeFileAtomic, writeFileAtomicSync } from '../store/atomic.js';
import { emptyLayer, type Component, type Layer } from './model.js';
import type { SnapshotSize } from './heap.js';

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
const NAME_KEY = '#+name":';

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

  /** Writes the layer a piece at a time: a rolled-back large asset pins several properties per channel. */
  writeLayer(layer: Layer): Promise<void> {
    return writeFileAtomic(path.join(this.dir, LAYER), jsonPieces(layer, 4, '\n'));
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
    // A recovery command: it may use the data partition's reserve.
    writeFileAtomicSync(path.join(this.dir, LAYER), JSON.stringify(emptyLayer()) + '\n', 0o600, { useReserve: true });
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

  /**
   * Snapshot `id`, undefined when there is none. `check` sees its size first and may throw: a
   * snapshot is parsed whole, which takes several times its file's size on the heap.
   */
  readSnapshot(id: number, check?: (size: SnapshotSize) => void): Component[] | undefined {
    let data: Buffer;
    try {
      data = fs.readFileSync(path.join(this.dir, `snapshot_${id}.json`));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw err;
    }
    if (check) {
      // Every channel of a snapshot has its `<ch>#+name` property; nothing else has that key.
      let channels = 0;
      for (let at = data.indexOf(NAME_KEY); at >= 0; at = data.indexOf(NAME_KEY, at + NAME_KEY.length)) channels++;
      check({ bytes: data.length, channels });
    }
    return (JSON.parse(data.toString('utf8')) as { components: Component[] }).components;
  }

  /**
   * Saves a snapshot (id: ms since the epoch, above every existing id) and drops the oldest beyond
   * `max` snapshots or `maxBytes` in all, keeping the new one whatever its size. Each component is
   * given as an object or as the pieces of its JSON text.
   */
  async writeSnapshot(components: Iterable<Component | Iterable<string>>, max: number, maxBytes = Infinity): Promise<number> {
    // Room first: a lowered bound frees what it no longer keeps before the new snapshot needs the space.
    this.prune(max, maxBytes, true);
    const ids = this.snapshotIds();
    const id = Math.max(Date.now(), (ids[ids.length - 1] ?? 0) + 1);
    // The text of JSON.stringify({ id, components }), written a piece at a time.
    const parts = function* (): Generator<string> {
      let sep = '';
      yield `{"id":${id},"components":[`;
      for (const c of components) {
        if (Symbol.iterator in c) {
          yield sep;
          yield* c;
        } else yield sep + JSON.stringify(c);
        sep = ',';
      }
      yield ']}\n';
    };
    await writeFileAtomic(path.join(this.dir, `snapshot_${id}.json`), parts());
    this.prune(max, maxBytes);
    return id;
  }

  /**
   * Removes the oldest snapshots beyond `max` in number or `maxBytes` in all. Before a snapshot is
   * written (`incoming`: it counts as one more, as large as the newest), after it (the newest is kept
   * whatever its size). Kura drops the oldest beyond its maximum too.
   */
  prune(max: number, maxBytes: number, incoming = false): void {
    const ids = this.snapshotIds().reverse();
    const size = (id: number) => fs.statSync(path.join(this.dir, `snapshot_${id}.json`), { throwIfNoEntry: false })?.size ?? 0;
    let bytes = incoming && ids.length ? size(ids[0]) : 0;
    let kept = incoming ? 1 : 0;
    for (const id of ids) {
      bytes += size(id);
      if (kept === 0 || (kept < max && bytes <= maxBytes)) kept++;
      else fs.rmSync(path.join(this.dir, `snapshot_${id}.json`), { force: true });
    }
  }
}

/**
 * The text of JSON.stringify(value) + `end`, in pieces: objects and arrays down to `depth` levels
 * are written an entry at a time, what is below them whole.
 */
export function* jsonPieces(value: unknown, depth: number, end = ''): Generator<string> {
  if (depth === 0 || value === null || typeof value !== 'object' || typeof (value as { toJSON?: unknown }).toJSON === 'function') {
    yield JSON.stringify(value) ?? 'null';
  } else if (Array.isArray(value)) {
    yield '[';
    for (let i = 0; i < value.length; i++) {
      if (i > 0) yield ',';
      const v = value[i];
      yield* jsonPieces(v === undefined || typeof v === 'function' || typeof v === 'symbol' ? null : v, depth - 1);
    }
    yield ']';
  } else {
    yield '{';
    let sep = '';
    for (const k of Object.keys(value)) {
      const v = (value as Record<string, unknown>)[k];
      if (v === undefined || typeof v === 'function' || typeof v === 'symbol') continue;
      yield `${sep}${JSON.stringify(k)}:`;
      yield* jsonPieces(v, depth - 1);
      sep = ',';
    }
    yield '}';
  }
  if (end) yield end;
}
