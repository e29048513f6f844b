#!/bin/sh
# Installs the benchmark's load generator (wrk, Debian) when it is missing and we may (root + apt).
# The peers it shares with the tests (mosquitto, socat, pymodbus, openssl) come from build/test-deps.sh.
set -eu
command -v wrk >/dev/null 2>&1 && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing wrk"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq wrk >/dev/null
else
  echo "wrk is missing: install it (Debian package wrk) to run make bench" >&2
  exit 1
fi
