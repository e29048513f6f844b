#!/bin/sh
# make arm-check: runs the bundle on Debian's armhf (32-bit ARM) nodejs under qemu-user and passes a
# smoke test (start, login, read the demo asset, stop) — issue 7 item 4.
#
# Nothing on the system changes: Debian's armhf packages are fetched with apt through a private
# state/cache directory (the host's sources, APT::Architecture=armhf, an empty dpkg status) and
# unpacked with dpkg-deb -x into $ARM_ROOT/sysroot; dpkg's own architecture list is never touched.
# qemu-arm runs node with -L pointing at that sysroot (no binfmt_misc needed).
#
#   ARM_ROOT   where packages and the sysroot live (default ~/.cache/gatewayd-armhf; kept between runs)
#   BUNDLE     the bundle to run (default dist/gatewayd.js)
#   QEMU_ARM   the qemu-user binary (default qemu-arm, else qemu-arm-static)
set -eu

cd "$(dirname "$0")/.."
# A test runner's NODE_OPTIONS (preloaded hooks from the host's node_modules) is not for the device.
unset NODE_OPTIONS
ARM_ROOT=${ARM_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/gatewayd-armhf}
BUNDLE=${BUNDLE:-dist/gatewayd.js}
SYSROOT=$ARM_ROOT/sysroot
started=$(date +%s)

say() { echo "arm-check: $*"; }
die() { echo "arm-check: FAILED: $*" >&2; exit 1; }

QEMU_ARM=${QEMU_ARM:-}
if [ -z "$QEMU_ARM" ]; then
  for q in qemu-arm qemu-arm-static; do
    if command -v "$q" >/dev/null 2>&1; then QEMU_ARM=$(command -v "$q"); break; fi
  done
fi
if [ -z "$QEMU_ARM" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing qemu-user (Debian package; registers no architecture with dpkg)"
    apt-get update -qq >/dev/null 2>&1 || :
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-user >/dev/null
    QEMU_ARM=$(command -v qemu-arm)
  else
    die "qemu-arm not found: install Debian's qemu-user (or qemu-user-static)"
  fi
fi
[ -f "$BUNDLE" ] || die "$BUNDLE missing: run make build first"

# --- Debian armhf nodejs, unpacked into a folder -------------------------------------------------
if [ ! -x "$SYSROOT/usr/bin/node" ]; then
  say "fetching Debian armhf nodejs and its libraries into $ARM_ROOT"
  mkdir -p "$ARM_ROOT/state/lists/partial" "$ARM_ROOT/cache/archives/partial" "$ARM_ROOT/empty.d"
  : > "$ARM_ROOT/status"
  # Dir::State/Dir::Cache/status are private: the host's package lists and dpkg database stay as
  # they are. APT::Architectures=armhf makes apt see only armhf packages from the host's sources.
  set -- -o "Dir::State=$ARM_ROOT/state" -o "Dir::Cache=$ARM_ROOT/cache" \
    -o "Dir::State::status=$ARM_ROOT/status" -o "Dir::Etc::Preferences=$ARM_ROOT/none" \
    -o "Dir::Etc::PreferencesParts=$ARM_ROOT/empty.d" \
    -o APT::Architecture=armhf -o APT::Architectures=armhf \
    -o APT::Install-Recommends=false -o Debug::NoLocking=true -o APT::Sandbox::User=root -qq
  # A suite whose index is mid-sync (security, updates) may fail to update; the others still
  # count, and the download below says clearly if nodejs cannot be had.
  apt-get "$@" update >/dev/null || apt-get "$@" update >/dev/null || say "apt-get update reported errors; trying with the indexes it got"
  # With an empty status every dependency is "missing", so this downloads nodejs's whole closure.
  apt-get "$@" -y --download-only install nodejs >/dev/null || die "downloading armhf nodejs failed"
  rm -rf "$SYSROOT.tmp"
  mkdir -p "$SYSROOT.tmp"
  for deb in "$ARM_ROOT"/cache/archives/*.deb; do
    dpkg-deb -x "$deb" "$SYSROOT.tmp"
  done
  [ -e "$SYSROOT.tmp/usr/bin/node" ] || [ -L "$SYSROOT.tmp/usr/bin/node" ] || die "no usr/bin/node in the unpacked packages"
  rm -rf "$SYSROOT"
  mv "$SYSROOT.tmp" "$SYSROOT"
fi
NODE_DEB=$(ls "$ARM_ROOT"/cache/archives/nodejs_*_armhf.deb 2>/dev/null | head -n1)
# The armhf loader does not find the multiarch library folders through qemu's -L redirection, so
# they are named for the guest only (-E), as absolute host paths.
LIBPATH=$SYSROOT/lib/arm-linux-gnueabihf:$SYSROOT/usr/lib/arm-linux-gnueabihf
node_arm() { "$QEMU_ARM" -L "$SYSROOT" -E "LD_LIBRARY_PATH=$LIBPATH" "$SYSROOT/usr/bin/node" "$@"; }

ver=$(node_arm --version) || die "armhf node does not start under $QEMU_ARM"
arch=$(node_arm -p process.arch)
say "node $ver ($arch) from $(basename "${NODE_DEB:-unknown}") under $(basename "$QEMU_ARM")"
[ "$arch" = arm ] || die "expected process.arch arm, got $arch"

# --- smoke test: start, login, read the demo asset, stop ------------------------------------------
export ARM_NODE_QEMU="$QEMU_ARM" ARM_NODE_SYSROOT="$SYSROOT" ARM_NODE_LIBPATH="$LIBPATH" ARM_BUNDLE="$BUNDLE"
node build/arm-smoke.mjs || die "smoke test"
say "passed in $(( $(date +%s) - started )) s"
