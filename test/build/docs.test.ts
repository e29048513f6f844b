// The documentation shipped in the repository: README.md, COMPATIBILITY.md and docs/*.md link only
// files inside the repository (and headings that exist), never the reference material outside it,
// and the configuration reference names every key the daemon accepts.
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from '../helpers/daemon.js';
import { validateConfig, validateDaemon } from '../../src/configuration/config.js';
import { DriverRegistry } from '../../src/drivers/registry.js';
import { builtinDrivers } from '../../src/drivers/builtin.js';

const docsDir = path.join(ROOT, 'docs');
const files = ['README.md', 'COMPATIBILITY.md', ...fs.readdirSync(docsDir).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
const read = (rel: string) => fs.readFileSync(path.join(ROOT, rel), 'utf8');

/** The text outside fenced code blocks, one entry per line (code lines blanked, so numbers stay right). */
function prose(md: string): string[] {
  let fence = false;
  return md.split('\n').map((line) => {
    if (/^\s*(```|~~~)/.test(line)) {
      fence = !fence;
      return '';
    }
    return fence ? '' : line;
  });
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, duplicates numbered. */
function anchors(md: string): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of prose(md)) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = m[1].toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

t.test('documents link only files inside the repository, and headings that exist', async (t) => {
  let links = 0;
  for (const file of files) {
    const lines = prose(read(file));
    lines.forEach((line, i) => {
      const where = `${file}:${i + 1}`;
      const text = line.replace(/`[^`]*`/g, '');
      for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1];
        if (/^(https?:|mailto:)/.test(target)) continue;
        links++;
        const [rel, anchor] = target.split('#');
        const resolved = rel === '' ? path.join(ROOT, file) : path.resolve(path.dirname(path.join(ROOT, file)), rel);
        if (path.relative(ROOT, resolved).startsWith('..')) {
          t.fail(`${where}: ${target} points outside the repository`);
          continue;
        }
        if (!fs.existsSync(resolved)) {
          t.fail(`${where}: ${target} does not exist`);
          continue;
        }
        if (anchor && resolved.endsWith('.md') && !anchors(fs.readFileSync(resolved, 'utf8')).has(anchor)) {
          t.fail(`${where}: ${target}: no heading with anchor #${anchor}`);
        }
      }
    });
  }
  t.ok(links > 20, `${links} relative links checked`);
});

t.test('documents never refer to the reference material outside the repository', async (t) => {
  for (const file of files) {
    read(file).split('\n').forEach((line, i) => {
      if (/\.\.\/shared|shared\/spec|\b(contract|interface|reference) §|\bkura\/[a-z-]+\.md/.test(line)) {
        t.fail(`${file}:${i + 1}: cites material outside the repository: ${line.trim()}`);
      }
    });
  }
  t.pass('checked');
});

t.test('docs/configuration.md and docs/drivers.md name every key the daemon accepts', async (t) => {
  const registry = new DriverRegistry(builtinDrivers());
  const { config } = validateConfig({}, registry, ROOT);
  const configuration = read('docs/configuration.md');
  const sections = { http: config.http, rest: config.rest, console: config.console, deploy: config.deploy, mqtt: config.mqtt };
  for (const key of ['dataDir', ...Object.keys(validateDaemon({}, '', []))]) {
    t.ok(configuration.includes(`| \`${key}\` |`), `configuration.md documents the top-level key ${key}`);
  }
  for (const [section, values] of Object.entries(sections)) {
    // The rows of the section's own heading (`## \`http\`: …` up to the next `## `).
    const start = configuration.indexOf(`\n## \`${section}\``);
    const end = configuration.indexOf('\n## ', start + 1);
    const rows = start < 0 ? [] : configuration.slice(start, end < 0 ? undefined : end).split('\n');
    for (const [key, value] of Object.entries(values)) {
      const row = rows.find((l) => l.startsWith(`| \`${key}\` |`));
      if (!t.ok(row, `configuration.md documents ${section}.${key} under its section's heading`) || !row) continue;
      // The default column shows the default (except paths the loader resolved against this checkout).
      if (typeof value === 'string' && path.isAbsolute(value) && value.startsWith(ROOT)) continue;
      const shown = typeof value === 'string' ? (value === '' ? '`""`' : `\`${value}\``) : `\`${JSON.stringify(value)}\``;
      const dflt = row.split(' | ')[2] ?? '';
      t.ok(dflt.includes(shown), `configuration.md: the default of ${section}.${key} is ${shown} (the row says ${dflt})`);
    }
  }
  const drivers = read('docs/drivers.md');
  for (const name of ['simulator', 'modbus', 'gpio']) {
    const f = registry.get(name)!;
    for (const key of [...f.instanceKeys, ...f.channelKeys]) t.ok(drivers.includes(`| \`${key}\` |`), `drivers.md documents ${name} property ${key}`);
  }
});

t.test('no planning placeholder is left in the documentation', async (t) => {
  for (const file of files) {
    read(file).split('\n').forEach((line, i) => {
      // An HTML comment renders as nothing: in these files it was only ever a note of work to do.
      if (line.includes('<!--')) t.fail(`${file}:${i + 1}: an HTML comment (placeholder): ${line.trim()}`);
      if (/\bgo(es)? here\b|\bTODO\b|\bTBD\b/.test(line)) t.fail(`${file}:${i + 1}: a placeholder: ${line.trim()}`);
    });
  }
  t.pass('checked');
});

t.test('docs/README.md lists every document in docs/', async (t) => {
  const index = read('docs/README.md');
  const listed = new Set([...index.matchAll(/\]\(([\w.-]+\.md)(#[^)]*)?\)/g)].map((m) => m[1]));
  const docs = fs.readdirSync(docsDir).filter((f) => f.endsWith('.md') && f !== 'README.md');
  t.ok(docs.length >= 9, `${docs.length} documents in docs/`);
  for (const f of docs) t.ok(listed.has(f), `docs/README.md links ${f}`);
});
