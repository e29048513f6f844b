// The MQTT applications of the device (Kura's RequestHandlerRegistry): ASSET-V1, CONF-V2,
// DEPLOY-V2, … by application id. The MQTT service subscribes to each application's topics and
// hands every request here; BIRTH's `application_ids` is `ids()`, re-published on `onChange`.
// Applications may be registered and unregistered at run time (a package adding a handler).
//
// A request-core family becomes an application with `familyApplication` (src/mqtt/family-application.ts);
// a package's plug-in may also implement `MqttApplication` directly (docs/packages.md).
//
// Who may ask what is decided here, once for every application (docs/mqtt.md "Who may send
// requests"): the connection's requester permissions against the role of the application (or of
// the resource asked for, `roleOf`), as REST authorises an identity against a route's role. The registry is the daemon's; what a connection
// serves of it (its permissions, its disabled applications) is the connection's `RequesterPolicy`.

import { permits } from '../core/family.js';
import type { Logger } from '../log.js';
import type { Envelope, MqttRequest, MqttResponse, Reply } from './envelope.js';

export interface ApplicationContext {
  /** The device's MQTT client id (NOTIFY's `client.id`). */
  readonly clientId: string;
  /** The requester's permissions (the connection's `requester.permissions`). */
  readonly permissions: readonly string[];
  /** Whether this connection's replies are gzip-compressed (kura-protobuf with `encode.gzip`). */
  readonly gzip?: boolean;
  /** Publishes a NOTIFY message to the requester (QoS 0, as Kura), e.g. DEPLOY-V2 progress. */
  notify(resource: string, message: Omit<MqttResponse, 'code'>): void;
}

export interface MqttApplication {
  readonly appId: string;
  /** A requester needs permission `rest.<role>` (or kura.admin); without a role, kura.admin. */
  readonly role?: string;
  /** The role one request needs, where it differs by resource (a family's route roles); default `role`. */
  roleOf?(req: MqttRequest): string | undefined;
  /** Answers one request. Should not throw; if it does, the requester gets a 500 without details. */
  handle(req: MqttRequest, ctx: ApplicationContext): Promise<MqttResponse>;
}

/** What one connection serves: the requester's permissions, and whether it serves an application. */
export interface RequesterPolicy {
  readonly permissions: readonly string[];
  serves(appId: string): boolean;
}

/** Application ids are topic levels: no separator, wildcard or NUL [MQTT-4.7.1]. */
const APP_ID = /^[^/+#\u0000]+$/;

export class MqttApplications {
  private apps = new Map<string, MqttApplication>();
  private listeners = new Set<() => void>();

  /** Adds (or replaces) the application with `app.appId`. */
  register(app: MqttApplication): void {
    if (!APP_ID.test(app.appId)) throw new Error(`MQTT application id ${JSON.stringify(app.appId)} cannot be a topic level`);
    const had = this.apps.has(app.appId);
    this.apps.set(app.appId, app);
    if (!had) this.changed();
  }

  unregister(appId: string): boolean {
    const had = this.apps.delete(appId);
    if (had) this.changed();
    return had;
  }

  get(appId: string): MqttApplication | undefined {
    return this.apps.get(appId);
  }

  /** Application ids in registration order. */
  ids(): string[] {
    return [...this.apps.keys()];
  }

  /** Called after the set of application ids changed; returns the unsubscribe function. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private changed(): void {
    for (const l of this.listeners) l();
  }

  /**
   * Handles one incoming message: decodes it with `envelope`, runs the application, resolves with
   * the reply to publish (undefined for none). Never rejects.
   */
  async dispatch(envelope: Envelope, topic: string, payload: Buffer, publish: (r: Reply) => void, log: Logger, policy: RequesterPolicy): Promise<Reply | undefined> {
    const parsed = envelope.parse(topic, payload);
    if (!parsed.ok) {
      const r = parsed.refused;
      if (r && this.apps.has(r.request.appId) && policy.serves(r.request.appId)) {
        log.warn('MQTT request refused', { topic, code: r.response.code, reason: parsed.reason });
        return envelope.reply(r.request, r.response);
      }
      if (!parsed.ignore) log.info('MQTT request dropped without reply', { topic, reason: parsed.reason });
      return undefined;
    }
    const req = parsed.request;
    const app = this.apps.get(req.appId);
    // A disabled application is not there for this connection: no reply, as for an unknown one.
    if (!app || !policy.serves(req.appId)) return undefined;
    const permissions = policy.permissions;
    const role = app.roleOf ? app.roleOf(req) : app.role;
    if (!permits(permissions, role)) {
      const needed = role === undefined ? 'kura.admin' : `rest.${role}`;
      log.info('MQTT request refused: missing permission', { app: req.appId, requester: req.requester, permission: needed });
      return envelope.reply(req, { code: 400, message: `Forbidden: requires ${needed}` });
    }
    let res: MqttResponse;
    try {
      const gzip = envelope.opts.encoding === 'kura-protobuf' && envelope.opts.gzip;
      res = await app.handle(req, { clientId: envelope.opts.clientId, permissions, gzip, notify: (resource, m) => publish(envelope.notification(req, resource, m)) });
    } catch (err) {
      log.error('MQTT request failed', { topic, error: (err as Error)?.message ?? String(err) });
      res = { code: 500 };
    }
    return envelope.reply(req, res);
  }
}
