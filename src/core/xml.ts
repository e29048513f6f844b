// A small, safe XML 1.0 toolkit for every XML the daemon reads or writes (Kura's CONF-V1 bodies,
// marketplace descriptors): a namespace-aware reader and a writer, no dependency.
//
// Reading (XML 1.0 Fifth Edition, Namespaces in XML 1.0 Third Edition) accepts elements,
// attributes, text, CDATA sections, comments, processing instructions and the XML declaration, the
// five predefined entities (&lt; &gt; &amp; &quot; &apos;) and character references. Everything that
// could make a small input expensive is refused rather than handled: a DOCTYPE (so no entity
// definitions, no external fetches: neither XXE nor "billion laughs" can happen), any other entity,
// input beyond a length, nesting beyond a depth, more elements or attributes than a count. Bytes
// must be UTF-8 (strictly: an invalid sequence is an error with its byte offset). Every refusal is an
// XmlError naming the problem with its offset, line and column, never another exception.
//
// The reader is event-driven (`readXml`: start tag, text, end tag), so a large document can be
// turned into the caller's own objects without a tree; `parseXml` builds the tree for small ones.
// Text between two tags comes as one piece (comments and CDATA sections do not split it), line
// ends normalised to LF and attribute values normalised as XML 1.0 §3.3.3 says for CDATA
// attributes (a literal tab, CR or LF becomes a space; one written as a character reference stays).
//
// Writing (`XmlWriter`) escapes text and attribute values so that they read back exactly (a CR or a
// tab in an attribute as a character reference, `>` in text), refuses characters XML 1.0 cannot
// carry (U+0000, other C0 controls, lone surrogates), checks names and that every prefix is
// declared in scope. Indentation, when asked for, goes only between the elements of a container:
// an element with text gets no whitespace added inside it, so what a reader sees is what was written.

export const XML_NAMESPACE = 'http://www.w3.org/XML/1998/namespace';
export const XMLNS_NAMESPACE = 'http://www.w3.org/2000/xmlns/';

/** Where an XmlError happened: characters from the start of the text; an encoding error has only a byte offset (line 0). */
export interface XmlPosition {
  offset: number;
  line: number;
  column: number;
}

/** The one error of the XML toolkit and of the codecs built on it: what is wrong, and where. */
export class XmlError extends Error {
  override name = 'XmlError';
  /** The problem without its position. */
  readonly reason: string;
  /** -1 when the error has no position in a text (a value the writer cannot write). */
  readonly offset: number;
  readonly line: number;
  readonly column: number;

  constructor(reason: string, at?: XmlPosition) {
    super(!at ? reason : at.line ? `${reason} at line ${at.line}, column ${at.column} (offset ${at.offset})` : `${reason} at byte ${at.offset}`);
    this.reason = reason;
    this.offset = at?.offset ?? -1;
    this.line = at?.line ?? 0;
    this.column = at?.column ?? 0;
  }
}

/** Line and column (both from 1, in characters) of `offset` in `text`; CR LF and a lone CR end a line as LF does. */
export function positionOf(text: string, offset: number): XmlPosition {
  let line = 1;
  let start = 0;
  for (let i = 0; i < offset && i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x0a || (c === 0x0d && text.charCodeAt(i + 1) !== 0x0a)) {
      line++;
      start = i + 1;
    }
  }
  return { offset, line, column: offset - start + 1 };
}

// ---- reading -------------------------------------------------------------------------------------

/** Bounds on what one document may cost. */
export interface XmlLimits {
  /** Characters of a text, or bytes of a byte input (checked before decoding). Default 4 MiB. */
  maxLength?: number;
  /** Elements open at once. Default 64. */
  maxDepth?: number;
  /** Elements in the document. Default 100,000. */
  maxElements?: number;
  /** Attributes of one element (namespace declarations included). Default 256. */
  maxAttributes?: number;
  /**
   * Namespaces in XML (default true): prefixes are resolved and must be declared, a name has at
   * most one colon. False reads names as written, as a parser that is not namespace-aware does
   * (what marketplace descriptors were read with).
   */
  namespaces?: boolean;
}

