// META-INF/MANIFEST.MF of a deployment package (JAR manifest format, OSGi Compendium 114.3).
//
// Headers are `Name: value`; a line starting with one space continues the previous one (lines are
// wrapped at 72 bytes); a blank line ends a section. The main section carries the package's
// identity; per-entry sections start with `Name:`. Header names are case-insensitive, as in
// java.util.jar.Attributes.

import { normaliseVersion } from './version.js';

export class ManifestError extends Error {
  override name = 'ManifestError';
}

export interface Manifest {
  /** Main-section headers, keyed by lower-cased name. */
  main: Map<string, string>;
  /** Per-entry sections keyed by their `Name:` value; headers keyed by lower-cased name. */
  sections: Map<string, Map<string, string>>;
}

/** What gatewayd needs from a package's manifest. */
export interface PackageManifest {
  /** `DeploymentPackage-SymbolicName`. */
  name: string;
  /** `DeploymentPackage-Version`, normalised as OSGi `Version.toString()`. */
  version: string;
  /**
   * `Gatewayd-Extension`: comma-separated paths (inside the package) of JavaScript modules loaded
   * as plug-ins, in this order. See src/plugins/api.ts.
   */
  extensions: string[];
}

export const MANIFEST_PATH = 'META-INF/MANIFEST.MF';
const HEADER_NAME = /^[A-Za-z0-9][A-Za-z0-9_-]*$/;
// OSGi symbolic-name: token ( '.' token )*, token ::= [A-Za-z0-9_-]+. This also makes the name a
// safe single path segment (no `/`, never `.` or `..`), which the package store relies on.
const SYMBOLIC_NAME = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;
const MAX_MANIFEST = 64 * 1024;

export function isSymbolicName(s: string): boolean {
  return s.length <= 255 && SYMBOLIC_NAME.test(s);
}

export function parseManifest(text: string): Manifest {
  if (text.length > MAX_MANIFEST) throw new ManifestError(`manifest is larger than ${MAX_MANIFEST} bytes`);
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
  const lines = text.split(/\r\n|\r|\n/);
  const main = new Map<string, string>();
  const sectionList: Map<string, string>[] = [];
  let current = main;
  let startingSection = false;
  let last: string | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const where = `line ${i + 1}`;
    if (line === '') {
      // A blank line ends the current section; the next non-blank line starts a `Name:` section.
      startingSection = true;
      last = undefined;
      continue;
    }
    if (line.startsWith(' ')) {
      if (last === undefined) throw new ManifestError(`${where}: continuation line without a header`);
      current.set(last, current.get(last)! + line.slice(1));
      continue;
    }
    const colon = line.indexOf(': ');
    if (colon <= 0) throw new ManifestError(`${where}: expected "Name: value"`);
    const name = line.slice(0, colon);
    const value = line.slice(colon + 2);
    if (!HEADER_NAME.test(name) || name.length > 70) throw new ManifestError(`${where}: invalid header name ${JSON.stringify(name)}`);
    const key = name.toLowerCase();
    if (startingSection) {
      if (key !== 'name') throw new ManifestError(`${where}: a section must start with "Name:"`);
      // The section's Name may itself be continued, so sections are keyed once complete (below).
      current = new Map();
      sectionList.push(current);
      startingSection = false;
    }
    if (current.has(key)) throw new ManifestError(`${where}: duplicate header ${name}`);
    current.set(key, value);
    last = key;
  }
  const sections = new Map<string, Map<string, string>>();
  for (const sec of sectionList) {
    const n = sec.get('name')!;
    if (sections.has(n)) throw new ManifestError(`duplicate section Name: ${n}`);
    sections.set(n, sec);
  }
  return { main, sections };
}

/** Parses and validates the identity headers of a deployment package manifest. */
export function readPackageManifest(text: string): PackageManifest {
  const m = parseManifest(text);
  const rawName = m.main.get('deploymentpackage-symbolicname');
  const rawVersion = m.main.get('deploymentpackage-version');
  if (rawName === undefined) throw new ManifestError('missing DeploymentPackage-SymbolicName');
  if (rawVersion === undefined) throw new ManifestError('missing DeploymentPackage-Version');
  const name = rawName.trim();
  if (!isSymbolicName(name)) throw new ManifestError(`invalid DeploymentPackage-SymbolicName ${JSON.stringify(rawName)}`);
  const version = normaliseVersion(rawVersion);
  if (version === undefined) throw new ManifestError(`invalid DeploymentPackage-Version ${JSON.stringify(rawVersion)}`);
  const ext = m.main.get('gatewayd-extension');
  const extensions = ext === undefined ? [] : ext.split(',').map((s) => s.trim());
  for (const e of extensions) {
    if (!/\.(m?js)$/.test(e)) throw new ManifestError(`Gatewayd-Extension ${JSON.stringify(e)} must be a .js or .mjs file`);
  }
  return { name, version, extensions };
}
