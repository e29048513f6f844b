# gatewayd — see README.md. `make run` and `make test` do all their set-up themselves.

NODE    ?= node
NPM     ?= npm
PREFIX  ?= /usr
DESTDIR ?=
CONFIG  ?= config/dev.json
TAP_ARGS ?=
# Test files run at once: twice the cores (the suite waits on daemons, brokers and devices more than
# it computes); CI may pin it (`make test TAP_JOBS=2`).
TAP_JOBS ?= $(shell $(NODE) -p 'Math.max(2, require("os").availableParallelism() * 2)')

SOURCES := $(shell find src console -type f) build/build.mjs package.json

.PHONY: all deps test-deps build run test test-one check typecheck clean bench robustness soak install arm-check

all: build

node_modules/.installed: package.json package-lock.json
	$(NPM) ci --no-audit --no-fund --loglevel=error
	@touch $@

deps: node_modules/.installed

# Debian peers the tests talk to (only installed when root and missing).
test-deps:
	@./build/test-deps.sh

dist/gatewayd.js: node_modules/.installed $(SOURCES)
	$(NODE) build/build.mjs

build: dist/gatewayd.js
	@$(NODE) -e 'const s=require("fs").statSync("dist/gatewayd.js").size; console.log("bundle: dist/gatewayd.js " + s + " bytes")'

run: build
	$(NODE) dist/gatewayd.js --config $(CONFIG)

# The type checks (README "Developing"). Each one is skipped while nothing it reads has changed
# since it last passed (its stamp in dist/), and runs incrementally otherwise: tsc keeps what it
# learnt in dist/*.tsbuildinfo and re-checks only the files a change reaches.
TSC_INPUTS := $(shell find src test -type f) $(wildcard build/*.mts) tsconfig.json package.json node_modules/.installed
CONSOLE_TSC_INPUTS := $(shell find console/src -type f) console/tsconfig.json node_modules/.installed

dist/.typecheck-src: $(TSC_INPUTS)
	@mkdir -p dist
	npx tsc --noEmit -p . --incremental --tsBuildInfoFile dist/tsc-src.tsbuildinfo
	@touch $@

dist/.typecheck-console: $(CONSOLE_TSC_INPUTS)
	@mkdir -p dist
	npx tsc --noEmit -p console --incremental --tsBuildInfoFile dist/tsc-console.tsbuildinfo
	@touch $@

typecheck: deps dist/.typecheck-src dist/.typecheck-console

# The type checks come before tap, not beside it: on a fresh install tap's first run rebuilds its
# Test class's types (node_modules/@tapjs/test/test-built), which tsc reads.
test: deps test-deps build typecheck
	npx tap --jobs=$(TAP_JOBS) $(TAP_ARGS)

# One test file, without the typecheck and without tap's runner (README "Developing"), with the
# runner's time limit per file (package.json tap.timeout; a file run alone otherwise stops at 30 s):
# make test-one T=test/api/assets.test.ts
T ?=
test-one: deps build
	@test -n "$(T)" || { echo 'usage: make test-one T=test/<layer>/<name>.test.ts' >&2; exit 64; }
	TAP_TIMEOUT=$${TAP_TIMEOUT:-300} $(NODE) --import tsx $(T)

check: test

# Benchmarks against baselines in the same run (bench/README.md): bench/results.json and bench/RESULTS.md.
# BENCH_ARGS: --only http,modbus,mqtt,footprint,nodered,console  --repeats N  --seconds S  --quick (writes bench/out/)
# bench/peers.sh installs Node-RED for the nodered section into bench/out/peers (if it cannot, that
# section fails and says so; the others still run).
BENCH_ARGS ?=
bench: deps test-deps build
	@./bench/deps.sh
	@./bench/peers.sh || echo "bench/peers.sh failed: the nodered section will fail" >&2
	$(NODE) bench/build.mjs
	npx tsc --noEmit -p bench
	$(NODE) bench/out/run.mjs $(BENCH_ARGS)

# The firmware image tree (docs/installation.md): make install DESTDIR=… PREFIX=/usr
install: build
	DESTDIR="$(DESTDIR)" PREFIX="$(PREFIX)" sh build/install.sh

# The bundle on Debian's armhf nodejs under qemu-user: start, login, read the demo asset, stop.
arm-check: build
	sh build/arm-check.sh

# Attacks the built daemon (robust/run.mjs; README "Robustness"): bad input, hostile clients, field
# and broker faults, power cuts. `robustness` is bounded (CI-sized); `soak` runs the same, longer.
ROBUST_ARGS ?=
robustness: deps test-deps build
	$(NODE) robust/run.mjs $(ROBUST_ARGS)

soak: deps test-deps build
	$(NODE) robust/run.mjs --soak $(ROBUST_ARGS)

clean:
	rm -rf dist .tap
