// Kura's CONF-V1 XML (the bodies of Kura's CloudConfigurationHandler, which Eclipse Kapua's
// Configuration tab, its "Configuration Put" job step and its snapshot rollback speak) to and from
// the JSON DTOs of configuration/v2 (docs/configuration-v2.md): `{pid, definition, properties}`
// with properties `{type, value}`.
//
// The XML, in the namespaces Kura's XmlJavaComponentConfigurationsMapper writes and Kapua's JAXB
// binding (KuraDeviceConfiguration, KuraXmlConfigPropertiesAdapter, the metatype classes) reads:
//
//   <esf:configurations xmlns:esf="http://eurotech.com/esf/2.0" xmlns:ocd="http://www.osgi.org/xmlns/metatype/v1.2.0">
//     <esf:configuration pid="…">
//       <ocd:OCD description="…" id="…" name="…">                 (when the definition is shown)
//         <ocd:AD cardinality="0" default="…" description="…" id="…" max="…" min="…" name="…" required="true" type="Integer">
//           <ocd:Option label="…" value="…"/>
//         </ocd:AD>
//         <ocd:Icon resource="…" size="32"/>
//       </ocd:OCD>
//       <esf:properties>
//         <esf:property array="false" encrypted="false" name="…" type="Integer"><esf:value>5</esf:value></esf:property>
//
// and `<esf:snapshot-ids><esf:snapshotIds>1434122113492</esf:snapshotIds>…` for snapshot ids.
// Attributes are in the alphabetical order Kura's DOM serialiser gives them; values are Java's
// `toString` of the value (`1.0`, `1.0E7`), which is what Kapua parses them with
// (Integer.parseInt, Double.parseDouble, …).
//
// What Kapua's binding needs of a reply, and why the encoder never writes otherwise:
//   - a property with no `<esf:value>`, or an empty one for a type other than String and Password,
//     reads as null, and Kapua's Collectors.toMap of the properties fails on a null: the whole
//     configuration list is lost. So an empty array is left out (as Kura does), a null scalar too;
//   - each property name once per configuration (toMap fails on a duplicate key);
//   - `type` one of its ten names (an unknown one is an unmarshalling error, which Kapua's XmlUtil
//     treats as fatal); an AD's `type` is required too (its console reads `getType().value()`).
// Passwords are never written: every Password value is the placeholder `placeholder` in clear
// (`encrypted="false"`, so Kapua reads exactly that text), whatever the DTO carries. Kapua sends
// it back base64-encoded with `encrypted="true"` (KuraPasswordPropertyAdapter); a Password that
// decodes to the placeholder is reported in `keepStored` and left out of the properties, so that a
// caller cannot store it as the new secret by mistake.
//
// Reading is as strict as writing: an unknown element, a missing pid, name or type, a value that
// is not of its type or outside its range (Java's: an Integer is 32 bits, a Byte 8), a BOOLEAN other
// than true/false in any letter case or 1/0, a duplicate pid or property are XmlErrors naming the
// configuration, the property and the line. A LONG beyond 2^53 is a bigint (a JSON number would
// round it).

import { readXml, XmlError, XmlWriter, escapeXmlAttribute, escapeXmlText, type XmlLimits, type XmlStartTag, attribute } from '../../core/xml.js';

export const ESF_NAMESPACE = 'http://eurotech.com/esf/2.0';
export const OCD_NAMESPACE = 'http://www.osgi.org/xmlns/metatype/v1.2.0';
/** What a Password property shows instead of its value (configuration/v2's placeholder). */
export const PASSWORD_PLACEHOLDER = 'placeholder';

/** configuration/v2's property types and their names in the XML. */
const XML_TYPES = {
  STRING: 'String',
  LONG: 'Long',
  DOUBLE: 'Double',
  FLOAT: 'Float',
  INTEGER: 'Integer',
  BYTE: 'Byte',
  CHAR: 'Char',
  BOOLEAN: 'Boolean',
  SHORT: 'Short',
  PASSWORD: 'Password',
} as const;
export type KuraPropertyType = keyof typeof XML_TYPES;
const TYPE_OF_XML = new Map(Object.entries(XML_TYPES).map(([k, v]) => [v as string, k as KuraPropertyType]));
const typeOf = (t: unknown): KuraPropertyType | undefined => (typeof t === 'string' && Object.hasOwn(XML_TYPES, t) ? (t as KuraPropertyType) : undefined);