export const XML_DEFAULT_LIMITS: Readonly<Required<Omit<XmlLimits, 'namespaces'>>> = Object.freeze({
  maxLength: 4 * 1024 * 1024,
  maxDepth: 64,
  maxElements: 100_000,
  maxAttributes: 256,
});

/** A name as written and as resolved: `ns` is the namespace URI ('' for none). */
export interface XmlName {
  /** The qualified name as written (`esf:property`). */
  name: string;
  prefix: string;
  local: string;
  ns: string;
}

export interface XmlAttribute extends XmlName {
  value: string;
}

export interface XmlStartTag extends XmlName {
  /** The attributes in document order, namespace declarations left out. */
  attributes: XmlAttribute[];
  /** Offset of the tag's `<`. */
  offset: number;
  /** 1 for the root element. */
  depth: number;
}

/**
 * What readXml reports. A callback may throw `new XmlError(reason)` (without a position): the
 * reader gives it the position of the event it was reporting.
 */
export interface XmlHandler {
  start?(tag: XmlStartTag): void;
  /** The character data between two tags (never empty), entities and line ends resolved. */
  text?(text: string, offset: number): void;
  end?(tag: XmlStartTag, offset: number): void;
}

// Any character XML 1.0 §2.2 does not allow (C0 controls but tab, LF and CR; lone surrogates; U+FFFE, U+FFFF).
const NOT_XML_CHAR = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u;
// XML 1.0 §2.3 Name (NameStartChar NameChar*).
const NAME_START = ':A-Z_a-z\\u00C0-\\u00D6\\u00D8-\\u00F6\\u00F8-\\u02FF\\u0370-\\u037D\\u037F-\\u1FFF\\u200C\\u200D\\u2070-\\u218F\\u2C00-\\u2FEF\\u3001-\\uD7FF\\uF900-\\uFDCF\\uFDF0-\\uFFFD\\u{10000}-\\u{EFFFF}';
const NAME_CHARS = `${NAME_START}\\-.0-9\\u00B7\\u0300-\\u036F\\u203F\\u2040`;
const NAME = new RegExp(`[${NAME_START}][${NAME_CHARS}]*`, 'uy');
const WHOLE_NAME = new RegExp(`^[${NAME_START}][${NAME_CHARS}]*$`, 'u');
const XML_DECL = /<\?xml\s+version\s*=\s*(["'])1\.[0-9]+\1(?:\s+encoding\s*=\s*(["'])([A-Za-z][A-Za-z0-9._-]*)\2)?(?:\s+standalone\s*=\s*(["'])(?:yes|no)\4)?\s*\?>/y;
const ENTITIES: ReadonlyMap<string, string> = new Map([['lt', '<'], ['gt', '>'], ['amp', '&'], ['quot', '"'], ['apos', "'"]]);

const isSpace = (c: number) => c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d;
const hex = (c: number) => `U+${c.toString(16).toUpperCase().padStart(4, '0')}`;
const isXmlChar = (c: number) => c === 0x9 || c === 0xa || c === 0xd || (c >= 0x20 && c <= 0xd7ff) || (c >= 0xe000 && c <= 0xfffd) || (c >= 0x10000 && c <= 0x10ffff);

/** The offset of the first byte of `bytes` that does not continue a valid UTF-8 sequence. */
function badUtf8Offset(bytes: Uint8Array): number {
  for (let i = 0; i < bytes.length; ) {
    const b = bytes[i];
    const n = b < 0x80 ? 0 : b >= 0xc2 && b <= 0xdf ? 1 : b >= 0xe0 && b <= 0xef ? 2 : b >= 0xf0 && b <= 0xf4 ? 3 : -1;
    if (n < 0) return i;
    // The second byte's range excludes overlong forms, surrogates and code points past U+10FFFF.
    const lo = b === 0xe0 ? 0xa0 : b === 0xf0 ? 0x90 : 0x80;
    const hi = b === 0xed ? 0x9f : b === 0xf4 ? 0x8f : 0xbf;
    for (let k = 1; k <= n; k++) {
      const c = bytes[i + k];
      if (c === undefined) return i + k;
      if (k === 1 ? c < lo || c > hi : c < 0x80 || c > 0xbf) return i + k;
    }
    i += n + 1;
  }
  return -1;
}

