// Runtime configuration (docs/configuration-v2.md): the image file with the runtime layer of
// dataDir/config on top. Every change is validated whole, as check-config validates the file, then
// written atomically and applied live through the daemon's reload path; nothing half-applied.

import path from 'node:path';
import type { Problem } from '../drivers/driver.js';
import type { DriverRegistry } from '../drivers/registry.js';
import type { Logger } from '../log.js';
import { errorsOf, readConfigFile, validateConfig, type Config, type LoadResult } from './config.js';
import { applyLayer, componentOf, componentRefs, emptyLayer, locate, type Component, type ComponentRef, type Layer, type Raw } from './model.js';
import { shownOf, snapshotJson } from './reply.js';
import { ConfigStore } from './store.js';
import { RequestError } from '../core/errors.js';
import { lazyBuiltin } from '../core/builtin.js';
import { changeRefusal, heapBound, snapshotOf, snapshotRefusal, weigh, type Weight } from './heap.js';
import { checkSpace } from '../store/reserve.js';
import { isAdmin, reservedChange, reservedPart, reservedRefusal, type ChangeActor } from './reserved.js';
import { movedSecret, movedSecretMessage, type GivenSecrets } from './secrets.js';
import { imageListeners, listenerDifferences, listenerProblems, listenerSettingsOf, portProblems, type ListenerSettings } from './listeners.js';
import { loadTrustAnchors } from '../deploy/signature.js';
import { httpNeedsRestart } from '../http/listen.js';

const zlib = lazyBuiltin<typeof import('node:zlib')>('node:zlib');
/** Texts shorter than this are kept as they are: node:zlib (compiled at its first use) only for large configurations. */
const PACK_FROM = 64 * 1024;

/**
 * A configuration as written (the image file, the effective configuration) kept as JSON text,
 * deflated when it is large: only configuration/v2 and changes read it, while the running components use the validated
 * configuration. The parsed objects (several per channel) are made again when asked for once the
 * garbage collector has taken them; until then the same object is returned.
 */
export class Packed {
  private readonly kept: Buffer | string;
  private ref: WeakRef<Raw>;

  /** `text`: the JSON text `raw` was parsed from, when at hand. */
  constructor(raw: Raw, text = JSON.stringify(raw)) {
    this.kept = text.length < PACK_FROM ? text : zlib().deflateRawSync(text, { level: 1 });
    this.ref = new WeakRef(raw);
  }

  get raw(): Raw {
    let r = this.ref.deref();
    if (!r) {
      const text = typeof this.kept === 'string' ? this.kept : zlib().inflateRawSync(this.kept).toString();
      this.ref = new WeakRef((r = JSON.parse(text) as Raw));
    }
    return r;
  }
}

export interface Loaded extends LoadResult {
  readonly image: Raw;
  /** What the configuration in force weighs for a change (src/configuration/heap.ts). */
  readonly weight: Weight;
  /** The runtime layer in force (read again from dataDir/config when it is large: see loaded()). */
  readonly layer: Layer;
  /** A copy of the layer to change. */
  layerCopy(): Layer;
  readonly effective: Raw;
  /** The image and the effective configuration as kept (the same when there is no runtime layer). */
  packed: { image: Packed; effective: Packed };
  /** Why the runtime layer was not applied (the daemon then runs the image's configuration). */
  layerProblems: Problem[];
  store?: ConfigStore;
}

/**
 * Reads the image file and the runtime layer (`layer`, else the one in dataDir/config) and validates
 * them together: check-config, start, SIGHUP, and every change (`image` given: no file read).
 * `guard` sees the weight of the effective configuration before it is validated, and may throw.
 */