// Java's integer ranges (Byte, Short, Integer, Long).
const RANGES: Partial<Record<KuraPropertyType, [bigint, bigint]>> = {
  BYTE: [-128n, 127n],
  SHORT: [-32768n, 32767n],
  INTEGER: [-2147483648n, 2147483647n],
  LONG: [-(2n ** 63n), 2n ** 63n - 1n],
};

// ---- the DTOs (configuration/v2's shapes, src/configuration/model.ts) --------------------------------

/** `{type, value}`: value a string, number, boolean or bigint (LONG), or an array of them (null elements allowed). */
export interface PropertyDto {
  type: string;
  value: unknown;
}
export interface OptionDto {
  label: string;
  value: string;
}
export interface AdDto {
  id: string;
  name?: string;
  description?: string;
  type: string;
  cardinality?: number;
  min?: string;
  max?: string;
  defaultValue?: string;
  isRequired?: boolean;
  option?: OptionDto[];
}
/** An OCD icon (Kura shows them from the metatype; configuration/v2's DTO has none). */
export interface IconDto {
  resource: string;
  size: number;
}
export interface OcdDto {
  id: string;
  name?: string;
  description?: string;
  /** Any iterable: an asset's ADs may be made one at a time while they are written. */
  ad?: Iterable<AdDto>;
  /**
   * ADs repeated for each of `channels` after `ad`: for channel `ch`, every AD of `ads` with id
   * `<ch>#<id>`, named by its `name` (its label) or else `<ch>#<id>` too (an asset's channel properties). The same markup as those ADs given in `ad`,
   * made from one copy of the group per document with each channel's name put in its places.
   */
  channelAds?: { ads: readonly AdDto[]; channels: Iterable<string> };
  icon?: IconDto[];
}
export interface ConfigurationDto {
  pid: string;
  definition?: OcdDto;
  /** A record as the DTO has it, or entries made one at a time; undefined or null values are left out. */
  properties?: Record<string, PropertyDto | undefined> | Iterable<readonly [string, PropertyDto | undefined]>;
}

// ---- numbers as Java writes and reads them -------------------------------------------------------

/** Java's Double.toString (`1.0`, `1.0E7`, `1.0E-4`), with JavaScript's shortest digits. */
export function javaDoubleText(d: number): string {
  if (Number.isNaN(d)) return 'NaN';
  if (!Number.isFinite(d)) return d > 0 ? 'Infinity' : '-Infinity';
  if (d === 0) return Object.is(d, -0) ? '-0.0' : '0.0';
  const abs = Math.abs(d);
  if (abs >= 1e-3 && abs < 1e7) {
    const s = String(d);
    return s.includes('.') ? s : `${s}.0`;
  }
  const [mant, exp] = d.toExponential().split('e');
  return `${mant.includes('.') ? mant : `${mant}.0`}E${exp.replace('+', '')}`;
}

/** The double with the shortest digits that round to float32 `f` (what Gson and Float.toString show). */
function shortestFloat(f: number): number {
  if (!Number.isFinite(f) || f === 0) return f;
  for (let p = 1; p <= 9; p++) {
    const n = Number(f.toPrecision(p));
    if (Math.fround(n) === f) return n;
  }
  return f;
}

// Java's decimal floating-point literal (Double.parseDouble after its trim); hexadecimal is no number here.
const DECIMAL = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?[fFdD]?$/;
const INTEGER = /^[+-]?\d+$/;

// ---- writing -------------------------------------------------------------------------------------

const NAMESPACES = { esf: ESF_NAMESPACE, ocd: OCD_NAMESPACE };
const INDENT = '    '; // Kura's transformer indents by 4
const PIECE = 16 * 1024;

/** A writer error with the configuration and property it is about. */
const about = (pid: string, what: string, err: unknown): never => {
  throw new XmlError(`configuration ${pid}, ${what}: ${err instanceof XmlError ? err.reason : (err as Error)?.message ?? String(err)}`);
};

