// An asset's channels as a CSV file, `GET|PUT /services/assets/{pid}/_channels.csv` (docs/rest-api.md
// "Channels as CSV"; the format is docs/configuration.md "Channels as CSV", in Kura's asset channel
// download and upload form). Role `configuration`: an upload is a configuration change like any
// other, made through the runtime configuration (docs/configuration-v2.md), so it is validated by
// the same rules, stored in the runtime layer, snapshotted and seen in configuration/v2.
//
// Nothing of a file is applied when any row is wrong: the codec's problems (syntax, types, options,
// ranges) and then the driver's checks of each channel are reported by row and column first.

import { RequestError } from '../core/errors.js';
import { TextReply, type CoreRequest, type Family } from '../core/family.js';
import { isPlainObject } from '../core/schema.js';
import { ASSET_FACTORY, AssetDefinition, flattenAsset, type Raw } from '../configuration/model.js';
import { ConfigError, type ConfigurationService } from '../configuration/service.js';
import type { ChangeActor } from '../configuration/reserved.js';
import { validateAssets, type DriverInstanceConfig } from '../assets/config.js';
import {
  CHANNELS_MERGE_MODES,
  channelsToCsv,
  describeCsvProblem,
  mergeChannels,
  parseChannelsCsv,
  type ChannelPropertyDefinition,
  type ChannelPropertyValue,
  type ChannelsCsvProblem,
  type ChannelsMergeMode,
  type CsvChannel,
  type ParsedCsvChannel,
} from '../assets/channels-csv.js';

/** The bounds of an upload (docs/rest-api.md "Channels as CSV"). */
export const CSV_UPLOAD_LIMITS = Object.freeze({ maxRows: 10_000, maxBytes: 4 * 1024 * 1024 });
const CSV_TYPE = 'text/csv; charset=utf-8';
const CSV_MEDIA_TYPES = Object.freeze(['text/csv']);
// gatewayd's own channel keys (written after the driver's), and the key typed by the channel's value.type.
const EXTENSION_KEYS = new Set(['deadband', 'scale.on.write']);
const VALUE_TYPED_KEYS = new Set(['initial']);

type Assets = Record<string, Raw>;
const assetsOf = (raw: Raw): Assets => (isPlainObject(raw.assets) ? (raw.assets as Assets) : {});

function assetOf(svc: ConfigurationService, pid: string): Raw {
  const assets = assetsOf(svc.effective);
  const a = Object.hasOwn(assets, pid) ? assets[pid] : undefined;
  if (!isPlainObject(a)) throw new RequestError(404, `Asset not found: ${pid}`);
  return a;
}

/** The channel columns of an asset on its driver, as the codec takes them. */
function definitionsOf(svc: ConfigurationService, asset: Raw): ChannelPropertyDefinition[] {
  return new AssetDefinition(asset['driver.pid'], svc.effective, svc.registry).channelAds.map((a) => ({
    id: a.id,
    type: a.type,
    required: a.required,
    default: a.default,
    options: a.options,
    min: a.min,
    max: a.max,
    extension: EXTENSION_KEYS.has(a.id) || undefined,
    valueTyped: VALUE_TYPED_KEYS.has(a.id) || undefined,
  }));
}

function channelsOf(asset: Raw): CsvChannel[] {
  const channels = isPlainObject(asset.channels) ? (asset.channels as Record<string, unknown>) : {};
  return Object.entries(channels).flatMap(([name, props]) => (isPlainObject(props) ? [{ name, props: { ...(props as Record<string, ChannelPropertyValue>) } }] : []));
}

const actorOf = (req: CoreRequest): ChangeActor => ({ transport: req.transport, permissions: req.identity?.permissions ?? [] });

/** A file name for Content-Disposition: the asset's name with anything but [A-Za-z0-9._-] replaced. */
const fileName = (pid: string) => `${pid.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 100) || 'asset'}.channels.csv`;

/**
 * The imported channels as they will be stored. A channel the asset already has keeps unset a key
 * it left unset when the file gives that key's default (the export writes a required key's default,
 * so a round trip changes nothing), and keeps its PASSWORD values, which the export never writes.
 */
function settled(imported: ParsedCsvChannel[], existing: CsvChannel[], defs: ChannelPropertyDefinition[]): CsvChannel[] {
  const before = new Map(existing.map((c) => [c.name, c.props]));
  const defaults = new Map(defs.filter((d) => d.default !== undefined).map((d) => [d.id.replace(/^\+/, ''), d.default]));
  const secrets = defs.filter((d) => d.type === 'PASSWORD').map((d) => d.id.replace(/^\+/, ''));
  return imported.map((c) => {
    const old = before.get(c.name);
    const props = { ...c.props };
    if (old) {
      for (const [k, v] of Object.entries(props)) if (!Object.hasOwn(old, k) && defaults.has(k) && sameValue(defaults.get(k), v)) delete props[k];
      for (const k of secrets) if (Object.hasOwn(old, k) && !Object.hasOwn(props, k)) props[k] = old[k];
    }
    return { name: c.name, props };
  });
}

/** The same channels in the same order with the same properties (in any key order). */
function sameChannels(a: CsvChannel[], b: CsvChannel[]): boolean {
  const text = (c: CsvChannel) => JSON.stringify([c.name, Object.keys(c.props).sort().map((k) => [k, String(c.props[k]), typeof c.props[k]])]);
  return a.length === b.length && a.every((c, i) => text(c) === text(b[i]!));
}

const sameValue = (a: unknown, b: unknown) => a === b || (typeof a === 'number' && typeof b === 'bigint' && BigInt(a) === b) || String(a) === String(b);

