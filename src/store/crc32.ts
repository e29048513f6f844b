// CRC-32 (IEEE 802.3), as zip (APPNOTE 4.4.7) and the MQTT outbox's record frames use it.
// `zlib.crc32` only exists from Node 20.15/22.2 and the bundle runs on 18.

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

/** CRC of `buf`, continuing from `crc` (the CRC of the bytes before it) for chunked input. */
export function crc32(buf: Uint8Array, crc = 0): number {
  let c = ~crc >>> 0;
  for (let i = 0; i < buf.length; i++) c = CRC_TABLE[(c ^ buf[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}
