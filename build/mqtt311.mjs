// An esbuild plugin that specialises mqtt-packet to the protocol gatewayd speaks, MQTT 3.1.1
// (src/mqtt/client.ts always passes protocolVersion 4): MQTT 5 branches become dead code, and the
// calls of mqtt-packet's `debug` logger (a no-op in the bundle, build/shims/debug.cjs) are dropped
// with their message texts. About 6 KB of the bundle; the MQTT tests run against the bundle.
import fs from 'node:fs';

/** `debug(...)` statements at the start of a line, arguments balanced (strings skipped), → `void 0`. */
export function stripDebugCalls(text) {
  let out = '';
  let from = 0;
  const re = /(^|\n)([ \t]*)debug\(/g;
  let m;
  while ((m = re.exec(text))) {
    const start = m.index + m[1].length;
    let depth = 0;
    let quote = null;
    let j = re.lastIndex - 1;
    for (; j < text.length; j++) {
      const c = text[j];
      if (quote) {
        if (c === '\\') j++;
        else if (c === quote) quote = null;
      } else if (c === "'" || c === '"' || c === '`') quote = c;
      else if (c === '(') depth++;
      else if (c === ')' && --depth === 0) break;
    }
    if (depth !== 0) throw new Error('mqtt311: unbalanced debug( call');
    out += `${text.slice(from, start)}${m[2]}void 0`;
    from = j + 1;
    re.lastIndex = from;
  }
  return out + text.slice(from);
}

/** `<x>.protocolVersion === 5` (or `version`) → false, `!== 5` → true. */
export function onlyMqtt311(text) {
  return text.replace(/\b[\w.]*(?:protocolVersion|version)\s*===\s*5\b/g, 'false').replace(/\b[\w.]*(?:protocolVersion|version)\s*!==\s*5\b/g, 'true');
}

export const mqtt311 = {
  name: 'mqtt-packet-3.1.1',
  setup(b) {
    b.onLoad({ filter: /[\\/]mqtt-packet[\\/](parser|writeToStream)\.js$/ }, (args) => ({
      contents: onlyMqtt311(stripDebugCalls(fs.readFileSync(args.path, 'utf8'))),
      loader: 'js',
    }));
  },
};
