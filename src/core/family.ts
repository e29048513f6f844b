// The request-handler core: a resource family is written once, as handlers over a neutral request,
// and mounted on the HTTP router, as an MQTT application, or both — as Kura's request handlers are
// (a JAX-RS service reached over REST and, through its REST-over-MQTT proxy, as `CONF-V2` & co.).
//
// ## Adding a family
//
//     export const configurationFamily = (svc: ConfigService): Family => ({
//       name: 'configuration/v2',
//       rest: '/services/configuration/v2',   // mounted under this base (omit: MQTT only)
//       appId: 'CONF-V2',                       // the MQTT application id (omit: REST only)
//       role: 'configuration',                  // REST: permission rest.configuration or kura.admin
//       errors: 'json',                         // src/core/errors.ts: 'json' | 'error' | 'text' | 'native' | 'message'
//       routes: [
//         { method: 'GET', path: 'snapshots', handler: () => ({ ids: svc.snapshotIds() }) },
//         { method: 'POST', path: 'snapshots/byId', handler: async (req) => byId(await req.body()) },
//         { method: 'EXEC', path: 'snapshots/_write', handler: () => svc.snapshot() },  // REST: POST
//         { method: 'DEL', path: 'factoryComponents/byPid', handler: … },               // REST: DELETE
//         { method: 'GET', path: 'things/:pid', handler: (req) => thing(req.params.pid) },
//       ],
//     });
//
// Methods are Kura's MQTT ones: GET, PUT, POST, DEL, EXEC. Over REST, DEL is DELETE and EXEC is
// POST (Kura's `@EXEC` resources answer POST over REST and only EXEC over MQTT). Paths are segments
// below the base (`:name` binds a parameter; a literal segment wins over a parameter, as in JAX-RS).
//
// A handler receives a `CoreRequest` and returns the reply body: a JSON value (serialised with
// JSON.stringify), `rawJson(text)` for text already serialised (exact LONGs, Gson field order),
// `new JsonPieces(iterable)` for text made a piece at a time as it is sent, `new PayloadReply(…)`
// for what Kura's native applications answer (a status, metrics, a body that is not JSON),
// `new TextReply(type, text)` for a document that is not JSON (REST sends its type), or undefined for 200 with an empty body. It throws `RequestError(status, detail)` to answer an
// error; the family's `errors` style formats it for REST and MQTT (src/core/errors.ts), so a
// handler never formats an error itself. Anything else thrown is a 500 without details (and one
// log line). `req.body()` reads the body through the one JSON reader (src/core/json.ts): over REST
// `Content-Type: application/json` is required (415) and the size is bounded (413); over MQTT it is
// the payload's body. Undefined for no body. `req.bytes({ mediaTypes, limit })` reads a body that is
// not JSON the same bounded way, and `req.query(name)` a REST query parameter.
//
// The request also carries what Kura's RequestHandlerContext gives a handler: over MQTT the
// request's metrics (typed, src/core/metrics.ts), the device's client id, and `notify(resource,
// message)`, which publishes `<prefix>/<account>/<requester>/<APP-ID>/NOTIFY/<client-id>/<resource>`
// to the requester (QoS 0, as Kura: DEPLOY-V2's progress). Over REST there are no metrics and no
// one to notify: `metrics` and `clientId` are undefined and `notify` does nothing.
//
// ## Roles
//
// `role` on the family is Kura's `@RolesAllowed` for every route; a route's own `role` overrides it
// where a family needs more than one (identity/v1: two open resources, the rest `identity`). REST
// authorisation and the MQTT requester check (src/mqtt/applications.ts `dispatch`) both use the
// route's role when it has one.
//
// ## Mounting
//
// The daemon mounts the families of src/api/families.ts (src/daemon.ts `mount`), from each one's
// `rest` and `appId`:
//     mountRest(http, family, { permissionsOf })                // src/http/rest-family.ts, before listen()
//     applications.register(familyApplication(family, log))    // src/mqtt/family-application.ts, at any time
//
// A family with `active` is registered only while it answers true, and unregistered (its `stop`
// called) when it turns false: `switchedApplication` (src/mqtt/family-application.ts), asked again
// after every configuration change the daemon applies.
//
// `applications` is the daemon's MqttApplications (src/mqtt/applications.ts): the set of MQTT
// application ids present (`ids()`, `onChange()`, for BIRTH's `application_ids`); `register` and
// `unregister` work at run time (a package adding a handler). Over MQTT the requester has the
// connection's `requester.permissions` (default `kura.admin`: Kura trusts the broker's ACL), checked
// against the route's role as REST checks an identity's (`permits`), and `req.identity` carries them.

