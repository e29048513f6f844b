// Layers point one way: no import cycle in src/, type-only imports included (a cycle through types
// still ties the modules together for a reader). The graph comes from TypeScript's own import
// scanner over every file of src/; cycles are strongly connected components (Tarjan).

import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const SRC = path.resolve(import.meta.dirname ?? path.dirname(new URL(import.meta.url).pathname), '../../src');

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
function cycles(graph: Map<string, string[]>): string[][] {
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

t.test('the cycle finder finds cycles', async (t) => {
  const g = new Map([
    ['config/config.ts', ['assets/config.ts']],
    ['assets/config.ts', ['auth/identity-store.ts']],
    ['auth/identity-store.ts', ['config/config.ts', 'log.ts']],
    ['log.ts', []],
    ['self.ts', ['self.ts']],
  ]);
  t.same(cycles(g), [['assets/config.ts', 'auth/identity-store.ts', 'config/config.ts'], ['self.ts']]);
  t.same(cycles(new Map([['a.ts', ['b.ts']], ['b.ts', []]])), []);
});

t.test('src/ has no import cycle', async (t) => {
  const graph = sourceGraph(SRC);
  t.ok(graph.size > 50, `scanned ${graph.size} files`);
  t.ok(graph.get('daemon.ts')!.includes('configuration/config.ts'), 'imports are resolved to files');
  t.same(cycles(graph), [], 'no cycle');
});
