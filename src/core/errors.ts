// The one error type of request handlers, whatever carries the request (REST or MQTT), and the one
// place where an error becomes what a Kura client expects to see.
//
// A handler throws `RequestError(status, detail)`; the front end formats it by the family's style:
//   'json'   REST `{"message": detail}` (Kura's JAX-RS services: session, configuration/v2, …);
//            over MQTT `response.code` = status and the same JSON as the body, no
//            `response.exception.message` (Kura's JaxRsRequestHandlerProxy);
//   'error'  REST and MQTT `{"error": detail}` (gatewayd's commissioning tools, docs/rest-api.md "drivers");
//   'text'   REST `text/plain` detail (Kura's deploy/v2 and assets services);
//   'native' MQTT only, Kura's native applications (ASSET-V1, DEPLOY-V2): `response.code` and, when
//            there is a detail, `response.exception.message` = KuraException text (`Bad request. …`);
//   'message' MQTT only, a native application whose details are another family's messages word for
//            word (CONF-V1 answers with configuration/v2's): `response.code` and
//            `response.exception.message` = the detail as it is.
// Over MQTT a `response.code` is always one Eclipse Kapua reads (200, 400, 404, 500; docs/mqtt.md
// "Response codes"): `mqttResponseCode` maps any other, and the envelope applies it to every reply.
// HttpError (src/http/context.ts) is a RequestError, so everything the HTTP layer throws (body
// limits, 415, 507) reaches MQTT handlers as the same type.

export type ErrorStyle = 'json' | 'error' | 'text' | 'native' | 'message';

export class RequestError extends Error {
  readonly status: number;
  /** What the client is told; undefined for a bare status (Kura's message-less errors). */
  readonly detail: string | undefined;

  constructor(status: number, detail?: string) {
    // An answer, not a fault: no stack trace is captured (it costs as much as the answer).
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(detail ?? `status ${status}`);
    Error.stackTraceLimit = limit;
    this.status = status;
    this.detail = detail;
  }
}

/**
 * Why a driver's commissioning tool gave no answer (src/drivers/driver.ts DriverTools), as the
 * status a client sees: `input` the request is wrong (400), `missing` no such thing (404), `busy`
 * the tool is in use (409), `device` the device or its line failed (502).
 */
export class ToolError extends RequestError {
  constructor(
    readonly kind: 'input' | 'missing' | 'busy' | 'device',
    message: string,
  ) {
    super(kind === 'input' ? 400 : kind === 'missing' ? 404 : kind === 'busy' ? 409 : 502, message);
  }
}

/** Something a request asked for is beyond a bound of the daemon (too many channels, a reply too big). */
export class LimitError extends RequestError {}

/**
 * A reply that would be larger than the daemon sends: 413 over REST, 500 over MQTT (the request
 * itself was well-formed; docs/mqtt.md "Response codes").
 */
export class ReplyTooLargeError extends LimitError {
  constructor(detail: string) {
    super(413, detail);
  }
}

/** The response codes Kapua's translator knows (KuraResponseCode); any other hides the message behind an internal error. */
const KAPUA_CODES: readonly number[] = [200, 400, 404, 500];

export const isKapuaCode = (code: number): boolean => KAPUA_CODES.includes(code);

/**
 * The `response.code` an MQTT reply carries for `code`: Kapua's four as they are; a reply over a
 * bound 500; any other success 200, client error 400, anything else 500.
 */
export function mqttResponseCode(code: number, replyTooLarge = false): number {
  if (isKapuaCode(code)) return code;
  if (replyTooLarge) return 500;
  if (code >= 200 && code < 300) return 200;
  return code >= 400 && code < 500 ? 400 : 500;
}

/** Kura's OPERATION_NOT_SUPPORTED for a method a handler does not implement (`Operation put not supported.`). */
export function notSupported(method: string): RequestError {
  const verb = method === 'DEL' || method === 'DELETE' ? 'delete' : method.toLowerCase();
  return new RequestError(500, `Operation ${verb} not supported.`);
}

/**
 * The reply of an MQTT application for an error, in the family's style (see the header). A status
 * Kapua does not read keeps its detail in `response.exception.message` in every style, as that is
 * all Kapua shows of an error reply.
 */
export function mqttError(style: ErrorStyle, err: RequestError): { code: number; message?: string; body?: string; replyTooLarge?: boolean } {
  const replyTooLarge = err instanceof ReplyTooLargeError || undefined;
  if (style === 'message') return { code: err.status, message: err.detail, replyTooLarge };
  if (style === 'native') {
    if (err.detail === undefined) return { code: err.status, replyTooLarge };
    // KuraException BAD_REQUEST reads `Bad request. {0}`; we name the problem instead of `{0}`
    // (a detail that already says so, as the REST format texts do, is kept as it is).
    const message = err.status === 400 && !/^Bad request[.,]/.test(err.detail) ? `Bad request. ${err.detail}` : err.detail;
    return { code: err.status, message, replyTooLarge };
  }
  const message = isKapuaCode(err.status) ? undefined : err.detail;
  const detail = err.detail ?? 'An internal error occurred';
  return { code: err.status, message, body: JSON.stringify(style === 'error' ? { error: detail } : { message: detail }), replyTooLarge };
}
