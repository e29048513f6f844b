################################################################################
#
# gatewayd
#
################################################################################

GATEWAYD_VERSION = 0.1.0
# This BR2_EXTERNAL tree is build/buildroot inside the gatewayd repository: the package source is
# the repository itself, whose dist/gatewayd.js was built there beforehand ("make build").
# Override with GATEWAYD_OVERRIDE_SRCDIR in local.mk to use another checkout.
GATEWAYD_SITE = $(realpath $(BR2_EXTERNAL_GATEWAYD_PATH)/../..)
GATEWAYD_SITE_METHOD = local
# Only what the image needs is copied into the build folder: never node_modules, nor a development
# data/ folder (its private key and password hashes), nor anything else of the checkout.
GATEWAYD_OVERRIDE_SRCDIR_RSYNC_EXCLUSIONS = --include=/LICENSE --include=/dist/ --include=/dist/gatewayd.js \
	--include=/dist/THIRD-PARTY-NOTICES --include=/dist/console/*** --include=/rootfs/*** --exclude=*
# The bundle contains npm packages under MIT: THIRD-PARTY-NOTICES has their texts.
GATEWAYD_LICENSE = EPL-2.0, MIT
GATEWAYD_LICENSE_FILES = LICENSE dist/THIRD-PARTY-NOTICES
GATEWAYD_DEPENDENCIES = nodejs

define GATEWAYD_BUILD_CMDS
	@test -f $(@D)/dist/gatewayd.js -a -f $(@D)/dist/THIRD-PARTY-NOTICES || \
		{ echo "gatewayd: dist/gatewayd.js missing: run 'make build' in $(GATEWAYD_SITE)"; exit 1; }
endef

# The same layout as the repository's build/install.sh (make install).
define GATEWAYD_INSTALL_TARGET_CMDS
	$(INSTALL) -D -m 0644 $(@D)/dist/gatewayd.js $(TARGET_DIR)/usr/lib/gatewayd/gatewayd.mjs
	rm -rf $(TARGET_DIR)/usr/lib/gatewayd/console && cp -R $(@D)/dist/console $(TARGET_DIR)/usr/lib/gatewayd/
	$(INSTALL) -D -m 0755 $(@D)/rootfs/usr/bin/gatewayd $(TARGET_DIR)/usr/bin/gatewayd
	$(INSTALL) -D -m 0644 $(@D)/LICENSE $(TARGET_DIR)/usr/share/licenses/gatewayd/LICENSE
	$(INSTALL) -D -m 0644 $(@D)/dist/THIRD-PARTY-NOTICES $(TARGET_DIR)/usr/share/licenses/gatewayd/THIRD-PARTY-NOTICES
	$(INSTALL) -D -m 0640 $(@D)/rootfs/etc/gatewayd/gatewayd.json $(TARGET_DIR)/etc/gatewayd/gatewayd.json
endef

# BusyBox init (and sysvinit) run /etc/init.d/S??* in order.
define GATEWAYD_INSTALL_INIT_SYSV
	$(INSTALL) -D -m 0755 $(@D)/rootfs/etc/init.d/gatewayd $(TARGET_DIR)/etc/init.d/S90gatewayd
endef

# Enabled through the preset: Buildroot runs systemctl preset-all when finalising the target.
define GATEWAYD_INSTALL_INIT_SYSTEMD
	$(INSTALL) -D -m 0644 $(@D)/rootfs/usr/lib/systemd/system/gatewayd.service \
		$(TARGET_DIR)/usr/lib/systemd/system/gatewayd.service
	$(INSTALL) -D -m 0644 $(@D)/rootfs/usr/lib/systemd/system-preset/80-gatewayd.preset \
		$(TARGET_DIR)/usr/lib/systemd/system-preset/80-gatewayd.preset
endef

# username uid group gid password home shell groups comment (missing groups are created)
define GATEWAYD_USERS
	gatewayd -1 gatewayd -1 * /var/lib/gatewayd - dialout,gpio gatewayd service
endef

define GATEWAYD_PERMISSIONS
	/etc/gatewayd/gatewayd.json f 0640 root gatewayd - - - - -
	/var/lib/gatewayd d 0700 gatewayd gatewayd - - - - -
endef

$(eval $(generic-package))
