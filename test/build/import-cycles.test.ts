// Layers point one way (docs/architecture.md "Layers"). Two rules over the imports of src/, type-only
// imports included (a cycle through types still ties the modules together for a reader):
//   1. no import cycle between files (strongly connected components, Tarjan);
//   2. the folder table: each folder of src/ (and each file at its top) imports only the folders its
//      row names, and the rows themselves form layers (no folder may reach itself through them).
//      An import that runs from a lower layer back up to a higher one fails here, not in a review.
// The graph comes from TypeScript's own import scanner over every file of src/. The table a reader
// sees (docs/architecture.md "Layers", README "Layout") is held to this one.

import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const ROOT = path.resolve(import.meta.dirname ?? path.dirname(new URL(import.meta.url).pathname), '../..');
const SRC = path.join(ROOT, 'src');

/**
 * The folder table: who may import whom. A row is a folder of src/ (or a file at its top) and the
 * folders it may import; its own files import each other freely. Grouped from the ground up.
 */
export const FOLDER_TABLE: Record<string, readonly string[]> = {
  // ground: the request core, the validation toolkit, errors, JSON, timers; the logger; the version
  core: [],
  'log.ts': [],
  'version.ts': [],
  // the channel vocabulary: value types, modes, typed values, scaling, Kura's value text
  channels: ['core'],
  // the field and the disk
  drivers: ['core', 'channels', 'log.ts'],
  store: [],
  // features: the HTTP edge, assets at run time, plug-ins, authentication, deployment, the MQTT
  // transport, the remote command's runner, the runtime configuration (which combines every
  // feature's section)
  http: ['core', 'store', 'log.ts'],
  assets: ['core', 'channels', 'drivers', 'log.ts'],
  plugins: ['core', 'drivers', 'log.ts'],
  auth: ['core', 'http', 'store', 'log.ts', 'version.ts'],
  deploy: ['core', 'plugins', 'store', 'log.ts'],
  mqtt: ['core', 'channels', 'assets', 'store', 'log.ts', 'version.ts'],
  command: ['core', 'log.ts'],
  configuration: ['core', 'channels', 'drivers', 'assets', 'http', 'auth', 'deploy', 'mqtt', 'command', 'store', 'log.ts'],
  // the device's keystores and the TLS material the listeners and the broker connection take from them
  keystores: ['core', 'http', 'store', 'log.ts'],
  // front ends: every resource family whatever its transport; the field console's files
  api: ['core', 'channels', 'assets', 'auth', 'configuration', 'deploy', 'command', 'http', 'keystores', 'store', 'log.ts', 'version.ts'],
  console: ['core', 'http', 'log.ts'],
  // the daemon, assembled from all of the above; the command line that starts it
  'daemon.ts': ['core', 'log.ts', 'version.ts', 'channels', 'drivers', 'store', 'http', 'assets', 'plugins', 'auth', 'deploy', 'mqtt', 'command', 'configuration', 'keystores', 'api', 'console'],
  cli: ['daemon.ts', 'configuration', 'auth', 'drivers', 'keystores', 'store', 'log.ts', 'version.ts'],
};

function sourceGraph(dir: string): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (p.endsWith('.ts')) {
        const imports = ts.preProcessFile(fs.readFileSync(p, 'utf8'), true, true).importedFiles.map((i) => i.fileName);
        graph.set(
          path.relative(dir, p),
          imports.filter((n) => n.startsWith('.')).map((n) => path.relative(dir, path.resolve(path.dirname(p), n.replace(/\.js$/, '.ts')))),
        );
      }
    }
  };
  walk(dir);
  return graph;
}

/** The cycles of a graph: its strongly connected components of more than one node, or with a self-loop. */
function cycles(graph: Map<string, readonly string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string) => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || graph.get(v)!.includes(v)) out.push(scc.sort());
    }
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return out;
}

/** The folder of src/ a file belongs to: its first path segment (`drivers/modbus/tcp.ts` → `drivers`), or the file itself at the top. */
const folderOf = (file: string): string => file.split('/')[0]!;

