// Builds dist/gatewayd.js: one ES module that runs with a stock `node` (18+) and no node_modules.
// It is ESM because the repository is (`"type": "module"`); installed images name it `gatewayd.mjs`
// so that it stays ESM wherever it is copied. CommonJS dependencies get `require` from the banner.
import { build } from 'esbuild';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
// GATEWAYD_OUTFILE / GATEWAYD_VERSION / GATEWAYD_BUILD_PLUGIN (a module whose default export is an
// esbuild plugin): second builds for the over-the-air test (test/build/ota.test.ts), same code path.
const outfile = process.env.GATEWAYD_OUTFILE ? path.resolve(process.env.GATEWAYD_OUTFILE) : path.join(root, 'dist', 'gatewayd.js');
const extraPlugins = process.env.GATEWAYD_BUILD_PLUGIN ? [(await import(pathToFileURL(path.resolve(process.env.GATEWAYD_BUILD_PLUGIN)).href)).default] : [];
const LIMIT = 256 * 1024;

await build({
  entryPoints: [path.join(root, 'src', 'main.ts')],
  outfile,
  bundle: true,
  platform: 'node',
  target: 'node18',
  format: 'esm',
  banner: { js: "import { createRequire as __gwCreateRequire } from 'node:module'; const require = __gwCreateRequire(import.meta.url);" },
  minify: process.env.GATEWAYD_MINIFY !== '0',
  legalComments: 'none',
  sourcemap: false,
  // mqtt-packet pulls readable-stream through bl; Node's own stream is the same API.
  alias: { 'readable-stream': 'node:stream', debug: path.join(root, 'build', 'shims', 'debug.cjs') },
  define: { __GATEWAYD_VERSION__: JSON.stringify(process.env.GATEWAYD_VERSION || pkg.version) },
  plugins: [
    ...extraPlugins,
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

const size = fs.statSync(outfile).size;
console.log(`dist/gatewayd.js ${size} bytes (${(size / 1024).toFixed(1)} KB, limit ${LIMIT / 1024} KB)`);
if (size > LIMIT) {
  console.error(`bundle exceeds ${LIMIT} bytes`);
  process.exit(1);
}