/** One value's text as Kura writes it (`String.valueOf`); throws when it is no value of `type`. */
function valueText(type: KuraPropertyType, v: unknown): string {
  switch (type) {
    case 'STRING':
      if (typeof v !== 'string') throw new XmlError(`${JSON.stringify(v)} is not a String`);
      return v;
    case 'PASSWORD':
      return PASSWORD_PLACEHOLDER;
    case 'BOOLEAN':
      if (typeof v !== 'boolean') throw new XmlError(`${String(v)} is not a Boolean`);
      return String(v);
    case 'CHAR':
      if (typeof v !== 'string' || v.length !== 1) throw new XmlError(`${JSON.stringify(v)} is not a Char`);
      return v;
    case 'DOUBLE':
    case 'FLOAT': {
      if (typeof v === 'number') return javaDoubleText(type === 'FLOAT' ? shortestFloat(Math.fround(v)) : v);
      // configDto (src/configuration/model.ts) carries a double as Java's text behind U+0001.
      const s = typeof v === 'string' ? (v.startsWith('\u0001') ? v.slice(1) : v) : undefined;
      if (s === undefined || !DECIMAL.test(s)) throw new XmlError(`${JSON.stringify(v)} is not a ${XML_TYPES[type]}`);
      return s;
    }
    default: {
      const [lo, hi] = RANGES[type]!;
      const n = typeof v === 'bigint' ? v : typeof v === 'number' && Number.isInteger(v) ? BigInt(v) : typeof v === 'string' && INTEGER.test(v) ? BigInt(v) : undefined;
      if (n === undefined || n < lo || n > hi) throw new XmlError(`${typeof v === 'bigint' ? v : JSON.stringify(v)} is not a ${XML_TYPES[type]} (from ${lo} to ${hi})`);
      return n.toString();
    }
  }
}

const VALUE_MARK = '\uE000value\uE000';

/**
 * `shapes` as for writeOcd: a scalar property with a value is copied from the markup of the first
 * one of its type, its name and value in place.
 */
function writeProperty(w: XmlWriter, pid: string, name: string, p: PropertyDto, shapes: Map<string, [string, string, string]>): void {
  const type = typeOf(p.type);
  if (type && !Array.isArray(p.value) && p.value !== null && p.value !== undefined) {
    let text: string;
    try {
      text = valueText(type, p.value);
    } catch (err) {
      return about(pid, `property ${name}`, err);
    }
    if (text !== '') {
      const shape = `property ${type}`;
      let made = shapes.get(shape);
      if (!made && shapes.size < MAX_SHAPES) {
        const before = w.take();
        w.open('esf:property', [
          ['array', false],
          ['encrypted', false],
          ['name', NAME_MARK],
          ['type', XML_TYPES[type]],
        ]);
        w.leaf('esf:value', undefined, VALUE_MARK);
        w.close();
        const [head, rest] = w.take().split(NAME_MARK);
        const [middle, tail] = rest.split(VALUE_MARK);
        shapes.set(shape, (made = [oneByte(head), oneByte(middle), oneByte(tail)]));
        w.append(before);
      }
      if (made) {
        try {
          w.append(made[0] + escapeXmlAttribute(name) + made[1] + escapeXmlText(text) + made[2]);
        } catch (err) {
          about(pid, `property ${name}`, err);
        }
        return;
      }
    }
  }
  writePropertyElement(w, pid, name, p);
}

/** One property written element by element (arrays, empty values, and what the copies start from). */
function writePropertyElement(w: XmlWriter, pid: string, name: string, p: PropertyDto): void {
  const type = typeOf(p.type);
  if (!type) about(pid, `property ${name}`, new XmlError(`unknown type ${JSON.stringify(p.type)} (one of ${Object.keys(XML_TYPES).join(' ')})`));
  const values = Array.isArray(p.value) ? p.value : [p.value];
  // An empty array or a null has no value Kapua could read (see the header): left out, as Kura does.
  if (values.length === 0 || p.value === null || p.value === undefined) return;
  try {
    const texts = values.map((v) => (v === null || v === undefined ? '' : valueText(type!, v)));
    w.open('esf:property', [
      ['array', Array.isArray(p.value)],
      ['encrypted', false],
      ['name', name],
      ['type', XML_TYPES[type!]],
    ]);
    for (const t of texts) w.leaf('esf:value', undefined, t);
    w.close();
  } catch (err) {
    about(pid, `property ${name}`, err);
  }
}

// Stand-ins for an AD's id and name in the markup kept for its shape (private-use characters, which
// XML 1.0 allows and no attribute escaping changes).
const ID_MARK = '\uE000id\uE000';
const NAME_MARK = '\uE000name\uE000';
const CHANNEL_MARK = '\uE000channel\uE000';