import { Router } from './router.js';
import type { ErrorStyle } from './errors.js';
import type { KuraMetric } from './metrics.js';

/** Kura's request methods (the MQTT topic level; REST maps DEL → DELETE and EXEC → POST). */
export type Method = 'GET' | 'PUT' | 'POST' | 'DEL' | 'EXEC';
export const METHODS: readonly Method[] = ['GET', 'PUT', 'POST', 'DEL', 'EXEC'];

/** Who sent the request and what they may do. */
export interface Requester {
  /** Identity name (REST) or requester client id (MQTT). */
  readonly name: string;
  /** 'basic' | 'session' | 'certificate' | a custom provider (REST), 'mqtt'. */
  readonly via: string;
  readonly permissions: readonly string[];
}

export interface CoreRequest {
  readonly transport: 'rest' | 'mqtt';
  readonly method: Method;
  /** The resource path below the family, as segments (`['snapshots', 'byId']`). */
  readonly resources: readonly string[];
  /** Values of the route's `:name` segments. */
  readonly params: Readonly<Record<string, string>>;
  /** Undefined for an anonymous REST request (only reaches routes without a role). */
  readonly identity: Requester | undefined;
  /** An MQTT request's metrics (none with the bare-JSON encoding); undefined over REST. */
  readonly metrics: readonly KuraMetric[] | undefined;
  /** The device's MQTT client id (a NOTIFY's `client.id`); undefined over REST. */
  readonly clientId: string | undefined;
  /**
   * The body as JSON through the one reader; undefined when there is none. `exact` keeps number
   * texts (src/core/json.ts); `limit` bounds a REST body in bytes (413 beyond; default 1 MiB).
   */
  body(opts?: { exact?: boolean; limit?: number }): Promise<unknown>;
  /**
   * An MQTT request's body as sent, for an application whose bodies are not JSON (CONF-V1's XML);
   * undefined over REST and when the request has no body.
   */
  readonly payload?: Buffer;
  /**
   * The body as bytes, for a resource that is not JSON (a CSV file): over REST its media type must
   * be one of `mediaTypes` (415 otherwise) and it is bounded by `limit` bytes (413); over MQTT it is
   * the payload's body. Undefined for no body.
   */
  bytes(opts: { mediaTypes: readonly string[]; limit: number }): Promise<Buffer | undefined>;
  /** A query parameter of the REST URL (the first of that name); undefined over MQTT. */
  query(name: string): string | undefined;
  /** Publishes a NOTIFY about `resource` to the requester over MQTT; does nothing over REST. */
  notify(resource: string, message: Notification): void;
}

/** What a NOTIFY message carries (Kura's KuraNotifyPayload): metrics, and a body when there is one. */
export interface Notification {
  metrics?: KuraMetric[];
  body?: string | Buffer;
}

/** JSON text already serialised by the handler. */
export class RawJson {
  constructor(readonly text: string) {}
}
export const rawJson = (text: string): RawJson => new RawJson(text);

/**
 * A reply with its own content type (a CSV file) or status (202 for a job started): REST sends
 * both, MQTT the text as the body.
 */
export class TextReply {
  constructor(
    readonly contentType: string,
    readonly text: string,
    readonly headers: Record<string, string> = {},
    readonly status = 200,
  ) {}
}

/**
 * JSON text made a piece at a time while it is sent, for a reply too large to hold whole: REST
 * streams it at the pace the client reads; over MQTT it is collected up to the reply bound
 * (MAX_REPLY_BYTES). `close` runs once when the pieces are no longer needed (read to the end, the
 * client gone, or a piece failed: `err`).
 */
export class JsonPieces {
  constructor(
    readonly pieces: Iterable<string>,
    readonly close: (err?: unknown) => void = () => {},
  ) {}
}

