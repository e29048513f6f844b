// Just enough XML for marketplace descriptors: elements, attributes, text, CDATA, comments,
// processing instructions and the five predefined entities plus character references.
// A DOCTYPE is refused outright, as Kura's parser is configured to do (no entity expansion, no
// external fetches: the XXE and billion-laughs classes of attack do not apply).

export interface XmlElement {
  name: string;
  attrs: Record<string, string>;
  children: (XmlElement | string)[];
}

const MAX_DEPTH = 64;
// Sticky patterns matched at an offset, so a large document is never copied per tag.
const NAME = /[A-Za-z_:][-A-Za-z0-9_:.]*/y;
const SPACE = /\s*/y;
const ATTR = /([A-Za-z_:][-A-Za-z0-9_:.]*)\s*=\s*("([^"<]*)"|'([^'<]*)')/y;
const ENTITIES: Record<string, string> = { lt: '<', gt: '>', amp: '&', quot: '"', apos: "'" };

function decode(s: string): string {
  return s.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);/g, (m, ref: string) => {
    if (ref.startsWith('#x')) return String.fromCodePoint(parseInt(ref.slice(2), 16));
    if (ref.startsWith('#')) return String.fromCodePoint(parseInt(ref.slice(1), 10));
    const e = ENTITIES[ref];
    if (e === undefined) throw new Error(`XML: undefined entity ${m}`);
    return e;
  });
}

/** Parses a document and returns its root element; throws on malformed input. */
export function parseXml(text: string): XmlElement {
  const doc: XmlElement = { name: '#document', attrs: {}, children: [] };
  const stack: XmlElement[] = [doc];
  let i = 0;
  const fail = (why: string): never => {
    throw new Error(`XML: ${why} at offset ${i}`);
  };
  const at = (re: RegExp, pos: number): RegExpExecArray | null => {
    re.lastIndex = pos;
    return re.exec(text);
  };
  while (i < text.length) {
    const lt = text.indexOf('<', i);
    const top = stack[stack.length - 1]!;
    if (lt < 0 || lt > i) {
      const raw = text.slice(i, lt < 0 ? text.length : lt);
      if (stack.length > 1) top.children.push(decode(raw));
      else if (raw.trim() !== '') fail('text outside the root element');
      if (lt < 0) break;
      i = lt;
    }
    if (text.startsWith('<!--', i)) {
      const end = text.indexOf('-->', i + 4);
      if (end < 0) fail('unterminated comment');
      i = end + 3;
    } else if (text.startsWith('<![CDATA[', i)) {
      const end = text.indexOf(']]>', i + 9);
      if (end < 0) fail('unterminated CDATA');
      top.children.push(text.slice(i + 9, end));
      i = end + 3;
    } else if (text.startsWith('<?', i)) {
      const end = text.indexOf('?>', i + 2);
      if (end < 0) fail('unterminated processing instruction');
      i = end + 2;
    } else if (text.startsWith('<!', i)) {
      fail('DOCTYPE is not allowed');
    } else if (text.startsWith('</', i)) {
      const m = at(NAME, i + 2);
      if (!m) fail('bad closing tag');
      const end = text.indexOf('>', i);
      if (end < 0 || text.slice(i + 2 + m![0].length, end).trim() !== '') fail('bad closing tag');
      if (stack.length < 2 || top.name !== m![0]) fail(`unexpected </${m![0]}>`);
      stack.pop();
      i = end + 1;
    } else {
      const m = at(NAME, i + 1);
      if (!m) fail('bad tag');
      const el: XmlElement = { name: m![0], attrs: {}, children: [] };
      if (top === doc && doc.children.length > 0) fail('more than one root element');
      i += 1 + m![0].length;
      for (;;) {
        const ws = at(SPACE, i)![0].length;
        i += ws;
        if (text.startsWith('/>', i)) {
          i += 2;
          top.children.push(el);
          break;
        }
        if (text[i] === '>') {
          i += 1;
          top.children.push(el);
          if (stack.length > MAX_DEPTH) fail('nested too deeply');
          stack.push(el);
          break;
        }
        const a = at(ATTR, i);
        if (!a || ws === 0) fail(`bad attribute in <${el.name}>`);
        el.attrs[a![1]!] = decode(a![3] ?? a![4] ?? '');
        i += a![0].length;
      }
    }
  }
  if (stack.length !== 1) fail(`unclosed <${stack[stack.length - 1]!.name}>`);
  const root = doc.children.find((c): c is XmlElement => typeof c !== 'string');
  if (!root) fail('no root element');
  return root!;
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
