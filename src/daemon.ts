// The daemon, assembled in one place from parts that can each be started in a test.

import fs from 'node:fs';
import path from 'node:path';
import type tls from 'node:tls';
import { lazyBuiltin, nodeCrypto } from './core/builtin.js';
import type { Logger } from './log.js';
import { createLogger } from './log.js';
import { VERSION } from './version.js';
import type { Config } from './config/config.js';
import { DEFAULT_LIMITS, HttpServer, type ListenSpec, type TlsMaterial } from './http/server.js';
import { ensureSelfSigned } from './http/selfsigned.js';
import { openDataDir } from './store/datadir.js';
import { DriverRegistry } from './drivers/registry.js';
import { builtinDrivers } from './drivers/builtin.js';
import { AssetRuntime, DriverPool } from './assets/service.js';
import { assetsFamily } from './api/assets.js';
import { AuthLayer } from './auth/layer.js';
import { mountSessionApi } from './api/session.js';
import { mountIdentityApi } from './api/identity.js';
import { MqttService } from './mqtt/service.js';
import { MqttClient } from './mqtt/client.js';
import { Outbox } from './mqtt/outbox.js';
import { Telemetry } from './mqtt/telemetry.js';
import { MqttApplications } from './mqtt/applications.js';
import { assetV1Family } from './mqtt/asset-v1/handler.js';
import { deployV2Application } from './mqtt/deploy-v2.js';
import { familyApplication } from './core/mqtt.js';
import { mountRest } from './core/rest.js';
import type { Family } from './core/family.js';
import { startDeployment } from './deploy/component.js';
import { systemFamily } from './api/system.js';
import { assetStatusFamily } from './api/asset-status.js';
import { mountConsole } from './console/serve.js';
import { mountDeployApi } from './api/deploy.js';
import { ConfigurationService, type Loaded } from './configuration/service.js';
import { configurationFamily } from './configuration/handler.js';

export interface DaemonOptions {
  config: Config;
  /** The `loadEffective` result `config` comes from: the configuration service takes it over. */
  loaded?: Loaded;
  log?: Logger;
  registry?: DriverRegistry;
}

/** Something the daemon starts; told about reloads, stopped in reverse order. */
export interface Component {
  name: string;
  reconfigure?(config: Config): void | Promise<void>;
  stop?(): void | Promise<void>;
}

export class Daemon {
  readonly log: Logger;
  readonly registry: DriverRegistry;
  readonly http: HttpServer;
  readonly assets: AssetRuntime;
  /** The MQTT applications (ASSET-V1, …); BIRTH's application_ids. Register more at any time. */
  readonly applications: MqttApplications;
  /** Sessions, identities, providers; set by start(). Its `providers` take custom auth providers. */
  auth: AuthLayer | undefined;
  /** The runtime configuration (configuration/v2); set by start() when the daemon has a file. */
  configuration: ConfigurationService | undefined;
  private components: Component[] = [];
  private stopping: Promise<void> | undefined;
  config: Config;

  private loaded: Loaded | undefined;

  constructor(opts: DaemonOptions) {
    this.config = opts.config;
    this.loaded = opts.loaded?.config === opts.config ? opts.loaded : undefined;
    this.log = opts.log ?? createLogger(opts.config.logLevel);
    this.registry = opts.registry ?? new DriverRegistry(builtinDrivers());
    const h = opts.config.http;
    this.http = new HttpServer(this.log, { ...DEFAULT_LIMITS, maxConnections: h['max.connections'], bodyTimeoutMs: h['body.timeout'], maxUnauthenticatedBodies: h['max.unauthenticated.bodies'] });
    this.assets = new AssetRuntime(new DriverPool(this.registry, this.log, opts.config.dataDir), this.log);
    this.applications = new MqttApplications();
  }

  /**
   * Mounts a request-core family (src/core/family.ts) on REST (when it has a base path, before the
   * listeners open) and as an MQTT application (when it has an application id, at any time).
   */
  mount(family: Family): void {
    if (family.rest !== undefined) {
      mountRest(this.http, family, { permissionsOf: (name) => this.auth?.identities.get(name)?.permissions });
    }
    if (family.appId !== undefined) this.applications.register(familyApplication(family, this.log));
  }