/**
 * A native application's body that is not JSON, made a piece at a time (CONF-V1's XML of every
 * configuration: tens of MB for a large device). MQTT only. Where the connection compresses its
 * replies (kura-protobuf with gzip) the text is compressed while it is made and the bound is on
 * what is sent (MAX_COMPRESSED_REPLY_BYTES); otherwise it is collected up to MAX_REPLY_BYTES. `close`
 * runs once when the pieces are no longer needed, as for JsonPieces.
 */
export class TextPieces {
  constructor(
    readonly pieces: Iterable<string>,
    readonly close: (err?: unknown) => void = () => {},
  ) {}
}

/**
 * What Kura's native applications answer (KuraResponsePayload): a status (200 unless given), metrics
 * and a body that is not JSON (DEPLOY-V2's XML lists, its download state). Over MQTT the metrics
 * follow `response.code`; over REST, which has no metrics, the body is sent as text with the status.
 */
export class PayloadReply {
  readonly status: number;
  readonly metrics: KuraMetric[];
  readonly body: string | undefined;

  constructor(init: { status?: number; metrics?: KuraMetric[]; body?: string }) {
    this.status = init.status ?? 200;
    this.metrics = init.metrics ?? [];
    this.body = init.body;
  }
}

export type Handler = (req: CoreRequest) => unknown | Promise<unknown>;

export interface CoreRoute {
  method: Method;
  /** Below the family's base, e.g. `snapshots/byId` or `:pid/_read`; '' for the base itself. */
  path: string;
  handler: Handler;
  /** This route's role when it differs from the family's (see `Family.role`); undefined: the family's. */
  role?: string;
}

export interface Family {
  /** For logs: `configuration/v2`, `ASSET-V1`. */
  name: string;
  /** REST base path; absent: not mounted on REST. */
  rest?: string;
  /** MQTT application id; absent: not an MQTT application. */
  appId?: string;
  /**
   * Kura's `@RolesAllowed`, permission `rest.<role>` (or kura.admin) on every route, over REST and
   * MQTT; a family without a role is open over REST and needs kura.admin over MQTT.
   */
  role?: string;
  errors: ErrorStyle;
  routes: CoreRoute[];
  /**
   * MQTT only: the error for a request no route matches (`allowed`: methods the resource has, empty
   * when the resource is unknown). Default: Kura's REST proxy, 404 `Not found.`.
   */
  noMatch?(method: string, resources: readonly string[], allowed: readonly string[]): Error;
  /**
   * MQTT only: the application is registered (and in BIRTH's `application_ids`) only while this is
   * true; the daemon asks again after every configuration change (CMD-V1's `command.enabled`).
   * Absent: always registered.
   */
  active?(): boolean;
  /** Releases what the family holds (CMD-V1's running programs): when `active` turns false, and when the daemon stops. */
  stop?(): void | Promise<void>;
}

/**
 * Kura's roles (docs/rest-api.md "Authentication"): `rest.<role>`, or kura.admin which passes every
 * role. Over MQTT an application without a role needs kura.admin.
 */
export function permits(permissions: readonly string[], role: string | undefined): boolean {
  return permissions.includes('kura.admin') || (role !== undefined && permissions.includes(`rest.${role}`));
}

/** The text of a handler's result as a reply body; undefined for none. */
export function replyText(result: unknown): string | undefined {
  if (result === undefined) return undefined;
  if (result instanceof RawJson) return result.text;
  if (result instanceof PayloadReply) return result.body;
  if (result instanceof TextReply) return result.text;
  return JSON.stringify(result);
}

/** Routes of a family indexed by Kura method and resource path (the MQTT side's lookup). */
export function routerOf(family: Family): Router<CoreRoute> {
  const r = new Router<CoreRoute>();
  for (const route of family.routes) r.add(route.method, `/${route.path}`, route);
  return r;
}

/** The role a route needs: its own, else its family's. */
export const roleOf = (family: Family, route: CoreRoute): string | undefined => route.role ?? family.role;

/** The REST method and path of a route. */
export function restOf(family: Family, route: CoreRoute): { method: string; path: string } {
  const method = route.method === 'DEL' ? 'DELETE' : route.method === 'EXEC' ? 'POST' : route.method;
  return { method, path: route.path === '' ? family.rest! : `${family.rest}/${route.path}` };
}