export function loadEffective(file: string, registry: DriverRegistry, layer?: Layer, image?: Packed, guard?: (weight: Weight) => void): Loaded {
  const abs = path.resolve(file);
  const validate = (raw: unknown) => validateConfig(raw, registry, path.dirname(abs), abs);
  let img: { raw?: unknown; text?: string; problems: Problem[] } = image ? { raw: image.raw, problems: [] } : readConfigFile(abs);
  const raw = img.raw as Raw;
  // Packed from the text as read, then the text let go: it is not held while the configuration is validated.
  image ??= img.text === undefined ? undefined : new Packed(raw, img.text);
  const problems = img.problems;
  img = { problems };
  const res: LoadResult = problems.length ? { config: undefined as unknown as Config, problems } : validate(raw);
  if (errorsOf(res.problems).length > 0) return loaded(res, image ?? raw, weigh(raw));
  const store = new ConfigStore(res.config.dataDir);
  try {
    layer ??= store.readLayer();
  } catch (err) {
    return loaded(res, image ?? raw, weigh(raw), emptyLayer(), [{ path: store.dir, message: (err as Error).message }], store);
  }
  // No runtime layer (the usual case): the image is the effective configuration, validated once
  // already; no second copy and no second validation (a large asset configuration costs both).
  if (layerIsEmpty(layer)) return loaded(res, image ?? raw, weigh(raw), layer, [], store);
  const effective = applyLayer(raw, layer);
  const weight = weigh(effective);
  // Before the validation, which makes the second running configuration: a change may be refused here.
  guard?.(weight);
  const next = validate(effective);
  const errors = errorsOf(next.problems);
  if (errors.length > 0) return loaded(res, image ?? raw, weigh(raw), emptyLayer(), errors.map((e) => ({ ...e, message: `${locate(e.path, effective)}: ${e.message}` })), store);
  return loaded(next, image ?? raw, weight, layer, [], store, effective);
}

/**
 * A layer with more entries than this is not kept in memory but read again from dataDir/config when
 * needed: after a rollback it pins every property of the configuration (several per channel), and
 * kept parsed it would weigh as much as the configuration itself for as long as it is in force.
 */
const KEEP_LAYER_ENTRIES = 4096;

/** `weight`: what the configuration in force as written weighs (weigh()). */
function loaded(res: LoadResult, image: Raw | Packed | undefined, weight: Weight, layer = emptyLayer(), layerProblems: Problem[] = [], store?: ConfigStore, effective?: Raw): Loaded {
  const img = image === undefined || image instanceof Packed ? image : new Packed(image);
  const packed = { image: img!, effective: effective ? new Packed(effective) : img! };
  // A large layer is the one stored (read at start, written by the change that made it) from the
  // moment this result is in force.
  const held = !store || weigh(layer).entries <= KEEP_LAYER_ENTRIES ? layer : undefined;
  return {
    ...res,
    weight,
    get layer() {
      return held ?? store!.readLayer();
    },
    layerCopy: () => (held ? structuredClone(held) : store!.readLayer()),
    layerProblems,
    store,
    packed,
    get image() {
      return packed.image?.raw;
    },
    get effective() {
      return packed.effective?.raw;
    },
  };
}

const layerIsEmpty = (l: Layer): boolean => l.deleted.length === 0 && Object.keys(l.components).length === 0;

/** A refusal answered 400 (or 500 where Kura does) with `{"message": …}`. */
export class ConfigError extends RequestError {}

/** Who asks for a change, and the secrets an update gives anew (absent: the rule on secrets does not apply, as for a rollback). */
export interface ChangeRequest {
  by: ChangeActor;
  secrets?: GivenSecrets;
}

/** Replies made a piece at a time that may be in progress at once (ConfigurationService.streamed). */
export const STREAMED_REPLIES = 2;

export interface ServiceOptions {
  file: string;
  registry: DriverRegistry;
  log: Logger;
  /** Applies a validated configuration live (the daemon's reload path). */
  apply(config: Config): Promise<void>;
  /** The ports the daemon listens on now: a changed port list probes only the others. */
  listeningPorts?: () => readonly number[];
  /**
   * What the daemon was started with (`loadEffective` of the same file, moments before): taken over
   * instead of reading and validating the file again, so that the service and the running
   * components share one configuration in memory.
   */
  loaded?: Loaded;
}

export class ConfigurationService {
  private state: Loaded;
  readonly store: ConfigStore;
  private queue: Promise<unknown> = Promise.resolve();
  private streaming = 0;
  private readonly waiting: (() => void)[] = [];

  private readonly opts: ServiceOptions;

  constructor(opts: ServiceOptions) {
    this.state = opts.loaded?.store ? opts.loaded : loadEffective(opts.file, opts.registry);
    // Not kept in the options: after the first change it would hold a second configuration.
    this.opts = { ...opts, loaded: undefined };
    this.store = this.state.store ?? new ConfigStore(this.state.config.dataDir);
    this.store.open();
  }

  /** Starts the service; a first snapshot records the configuration the device started with. */
  static async start(opts: ServiceOptions): Promise<ConfigurationService> {
    const svc = new ConfigurationService(opts);
    if (svc.store.snapshotIds().length === 0) {
      // A full data partition must not keep the device from starting: the snapshot waits for the next change.
      await svc.snapshot().catch((err) => opts.log.warn('first configuration snapshot not written', { dir: svc.store.dir, error: (err as Error).message }));
    }
    return svc;
  }