/** What is wrong with a table: a row naming a folder that has no row, or rows that reach their own folder (no layering). */
function tableProblems(table: Record<string, readonly string[]>): string[] {
  const out: string[] = [];
  for (const [folder, allowed] of Object.entries(table)) {
    for (const a of allowed) if (!(a in table)) out.push(`${folder} may import ${a}, which has no row`);
    if (allowed.includes(folder)) out.push(`${folder} names itself`);
  }
  for (const c of cycles(new Map(Object.entries(table)))) if (c.length > 1) out.push(`the rows of ${c.join(', ')} reach each other: no layer is below the other`);
  return out;
}

/** The imports of a file graph that the table does not allow, and the files of folders without a row. */
function tableViolations(graph: Map<string, readonly string[]>, table: Record<string, readonly string[]>): string[] {
  const out: string[] = [];
  const unplaced = new Set<string>();
  for (const [file, imports] of graph) {
    const from = folderOf(file);
    if (!(from in table)) {
      unplaced.add(from);
      continue;
    }
    for (const target of imports) {
      const to = folderOf(target);
      if (to !== from && !table[from]!.includes(to)) out.push(`${file} imports ${target}: ${from} may not import ${to}`);
    }
  }
  for (const f of unplaced) out.push(`src/${f} has no row in the folder table: give it one (this file and docs/architecture.md "Layers")`);
  return out;
}

/** Each row's floor: 0 for one that imports nothing, else one above the highest row it may import. */
function floors(table: Record<string, readonly string[]>): Map<string, number> {
  const floor = new Map<string, number>();
  const of = (f: string): number => {
    if (!floor.has(f)) floor.set(f, Math.max(-1, ...table[f]!.map(of)) + 1);
    return floor.get(f)!;
  };
  for (const f of Object.keys(table)) of(f);
  return floor;
}

t.test('the cycle finder finds cycles', async (t) => {
  const g = new Map([
    ['configuration/config.ts', ['assets/config.ts']],
    ['assets/config.ts', ['auth/identity-store.ts']],
    ['auth/identity-store.ts', ['configuration/config.ts', 'log.ts']],
    ['log.ts', []],
    ['self.ts', ['self.ts']],
  ]);
  t.same(cycles(g), [['assets/config.ts', 'auth/identity-store.ts', 'configuration/config.ts'], ['self.ts']]);
  t.same(cycles(new Map([['a.ts', ['b.ts']], ['b.ts', []]])), []);
});

t.test('the folder table refuses an import back up, a folder without a row, and rows that are no layers', async (t) => {
  const table = { core: [], channels: ['core'], drivers: ['core', 'channels'], assets: ['core', 'channels', 'drivers'] };
  t.same(tableProblems(table), [], 'a layered table');
  const down = new Map([
    ['assets/runtime.ts', ['drivers/driver.ts', 'channels/types.ts', 'assets/types.ts']],
    ['drivers/driver.ts', ['channels/types.ts', 'core/errors.ts']],
    ['drivers/modbus/tcp.ts', ['drivers/driver.ts', 'core/timers.ts']],
    ['channels/types.ts', []],
    ['core/errors.ts', []],
  ]);
  t.same(tableViolations(down, table), [], 'imports that only run down pass');
  // A driver reaching up into assets (a lower layer importing a higher one), as drivers once took
  // the channel types from src/assets/.
  const up = new Map([...down, ['drivers/modbus/driver.ts', ['assets/types.ts', 'drivers/driver.ts']]]);
  t.same(tableViolations(up, table), ['drivers/modbus/driver.ts imports assets/types.ts: drivers may not import assets']);
  // The ground importing anything at all.
  t.same(tableViolations(new Map([['core/family.ts', ['channels/types.ts']]]), table), ['core/family.ts imports channels/types.ts: core may not import channels']);
  t.same(tableViolations(new Map([['gadgets/x.ts', ['core/errors.ts']]]), table), ['src/gadgets has no row in the folder table: give it one (this file and docs/architecture.md "Layers")']);
  // A table allowing both directions has no layer below the other: refused before any import is looked at.
  t.same(tableProblems({ core: [], http: ['core', 'auth'], auth: ['core', 'http'] }), ['the rows of auth, http reach each other: no layer is below the other']);
  t.same(tableProblems({ core: ['core'], api: ['daemon.ts'] }), ['core names itself', 'api may import daemon.ts, which has no row']);
  t.same(Object.fromEntries(floors(table)), { core: 0, channels: 1, drivers: 2, assets: 3 });
});