/** Bytes as UTF-8 text for the reader: a UTF-8 byte-order mark is dropped, anything but UTF-8 refused. */
function decodeUtf8(bytes: Uint8Array): string {
  if ((bytes[0] === 0xfe && bytes[1] === 0xff) || (bytes[0] === 0xff && bytes[1] === 0xfe)) {
    throw new XmlError('UTF-16 is not supported, the document must be UTF-8', { offset: 0, line: 1, column: 1 });
  }
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    const at = badUtf8Offset(bytes);
    throw new XmlError('invalid UTF-8', { offset: at, line: 0, column: 0 });
  }
}

/**
 * Reads a document, reporting its elements and text to `handler` in document order. Throws
 * XmlError for anything that is not well-formed, namespace-well-formed (unless `namespaces` is
 * false) or within `limits`.
 */
export function readXml(input: string | Uint8Array, handler: XmlHandler, limits: XmlLimits = {}): void {
  const maxLength = limits.maxLength ?? XML_DEFAULT_LIMITS.maxLength;
  const maxDepth = limits.maxDepth ?? XML_DEFAULT_LIMITS.maxDepth;
  const maxElements = limits.maxElements ?? XML_DEFAULT_LIMITS.maxElements;
  const maxAttributes = limits.maxAttributes ?? XML_DEFAULT_LIMITS.maxAttributes;
  const nsAware = limits.namespaces !== false;
  const fromBytes = typeof input !== 'string';
  if (input.length > maxLength) {
    throw new XmlError(`document of ${input.length} ${fromBytes ? 'bytes' : 'characters'} is longer than the limit of ${maxLength}`);
  }
  const text = fromBytes ? decodeUtf8(input) : input;
  const n = text.length;
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  const fail = (reason: string, at = i): never => {
    throw new XmlError(reason, positionOf(text, at));
  };
  const bad = NOT_XML_CHAR.exec(text);
  if (bad) fail(`character ${hex(bad[0].codePointAt(0)!)} is not allowed in XML`, bad.index);

  // Handler callbacks: an XmlError they throw without a position gets the event's.
  const report = (at: number, call: () => void) => {
    try {
      call();
    } catch (err) {
      if (err instanceof XmlError && err.offset < 0) fail(err.reason, at);
      throw err;
    }
  };

  const stack: XmlStartTag[] = [];
  const bindings = new Map<string, string>(); // prefix ('' = default) → namespace URI in scope
  const undo: [string, string | undefined][][] = []; // per open element: the bindings it replaced
  let elements = 0;
  let rootSeen = false;
  let pending = '';
  let pendingAt = 0;

  const flush = () => {
    if (pending === '') return;
    const t = pending;
    pending = '';
    if (handler.text) report(pendingAt, () => handler.text!(t, pendingAt));
  };
  const addText = (piece: string, at: number) => {
    if (pending === '') pendingAt = at;
    pending += piece;
  };

  const nameAt = (at: number): string | undefined => {
    NAME.lastIndex = at;
    return NAME.exec(text)?.[0];
  };
  const skipSpace = () => {
    const from = i;
    while (i < n && isSpace(text.charCodeAt(i))) i++;
    return i - from;
  };

  /** Resolves the references of `raw` (text found at `at`). */
  const references = (raw: string, at: number): string => {
    let amp = raw.indexOf('&');
    if (amp < 0) return raw;
    let out = '';
    let from = 0;
    while (amp >= 0) {
      out += raw.slice(from, amp);
      const semi = raw.indexOf(';', amp + 1);
      const ref = semi < 0 ? '' : raw.slice(amp + 1, semi);
      if (semi < 0 || semi - amp > 40 || ref === '') fail("'&' that starts no reference (write &amp;)", at + amp);
      if (ref[0] === '#') {
        const code = /^#x[0-9a-fA-F]{1,8}$/.test(ref) ? parseInt(ref.slice(2), 16) : /^#[0-9]{1,10}$/.test(ref) ? parseInt(ref.slice(1), 10) : NaN;
        if (Number.isNaN(code)) fail(`bad character reference &${ref};`, at + amp);
        if (!isXmlChar(code)) fail(`character reference &${ref}; is not an XML character`, at + amp);
        out += String.fromCodePoint(code);
      } else {
        const e = ENTITIES.get(ref);
        if (e === undefined) fail(`undefined entity &${ref};`, at + amp);
        out += e;
      }
      from = semi + 1;
      amp = raw.indexOf('&', from);
    }
    return out + raw.slice(from);
  };
  const lineEnds = (s: string) => (s.includes('\r') ? s.replace(/\r\n?/g, '\n') : s);

  const splitName = (qname: string, at: number): [string, string] => {
    if (!nsAware) return ['', qname];
    const colon = qname.indexOf(':');
    if (colon < 0) return ['', qname];
    if (colon === 0 || colon === qname.length - 1 || qname.indexOf(':', colon + 1) >= 0) {
      fail(`bad name ${qname} (a namespace prefix and a local name, with one ':' between them)`, at);
    }
    return [qname.slice(0, colon), qname.slice(colon + 1)];
  };
  const resolve = (prefix: string, what: string, at: number): string => {
    if (prefix === 'xml') return XML_NAMESPACE;
    const ns = bindings.get(prefix);
    if (ns === undefined) return prefix === '' ? '' : fail(`undeclared namespace prefix ${prefix} in ${what}`, at);
    return ns;
  };

  const startTag = () => {
    const at = i;
    const qname = nameAt(i + 1);
    if (qname === undefined) fail('bad tag');
    if (stack.length === 0 && rootSeen) fail('more than one root element');
    if (++elements > maxElements) fail(`more than ${maxElements} elements`);
    if (stack.length >= maxDepth) fail(`nested too deeply (more than ${maxDepth} levels)`);
    i += 1 + qname!.length;
    const raw: [string, string, number][] = [];
    let empty = false;
    for (;;) {
      const space = skipSpace();
      if (i >= n) fail(`unclosed start tag <${qname}>`);
      if (text.startsWith('/>', i)) {
        i += 2;
        empty = true;
        break;
      }
      if (text.charCodeAt(i) === 0x3e) {
        i++;
        break;
      }
      const aAt = i;
      const aname = nameAt(i);
      if (aname === undefined || space === 0) fail(`bad attribute in <${qname}>`);
      i += aname!.length;
      skipSpace();
      if (text.charCodeAt(i) !== 0x3d) fail(`bad attribute in <${qname}>: '=' expected after ${aname}`);
      i++;
      skipSpace();
      const quote = text[i];
      if (quote !== '"' && quote !== "'") fail(`bad attribute in <${qname}>: the value of ${aname} must be quoted`);
      const end = text.indexOf(quote, i + 1);
      if (end < 0) fail(`unterminated value of attribute ${aname} in <${qname}>`);
      const value = text.slice(i + 1, end);
      const lt = value.indexOf('<');
      if (lt >= 0) fail(`'<' in the value of attribute ${aname}`, i + 1 + lt);
      if (raw.some(([k]) => k === aname)) fail(`duplicate attribute ${aname} in <${qname}>`, aAt);
      if (raw.length >= maxAttributes) fail(`more than ${maxAttributes} attributes in <${qname}>`, aAt);
      // §3.3.3: literal white space becomes a space (CR LF one space), references are kept as written.
      raw.push([aname!, references(value.replace(/\r\n|[\t\n\r]/g, ' '), i + 1), aAt]);
      i = end + 1;
    }
    const replaced: [string, string | undefined][] = [];
    if (nsAware) {
      for (const [k, v, aAt] of raw) {
        const p = k === 'xmlns' ? '' : k.startsWith('xmlns:') ? k.slice(6) : undefined;
        if (p === undefined) continue;
        if (p !== '') splitName(k, aAt);
        if (p === 'xmlns') fail('the prefix xmlns cannot be declared', aAt);
        if (p === 'xml' ? v !== XML_NAMESPACE : v === XML_NAMESPACE) fail(`the prefix xml and only it is bound to ${XML_NAMESPACE}`, aAt);
        if (v === XMLNS_NAMESPACE) fail(`nothing may be bound to ${XMLNS_NAMESPACE}`, aAt);
        if (p !== '' && v === '') fail(`namespace prefix ${p} bound to an empty name`, aAt);
        replaced.push([p, bindings.get(p)]);
        bindings.set(p, v);
      }
    }
    const [prefix, local] = splitName(qname!, at);
    const attributes: XmlAttribute[] = [];
    for (const [k, v, aAt] of raw) {
      if (nsAware && (k === 'xmlns' || k.startsWith('xmlns:'))) continue;
      const [ap, al] = splitName(k, aAt);
      // Namespaces in XML §6.2: an attribute without a prefix is in no namespace.
      const ans = ap === '' ? '' : resolve(ap, `attribute ${k}`, aAt);
      if (ap !== '' && attributes.some((a) => a.ns === ans && a.local === al)) fail(`duplicate attribute {${ans}}${al} in <${qname}>`, aAt);
      attributes.push({ name: k, prefix: ap, local: al, ns: ans, value: v });
    }
    const tag: XmlStartTag = { name: qname!, prefix, local, ns: nsAware ? resolve(prefix, `<${qname}>`, at) : '', attributes, offset: at, depth: stack.length + 1 };
    flush();
    rootSeen = true;
    if (handler.start) report(at, () => handler.start!(tag));
    if (empty) {
      if (handler.end) report(at, () => handler.end!(tag, at));
      for (const [p, old] of replaced.reverse()) old === undefined ? bindings.delete(p) : bindings.set(p, old);
    } else {
      stack.push(tag);
      undo.push(replaced);
    }
  };

  const endTag = () => {
    const at = i;
    const qname = nameAt(i + 2);
    if (qname === undefined) fail('bad closing tag');
    i += 2 + qname!.length;
    skipSpace();
    if (text.charCodeAt(i) !== 0x3e) fail('bad closing tag');
    i++;
    const top = stack[stack.length - 1];
    if (!top || top.name !== qname) fail(`unexpected </${qname}>${top ? ` (expected </${top.name}>)` : ''}`, at);
    flush();
    stack.pop();
    if (handler.end) report(at, () => handler.end!(top!, at));
    for (const [p, old] of undo.pop()!.reverse()) old === undefined ? bindings.delete(p) : bindings.set(p, old);
  };

  const declarationAt = i;
  while (i < n) {
    const lt = text.indexOf('<', i);
    if (lt !== i) {
      const end = lt < 0 ? n : lt;
      if (stack.length === 0) {
        for (let k = i; k < end; k++) if (!isSpace(text.charCodeAt(k))) fail('text outside the root element', k);
      } else {
        const raw = text.slice(i, end);
        const cdataEnd = raw.indexOf(']]>');
        if (cdataEnd >= 0) fail("']]>' in text (write ]]&gt;)", i + cdataEnd);
        addText(lineEnds(references(raw, i)), i);
      }
      i = end;
      if (lt < 0) break;
    }
    const next = text.charCodeAt(i + 1);
    if (next === 0x2f) endTag();
    else if (next === 0x3f) {
      const target = nameAt(i + 2);
      if (target === undefined) fail('bad processing instruction');
      if (target!.toLowerCase() === 'xml') {
        if (i !== declarationAt) fail('XML declaration not at the start of the document');
        XML_DECL.lastIndex = i;
        const m = XML_DECL.exec(text);
        if (!m) fail('bad XML declaration');
        if (fromBytes && m![3] !== undefined && !/^utf-?8$/i.test(m![3])) fail(`encoding ${m![3]} is not supported, the document must be UTF-8`);
        i += m![0].length;
        continue;
      }
      const end = text.indexOf('?>', i + 2 + target!.length);
      if (end < 0) fail('unterminated processing instruction');
      i = end + 2;
    } else if (next === 0x21) {
      if (text.startsWith('<!--', i)) {
        const end = text.indexOf('--', i + 4);
        if (end < 0) fail('unterminated comment');
        if (text.charCodeAt(end + 2) !== 0x3e) fail("'--' inside a comment", end);
        i = end + 3;
      } else if (text.startsWith('<![CDATA[', i)) {
        if (stack.length === 0) fail('CDATA outside the root element');
        const end = text.indexOf(']]>', i + 9);
        if (end < 0) fail('unterminated CDATA section');
        addText(lineEnds(text.slice(i + 9, end)), i);
        i = end + 3;
      } else if (text.startsWith('<!DOCTYPE', i)) {
        fail('DOCTYPE is not allowed');
      } else fail('bad markup <!');
    } else startTag();
  }
  if (stack.length > 0) fail(`unclosed <${stack[stack.length - 1].name}>`, n);
  if (!rootSeen) fail('no root element', n);
}