  get registry(): DriverRegistry {
    return this.opts.registry;
  }

  get effective(): Raw {
    return this.state.effective;
  }

  /** One request at a time, in arrival order: reads see no half-made change. */
  serial<T>(fn: () => Promise<T>, until?: Promise<void>): Promise<T> {
    const run = this.queue.then(fn, fn);
    // `until`: the next request waits for it too once `fn` succeeded (a reply still being written).
    this.queue = run.then(() => until).catch(() => {});
    return run;
  }

  /** The components' pids (no properties: an asset's are several per channel). */
  components(): ComponentRef[] {
    return componentRefs(this.state.effective);
  }

  /** One component with its properties, made alone. */
  component(pid: string): Component | undefined {
    return componentOf(this.state.effective, pid);
  }

  /**
   * A snapshot holds every component with every property (definition defaults included). Made and
   * written a piece at a time (an asset a few channels at a time): with thousands of channels the
   * whole snapshot at once would be several times the running configuration in memory.
   */
  snapshot(): Promise<number> {
    const { effective, registry } = this;
    const parts = function* (): Generator<Iterable<string>> {
      for (const c of shownOf(effective, componentRefs(effective), (pid) => componentOf(effective, pid))) yield snapshotJson(c, effective, registry);
    };
    return this.store.writeSnapshot(parts(), this.state.config.snapshotsMax, this.state.config.snapshotsMaxBytes);
  }