  /** Starts everything; resolves once every listener accepts (then logs the ready line). */
  async start(): Promise<void> {
    const cfg = this.config;
    const log = this.log;
    const http = this.http;
    openDataDir(cfg.dataDir, VERSION);
    // On a first boot the seeded passwords are hashed on the thread pool while the rest starts.
    const auth = (this.auth = AuthLayer.open(cfg, log));
    this.components.push(auth);

    // The HTTP pipeline, in Kura's order (docs/rest-api.md "Authentication"): route matching
    // (404/405, in the server) → these stages → the route's handler → the response filters.
    http
      .use(auth.allowedPorts) //   404 on a port outside rest.allowed.ports
      .use(auth.authenticate) //   providers by priority: certificate, BASIC, session, custom ones
      .use(auth.authorise) //      the route's role: rest.<role> or kura.admin, else 403
      .filter(auth.challenge); //  403 without a principal → 401; WWW-Authenticate while BASIC is on

    // REST families and MQTT applications.
    mountSessionApi(http, auth);
    mountIdentityApi(http, auth);
    this.assets.configure(cfg.assets, cfg.drivers);
    this.components.push({ name: 'assets', reconfigure: (c) => this.assets.configure(c.assets, c.drivers), stop: () => this.assets.close() });
    this.mount(assetsFamily(this.assets));
    this.mount(assetV1Family(this.assets));
    this.mount(assetStatusFamily(this.assets));
    // MQTT parts are built here (status for system/v1); the service connects after the listeners open.
    const outbox = new Outbox({ dir: path.join(cfg.dataDir, 'mqtt'), maxMessages: cfg.mqtt['outbox.max.messages'], maxBytes: cfg.mqtt['outbox.max.bytes'], log: log.child({ component: 'mqtt' }) });
    const telemetry = new Telemetry({ assets: this.assets, log, publish: (pid, records) => mqtt.publishTelemetry(pid, records) });
    const mqtt = new MqttService({ config: cfg.mqtt, applications: this.applications, outbox, telemetry, client: (o) => new MqttClient(o), log });
    this.mount(systemFamily(http, { config: () => this.config, mqtt: () => ({ connected: mqtt.isConnected, ...outbox.stats() }) }));
    mountConsole(http, { enabled: () => this.config.console['console.enabled'], log });
    if (cfg.file) {
      this.configuration = await ConfigurationService.start({ file: cfg.file, registry: this.registry, log, apply: (c) => this.apply(c), loaded: this.loaded });
      this.loaded = undefined;
      this.mount(configurationFamily(this.configuration));
    }
    // Installed packages start (and register their drivers and providers) before the listeners accept;
    // they may read the identity store, so its seeding is over first.
    await auth.ready;
    const deploy = await startDeployment({ dataDir: cfg.dataDir, config: cfg.deploy, drivers: this.registry, auth: auth.providers, applications: this.applications, log });
    this.components.push(deploy);
    mountDeployApi(http, { deploy: deploy.service, log });
    this.applications.register(deployV2Application(deploy.service, log));

    await this.listen();

    // MQTT connects in the background: readiness does not wait for the broker.
    await mqtt.start();
    this.components.push({ name: 'mqtt', reconfigure: (c) => mqtt.reconfigure(c.mqtt), stop: () => mqtt.stop() });

    const ports = http.listeners().map((l) => `${l.clientAuth ? 'client-auth' : l.secure ? 'https' : 'http'}:${l.port}`).join(',');
    log.always('gatewayd ready', { version: VERSION, ports, pid: process.pid });
  }

