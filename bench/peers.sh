#!/bin/sh
# Installs the peers the nodered section compares gatewayd with: Node-RED and node-red-contrib-modbus,
# at pinned versions, into bench/out/peers (never the product's node_modules or package.json).
# Skipped when those versions are already there. Only `make bench` runs this.
#
# node-red-contrib-modbus 5.23.3 is the newest release installable from the npm registry alone
# (later ones fetch a dependency from another host) that runs on Node 18/20.
set -eu
NODE_RED=4.1.15
CONTRIB_MODBUS=5.23.3
dir=$(dirname "$0")/out/peers
have() { node -e 'process.exit(require(process.argv[1]).version === process.argv[2] ? 0 : 1)' "$dir/node_modules/$1/package.json" "$2" 2>/dev/null; }
if have node-red "$NODE_RED" && have node-red-contrib-modbus "$CONTRIB_MODBUS"; then exit 0; fi
echo "installing node-red@$NODE_RED node-red-contrib-modbus@$CONTRIB_MODBUS into $dir"
mkdir -p "$dir"
[ -f "$dir/package.json" ] || echo '{"private":true,"description":"benchmark peers (bench/peers.sh), not gatewayd dependencies"}' >"$dir/package.json"
cd "$dir"
npm install --no-audit --no-fund --loglevel=error --save-exact "node-red@$NODE_RED" "node-red-contrib-modbus@$CONTRIB_MODBUS"
