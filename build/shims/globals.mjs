// Injected into the bundle (build.mjs `inject`): the bundle's references to the globals `Buffer` and
// `process` become these module bindings. In Node 20 both globals are accessor properties of
// globalThis, and V8 calls the getter on every use, also in optimised code (a `Buffer.byteLength`
// cost about twice as much through the global); an imported binding is a plain load.
// `performance` is left global: importing node:perf_hooks would load it at start-up, where the
// daemon does not need it yet.
export { Buffer } from 'node:buffer';
export { default as process } from 'node:process';