export type XmlNode = XmlElement | string;

export interface XmlElement extends XmlName {
  /** Attribute values by qualified name as written (no namespace declarations); no prototype. */
  attrs: Record<string, string>;
  attributes: XmlAttribute[];
  /** Elements and text (adjacent text is one string). */
  children: XmlNode[];
  offset: number;
}

/** Parses a document into a tree and returns its root element (see readXml for what is refused). */
export function parseXml(input: string | Uint8Array, limits?: XmlLimits): XmlElement {
  const stack: XmlElement[] = [];
  let root: XmlElement | undefined;
  readXml(
    input,
    {
      start(tag) {
        const attrs: Record<string, string> = Object.create(null);
        for (const a of tag.attributes) attrs[a.name] = a.value;
        const el: XmlElement = { name: tag.name, prefix: tag.prefix, local: tag.local, ns: tag.ns, attrs, attributes: tag.attributes, children: [], offset: tag.offset };
        if (stack.length) stack[stack.length - 1].children.push(el);
        else root = el;
        stack.push(el);
      },
      text(t) {
        stack[stack.length - 1].children.push(t);
      },
      end() {
        stack.pop();
      },
    },
    limits,
  );
  return root!;
}

/** The value of `el`'s attribute `local` in namespace `ns` ('' = no namespace, an unprefixed attribute). */
export function attribute(el: { attributes: XmlAttribute[] }, local: string, ns = ''): string | undefined {
  return el.attributes.find((a) => a.local === local && a.ns === ns)?.value;
}

