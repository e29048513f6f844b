#!/bin/sh
# make install: lays out the firmware image tree under $DESTDIR from rootfs/ and the bundle.
#
#   DESTDIR        staging root of the image ('' installs into /)
#   PREFIX         /usr     bundle in $PREFIX/lib/gatewayd, launcher in $PREFIX/bin
#   SYSCONFDIR     /etc     gatewayd/gatewayd.json and init.d/gatewayd
#   SYSTEMDUNITDIR $PREFIX/lib/systemd/system
#   BUNDLE         dist/gatewayd.js (installed as gatewayd.mjs so it stays an ES module anywhere);
#                  the THIRD-PARTY-NOTICES the build wrote beside it go with LICENSE into
#                  $PREFIX/share/licenses/gatewayd; the console/ folder beside it is installed beside it
#   INIT           both | systemd | sysvinit   which service files to install (both)
#
# Recipes (build/yocto, build/buildroot) do the same steps with their own install helpers; keep
# them in step with this file.
set -eu

cd "$(dirname "$0")/.."
DESTDIR=${DESTDIR:-}
PREFIX=${PREFIX:-/usr}
SYSCONFDIR=${SYSCONFDIR:-/etc}
SYSTEMDUNITDIR=${SYSTEMDUNITDIR:-$PREFIX/lib/systemd/system}
BUNDLE=${BUNDLE:-dist/gatewayd.js}
INIT=${INIT:-both}

case $INIT in both|systemd|sysvinit) ;; *) echo "install: INIT must be both, systemd or sysvinit" >&2; exit 64 ;; esac
[ -f "$BUNDLE" ] || { echo "install: $BUNDLE missing (make build)" >&2; exit 1; }
NOTICES=$(dirname "$BUNDLE")/THIRD-PARTY-NOTICES
[ -f "$NOTICES" ] || { echo "install: $NOTICES missing (make build writes it)" >&2; exit 1; }

# install(1) with an explicit mode; parents 0755 whatever the umask.
put() { # mode source target
  mkdir -p "$(dirname "$3")"
  chmod 0755 "$(dirname "$3")" 2>/dev/null || :
  cp "$2" "$3.tmp.$$"
  chmod "$1" "$3.tmp.$$"
  mv -f "$3.tmp.$$" "$3"
}
# The service files name /usr/bin/gatewayd and /etc/gatewayd; other prefixes are substituted.
subst() { # mode source target
  mkdir -p "$(dirname "$3")"
  sed -e "s#/usr/bin/gatewayd#$PREFIX/bin/gatewayd#g" -e "s#/etc/gatewayd/#$SYSCONFDIR/gatewayd/#g" "$2" > "$3.in.$$"
  put "$1" "$3.in.$$" "$3"
  rm -f "$3.in.$$"
}

put 0644 "$BUNDLE" "$DESTDIR$PREFIX/lib/gatewayd/gatewayd.mjs"
# The field console's files beside the bundle (the daemon looks for console/ next to itself).
rm -rf "$DESTDIR$PREFIX/lib/gatewayd/console"
for f in "$(dirname "$BUNDLE")"/console/*; do
  if [ -f "$f" ]; then put 0644 "$f" "$DESTDIR$PREFIX/lib/gatewayd/console/$(basename "$f")"; fi
done
put 0755 rootfs/usr/bin/gatewayd "$DESTDIR$PREFIX/bin/gatewayd"
put 0644 LICENSE "$DESTDIR$PREFIX/share/licenses/gatewayd/LICENSE"
put 0644 "$NOTICES" "$DESTDIR$PREFIX/share/licenses/gatewayd/THIRD-PARTY-NOTICES"
# An existing configuration in the staging tree is the integrator's; do not overwrite it.
if [ -e "$DESTDIR$SYSCONFDIR/gatewayd/gatewayd.json" ]; then
  echo "install: keeping $DESTDIR$SYSCONFDIR/gatewayd/gatewayd.json"
else
  put 0644 rootfs/etc/gatewayd/gatewayd.json "$DESTDIR$SYSCONFDIR/gatewayd/gatewayd.json"
fi
if [ "$INIT" != sysvinit ]; then
  subst 0644 rootfs/usr/lib/systemd/system/gatewayd.service "$DESTDIR$SYSTEMDUNITDIR/gatewayd.service"
  put 0644 rootfs/usr/lib/sysusers.d/gatewayd.conf "$DESTDIR$PREFIX/lib/sysusers.d/gatewayd.conf"
  put 0644 rootfs/usr/lib/systemd/system-preset/80-gatewayd.preset "$DESTDIR$PREFIX/lib/systemd/system-preset/80-gatewayd.preset"
fi
if [ "$INIT" != systemd ]; then
  subst 0755 rootfs/etc/init.d/gatewayd "$DESTDIR$SYSCONFDIR/init.d/gatewayd"
fi

size=$(wc -c < "$DESTDIR$PREFIX/lib/gatewayd/gatewayd.mjs")
echo "installed gatewayd into ${DESTDIR:-/} (prefix $PREFIX, bundle $size bytes, init: $INIT)"
