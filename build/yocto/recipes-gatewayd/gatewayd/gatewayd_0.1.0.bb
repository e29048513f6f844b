SUMMARY = "gatewayd: Kura-compatible REST, session and asset-messaging service"
DESCRIPTION = "One bundled ES module run by the image's nodejs: REST and session API, BASIC and \
client-certificate authentication, deployment packages, assets over Modbus TCP/RTU and GPIO, and \
ASSET-V1 over MQTT."
# gatewayd is EPL-2.0; the bundle also contains npm packages under MIT, whose texts are in
# THIRD-PARTY-NOTICES (written by the build from exactly what the bundle contains). A dependency
# update changes that file: test/build/licences.test.ts then asks for the new md5 here.
LICENSE = "EPL-2.0 & MIT"
LIC_FILES_CHKSUM = "file://usr/share/licenses/gatewayd/LICENSE;md5=c7cc8aa73fb5717f8291fcec5ce9ed6c \
                    file://usr/share/licenses/gatewayd/THIRD-PARTY-NOTICES;md5=4d856e224d34fbefee8ffdd00c7edbcb"

# The prebuilt image tree, made in the gatewayd repository (docs/installation.md "Yocto"):
#   make install DESTDIR=$PWD/stage PREFIX=/usr && tar -C stage -czf gatewayd-0.1.0-image.tar.gz .
# and copied next to this recipe, into files/. Nothing is compiled here.
SRC_URI = "file://gatewayd-${PV}-image.tar.gz;subdir=gatewayd-tree"
# Styhead and newer unpack into UNPACKDIR; older releases into WORKDIR.
UNPACKDIR ??= "${WORKDIR}"
S = "${UNPACKDIR}/gatewayd-tree"

# JavaScript only: one package for every machine; node itself comes from meta-oe's nodejs, which
# must be 18 or newer (mickledore and later; kirkstone's is 16: see conf/layer.conf).
inherit allarch useradd systemd update-rc.d

# Modbus RTU configures serial lines with stty (busybox or coreutils); the init script uses
# start-stop-daemon and logger (busybox).
RDEPENDS:${PN} = "nodejs ${VIRTUAL-RUNTIME_base-utils}"

USERADD_PACKAGES = "${PN}"
# dialout exists in base-passwd; gpio is created unless the BSP already has it.
GROUPADD_PARAM:${PN} = "--system gpio"
USERADD_PARAM:${PN} = "--system --user-group --home-dir ${localstatedir}/lib/gatewayd --no-create-home \
    --shell ${base_sbindir}/nologin --groups dialout,gpio gatewayd"

SYSTEMD_SERVICE:${PN} = "gatewayd.service"
SYSTEMD_AUTO_ENABLE:${PN} = "enable"
INITSCRIPT_NAME = "gatewayd"
INITSCRIPT_PARAMS = "defaults 90 10"

do_configure[noexec] = "1"
do_compile[noexec] = "1"

do_install() {
    # The launcher finds the bundle at ../lib/gatewayd from its own folder: nonarch_libdir, not
    # libdir (which is lib64 on some 64-bit machines).
    install -d ${D}${nonarch_libdir}/gatewayd ${D}${bindir} ${D}${sysconfdir}/gatewayd
    install -m 0644 ${S}/usr/lib/gatewayd/gatewayd.mjs ${D}${nonarch_libdir}/gatewayd/gatewayd.mjs
    # The field console's files (content-hashed names) beside the bundle.
    cp -R --no-preserve=ownership ${S}/usr/lib/gatewayd/console ${D}${nonarch_libdir}/gatewayd/
    install -m 0755 ${S}/usr/bin/gatewayd ${D}${bindir}/gatewayd
    install -d ${D}${datadir}/licenses/gatewayd
    install -m 0644 ${S}/usr/share/licenses/gatewayd/LICENSE ${S}/usr/share/licenses/gatewayd/THIRD-PARTY-NOTICES ${D}${datadir}/licenses/gatewayd/
    # Readable by the service user only: it may carry MQTT credentials.
    install -m 0640 ${S}/etc/gatewayd/gatewayd.json ${D}${sysconfdir}/gatewayd/gatewayd.json
    chown root:gatewayd ${D}${sysconfdir}/gatewayd/gatewayd.json

    if ${@bb.utils.contains('DISTRO_FEATURES', 'systemd', 'true', 'false', d)}; then
        install -d ${D}${systemd_system_unitdir}
        install -m 0644 ${S}/usr/lib/systemd/system/gatewayd.service ${D}${systemd_system_unitdir}/gatewayd.service
    fi
    if ${@bb.utils.contains('DISTRO_FEATURES', 'sysvinit', 'true', 'false', d)}; then
        install -d ${D}${sysconfdir}/init.d
        install -m 0755 ${S}/etc/init.d/gatewayd ${D}${sysconfdir}/init.d/gatewayd
    fi
}

FILES:${PN} += "${nonarch_libdir}/gatewayd ${systemd_system_unitdir}/gatewayd.service ${datadir}/licenses/gatewayd"
CONFFILES:${PN} = "${sysconfdir}/gatewayd/gatewayd.json"
