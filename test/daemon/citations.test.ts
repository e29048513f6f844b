// Comments in src/ cite what a reader of this repository can open: its own docs/ (by section name),
// or a public specification (Modbus Application Protocol clause, RFC, MQTT 3.1.1 [MQTT-x.y.z-n]),
// or Kura's behaviour by name (Kura's SessionRestService, …). Never the reference material that
// lives outside the repository (contract §…, reference §…, interface §…, kura/*.md, decision ids
// such as D17, Kura check numbers), which a clone does not have.
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from '../helpers/daemon.js';

const EXTERNAL: [RegExp, string][] = [
  [/\b(contract|reference|interface)\s*(§|\(§|section\b)/i, 'a section of the reference material'],
  [/\bkura\/[\w-]+\.md\b|\.\.\/shared\b|\bshared\/(spec|style)\b|\bstyle\.md\b/i, 'a file outside the repository'],
  [/\bD\d{1,3}\b/, 'a design-decision id'],
  [/\bcheck \d+\b/i, 'a numbered check of the reference material'],
];
// A bare `§` must belong to a public specification named on the same line or earlier in the file.
const PUBLIC_SPEC = /Modbus|\bRFC \d+|\bMQTT\b|Serial Line|TCP\/IP|POSIX|\bXML 1\.0\b|Namespaces in XML/;

function* sources(dir: string): Generator<string> {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) yield* sources(p);
    else if (/\.(ts|mjs|js)$/.test(e.name)) yield p;
  }
}

/** The problems of one file's text, at most one per line: `line: what`. */
export function externalCitations(text: string): string[] {
  const out: string[] = [];
  let specNamed = false;
  text.split('\n').forEach((line, i) => {
    if (PUBLIC_SPEC.test(line)) specNamed = true;
    const bad = EXTERNAL.find(([re]) => re.test(line));
    if (bad) out.push(`${i + 1}: cites ${bad[1]}: ${line.trim()}`);
    else if (line.includes('§') && !specNamed) out.push(`${i + 1}: § without a named public specification: ${line.trim()}`);
  });
  return out;
}

t.test('the rule catches what it must and lets public citations pass', async (t) => {
  t.same(externalCitations('// Contract §5: a missing file is a warning'), ['1: cites a section of the reference material: // Contract §5: a missing file is a warning']);
  t.equal(externalCitations('// evaluated live (D17)').length, 1);
  t.equal(externalCitations('// see kura/session-auth.md').length, 1);
  t.equal(externalCitations('// Kura drops the key (check 47)').length, 1);
  t.equal(externalCitations('// §6.1, in Kura\'s order').length, 1);
  t.same(externalCitations('// gzip magic (RFC 1952 §2.3.1)'), []);
  t.same(externalCitations('// Modbus Application Protocol V1.1b3\n// quantity limits (§6.3)'), []);
  t.same(externalCitations('// [MQTT-4.7.1-1] and docs/rest-api.md "session/v1"'), []);
});

t.test('src/ cites only the repository and public specifications', async (t) => {
  let files = 0;
  for (const file of sources(path.join(ROOT, 'src'))) {
    files++;
    for (const p of externalCitations(fs.readFileSync(file, 'utf8'))) t.fail(`${path.relative(ROOT, file)}:${p}`);
  }
  t.ok(files > 50, `${files} source files checked`);
});
