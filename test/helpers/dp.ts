// Builds zip archives and deployment packages (.dp) for tests, including malformed and malicious
// ones: every field the reader checks can be overridden so a test can lie about it.

import zlib from 'node:zlib';
import { execFileSync } from 'node:child_process';
import { crc32 } from '../../src/deploy/zip.js';

export interface ZipEntrySpec {
  name: string;
  data?: Buffer | string;
  /** Default 'deflate' for non-empty files. */
  method?: 'store' | 'deflate';
  /** Lie about the uncompressed size in both headers. */
  declaredSize?: number;
  /** Lie about the CRC-32. */
  crc?: number;
  /** Name written in the local header (default: `name`). */
  localName?: string;
  /** Unix mode for the external attributes (e.g. 0o120777 for a symlink). */
  unixMode?: number;
  /** Point this central-directory entry at the local header of entry number `sharesDataWith`. */
  sharesDataWith?: number;
  /** General-purpose flags (bit 0: encrypted). */
  flags?: number;
  /** Compression method number written as is (overrides `method` in the headers). */
  methodNumber?: number;
}

export interface ZipOptions {
  comment?: string;
  /** Keep only the first N bytes of the result. */
  truncateTo?: number;
  /** Entry count written in the end record (lie about it). */
  declaredCount?: number;
}

export function buildZip(specs: ZipEntrySpec[], opts: ZipOptions = {}): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  const offsets: number[] = [];
  let offset = 0;
  for (const spec of specs) {
    const data = Buffer.isBuffer(spec.data) ? spec.data : Buffer.from(spec.data ?? '');
    const deflate = (spec.method ?? (data.length ? 'deflate' : 'store')) === 'deflate';
    const body = deflate ? zlib.deflateRawSync(data) : data;
    const method = spec.methodNumber ?? (deflate ? 8 : 0);
    const crc = spec.crc ?? crc32(data);
    const size = spec.declaredSize ?? data.length;
    const name = Buffer.from(spec.name);
    const localName = Buffer.from(spec.localName ?? spec.name);
    const flags = spec.flags ?? 0x0800; // UTF-8 names

    let localOffset = offset;
    let compressedSize = body.length;
    if (spec.sharesDataWith !== undefined) {
      localOffset = offsets[spec.sharesDataWith]!;
      compressedSize = centrals[spec.sharesDataWith]!.readUInt32LE(20);
    } else {
      const loc = Buffer.alloc(30);
      loc.writeUInt32LE(0x04034b50, 0);
      loc.writeUInt16LE(20, 4);
      loc.writeUInt16LE(flags, 6);
      loc.writeUInt16LE(method, 8);
      loc.writeUInt32LE(crc, 14);
      loc.writeUInt32LE(body.length, 18);
      loc.writeUInt32LE(size, 22);
      loc.writeUInt16LE(localName.length, 26);
      locals.push(loc, localName, body);
      offset += 30 + localName.length + body.length;
    }
    offsets.push(localOffset);

    const cen = Buffer.alloc(46);
    cen.writeUInt32LE(0x02014b50, 0);
    cen.writeUInt16LE((3 << 8) | 20, 4); // made by Unix, so the mode in the external attributes counts
    cen.writeUInt16LE(20, 6);
    cen.writeUInt16LE(flags, 8);
    cen.writeUInt16LE(method, 10);
    cen.writeUInt32LE(crc, 16);
    cen.writeUInt32LE(compressedSize, 20);
    cen.writeUInt32LE(size, 24);
    cen.writeUInt16LE(name.length, 28);
    const mode = spec.unixMode ?? (spec.name.endsWith('/') ? 0o040755 : 0o100644);
    cen.writeUInt32LE((mode << 16) >>> 0, 38);
    cen.writeUInt32LE(localOffset, 42);
    centrals.push(Buffer.concat([cen, name]));
  }
  const cd = Buffer.concat(centrals);
  const comment = Buffer.from(opts.comment ?? '');
  const eocd = Buffer.alloc(22);
  eocd.writeUInt32LE(0x06054b50, 0);
  const count = opts.declaredCount ?? specs.length;
  eocd.writeUInt16LE(count, 8);
  eocd.writeUInt16LE(count, 10);
  eocd.writeUInt32LE(cd.length, 12);
  eocd.writeUInt32LE(offset, 16);
  eocd.writeUInt16LE(comment.length, 20);
  const all = Buffer.concat([...locals, cd, eocd, comment]);
  return opts.truncateTo === undefined ? all : all.subarray(0, opts.truncateTo);
}

export interface DpSpec {
  name: string;
  version: string;
  /** Paths inside the package → contents. */
  files?: Record<string, Buffer | string>;
  /** `Gatewayd-Extension` entries. */
  extensions?: string[];
  /** Extra main-section lines, verbatim. */
  extraHeaders?: string[];
}

export function manifestText(spec: DpSpec): string {
  const lines = [
    'Manifest-Version: 1.0',
    `DeploymentPackage-SymbolicName: ${spec.name}`,
    `DeploymentPackage-Version: ${spec.version}`,
  ];
  if (spec.extensions?.length) lines.push(`Gatewayd-Extension: ${spec.extensions.join(', ')}`);
  lines.push(...(spec.extraHeaders ?? []));
  return lines.join('\r\n') + '\r\n\r\n';
}

/** A deployment package: the manifest first, as OSGi 114.3 requires, then the files. */
export function buildDp(spec: DpSpec, extra: ZipEntrySpec[] = []): Buffer {
  return buildZip([
    { name: 'META-INF/', data: '' },
    { name: 'META-INF/MANIFEST.MF', data: manifestText(spec) },
    ...Object.entries(spec.files ?? {}).map(([name, data]) => ({ name, data })),
    ...extra,
  ]);
}

/**
 * Source of an example driver plug-in: factory `<factory>` whose channels read a constant
 * `value` channel property (INTEGER) and count their reads in a timer the package owns.
 */
export function exampleDriverExtension(factory: string, value = 42): string {
  return `
let ticks = 0;
export function activate(api) {
  api.setInterval(() => { ticks++; }, 10);
  api.registerDriverFactory({
    name: ${JSON.stringify(factory)},
    instanceKeys: [],
    channelKeys: ['value'],
    validateInstance() { return []; },
    validateChannel() { return []; },
    create() {
      return {
        async read(channels) {
          return channels.map((c) => ({ ok: true, value: { type: 'INTEGER', value: Number(c.driverProps?.value ?? ${value}) } }));
        },
        async write(reqs) { return reqs.map((r) => ({ ok: true, value: r.value })); },
        async close() {},
      };
    },
  });
  api.log.info('example driver active', { factory: ${JSON.stringify(factory)} });
}
export function deactivate() { globalThis.__gatewaydExampleDeactivated = (globalThis.__gatewaydExampleDeactivated ?? 0) + 1; }
export function ticksSoFar() { return ticks; }
`;
}

/** Whether a peer command the deploy tests use (zip, curl) runs at all. */
export function commandWorks(cmd: string, args: string[]): boolean {
  try {
    execFileSync(cmd, args, { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
