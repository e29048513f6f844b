// mqtt-packet's parser keeps unparsed bytes in a `bl` BufferList. It uses only append, length,
// consume, readUInt8/16BE/32BE, slice and toString; this stand-in provides those, with bl's
// semantics (slice returns a view when the range lies in one chunk), without bl's stream class and
// its dependencies (about 7 KB of the bundle).
'use strict';

class BufferList {
  constructor() {
    this._bufs = [];
    this.length = 0;
  }

  append(buf) {
    this._bufs.push(buf);
    this.length += buf.length;
    return this;
  }

  /** The first chunk, merged with the following ones until it covers [0, end). */
  _head(end) {
    if (this._bufs.length > 1 && this._bufs[0].length < end) this._bufs = [Buffer.concat(this._bufs)];
    return this._bufs[0] ?? Buffer.alloc(0);
  }

  readUInt8(i) {
    return this._head(i + 1).readUInt8(i);
  }

  readUInt16BE(i) {
    return this._head(i + 2).readUInt16BE(i);
  }

  readUInt32BE(i) {
    return this._head(i + 4).readUInt32BE(i);
  }

  slice(start = 0, end = this.length) {
    return this._head(end).subarray(start, end);
  }

  toString(encoding, start = 0, end = this.length) {
    return this._head(end).toString(encoding, start, end);
  }

  consume(bytes) {
    bytes = Math.trunc(bytes);
    if (!(bytes > 0)) return this;
    while (this._bufs.length > 0) {
      const b = this._bufs[0];
      if (bytes >= b.length) {
        bytes -= b.length;
        this.length -= b.length;
        this._bufs.shift();
      } else {
        this._bufs[0] = b.subarray(bytes);
        this.length -= bytes;
        break;
      }
    }
    return this;
  }
}

module.exports = function bl() {
  return new BufferList();
};
module.exports.BufferList = BufferList;