/**
 * `s` as a string of one byte per character when all its characters fit one: the pieces split from
 * markup that held a mark (U+E000 and up) are two-byte strings in V8, and so is all text they are
 * joined into, which then costs about twice as much to encode as UTF-8 before it is compressed.
 */
function oneByte(s: string): string {
  return /^[\0-\xff]*$/.test(s) ? Buffer.from(s, 'latin1').toString('latin1') : s;
}

/** Shapes kept per document: an asset repeats a few; many distinct ones are written one by one. */
const MAX_SHAPES = 512;

/** What makes two ADs the same markup but for their id and name; undefined when an AD is not copied. */
function adShape(a: AdDto): string | undefined {
  const texts = [a.type, String(a.cardinality ?? 0), a.defaultValue ?? '\u0000', a.description ?? '\u0000', a.max ?? '\u0000', a.min ?? '\u0000', String(a.isRequired ?? false)];
  for (const op of a.option ?? []) texts.push(op.label, op.value);
  const shape = texts.join('\u0001');
  return shape.includes('\uE000') ? undefined : shape;
}

function writeAd(w: XmlWriter, a: AdDto, type: KuraPropertyType): void {
  const attrs: [string, string | number | boolean | undefined][] = [
    ['cardinality', a.cardinality ?? 0],
    ['default', a.defaultValue],
    ['description', a.description],
    ['id', a.id],
    ['max', a.max],
    ['min', a.min],
    ['name', a.name ?? a.id],
    ['required', a.isRequired ?? false],
    ['type', XML_TYPES[type]],
  ];
  if (a.option?.length) {
    w.open('ocd:AD', attrs);
    for (const op of a.option) w.leaf('ocd:Option', [['label', op.label], ['value', op.value]]);
    w.close();
  } else w.leaf('ocd:AD', attrs);
}

/**
 * `shapes`: markup of the ADs written so far by shape (adShape), before and after the id and the
 * name: an asset's channel ADs repeat a few shapes for every channel, and a copy costs a fraction of
 * writing one.
 */
function writeOcd(w: XmlWriter, pid: string, o: OcdDto, shapes: Map<string, [string, string, string]>): Generator<string> {
  return (function* () {
    const blank = (s: string | undefined) => (s === undefined || s.trim() === '' ? undefined : s); // Kura leaves blank OCD texts out
    w.open('ocd:OCD', [
      ['description', blank(o.description)],
      ['id', blank(o.id)],
      ['name', blank(o.name)],
    ]);
    for (const a of o.ad ?? []) {
      const type = typeOf(a.type);
      try {
        if (!type) throw new XmlError(`unknown type ${JSON.stringify(a.type)}`);
        if (typeof a.id !== 'string' || a.id === '') throw new XmlError('no id');
        const shape = adShape(a);
        let made = shape === undefined ? undefined : shapes.get(shape);
        if (shape !== undefined && !made && shapes.size < MAX_SHAPES) {
          const before = w.take();
          writeAd(w, { ...a, id: ID_MARK, name: NAME_MARK }, type);
          const text = w.take();
          const [head, rest] = text.split(ID_MARK);
          const [middle, tail] = rest.split(NAME_MARK);
          shapes.set(shape, (made = [oneByte(head), oneByte(middle), oneByte(tail)]));
          w.append(before);
        }
        if (made) w.append(made[0] + escapeXmlAttribute(a.id) + made[1] + escapeXmlAttribute(a.name ?? a.id) + made[2]);
        else writeAd(w, a, type);
      } catch (err) {
        about(pid, `definition ${a.id}`, err);
      }
      if (w.pendingLength() >= PIECE) yield w.take();
    }
    if (o.channelAds && o.channelAds.ads.length > 0) {
      // The group's markup once (at the first channel), with CHANNEL_MARK where each channel's name
      // goes; then per channel the parts joined by its escaped name (`<ch>#<id>` escapes as the
      // escaped name, `#`, the escaped id: escaping is per character).
      const ads = o.channelAds.ads;
      const group = (ch: string) => {
        for (const a of ads) {
          const type = typeOf(a.type);
          try {
            if (!type) throw new XmlError(`unknown type ${JSON.stringify(a.type)}`);
            if (typeof a.id !== 'string' || a.id === '') throw new XmlError('no id');
            writeAd(w, { ...a, id: `${ch}#${a.id}`, name: a.name ?? `${ch}#${a.id}` }, type);
          } catch (err) {
            about(pid, `definition ${ch === CHANNEL_MARK ? '<channel>' : ch}#${a.id}`, err);
          }
        }
      };
      let parts: string[] | undefined;
      let marks = 0;
      for (const a of ads) marks += a.name === undefined ? 2 : 1;
      for (const ch of o.channelAds.channels) {
        if (!parts) {
          const before = w.take();
          group(CHANNEL_MARK);
          parts = w.take().split(CHANNEL_MARK).map(oneByte);
          w.append(before);
        }
        // A place per AD's id and per unlabelled AD's name; a definition whose own texts hold the mark is written channel by channel.
        if (parts.length !== marks + 1) group(ch);
        else {
          let name: string;
          try {
            name = escapeXmlAttribute(ch);
          } catch (err) {
            return about(pid, `definition ${ch}#${ads[0].id}`, err);
          }
          w.append(parts.join(name));
        }
        if (w.pendingLength() >= PIECE) yield w.take();
      }
    }
    for (const icon of o.icon ?? []) w.leaf('ocd:Icon', [['resource', icon.resource], ['size', icon.size]]);
    w.close();
  })();
}