t.test('src/ has no import cycle', async (t) => {
  const graph = sourceGraph(SRC);
  t.ok(graph.size > 50, `scanned ${graph.size} files`);
  t.ok(graph.get('daemon.ts')!.includes('configuration/config.ts'), 'imports are resolved to files');
  t.same(cycles(graph), [], 'no cycle');
});

t.test('src/ keeps to the folder table', async (t) => {
  t.same(tableProblems(FOLDER_TABLE), [], 'the table is layered');
  const graph = sourceGraph(SRC);
  t.same(tableViolations(graph, FOLDER_TABLE), [], 'every import is one the table allows');
  const present = new Set([...graph.keys()].map(folderOf));
  t.same(Object.keys(FOLDER_TABLE).filter((f) => !present.has(f)), [], 'every row is a folder or file of src/');
  const byFloor = new Map<number, string[]>();
  for (const [f, n] of floors(FOLDER_TABLE)) byFloor.set(n, [...(byFloor.get(n) ?? []), f]);
  for (const n of [...byFloor.keys()].sort((a, b) => b - a)) t.comment(`floor ${n}: ${byFloor.get(n)!.join(' ')}`);
});

/** The lines of the markdown section under `## <heading>`, up to the next `## `. */
function sectionLines(md: string, heading: string): string[] {
  const lines = md.split('\n');
  const start = lines.indexOf(`## ${heading}`);
  if (start < 0) return [];
  const end = lines.findIndex((l, i) => i > start && l.startsWith('## '));
  return lines.slice(start + 1, end < 0 ? undefined : end);
}

/** A src/ path as its table row: `src/core/` → core, `src/daemon.ts` → daemon.ts. */
const rowOf = (cell: string): string | undefined => /^`src\/([\w.-]+?)\/?`$/.exec(cell.trim())?.[1];

/** docs/architecture.md's Layers table: row → floor and the rows it may import. */
function documentedTable(md: string): Map<string, { floor: number; imports: string[] }> {
  const out = new Map<string, { floor: number; imports: string[] }>();
  for (const line of sectionLines(md, 'Layers')) {
    const cells = line.split('|').slice(1, -1);
    if (cells.length < 3 || !/^\s*\d+\s*$/.test(cells[0]!)) continue;
    const row = rowOf(cells[1]!);
    if (row === undefined) continue;
    out.set(row, { floor: Number(cells[0]), imports: [...cells[2]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!).sort() });
  }
  return out;
}

t.test('docs/architecture.md "Layers" is the folder table, with its floors; README "Layout" names every row', async (t) => {
  const documented = documentedTable(fs.readFileSync(path.join(ROOT, 'docs/architecture.md'), 'utf8'));
  const floor = floors(FOLDER_TABLE);
  const expected = new Map(Object.entries(FOLDER_TABLE).map(([row, imports]) => [row, { floor: floor.get(row)!, imports: [...imports].sort() }]));
  t.same(Object.fromEntries(documented), Object.fromEntries(expected), 'the same rows, floors and imports as FOLDER_TABLE');
  const layout = sectionLines(fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8'), 'Layout').join('\n');
  const named = new Set([...layout.matchAll(/`src\/([\w.-]+?)(?:\/[^`]*)?`/g)].map((m) => m[1]!));
  t.same(Object.keys(FOLDER_TABLE).filter((row) => !named.has(row)), [], 'every row has its line in the README');
  t.same([...named].filter((row) => !(row in FOLDER_TABLE)), [], 'the README names no folder that is not there');
});
