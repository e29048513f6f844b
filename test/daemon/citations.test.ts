// Comments in src/, and the tests, benchmarks, robustness parts and Makefile that protect it, cite
// what a reader of this repository can open: its own docs/ (by section name), or a public
// specification (Modbus Application Protocol clause, RFC, MQTT 3.1.1 [MQTT-x.y.z-n], XML 1.0), or
// Kura's behaviour and Kura's own public tests by name (Kura's SessionRestService, RestServiceTest).
// Never the reference material that lives outside the repository (contract §…, reference §…,
// interface §…, kura/*.md, decision ids such as D17, numbered checks) nor an issue of the tracker
// ("issue 13 item 4"): a clone has neither, and a test says what behaviour it keeps.
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from '../helpers/daemon.js';

const EXTERNAL: [RegExp, string][] = [
  [/\b(contract|reference|interface)\s*(§|\(§|section\b)/i, 'a section of the reference material'],
  [/\bkura\/[\w-]+\.md\b|\.\.\/shared\b|\bshared\/(spec|style)\b|\bstyle\.md\b/i, 'a file outside the repository'],
  // Not a code point (U+D800).
  [/(?<!U\\?\+)\bD\d{1,3}\b/, 'a design-decision id'],
  [/\bchecks? \d+\b/i, 'a numbered check of the reference material'],
  [/\bissues? ?#?\d+/i, 'an issue of the tracker'],
];
// A bare `§` must belong to a public specification named on the same line or earlier in the file.
const PUBLIC_SPEC = /Modbus|\bRFC \d+|\bMQTT\b|Serial Line|TCP\/IP|POSIX|\bXML 1\.[01]\b|Namespaces in XML|Sparkplug/;

function* sources(dir: string, names = /\.(ts|mjs|js)$/): Generator<string> {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    // Built output and installed packages are not ours to word.
    if (e.isDirectory() && e.name !== 'node_modules' && e.name !== 'out') yield* sources(p, names);
    else if (e.isFile() && names.test(e.name)) yield p;
  }
}

/** Everything of test/, bench/ and robust/ a person wrote (code, scripts, notes), and the Makefile. */
function* harness(): Generator<string> {
  for (const dir of ['test', 'bench', 'robust']) yield* sources(path.join(ROOT, dir), /\.(ts|mjs|js|py|sh|md)$/);
  yield path.join(ROOT, 'Makefile');
}

// They hold the patterns they look for.
const PATTERN_FILES = new Set(['test/daemon/citations.test.ts', 'test/build/docs.test.ts']);

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
  t.equal(externalCitations("t.test('checks 16-17, 19: an asset')").length, 1);
  t.equal(externalCitations('// §6.1, in Kura\'s order').length, 1);
  t.same(externalCitations('// gzip magic (RFC 1952 §2.3.1)'), []);
  t.same(externalCitations('// XML 1.0 §2.3 Name (NameStartChar NameChar*)'), []);
  t.same(externalCitations('// Modbus Application Protocol V1.1b3\n// quantity limits (§6.3)'), []);
  t.same(externalCitations('// [MQTT-4.7.1-1] and docs/rest-api.md "session/v1"'), []);
  t.equal(externalCitations('// Acceptance of issue 5').length, 1);
  t.equal(externalCitations('# Benchmarks (issues 8 and 17)').length, 1);
  t.equal(externalCitations('// Security pass (issue 9.6)').length, 1);
  t.same(externalCitations("t.match(e, /contains U\\+D800/, 'a lone surrogate')"), []);
  t.same(externalCitations('// Namespaces in XML §6.2: an attribute without a prefix is in no namespace'), []);
});

t.test('src/ cites only the repository and public specifications', async (t) => {
  let files = 0;
  for (const file of sources(path.join(ROOT, 'src'))) {
    files++;
    for (const p of externalCitations(fs.readFileSync(file, 'utf8'))) t.fail(`${path.relative(ROOT, file)}:${p}`);
  }
  t.ok(files > 50, `${files} source files checked`);
});

t.test('test/, bench/, robust/ and the Makefile cite what they protect, not the tracker or the reference material', async (t) => {
  let files = 0;
  for (const file of harness()) {
    const rel = path.relative(ROOT, file);
    if (PATTERN_FILES.has(rel)) continue;
    files++;
    for (const p of externalCitations(fs.readFileSync(file, 'utf8'))) t.fail(`${rel}:${p}`);
  }
  t.ok(files > 150, `${files} files checked`);
});