/**
 * `<esf:configurations>` for `configs` (GET/configurations, GET/configurations/<pid>,
 * GET/snapshots/<id>), a piece at a time: a piece after each component and every 16 KB within
 * one, so an asset of thousands of channels is never one string. Components and ADs may be made
 * lazily by the iterables. Throws XmlError (naming pid and property) for a value that is not of its
 * type or a character XML 1.0 cannot carry.
 */
export function* configurationsXml(configs: Iterable<ConfigurationDto>): Generator<string> {
  const w = new XmlWriter({ indent: INDENT });
  const shapes = new Map<string, [string, string, string]>();
  w.open('esf:configurations', undefined, NAMESPACES);
  for (const c of configs) {
    if (typeof c.pid !== 'string' || c.pid === '') throw new XmlError('a configuration without a pid');
    w.open('esf:configuration', [['pid', c.pid]]);
    if (c.definition) yield* writeOcd(w, c.pid, c.definition, shapes);
    w.open('esf:properties');
    const props = c.properties ?? {};
    const entries = Symbol.iterator in props ? (props as Iterable<readonly [string, PropertyDto | undefined]>) : Object.entries(props);
    const seen = new Set<string>();
    for (const [name, p] of entries) {
      if (p === undefined || p === null) continue;
      if (seen.has(name)) about(c.pid, `property ${name}`, new XmlError('given twice'));
      seen.add(name);
      writeProperty(w, c.pid, name, p, shapes);
      if (w.pendingLength() >= PIECE) yield w.take();
    }
    w.close().close();
    yield w.take();
  }
  w.close();
  yield w.finish();
}

/** configurationsXml as one string (small replies and tests). */
export function configurationsXmlText(configs: Iterable<ConfigurationDto>): string {
  let s = '';
  for (const piece of configurationsXml(configs)) s += piece;
  return s;
}

/**
 * `<esf:snapshot-ids>` (GET/snapshots, EXEC/snapshot). Kapua's translator iterates the list without
 * a null check: with no id at all it fails on the reply (see the report of the caller).
 */
export function snapshotIdsXml(ids: Iterable<number | bigint>): string {
  const w = new XmlWriter({ indent: INDENT });
  w.open('esf:snapshot-ids', undefined, NAMESPACES);
  for (const id of ids) {
    if (typeof id === 'number' ? !Number.isSafeInteger(id) : typeof id !== 'bigint') throw new XmlError(`snapshot id ${String(id)} is not a Long`);
    w.leaf('esf:snapshotIds', undefined, String(id));
  }
  w.close();
  return w.finish();
}

// ---- reading -------------------------------------------------------------------------------------

export interface DecodedConfiguration {
  pid: string;
  /** Only with `definitions: true`, when the configuration has an `ocd:OCD`. */
  definition?: OcdDto & { ad: AdDto[]; icon: IconDto[] };
  /** configuration/v2 `{type, value}` properties, to apply as configuration/v2's update does. */
  properties: Record<string, PropertyDto>;
  /**
   * Password properties that carried the placeholder (in clear, or base64-encoded as Kapua sends
   * it): the caller keeps each one's stored secret. They are not in `properties`.
   */
  keepStored: string[];
}

export interface DecodeOptions {
  /** Read the `ocd:OCD` definitions too (a PUT's are ignored: the definitions are the device's). */
  definitions?: boolean;
  /** Bounds of the document (src/core/xml.ts); the defaults fit a CONF-V1 request (4 MiB). */
  limits?: XmlLimits;
}

