// Bounds on what one request may ask for, REST and MQTT alike (docs/rest-api.md, docs/mqtt.md).
// A request beyond them is answered 400 (413 for a reply) naming the limit; the daemon keeps serving.

/** Channels named in one request: REST `_read`/`_write`, ASSET-V1 EXEC/read and EXEC/write in total. */
export const MAX_CHANNELS_PER_REQUEST = 1000;
/** Elements (assets) of one ASSET-V1 request body. */
export const MAX_ELEMENTS_PER_REQUEST = 1000;
/** A reply body produced through the request core; beyond it the reply is an error (413). */
export const MAX_REPLY_BYTES = 1024 * 1024;
/**
 * A reply made in pieces and compressed while it is made (src/core/family.ts TextPieces), as sent:
 * the size of the largest MQTT packet gatewayd itself accepts. Only the compressed text is held.
 */
export const MAX_COMPRESSED_REPLY_BYTES = 4 * 1024 * 1024;

export const tooManyChannels = (n: number): string => `Too many channels in one request: ${n}, the limit is ${MAX_CHANNELS_PER_REQUEST}`;
