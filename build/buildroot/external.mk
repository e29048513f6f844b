include $(sort $(wildcard $(BR2_EXTERNAL_GATEWAYD_PATH)/package/*/*.mk))