/** The element children of `el`, optionally only those named `local` in namespace `ns`. */
export function childElements(el: XmlElement, local?: string, ns?: string): XmlElement[] {
  return el.children.filter((c): c is XmlElement => typeof c !== 'string' && (local === undefined || (c.local === local && (ns === undefined || c.ns === ns))));
}

/** The first element in document order (the root included) matching `pred`. */
export function firstElement(el: XmlElement, pred: (e: XmlElement) => boolean): XmlElement | undefined {
  if (pred(el)) return el;
  for (const c of el.children) {
    if (typeof c === 'string') continue;
    const found = firstElement(c, pred);
    if (found) return found;
  }
  return undefined;
}

/** DOM `getTextContent()`: all descendant text, concatenated. */
export function textContent(el: XmlElement): string {
  return el.children.map((c) => (typeof c === 'string' ? c : textContent(c))).join('');
}

// ---- writing -------------------------------------------------------------------------------------

export type XmlAttributeValue = string | number | bigint | boolean | undefined;
/** Attributes in the order to write them; an undefined value leaves the attribute out. */
export type XmlAttributes = Record<string, XmlAttributeValue> | Iterable<readonly [string, XmlAttributeValue]>;

export interface XmlWriterOptions {
  /** Written before each element of a container and its end tag ('' or absent: none). */
  indent?: string;
  /** `<?xml version="1.0" encoding="UTF-8"?>` first (default true). */
  declaration?: boolean;
}