/** Default bounds: a request's 4 MiB, the esf nesting (5 levels) with room to spare. */
export const CONF_V1_LIMITS: Readonly<XmlLimits> = Object.freeze({ maxLength: 4 * 1024 * 1024, maxDepth: 16, maxElements: 250_000, maxAttributes: 32 });

const XS_BOOLEAN = /^\s*(true|false|1|0)\s*$/;

/** A `{type, value}` value from an `<esf:value>` text, or the error to report. */
function parseValue(type: KuraPropertyType, text: string, inArray: boolean): unknown {
  if (text === '' && type !== 'STRING' && type !== 'PASSWORD') {
    // Kapua reads an empty array element of these types as null; a scalar one has no value.
    if (inArray) return null;
    throw new XmlError(`an empty value is no ${XML_TYPES[type]}`);
  }
  switch (type) {
    case 'STRING':
    case 'PASSWORD':
      return text;
    case 'BOOLEAN': {
      const t = text.toLowerCase();
      if (t === 'true' || t === '1') return true;
      if (t === 'false' || t === '0') return false;
      throw new XmlError(`${text} cannot be converted into a TypedValue of type BOOLEAN`);
    }
    case 'CHAR':
      if (text.length !== 1) throw new XmlError(`${JSON.stringify(text)} is not one Char`);
      return text;
    case 'DOUBLE':
    case 'FLOAT': {
      // Double.parseDouble trims what is not above a space; its NaN and Infinity have no JSON form.
      const t = text.replace(/^[\0- ]+|[\0- ]+$/g, '');
      const n = DECIMAL.test(t) ? Number(t.replace(/[fFdD]$/, '')) : NaN;
      const v = type === 'FLOAT' ? shortestFloat(Math.fround(n)) : n;
      if (!Number.isFinite(v)) throw new XmlError(`${text} is not a finite ${XML_TYPES[type]}`);
      return v;
    }
    default: {
      const [lo, hi] = RANGES[type]!;
      const n = INTEGER.test(text) ? BigInt(text) : undefined;
      if (n === undefined || n < lo || n > hi) throw new XmlError(`${text} is not a ${XML_TYPES[type]} (from ${lo} to ${hi})`);
      return type === 'LONG' && (n > BigInt(Number.MAX_SAFE_INTEGER) || n < BigInt(Number.MIN_SAFE_INTEGER)) ? n : Number(n);
    }
  }
}

/** A Password value as sent: base64 (strictly, of UTF-8 text) when `encrypted`, else as written. */
function passwordText(text: string, encrypted: boolean): string {
  if (!encrypted || text === '') return text;
  const b64 = text.replace(/\s+/g, '');
  if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{2,3})?$/.test(b64)) throw new XmlError('an encrypted Password is not base64');
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(b64, 'base64'));
  } catch {
    throw new XmlError('an encrypted Password is not base64 of UTF-8 text');
  }
}

interface PropertyState {
  name: string;
  type: KuraPropertyType;
  array: boolean;
  encrypted: boolean;
  values: string[];
  text: string | undefined;
}

const qname = (t: XmlStartTag) => (t.ns === ESF_NAMESPACE ? `esf:${t.local}` : t.ns === OCD_NAMESPACE ? `ocd:${t.local}` : t.ns ? `{${t.ns}}${t.local}` : t.local);

/**
 * Reads `<esf:configurations>` (a PUT/configurations body, or a reply as Kura writes it) into one
 * entry per `<esf:configuration>`, in document order. Throws XmlError for anything it cannot read
 * exactly, naming the configuration, the property and the line; nothing is returned then.
 */
