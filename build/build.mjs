// Builds dist/gatewayd.js: one ES module that runs with a stock `node` (18+) and no node_modules.
// It is ESM because the repository is (`"type": "module"`); installed images name it `gatewayd.mjs`
// so that it stays ESM wherever it is copied. CommonJS dependencies get `require` from the banner,
// which first refuses a Node older than 18 with a clear message (docs/installation.md).
// Next to the bundle it writes THIRD-PARTY-NOTICES: the licence texts of exactly the npm packages the
// bundle contains, found from esbuild's metafile, so the list cannot drift from what is shipped.
import { build } from 'esbuild';
import { mqtt311 } from './mqtt311.mjs';
import { BUNDLE_LIMIT } from './bundle-limit.mjs';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import zlib from 'node:zlib';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
// GATEWAYD_OUTFILE / GATEWAYD_VERSION / GATEWAYD_BUILD_PLUGIN (a module whose default export is an
// esbuild plugin): second builds for the over-the-air test (test/build/ota.test.ts), same code path.
const outfile = process.env.GATEWAYD_OUTFILE ? path.resolve(process.env.GATEWAYD_OUTFILE) : path.join(root, 'dist', 'gatewayd.js');
const extraPlugins = process.env.GATEWAYD_BUILD_PLUGIN ? [(await import(pathToFileURL(path.resolve(process.env.GATEWAYD_BUILD_PLUGIN)).href)).default] : [];
const LIMIT = BUNDLE_LIMIT;

// Before any bundled code runs (an ES module's imports are built-ins only): Node 18 is the floor
// (structuredClone, fetch-era crypto and streams); exit 2 as for an unusable configuration, since
// restarting cannot help.
const NODE_CHECK = "if(+process.versions.node.split('.')[0]<18){process.stderr.write('gatewayd: needs Node.js 18 or newer; this is Node.js '+process.version+' ('+process.execPath+'). Install a newer nodejs: docs/installation.md\\n');process.exit(2)}";

const result = await build({
  entryPoints: [path.join(root, 'src', 'cli', 'main.ts')],
  outfile,
  bundle: true,
  platform: 'node',
  target: 'node18',
  format: 'esm',
  banner: { js: `import { createRequire as __gwCreateRequire } from 'node:module'; ${NODE_CHECK} const require = __gwCreateRequire(import.meta.url);` },
  metafile: true,
  minify: process.env.GATEWAYD_MINIFY !== '0',
  legalComments: 'none',
  sourcemap: false,
  // mqtt-packet pulls readable-stream through bl; Node's own stream is the same API.
  // mqtt-packet pulls `bl` for its parser's byte list; the shim has just the methods the parser uses.
  alias: { 'readable-stream': 'node:stream', debug: path.join(root, 'build', 'shims', 'debug.cjs'), bl: path.join(root, 'build', 'shims', 'bl.cjs') },
  // Buffer as an import rather than a global (build/shims/globals.mjs says why).
  inject: [path.join(root, 'build', 'shims', 'globals.mjs')],
  define: { __GATEWAYD_VERSION__: JSON.stringify(process.env.GATEWAYD_VERSION || pkg.version) },
  plugins: [
    ...extraPlugins,
    mqtt311,
    {
      // busboy's urlencoded parser is never used (uploads are multipart/form-data only).
      name: 'drop-busboy-urlencoded',
      setup(b) {
        b.onResolve({ filter: /^\.\/types\/urlencoded$/ }, (args) =>
          args.importer.includes(`${path.sep}busboy${path.sep}`) ? { path: path.join(root, 'build', 'shims', 'busboy-urlencoded.cjs') } : undefined,
        );
      },
    },
  ],
  logLevel: 'warning',
});

// The packages whose code is in the bundle: every metafile input under node_modules, by package.
const packages = new Map();
for (const input of Object.keys(result.metafile.inputs)) {
  const m = /(?:^|\/)node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(input.split(path.sep).join('/'));
  if (!m) continue;
  const dir = path.join(root, input.slice(0, m.index + m[0].length));
  packages.set(m[1], dir);
}
let notices = `Third-party software bundled in gatewayd.mjs (${packages.size} npm packages), with their licences.\n`;
for (const [name, dir] of [...packages].sort(([a], [b]) => (a < b ? -1 : 1))) {
  const meta = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
  const files = fs.readdirSync(dir).filter((f) => /^(licen[cs]e|copying|notice)/i.test(f)).sort();
  if (files.length === 0) {
    console.error(`${name}: no licence file in ${dir}; cannot write THIRD-PARTY-NOTICES`);
    process.exit(1);
  }
  notices += `\n${'='.repeat(78)}\n${name} ${meta.version} (${meta.license ?? meta.licenses?.map((l) => l.type).join(' OR ')})\n${'='.repeat(78)}\n`;
  for (const f of files) notices += `\n${fs.readFileSync(path.join(dir, f), 'utf8').trim()}\n`;
}
fs.writeFileSync(path.join(path.dirname(outfile), 'THIRD-PARTY-NOTICES'), notices);
// GATEWAYD_METAFILE: where to keep esbuild's metafile (test/build/licences.test.ts checks the notices against it).
if (process.env.GATEWAYD_METAFILE) fs.writeFileSync(process.env.GATEWAYD_METAFILE, JSON.stringify(result.metafile));
await buildConsole(path.join(path.dirname(outfile), 'console'));

const size = fs.statSync(outfile).size;
console.log(`dist/gatewayd.js ${size} bytes (${(size / 1024).toFixed(1)} KB, limit ${LIMIT / 1024} KB)`);
if (size > LIMIT) {
  console.error(`bundle exceeds ${LIMIT} bytes`);
  process.exit(1);
}

/**
 * The field console (docs/console.md): console/ → <bundle dir>/console/ with content-hashed names,
 * each file beside its .gz and .br. Not part of the bundle. The daemon serves the precompressed form.
 */
async function buildConsole(dir) {
  const src = path.join(root, 'console');
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const r = await build({
    entryPoints: [path.join(src, 'src', 'main.ts'), path.join(src, 'style.css')],
    outdir: dir,
    entryNames: '[name]-[hash]',
    bundle: true,
    format: 'esm',
    target: 'es2020',
    minify: true,
    legalComments: 'none',
    tsconfig: path.join(src, 'tsconfig.json'),
    write: false,
    logLevel: 'warning',
  });
  const names = [];
  for (const f of r.outputFiles) {
    fs.writeFileSync(f.path, f.contents);
    names.push(path.basename(f.path));
  }
  const asset = (re) => `/console/${names.find((n) => re.test(n))}`;
  const html = fs.readFileSync(path.join(src, 'index.html'), 'utf8').replace('%JS%', asset(/^main-.*\.js$/)).replace('%CSS%', asset(/^style-.*\.css$/));
  fs.writeFileSync(path.join(dir, 'index.html'), html);
  names.push('index.html');
  let first = 0;
  for (const n of names) {
    const raw = fs.readFileSync(path.join(dir, n));
    const br = zlib.brotliCompressSync(raw, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 11, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: raw.length } });
    fs.writeFileSync(path.join(dir, `${n}.gz`), zlib.gzipSync(raw, { level: 9 }));
    fs.writeFileSync(path.join(dir, `${n}.br`), br);
    first += br.length;
  }
  console.log(`dist/console: ${names.join(', ')} (first load ${first} bytes brotli)`);
}
