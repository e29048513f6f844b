#!/bin/sh
# Installs the real peers the test suite talks to, when they are missing and we may (root + apt).
set -eu
need=""
command -v mosquitto >/dev/null 2>&1 || [ -x /usr/sbin/mosquitto ] || need="$need mosquitto"
command -v mosquitto_pub >/dev/null 2>&1 || need="$need mosquitto-clients"
command -v socat >/dev/null 2>&1 || need="$need socat"
command -v openssl >/dev/null 2>&1 || need="$need openssl"
# test/build/install.test.ts records the installed daemon's writes with strace (read-only rootfs check).
command -v strace >/dev/null 2>&1 || need="$need strace"
# ... and runs the init script under BusyBox as on a BusyBox image.
command -v busybox >/dev/null 2>&1 || need="$need busybox"
# test/build/licences.test.ts copies a checkout the way Buildroot does, with rsync.
command -v rsync >/dev/null 2>&1 || need="$need rsync"
/usr/bin/python3 -c 'import pymodbus' >/dev/null 2>&1 || need="$need python3-pymodbus"
# test/assets/channels-csv-peer.test.ts: Apache Commons CSV, the CSV library of Kura's web UI (run by the JDK).
[ -f /usr/share/java/commons-csv.jar ] || need="$need libcommons-csv-java"
command -v java >/dev/null 2>&1 || need="$need default-jre-headless"
# test/mqtt/conf-v1*.test.ts: CONF-V1 XML read and written by JAXB as Eclipse Kapua binds it (the JAXB reference implementation).
[ -f /usr/share/java/jaxb-runtime.jar ] || need="$need libjaxb-java"
# test/console/*: the field console in a real browser (Debian's chromium, driven by playwright-core).
[ -x /usr/bin/chromium ] || need="$need chromium"
[ -z "$need" ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing test peers:$need"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq $need >/dev/null
else
  echo "missing test peers:$need (install them, or the tests that need them are skipped; under CI=true they fail)" >&2
fi
