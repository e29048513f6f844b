// The one reader of JSON request bodies (bytes → UTF-8 → JSON, REST and MQTT alike), and a strict
// JSON (RFC 8259) tokenizer that keeps every number's source text, so a LONG such as
// 9223372036854775807 reaches BigInt without passing through a double (JSON.parse would round it
// to 9223372036854775808). Node 18/20 have no JSON.parse source-text access, hence this tokenizer.
// Gson turns a JSON number sent to a String field into its literal text (`1.50` stays "1.50",
// as Kura's REST services see it); keeping the text lets the asset API do the same.

import { RequestError } from './errors.js';

/**
 * Decodes a request body: strict UTF-8, then strict JSON (`exact` keeps number texts, see
 * parseExactJson). Undefined for an empty or blank body (the caller decides whether that is an
 * error); RequestError 400 naming the problem otherwise.
 */
export function readJsonBytes(buf: Buffer | undefined, opts: { exact?: boolean } = {}): unknown {
  if (buf === undefined || buf.length === 0) return undefined;
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(buf);
  } catch {
    throw new RequestError(400, 'Request body is not valid UTF-8');
  }
  if (text.trim() === '') return undefined;
  try {
    return opts.exact ? parseExactJson(text) : JSON.parse(text);
  } catch (err) {
    throw new RequestError(400, `Malformed JSON: ${(err as Error).message}`);
  }
}

/** A JSON number as written in the source. */
export class JsonNumber {
  constructor(readonly text: string) {}
}

export type ExactJson = null | boolean | string | JsonNumber | ExactJson[] | { [key: string]: ExactJson };

export class JsonSyntaxError extends Error {
  override name = 'JsonSyntaxError';
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;

/**
 * Parses `text` strictly. Objects have no prototype (so `__proto__` is just a key); on a duplicate
 * key the last one wins, as in JSON.parse. Nesting deeper than `maxDepth` is refused rather than
 * risking the stack. Throws JsonSyntaxError with the character position.
 */
export function parseExactJson(text: string, maxDepth = 64): ExactJson {
  let i = 0;
  const fail = (what: string): never => {
    throw new JsonSyntaxError(i >= text.length ? `${what} at end of input` : `${what} at position ${i}`);
  };
  const ws = () => {
    for (;;) {
      const c = text.charCodeAt(i);
      if (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d) i++;
      else return;
    }
  };
  const str = (): string => {
    i++; // opening quote
    let out = '';
    let start = i;
    for (;;) {
      if (i >= text.length) fail('Unterminated string');
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        out += text.slice(start, i++);
        return out;
      }
      if (c < 0x20) fail('Control character in string');
      if (c !== 0x5c) {
        i++;
        continue;
      }
      out += text.slice(start, i);
      const e = text[i + 1];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          const hex = text.slice(i + 2, i + 6);
          if (!/^[0-9a-fA-F]{4}$/.test(hex)) {
            i++;
            fail('Bad unicode escape');
          }
          out += String.fromCharCode(parseInt(hex, 16));
          i += 4;
          break;
        }
        default:
          i++;
          fail('Bad escape');
      }
      i += 2;
      start = i;
    }
  };
  const literal = (word: string, value: ExactJson): ExactJson => {
    if (text.startsWith(word, i)) {
      i += word.length;
      return value;
    }
    return fail('Unexpected token');
  };
  const value = (depth: number): ExactJson => {
    ws();
    const c = text[i];
    if (c === '{') {
      if (depth >= maxDepth) fail(`Nesting deeper than ${maxDepth}`);
      i++;
      const obj: { [key: string]: ExactJson } = Object.create(null);
      ws();
      if (text[i] === '}') {
        i++;
        return obj;
      }
      for (;;) {
        ws();
        if (text[i] !== '"') fail('Expected a property name');
        const k = str();
        ws();
        if (text[i] !== ':') fail("Expected ':'");
        i++;
        obj[k] = value(depth + 1);
        ws();
        if (text[i] === ',') i++;
        else if (text[i] === '}') {
          i++;
          return obj;
        } else fail("Expected ',' or '}'");
      }
    }
    if (c === '[') {
      if (depth >= maxDepth) fail(`Nesting deeper than ${maxDepth}`);
      i++;
      const arr: ExactJson[] = [];
      ws();
      if (text[i] === ']') {
        i++;
        return arr;
      }
      for (;;) {
        arr.push(value(depth + 1));
        ws();
        if (text[i] === ',') i++;
        else if (text[i] === ']') {
          i++;
          return arr;
        } else fail("Expected ',' or ']'");
      }
    }
    if (c === '"') return str();
    if (c === 't') return literal('true', true);
    if (c === 'f') return literal('false', false);
    if (c === 'n') return literal('null', null);
    NUMBER.lastIndex = i;
    const m = NUMBER.exec(text);
    if (!m) return fail(i >= text.length ? 'Unexpected end' : 'Unexpected token');
    i += m[0].length;
    return new JsonNumber(m[0]);
  };
  const v = value(0);
  ws();
  if (i < text.length) fail('Unexpected data after the JSON value');
  return v;
}

export function isJsonObject(v: ExactJson | undefined): v is { [key: string]: ExactJson } {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof JsonNumber);
}