const TEXT_ESCAPES: Readonly<Record<string, string>> = Object.freeze({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '\r': '&#13;' });
const ATTR_ESCAPES: Readonly<Record<string, string>> = Object.freeze({ '&': '&amp;', '<': '&lt;', '"': '&quot;', '\t': '&#9;', '\n': '&#10;', '\r': '&#13;' });

function checkChars(s: string): void {
  const bad = NOT_XML_CHAR.exec(s);
  if (bad) throw new XmlError(`character ${hex(bad[0].codePointAt(0)!)} cannot be written in XML 1.0`);
}

/** Text content escaped: it reads back exactly (CR included). */
export function escapeXmlText(s: string): string {
  checkChars(s);
  return /[&<>\r]/.test(s) ? s.replace(/[&<>\r]/g, (c) => TEXT_ESCAPES[c]) : s;
}

/** An attribute value escaped for double quotes: it reads back exactly (tabs and line ends included). */
export function escapeXmlAttribute(s: string): string {
  checkChars(s);
  return /[&<"\t\n\r]/.test(s) ? s.replace(/[&<"\t\n\r]/g, (c) => ATTR_ESCAPES[c]) : s;
}

/**
 * Writes a document element by element: `open`/`close` for containers, `leaf` for an element with
 * text (or none). The text written so far can be taken at any time (`take`), so a large document is
 * sent a piece at a time. Every name, prefix and character is checked as it is written: an XmlError
 * (without a position) for anything that would not read back.
 */