  private async listen(): Promise<void> {
    const h = this.config.http;
    const specs: ListenSpec[] = h['http.ports'].map((port) => ({ port, kind: 'http' as const }));
    const tlsPorts = h['https.ports'].length + h['https.client.auth.ports'].length;
    let tls: TlsMaterial | undefined;
    if (tlsPorts > 0) {
      if (h['https.keystore.cert'] && h['https.keystore.key']) {
        tls = { cert: fs.readFileSync(h['https.keystore.cert']), key: fs.readFileSync(h['https.keystore.key']) };
      } else {
        const ss = ensureSelfSigned(this.config.dataDir);
        if (ss.generated) this.log.warn('no keystore configured: generated a self-signed certificate', { dir: this.config.dataDir });
        // What a technician compares with the browser's certificate view (docs/installation.md).
        this.log.always('self-signed certificate', { sha256: new (nodeCrypto().X509Certificate)(ss.cert).fingerprint256 });
        tls = { cert: ss.cert, key: ss.key };
      }
      specs.push(...h['https.ports'].map((port) => ({ port, kind: 'https' as const })));
      if (h['https.client.auth.ports'].length > 0) {
        const ts = h['https.truststore'];
        const crl = h['https.truststore.crl'];
        let revoked: Buffer | undefined;
        try {
          revoked = crl ? readCrl(crl) : undefined;
        } catch (err) {
          // A revocation list that cannot be used must not let revoked certificates in: fail closed.
          this.log.error('client-auth ports not opened: CRL unusable', { ports: h['https.client.auth.ports'].join(','), crl, error: (err as Error).message });
        }
        if (crl && !revoked) {
          // The ports stay closed (logged above).
        } else if (ts && fs.existsSync(ts)) {
          tls.ca = fs.readFileSync(ts);
          tls.crl = revoked;
          specs.push(...h['https.client.auth.ports'].map((port) => ({ port, kind: 'client-auth' as const })));
        } else {
          // A device may be provisioned incompletely (docs/configuration.md "`http`: listeners"): do not stop the daemon for it.
          this.log.warn('client-auth ports not opened: truststore missing', { ports: h['https.client.auth.ports'].join(','), truststore: ts });
        }
      }
    }
    await this.http.listen(specs, h['bind.address'], tls);
  }

  /**
   * The CRL is re-read at every reload (an operator revokes a certificate by replacing the file); one
   * that cannot be used keeps the previous one in force. Returns the path in force.
   */
  private reloadCrl(file: string): string {
    if (!this.http.listeners().some((l) => l.clientAuth)) return file;
    try {
      this.http.setCrl(file ? readCrl(file) : undefined);
      this.log.info('certificate revocation list loaded', { crl: file || '(none)' });
      return file;
    } catch (err) {
      this.log.error('CRL not reloaded: keeping the previous one', { crl: file, error: (err as Error).message });
      return this.config.http['https.truststore.crl'];
    }
  }

  /**
   * Re-reads the configuration file (with the runtime layer on top) and applies rest, console,
   * assets, drivers and mqtt. A bad file keeps the running configuration (and says why). Listener
   * changes need a restart; the CRL is re-read.
   */
  async reload(): Promise<boolean> {
    if (!this.config.file) return false;
    const ok = (await this.configuration?.reload()) ?? false;
    if (ok) this.log.info('configuration reloaded', { file: this.config.file });
    else this.log.error('reload refused: keeping the running configuration', { file: this.config.file });
    return ok;
  }

  /** Applies a validated configuration to the running components (SIGHUP, configuration/v2). */
  async apply(config: Config): Promise<void> {
    const crl = config.http['https.truststore.crl'];
    if (JSON.stringify({ ...config.http, 'https.truststore.crl': '' }) !== JSON.stringify({ ...this.config.http, 'https.truststore.crl': '' }) || config.dataDir !== this.config.dataDir) {
      this.log.warn('http and dataDir changes take effect after a restart');
    }
    config = { ...config, dataDir: this.config.dataDir, http: { ...this.config.http, 'https.truststore.crl': this.reloadCrl(crl) } };
    this.config = config;
    this.log.setLevel(config.logLevel);
    for (const c of this.components) {
      try {
        await c.reconfigure?.(config);
      } catch (err) {
        this.log.error('reload failed for a component', { component: c.name, error: (err as Error).message });
      }
    }
  }

  /** Graceful stop: no new connections, in-flight requests finish, state flushed, MQTT disconnected. */
  stop(graceMs = 3000): Promise<void> {
    this.stopping ??= (async () => {
      this.log.info('stopping');
      await this.http.close(graceMs);
      for (const c of [...this.components].reverse()) {
        try {
          await c.stop?.();
        } catch (err) {
          this.log.warn('component stop failed', { component: c.name, error: (err as Error).message });
        }
      }
      this.log.info('stopped');
    })();
    return this.stopping;
  }
}

// Loaded when a revocation list is configured (docs/installation.md "Start-up time").
const tlsModule = lazyBuiltin<typeof tls>('node:tls');

/** Reads a PEM revocation list file and checks that TLS accepts it (throws with the reason). */
function readCrl(file: string): Buffer {
  const crl = fs.readFileSync(file);
  if (!crl.includes('-----BEGIN X509 CRL-----')) throw new Error('no PEM X509 CRL in the file');
  // An empty trust store: Node's built-in roots are not needed to check the list (docs/installation.md "Start-up time").
  tlsModule().createSecureContext({ crl, ca: [] });
  return crl;
}