/**
 * The driver's and the configuration's checks of the file's channels, by row and column: the asset
 * validated with the file's channels alone, each problem placed on the row of its channel.
 */
function channelProblems(svc: ConfigurationService, pid: string, asset: Raw, file: ParsedCsvChannel[], merged: CsvChannel[], columns: string[]): ChannelsCsvProblem[] {
  const raw = svc.effective;
  const drivers: Record<string, DriverInstanceConfig> = {};
  const rawDrivers = isPlainObject(raw.drivers) ? (raw.drivers as Record<string, Raw>) : {};
  for (const [id, d] of Object.entries(rawDrivers)) {
    if (!isPlainObject(d)) continue;
    const { factory, ...props } = d;
    drivers[id] = { id, factory: String(factory), props };
  }
  const channels: Record<string, unknown> = {};
  for (const c of merged) Object.defineProperty(channels, c.name, { value: c.props, enumerable: true, writable: true, configurable: true });
  const problems: { path: string; message: string; severity: string }[] = [];
  validateAssets({ [pid]: { ...asset, channels } }, 'assets', problems as never, drivers, svc.registry);
  const base = `assets.${pid}.channels.`;
  const rows = new Map(file.map((c) => [c.name, c.row]));
  const names = [...rows.keys()].sort((a, b) => b.length - a.length);
  const out: ChannelsCsvProblem[] = [];
  for (const p of problems) {
    if (p.severity !== 'error' || !p.path.startsWith(base)) continue;
    const rest = p.path.slice(base.length);
    const name = names.find((n) => rest === n || rest.startsWith(`${n}.`));
    // A kept channel of a merge that the file does not name cannot be wrong because of the file.
    if (name === undefined) continue;
    const column = rest.slice(name.length + 1) || undefined;
    const at = column === undefined ? -1 : columns.indexOf(column);
    out.push({ row: rows.get(name), column, columnIndex: at < 0 ? undefined : at + 2, message: p.message });
  }
  return out.sort((a, b) => (a.row ?? 0) - (b.row ?? 0));
}

const refusal = (problems: ChannelsCsvProblem[]) =>
  new RequestError(400, `The file was not applied: ${problems.length === 1 ? 'a problem' : `${problems.length} problems`}\n${problems.map(describeCsvProblem).join('\n')}`);

/** The channel CSV resources, on REST only (a file is exchanged with a browser or curl). */
export const assetChannelsCsvFamily = (svc: ConfigurationService): Family => ({
  name: 'assets/channels.csv',
  rest: '/services/assets',
  role: 'configuration',
  errors: 'text',
  routes: [
    {
      method: 'GET',
      path: ':pid/_channels.csv',
      handler: (req) => {
        const pid = req.params.pid!;
        const asset = assetOf(svc, pid);
        const text = channelsToCsv(channelsOf(asset), definitionsOf(svc, asset), { bom: req.query('bom') === 'true' });
        return new TextReply(CSV_TYPE, text, { 'content-disposition': `attachment; filename="${fileName(pid)}"` });
      },
    },
    {
      method: 'PUT',
      path: ':pid/_channels.csv',
      handler: async (req) => {
        const pid = req.params.pid!;
        assetOf(svc, pid);
        const mode = req.query('mode');
        if (!(CHANNELS_MERGE_MODES as readonly (string | undefined)[]).includes(mode)) {
          throw new RequestError(400, `Query parameter mode must be ${CHANNELS_MERGE_MODES.join(' or ')}${mode === undefined ? '' : `, not ${JSON.stringify(mode.slice(0, 40))}`}`);
        }
        const bytes = await req.bytes({ mediaTypes: CSV_MEDIA_TYPES, limit: CSV_UPLOAD_LIMITS.maxBytes });
        if (!bytes || bytes.length === 0) throw new RequestError(400, 'The request body must be the CSV file (Content-Type text/csv)');
        // In the configuration's turn: the asset read, checked and changed with no other change between.
        return svc.serial(async () => {
          const asset = assetOf(svc, pid);
          const defs = definitionsOf(svc, asset);
          const parsed = parseChannelsCsv(bytes, defs, CSV_UPLOAD_LIMITS);
          if (!parsed.ok) throw refusal(parsed.problems);
          const existing = channelsOf(asset);
          const merged = mergeChannels(existing, settled(parsed.channels, existing, defs), mode as ChannelsMergeMode);
          const refuseProblems = () => {
            const problems = channelProblems(svc, pid, asset, parsed.channels, merged, parsed.columns);
            if (problems.length > 0) throw refusal(problems);
          };
          if (sameChannels(existing, merged)) {
            refuseProblems();
            return { changed: false, channels: merged.length };
          }
          // The asset is stored whole and pinned: the channels then are exactly the file's, in its
          // order, whatever the image file says (as after a rollback, docs/configuration-v2.md).
          const props = flattenAsset({ ...asset, channels: Object.fromEntries(merged.map((c) => [c.name, c.props])) });
          try {
            await svc.change((layer) => {
              layer.deleted = layer.deleted.filter((p) => p !== pid);
              Object.defineProperty(layer.components, pid, { value: { factoryPid: ASSET_FACTORY, pinned: true, props }, enumerable: true, writable: true, configurable: true });
            }, true, { by: actorOf(req) });
          } catch (err) {
            // The change validates the configuration with these channels and refuses it before
            // anything is written. The file's problems are then told by row and column, as they
            // were before any other refusal of the change: the asset is validated a second time
            // only for a file that is refused (1,000 channels validated once, not twice).
            if (err instanceof ConfigError) {
              refuseProblems();
              throw new RequestError(err.status, `The file was not applied: ${err.detail ?? err.message}`);
            }
            throw err;
          }
          return { changed: true, channels: merged.length };
        });
      },
    },
  ],
});
