// Injected into the bundle (build.mjs `inject`): the bundle's references to the global `Buffer`
// become this module binding. In Node 20 the global is an accessor property of globalThis, and V8
// calls its getter on every use, also in optimised code (a `Buffer.byteLength` cost about twice as
// much through the global); an imported binding is a plain load. The MQTT client, the Modbus
// transports and every HTTP answer use Buffer per message.
// `process` (also an accessor) is left global: it is not used per message, and importing
// node:process makes a module of its hundred-odd properties at start-up (about 1.5 ms to the
// ready line). `performance` is left global too: src/core/clock.ts reads it once.
export { Buffer } from 'node:buffer';
