// No module-level mutable state in src/ (docs/architecture.md "Rules the tests keep": the daemon is assembled from parts that can each
// be started in a test; two daemons in one process must not share anything). A top-level `let` or
// `var` is refused unless listed here with the reason it is harmless.

import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const SRC = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../src');

const ALLOWED: Record<string, string> = {
  'store/atomic.ts counter': 'a per-process sequence that only makes temporary file names unique',
  'core/clock.ts perf': "the process's own global performance object, fetched once: the same for every daemon",
};

function topLevelMutables(file: string): string[] {
  const sf = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const out: string[] = [];
  for (const st of sf.statements) {
    if (!ts.isVariableStatement(st)) continue;
    const flags = st.declarationList.flags;
    if (flags & ts.NodeFlags.Const) continue;
    for (const d of st.declarationList.declarations) out.push(d.name.getText(sf));
  }
  return out;
}

t.test('the scanner finds top-level let and var, not const or locals', async (t) => {
  const dir = fs.mkdtempSync(path.join(process.env.TMPDIR ?? '/tmp', 'gw-state-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const f = path.join(dir, 'x.ts');
  fs.writeFileSync(f, 'let a = 1;\nvar b;\nconst c = new Map();\nexport let d = 2;\nfunction g() { let e = 3; return e; }\n');
  t.same(topLevelMutables(f), ['a', 'b', 'd']);
});

t.test('src/ has no module-level mutable variable', async (t) => {
  const found: string[] = [];
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (p.endsWith('.ts')) for (const name of topLevelMutables(p)) found.push(`${path.relative(SRC, p)} ${name}`);
    }
  };
  walk(SRC);
  t.same(found.filter((f) => !(f in ALLOWED)), [], 'no top-level let/var outside the allowed list');
});