  /**
   * A turn for a reply made a piece at a time (resolves with its release, to call once it is
   * written): at most STREAMED_REPLIES at once, the others wait in arrival order. Each keeps the
   * configuration it was made from until its client has read it, so slow clients must not make
   * more copies than that.
   */
  async streamTurn(): Promise<() => void> {
    while (this.streaming >= STREAMED_REPLIES) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.streaming++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.streaming--;
      this.waiting.shift()?.();
    };
  }

  get log(): Logger {
    return this.opts.log;
  }

  /**
   * Validates the layer `mutate` makes, stores it, applies it. Returns, for a change of the `http`
   * component, the message that it takes effect at the next start. `by` is who asks (reserved
   * properties, docs/configuration-v2.md "Reserved to kura.admin"); `secrets`, for an update, the
   * PASSWORD properties it gives anew (the others may not follow a changed endpoint).
   */
  async change(mutate: (layer: Layer) => void, takeSnapshot: boolean, req: ChangeRequest): Promise<string | undefined> {
    // The layer in force is read once (from dataDir/config when large, see loaded()): what the
    // reserved-property check compares with is taken from the copy before `mutate` changes it.
    const layer = this.state.layerCopy();
    const before = isAdmin(req.by) ? undefined : reservedPart(this.state.image, layer);
    mutate(layer);
    if (before) this.refuseReserved(before, layer, req.by);
    const next = loadEffective(this.opts.file, this.registry, layer, this.state.packed.image, (weight) => this.fits(weight));
    if (next.layerProblems.length > 0) throw new ConfigError(400, next.layerProblems.map((e) => e.message).join('; '));
    if (req.secrets) {
      const m = movedSecret(this.state.config, next.config, this.state.image, req.secrets, this.registry);
      if (m) throw new ConfigError(400, movedSecretMessage(m));
    }
    await this.refuseUnusable(next);
    const httpChanged = httpNeedsRestart(this.state.config.http, next.config.http);
    // Refused (507) before anything is written when its snapshot would eat into the data partition's reserve.
    if (takeSnapshot) {
      const { snapshotsMax, snapshotsMaxBytes } = next.config;
      this.store.prune(snapshotsMax, snapshotsMaxBytes, true);
      checkSpace(this.store.dir, snapshotOf(next.weight).bytes);
    }
    await this.store.writeLayer(layer);
    this.state = next;
    await this.opts.apply(next.config);
    // The change is made: a snapshot that still cannot be written is logged, not its failure.
    if (takeSnapshot) await this.snapshot().catch((err) => this.opts.log.error('configuration changed, but its snapshot was not written', { dir: this.store.dir, error: (err as Error).message }));
    this.opts.log.info('runtime configuration changed', { dir: this.store.dir });
    return httpChanged ? 'The http settings were saved; they take effect at the next start of gatewayd.' : undefined;
  }

  /**
   * Refuses (413) a change whose configuration would not fit the heap bound: V8 would abort the
   * daemon in the middle of it (docs/configuration-v2.md "How large a configuration can grow"). A restart only loads the
   * configuration, which takes less, so a configuration this accepted also starts.
   */
  private fits(weight: Weight): void {
    const why = changeRefusal(weight, this.state.weight, heapBound());
    if (why) throw new ConfigError(413, why);
  }

  /** A reserved property changed by someone without kura.admin: refused before anything else is looked at. */
  private refuseReserved(before: Layer, layer: Layer, by: ChangeActor): void {
    const r = reservedChange(this.state.image, before, layer);
    if (!r) return;
    const { status, message } = reservedRefusal(by, r.pid, r.key);
    throw new ConfigError(status, message);
  }

  /**
   * What would stop the next start or an install from working as asked, refused now with the property
   * named: listener settings that cannot open (docs/configuration-v2.md "Listener settings"), trust
   * anchors that cannot be loaded (a package install would then be refused until they are fixed).
   */
  private async refuseUnusable(next: Loaded): Promise<void> {
    const now = listenerSettingsOf(this.state.config);
    const wanted = listenerSettingsOf(next.config);
    const problems: Problem[] = [];
    if (listenerDifferences(now, wanted).length > 0) {
      problems.push(...listenerProblems(wanted, imageListeners(next.image, this.opts.file)));
      if (problems.length === 0) problems.push(...(await portProblems(wanted.http, new Set(this.opts.listeningPorts?.() ?? []))));
    }
    const anchors = next.config.deploy['trust.anchors'];
    if (JSON.stringify(anchors) !== JSON.stringify(this.state.config.deploy['trust.anchors'])) {
      for (const e of loadTrustAnchors(anchors).errors) problems.push({ path: e.slice(0, e.indexOf(':')), message: e.slice(e.indexOf(':') + 2), severity: 'error' });
    }
    if (problems.length > 0) throw new ConfigError(400, problems.map((e) => `${locate(e.path, next.effective)}: ${e.message}`).join('; '));
  }

  /**
   * When the configuration in force changes the image file's listener settings: the image's, and
   * which properties differ (configuration file key paths). The daemon opens those when the runtime
   * layer's listeners cannot open (docs/configuration-v2.md "Listener settings").
   */
  listenerFallback(): { settings: ListenerSettings; properties: string[] } | undefined {
    const settings = imageListeners(this.state.image, this.opts.file);
    const properties = listenerDifferences(listenerSettingsOf(this.state.config), settings);
    return properties.length > 0 ? { settings, properties } : undefined;
  }

  /** SIGHUP: the file again, with the runtime layer on top. A bad result keeps what runs. */
  async reload(): Promise<boolean> {
    const next = loadEffective(this.opts.file, this.registry, this.state.layer);
    const errors = [...errorsOf(next.problems), ...next.layerProblems];
    for (const e of errors) this.opts.log.error('reload refused: configuration problem', { key: e.path || '(file)', problem: e.message });
    if (errors.length > 0) return false;
    this.state = next;
    await this.opts.apply(next.config);
    return true;
  }

  /**
   * Snapshot `id`'s components, refused (413) when reading it (whole) and, for a rollback, making it
   * the configuration would not fit the heap bound; 500 as Kura when there is none.
   */
  readSnapshot(id: number, rollback = false): Component[] {
    const snap = this.store.readSnapshot(id, (size) => {
      const why = snapshotRefusal(id, size, this.state.weight, rollback, heapBound());
      if (why) throw new ConfigError(413, why);
    });
    if (!snap) throw new ConfigError(500, `Configuration snapshot ${id} was not found.`);
    return snap;
  }

  /**
   * Restores snapshot `id` as the runtime layer: every property of the snapshot is pinned. A
   * snapshot's secrets come with the endpoints they were stored with.
   */
  rollback(id: number, by: ChangeActor): Promise<string | undefined> {
    const snap = this.readSnapshot(id, true);
    return this.change((layer) => {
      const keep = new Set(snap.map((c) => c.pid));
      layer.components = Object.fromEntries(snap.map((c) => [c.pid, { factoryPid: c.factoryPid, pinned: true, props: c.props }]));
      layer.deleted = componentRefs(this.state.image).filter((c) => c.factoryPid && !keep.has(c.pid)).map((c) => c.pid);
    }, true, { by });
  }

  /** The image's configuration again (the runtime layer dropped; snapshots kept). */
  reset(takeSnapshot: boolean, by: ChangeActor): Promise<string | undefined> {
    return this.change((layer) => Object.assign(layer, emptyLayer()), takeSnapshot, { by });
  }
}
