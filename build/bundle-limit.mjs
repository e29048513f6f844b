// The size the bundle (dist/gatewayd.js) must stay under: `make build` fails above it, and so do
// test/daemon/cli.test.ts and `make bench`'s footprint row.
//
// 256 KiB held until configuration/v2, CONF-V2, DEPLOY-V2, system/v1, the console's server side and
// the field I/O options were added (issues 14-18); after 10 KB of savings in the build (build/shims/
// bl.cjs, build/mqtt311.mjs) the product no longer fits, and the limit was raised to 320 KiB.
// The trust-boundary checks (cross-site refusal, listener checks and fallback, reserved properties,
// secrets bound to their endpoint, time maxima, deploy queue bounds) took it to 322 KB; the limit is
// now 400 KiB, which leaves room for the management applications a Kapua-managed device needs and
// for Sparkplug. The aim is still lower: a change that grows the bundle says so, with the figure.
export const BUNDLE_LIMIT = 400 * 1024;
