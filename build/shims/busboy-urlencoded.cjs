// gatewayd only accepts multipart/form-data uploads; busboy's urlencoded parser is left out of the bundle.
module.exports = {
  detect: () => false,
  parser: class {
    constructor() {
      throw new Error('application/x-www-form-urlencoded is not supported');
    }
  },
};