/** Names checked once per writer (most documents repeat a few names many times), up to this many. */
const CHECKED_NAMES = 256;
const NO_BINDINGS: [string, string | undefined][] = [];

export class XmlWriter {
  private out: string;
  private readonly indent: string;
  /** Line break and indentation by depth, made once. */
  private readonly indents: string[] = [];
  private readonly open_: { name: string; replaced: [string, string | undefined][]; children: boolean }[] = [];
  private readonly bindings = new Map<string, string>();
  /** Names already checked, for elements and attributes, while their prefixes are bound as then. */
  private readonly goodNames = new Set<string>();
  /** The last start tag still lacks its `>` (it may become `/>`). */
  private startPending = false;
  private rooted = false;

  constructor(opts: XmlWriterOptions = {}) {
    this.indent = opts.indent ?? '';
    this.out = opts.declaration === false ? '' : '<?xml version="1.0" encoding="UTF-8"?>';
  }

  /** Starts a container element; `ns` declares prefixes on it ('' for the default namespace). */
  open(name: string, attrs?: XmlAttributes, ns?: Record<string, string>): this {
    this.startTag(name, attrs, ns);
    return this;
  }

  /** An element with only text (`<name>text</name>`, `<name/>` when the text is empty or absent). */
  leaf(name: string, attrs?: XmlAttributes, text?: string, ns?: Record<string, string>): this {
    this.startTag(name, attrs, ns);
    if (text) {
      this.out += `>${escapeXmlText(text)}</${name}>`;
      this.startPending = false;
    }
    this.end(false);
    return this;
  }

  /** Ends the innermost open element. */
  close(): this {
    if (this.open_.length === 0) throw new XmlError('close() without an open element');
    this.end(true);
    return this;
  }

  /**
   * Appends markup this writer made before at the same place (an element taken with `take` and
   * copied with other attribute values in place, each escaped with escapeXmlAttribute): as it is,
   * unchecked.
   */
  append(markup: string): this {
    const parent = this.open_[this.open_.length - 1];
    if (parent) parent.children = true;
    if (this.startPending) {
      this.out += '>';
      this.startPending = false;
    }
    this.out += markup;
    return this;
  }

  /** Characters written and not yet taken. */
  pendingLength(): number {
    return this.out.length;
  }

  /** The text written since the last take. */
  take(): string {
    if (this.startPending) {
      this.out += '>';
      this.startPending = false;
    }
    const s = this.out;
    this.out = '';
    return s;
  }

