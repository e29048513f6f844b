// mqtt-packet logs through `debug`; gatewayd has its own logger, so the bundle gets a no-op.
module.exports = function debug() {
  const noop = function () {};
  noop.enabled = false;
  noop.extend = debug;
  return noop;
};
module.exports.enable = function () {};
module.exports.disable = function () {};