export function decodeConfigurations(body: string | Uint8Array, opts: DecodeOptions = {}): DecodedConfiguration[] {
  const out: DecodedConfiguration[] = [];
  const pids = new Set<string>();
  let config: DecodedConfiguration | undefined;
  let seenProperties = false;
  let seenOcd = false;
  let prop: PropertyState | undefined;
  let ad: AdDto | undefined;
  let section: 'properties' | 'ocd' | undefined;
  let skipBelow = 0; // > 0: inside an element whose content is not read (a PUT's ocd:OCD, an OCD's extension)
  let where = '';

  const is = (t: XmlStartTag, ns: string, local: string) => t.ns === ns && t.local === local;
  const fail = (reason: string): never => {
    throw new XmlError(where ? `${where}: ${reason}` : reason);
  };
  const boolAttr = (t: XmlStartTag, name: string, dflt: boolean): boolean => {
    const v = attribute(t, name);
    if (v === undefined) return dflt;
    const m = XS_BOOLEAN.exec(v);
    if (!m) fail(`${name}="${v}" is not true or false`);
    return m![1] === 'true' || m![1] === '1';
  };
  const required = (t: XmlStartTag, name: string): string => {
    const v = attribute(t, name);
    if (v === undefined || v === '') fail(`<${qname(t)}> without ${name}`);
    return v!;
  };
  const xmlType = (t: XmlStartTag): KuraPropertyType => {
    const v = required(t, 'type');
    const type = TYPE_OF_XML.get(v);
    if (!type) fail(`unknown type="${v}" (one of ${[...TYPE_OF_XML.keys()].join(' ')})`);
    return type!;
  };

  const finishProperty = (p: PropertyState) => {
    const c = config!;
    if (!p.array && p.values.length !== 1) fail(p.values.length ? `array="false" with ${p.values.length} values` : 'no esf:value');
    const values = p.values.map((text) => {
      try {
        return parseValue(p.type, p.type === 'PASSWORD' ? passwordText(text, p.encrypted) : text, p.array);
      } catch (err) {
        return fail((err as XmlError).reason);
      }
    });
    if (p.type === 'PASSWORD' && values.length > 0 && values.some((v) => v === PASSWORD_PLACEHOLDER)) {
      if (!values.every((v) => v === PASSWORD_PLACEHOLDER)) fail(`an array of passwords mixes the placeholder "${PASSWORD_PLACEHOLDER}" with new values`);
      c.keepStored.push(p.name);
      return;
    }
    c.properties[p.name] = { type: p.type, value: p.array ? values : values[0] };
  };

  const start = (t: XmlStartTag) => {
    if (skipBelow) return;
    if (t.depth === 1) {
      if (!is(t, ESF_NAMESPACE, 'configurations')) fail(`the root element is <${qname(t)}>, not esf:configurations in namespace ${ESF_NAMESPACE}`);
    } else if (t.depth === 2) {
      if (!is(t, ESF_NAMESPACE, 'configuration')) fail(`unexpected <${qname(t)}> in esf:configurations`);
      const pid = attribute(t, 'pid');
      if (pid === undefined || pid === '') fail('<esf:configuration> without pid');
      where = `configuration ${pid}`;
      if (pids.has(pid!)) fail('given twice');
      pids.add(pid!);
      config = { pid: pid!, properties: Object.create(null), keepStored: [] };
      seenProperties = seenOcd = false;
      out.push(config);
    } else if (t.depth === 3) {
      if (is(t, ESF_NAMESPACE, 'properties')) {
        if (seenProperties) fail('more than one esf:properties');
        seenProperties = true;
        section = 'properties';
      } else if (is(t, OCD_NAMESPACE, 'OCD')) {
        if (seenOcd) fail('more than one ocd:OCD');
        seenOcd = true;
        section = 'ocd';
        if (!opts.definitions) skipBelow = t.depth;
        else {
          const d: DecodedConfiguration['definition'] = { id: attribute(t, 'id') ?? '', ad: [], icon: [] };
          for (const k of ['name', 'description'] as const) if (attribute(t, k) !== undefined) d[k] = attribute(t, k);
          config!.definition = d;
        }
      } else fail(`unexpected <${qname(t)}> in esf:configuration`);
    } else if (section === 'ocd') {
      if (t.depth === 4 && is(t, OCD_NAMESPACE, 'AD')) {
        const id = required(t, 'id');
        const cardinality = attribute(t, 'cardinality');
        if (cardinality !== undefined && !(INTEGER.test(cardinality) && Math.abs(Number(cardinality)) <= 2147483647)) fail(`AD ${id}: cardinality="${cardinality}" is not an Integer`);
        ad = {
          id,
          name: attribute(t, 'name'),
          description: attribute(t, 'description'),
          type: xmlType(t),
          cardinality: cardinality === undefined ? 0 : Number(cardinality),
          min: attribute(t, 'min'),
          max: attribute(t, 'max'),
          defaultValue: attribute(t, 'default'),
          // OSGi Metatype: an AD is required unless it says otherwise.
          isRequired: boolAttr(t, 'required', true),
        };
        for (const k of ['name', 'description', 'min', 'max', 'defaultValue'] as const) if (ad[k] === undefined) delete ad[k];
        config!.definition!.ad.push(ad);
      } else if (t.depth === 4 && is(t, OCD_NAMESPACE, 'Icon')) {
        const size = attribute(t, 'size');
        if (size !== undefined && !/^\+?\d{1,9}$/.test(size)) fail(`Icon size="${size}" is not a non-negative integer`);
        config!.definition!.icon.push({ resource: attribute(t, 'resource') ?? '', size: Number(size ?? 0) });
        skipBelow = t.depth;
      } else if (t.depth === 5 && ad && is(t, OCD_NAMESPACE, 'Option')) {
        const label = attribute(t, 'label');
        const value = attribute(t, 'value');
        if (label === undefined || value === undefined) fail(`AD ${ad.id}: <ocd:Option> without ${label === undefined ? 'label' : 'value'}`);
        (ad.option ??= []).push({ label: label!, value: value! });
        skipBelow = t.depth;
      } else skipBelow = t.depth; // Kapua's binding keeps other metatype content as "any": nothing to read
    } else if (t.depth === 4) {
      if (!is(t, ESF_NAMESPACE, 'property')) fail(`unexpected <${qname(t)}> in esf:properties`);
      const name = attribute(t, 'name');
      if (name === undefined || name === '') fail('<esf:property> without name');
      where = `configuration ${config!.pid}, property ${name}`;
      if (Object.hasOwn(config!.properties, name!) || config!.keepStored.includes(name!)) fail('given twice');
      prop = { name: name!, type: xmlType(t), array: boolAttr(t, 'array', false), encrypted: boolAttr(t, 'encrypted', false), values: [], text: undefined };
    } else if (t.depth === 5) {
      if (!is(t, ESF_NAMESPACE, 'value')) fail(`unexpected <${qname(t)}> in esf:property`);
      prop!.text = '';
    } else fail(`unexpected <${qname(t)}> in esf:value`);
  };

  readXml(
    body,
    {
      start,
      text(s) {
        if (skipBelow) return;
        if (prop?.text !== undefined) prop.text += s;
        else if (s.trim() !== '') fail(`text ${JSON.stringify(s.length > 20 ? `${s.slice(0, 20)}…` : s)} where only elements belong`);
      },
      end(t) {
        if (skipBelow) {
          if (t.depth === skipBelow) skipBelow = 0;
          return;
        }
        if (t.depth === 5 && prop && prop.text !== undefined) {
          prop.values.push(prop.text);
          prop.text = undefined;
        } else if (t.depth === 4 && prop) {
          finishProperty(prop);
          prop = undefined;
          where = `configuration ${config!.pid}`;
        } else if (t.depth === 4) ad = undefined;
        else if (t.depth === 3) section = undefined;
        else if (t.depth === 2) where = '';
      },
    },
    opts.limits ?? CONF_V1_LIMITS,
  );
  return out;
}

