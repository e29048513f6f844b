// `PUT /deploy/v2/_packageDescriptor`: Eclipse Marketplace descriptors
// (Kura's DeploymentRestService; docs/rest-api.md "deploy/v2"), with gatewayd's field names
// (COMPATIBILITY.md "Decided deviations").

import { parseVersion, compareVersions, formatVersion } from './version.js';
import { parseXml, firstElement, textContent, type XmlElement } from '../core/xml.js';

/** A request refused with 400 and one of Kura's messages. */
export class DescriptorRequestError extends Error {
  override name = 'DescriptorRequestError';
}

// The dots are unescaped in Kura's pattern, so `marketplaceXeclipse.org` passes too; kept as is.
const MARKETPLACE_URL = /^https?:\/\/marketplace.eclipse.org\/marketplace-client-intro\?mpc_install=.*$/;

/** Java's `String.split(regex)` for a literal separator: trailing empty strings are dropped. */
function javaSplit(s: string, sep: string): string[] {
  const parts = s.split(sep);
  while (parts.length > 0 && parts[parts.length - 1] === '') parts.pop();
  return parts;
}

/** Kura's checks, in Kura's order, with Kura's messages; returns the marketplace node id. */
export function nodeIdOf(url: unknown): string {
  if (url === null || url === undefined) throw new DescriptorRequestError('Bad request');
  const s = typeof url === 'string' ? url : String(url);
  if (s === '') throw new DescriptorRequestError('Missing URL parameter');
  if (!MARKETPLACE_URL.test(s)) throw new DescriptorRequestError('The URL passed as argument does not belong to the Eclipse Marketplace');
  const parts = javaSplit(s, '=');
  if (parts.length !== 2 || parts[1] === '') throw new DescriptorRequestError('The URL passed as argument does not contain a valid node id');
  return parts[1]!;
}

/** Where the descriptor of `nodeId` is fetched: `<marketplace.url>/node/<id>/api/p`. */
export function descriptorApiUrl(base: string, nodeId: string): string {
  // Encoded, unlike Kura, so a node id cannot add path segments or a query to the request.
  return `${base.replace(/\/+$/, '')}/node/${encodeURIComponent(nodeId)}/api/p`;
}

/**
 * `SystemService.getKuraMarketplaceCompatibilityVersion()`'s transformation: drop `KURA[-_ ]`,
 * turn `-`/`_` into `.`, then normalise as an OSGi version when it is one.
 */
export function compatibilityVersion(raw: string): string {
  const s = raw.replace(/KURA[-_ ]/g, '').replace(/[-_]/g, '.');
  const v = parseVersion(s);
  return v ? formatVersion(v) : s;
}

/** Field order is the JSON order (docs/rest-api.md "deploy/v2"); undefined (Kura's null) fields are omitted. */
export interface PackageDescriptor {
  nodeId?: string;
  url?: string;
  dpUrl: string;
  minGatewayVersion?: string;
  maxGatewayVersion?: string;
  currentGatewayVersion: string;
  isCompatible: boolean;
}

/** Both bounds inclusive; no bounds, or anything unparseable, means not compatible. */
export function isCompatible(current: string, min: string | undefined, max: string | undefined): boolean {
  if (!min && !max) return false;
  const cur = parseVersion(current);
  if (!cur) return false;
  if (min) {
    const lo = parseVersion(min);
    if (!lo || compareVersions(cur, lo) < 0) return false;
  }
  if (max) {
    const hi = parseVersion(max);
    if (!hi || compareVersions(cur, hi) > 0) return false;
  }
  return true;
}

/** Builds the descriptor from the marketplace XML; throws (→ 500) when it has no `<updateurl>`. */
export function descriptorFromXml(xml: string, gatewayVersion: string): PackageDescriptor {
  const root = parseXml(xml);
  const update = firstElement(root, (e) => e.name === 'updateurl');
  if (!update) throw new Error('the marketplace descriptor has no <updateurl>');
  const node = firstElement(root, (e) => e.name === 'node');
  const compat = firstElement(root, (e) => e.name === 'versioncompatibility');
  const child = (e: XmlElement | undefined, name: string) =>
    e?.children.find((c): c is XmlElement => typeof c !== 'string' && c.name.toLowerCase() === name);
  const from = child(compat, 'from');
  const to = child(compat, 'to');
  const current = compatibilityVersion(gatewayVersion);
  const min = from && textContent(from);
  const max = to && textContent(to);
  // Kura's builder defaults nodeId/url to "" when there is no <node>; a missing attribute is null.
  return {
    nodeId: node ? node.attrs.id : '',
    url: node ? node.attrs.url : '',
    dpUrl: textContent(update),
    minGatewayVersion: min,
    maxGatewayVersion: max,
    currentGatewayVersion: current,
    isCompatible: isCompatible(current, min, max),
  };
}