  /** The rest of the document; every element must be closed. */
  finish(): string {
    if (this.open_.length > 0) throw new XmlError(`<${this.open_[this.open_.length - 1].name}> is not closed`);
    if (!this.rooted) throw new XmlError('no root element');
    return `${this.take()}\n`;
  }

  private startTag(name: string, attrs: XmlAttributes | undefined, ns: Record<string, string> | undefined): void {
    if (this.open_.length === 0 && this.rooted) throw new XmlError('more than one root element');
    const parent = this.open_[this.open_.length - 1];
    if (this.startPending) this.out += '>';
    if (parent) {
      parent.children = true;
      if (this.indent) this.out += this.lineAt(this.open_.length);
    }
    const replaced: [string, string | undefined][] = ns ? [] : NO_BINDINGS;
    let decl = '';
    // A namespace declaration changes what a prefixed name means: names are checked again after it.
    if (ns) this.goodNames.clear();
    for (const [p, uri] of ns ? Object.entries(ns) : []) {
      if (p !== '' && !isNcName(p)) throw new XmlError(`bad namespace prefix ${p}`);
      if (p === 'xml' || p === 'xmlns' || uri === XML_NAMESPACE || uri === XMLNS_NAMESPACE) throw new XmlError(`the prefix ${p || "''"} cannot be bound to ${uri}`);
      if (p !== '' && uri === '') throw new XmlError(`namespace prefix ${p} bound to an empty name`);
      replaced.push([p, this.bindings.get(p)]);
      this.bindings.set(p, uri);
      decl += ` ${p ? `xmlns:${p}` : 'xmlns'}="${escapeXmlAttribute(uri)}"`;
    }
    this.checkName(name, true);
    let text = `<${name}${decl}`;
    const seen: string[] = [];
    for (const [k, v] of attrs === undefined ? [] : Symbol.iterator in attrs ? (attrs as Iterable<readonly [string, XmlAttributeValue]>) : Object.entries(attrs)) {
      if (v === undefined) continue;
      this.checkName(k, false);
      if (k === 'xmlns' || k.startsWith('xmlns:')) throw new XmlError(`namespace declaration ${k} given as an attribute (declare it through ns)`);
      if (seen.includes(k)) throw new XmlError(`duplicate attribute ${k} in <${name}>`);
      seen.push(k);
      text += ` ${k}="${escapeXmlAttribute(String(v))}"`;
    }
    this.out += text;
    this.startPending = true;
    this.rooted = true;
    this.open_.push({ name, replaced, children: false });
  }

  private end(container: boolean): void {
    const el = this.open_.pop()!;
    if (this.startPending) this.out += '/>';
    else if (container) this.out += `${el.children && this.indent ? this.lineAt(this.open_.length) : ''}</${el.name}>`;
    this.startPending = false;
    if (el.replaced.length > 0) this.goodNames.clear();
    for (const [p, old] of el.replaced.reverse()) old === undefined ? this.bindings.delete(p) : this.bindings.set(p, old);
  }

  private lineAt(depth: number): string {
    return (this.indents[depth] ??= `\n${this.indent.repeat(depth)}`);
  }

  private checkName(qname: string, element: boolean): void {
    const key = element ? `<${qname}` : qname;
    if (this.goodNames.has(key)) return;
    this.checkNameOnce(qname, element);
    if (this.goodNames.size < CHECKED_NAMES) this.goodNames.add(key);
  }

  private checkNameOnce(qname: string, element: boolean): void {
    const colon = qname.indexOf(':');
    const prefix = colon < 0 ? '' : qname.slice(0, colon);
    if (!(colon < 0 ? isNcName(qname) : isNcName(prefix) && isNcName(qname.slice(colon + 1)))) throw new XmlError(`bad ${element ? 'element' : 'attribute'} name ${qname}`);
    if (prefix && prefix !== 'xml' && prefix !== 'xmlns' && !this.bindings.has(prefix)) throw new XmlError(`undeclared namespace prefix ${prefix} in ${qname}`);
  }
}

function isNcName(s: string): boolean {
  return !s.includes(':') && WHOLE_NAME.test(s);
}
