// An esbuild plugin (build/build.mjs's GATEWAYD_BUILD_PLUGIN) for the scale section's reference
// gatewayd without the channel history (bench/README.md "Scale"): the one call that feeds the
// history from the poll cycles (src/api/asset-history.ts) is compiled out; everything else is the
// same daemon. A build that no longer finds the call fails, so the reference cannot silently become
// the daemon with history.
import fs from 'node:fs';

const CALL = 'history.record(pid, records);';

export default {
  name: 'bench-no-history',
  setup(build) {
    build.onLoad({ filter: /[\\/]src[\\/]api[\\/]asset-history\.ts$/ }, (args) => {
      const text = fs.readFileSync(args.path, 'utf8');
      if (!text.includes(CALL)) throw new Error(`${args.path} no longer has "${CALL}": bench/lib/no-history-plugin.mjs must follow it`);
      return { contents: text.replace(CALL, 'void records;'), loader: 'ts' };
    });
  },
};