/** The ids of `<esf:snapshot-ids>` (to read a reply as Kapua does, and in tests). */
export function decodeSnapshotIds(body: string | Uint8Array, limits: XmlLimits = CONF_V1_LIMITS): bigint[] {
  const ids: bigint[] = [];
  let text: string | undefined;
  readXml(
    body,
    {
      start(t) {
        if (t.depth === 1 ? !(t.ns === ESF_NAMESPACE && t.local === 'snapshot-ids') : t.depth > 2 || !(t.ns === ESF_NAMESPACE && t.local === 'snapshotIds')) {
          throw new XmlError(`unexpected <${qname(t)}>${t.depth === 1 ? ', not esf:snapshot-ids' : ' in esf:snapshot-ids'}`);
        }
        if (t.depth === 2) text = '';
      },
      text(s) {
        if (text !== undefined) text += s;
        else if (s.trim() !== '') throw new XmlError('text where only elements belong');
      },
      end(t) {
        if (t.depth !== 2) return;
        // xs:long: white space collapsed, an optional sign.
        const v = text!.trim();
        const n = INTEGER.test(v) ? BigInt(v) : undefined;
        if (n === undefined || n < RANGES.LONG![0] || n > RANGES.LONG![1]) throw new XmlError(`snapshot id ${JSON.stringify(text)} is not a Long`);
        ids.push(n);
        text = undefined;
      },
    },
    limits,
  );
  return ids;
}
