// The daemon, assembled in one place from parts that can each be started in a test.

import path from 'node:path';
import type { Logger } from './log.js';
import { createLogger } from './log.js';
import { VERSION } from './version.js';
import type { Config } from './configuration/config.js';
import { HttpServer } from './http/server.js';
import { httpNeedsRestart, listenerSummary, reloadCrl, serverLimitsOf } from './http/listen.js';
import { refuseCrossSite } from './http/cross-site.js';
import { openDataDir } from './store/datadir.js';
import { DriverRegistry } from './drivers/registry.js';
import { builtinDrivers } from './drivers/builtin.js';
import { AssetRuntime } from './assets/service.js';
import { DriverPool } from './assets/driver-pool.js';
import { AuthLayer } from './auth/layer.js';
import { mountSessionApi } from './api/session.js';
import { MqttService } from './mqtt/service.js';
import { MqttClient, type MqttClientOptions } from './mqtt/client.js';
import { SparkplugEdgeNode } from './mqtt/sparkplug/edge-node.js';
import { TelemetryOutbox } from './mqtt/telemetry-outbox.js';
import { Telemetry } from './mqtt/telemetry.js';
import { MqttApplications } from './mqtt/applications.js';
import { familyApplication, switchedApplication } from './mqtt/family-application.js';
import { mountRest } from './http/rest-family.js';
import type { Family } from './core/family.js';
import { createDeployment } from './deploy/component.js';
import { families } from './api/families.js';
import { mountConsole } from './console/serve.js';
import { mountDeployUpload } from './api/deploy/upload.js';
import { ConfigurationService, type Loaded } from './configuration/service.js';
import { openListenersInForce } from './configuration/listeners.js';
import type { ListenerRefusal } from './configuration/store.js';
import { KeystoreStore } from './keystores/store.js';
import { keystoreUses, usedBy, type ReadTls } from './core/keystore-reference.js';
import { keystoreTlsReader, rotateOnKeystoreChange } from './keystores/tls-source.js';

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
  /** The keystores of dataDir (docs/rest-api.md "keystores/v1"), read on first use. */
  readonly keystores: KeystoreStore;
  /** Reads the TLS keys of http and mqtt: files, or keystore entries. */
  private readonly readTls: ReadTls;
  /** Sessions, identities, providers; set by start(). Its `providers` take custom auth providers. */
  auth: AuthLayer | undefined;
  /** The runtime configuration (configuration/v2); set by start() when the daemon has a file. */
  configuration: ConfigurationService | undefined;
  private components: Component[] = [];
  private stopping: Promise<void> | undefined;
  config: Config;

  private loaded: Loaded | undefined;
  /** Set when the runtime layer's listener settings could not open at start (listen()). */
  private listenersRefused: ListenerRefusal | undefined;

  constructor(opts: DaemonOptions) {
    this.config = opts.config;
    this.loaded = opts.loaded?.config === opts.config ? opts.loaded : undefined;
    this.log = opts.log ?? createLogger(opts.config.logLevel);
    this.registry = opts.registry ?? new DriverRegistry(builtinDrivers());
    this.http = new HttpServer(this.log, serverLimitsOf(opts.config.http));
    this.assets = new AssetRuntime(new DriverPool(this.registry, this.log, opts.config.dataDir), this.log);
    this.applications = new MqttApplications();
    this.keystores = new KeystoreStore(path.join(opts.config.dataDir, 'keystores'), this.log.child({ component: 'keystores' }));
    this.readTls = keystoreTlsReader(this.keystores);
  }

  /**
   * Mounts a request-core family (src/core/family.ts) on REST (when it has a base path, before the
   * listeners open) and as an MQTT application (when it has an application id, at any time).
   */
  mount(family: Family): void {
    if (family.rest !== undefined) {
      mountRest(this.http, family, { permissionsOf: (name) => this.auth?.identities.get(name)?.permissions });
    }
    if (family.appId === undefined) return;
    if (family.active === undefined) return this.applications.register(familyApplication(family, this.log));
    // Registered while active, asked again after every configuration change (src/core/family.ts).
    const switched = switchedApplication(family, this.applications, this.log);
    void switched.sync();
    this.components.push({ name: switched.name, reconfigure: () => switched.sync(), stop: () => switched.stop() });
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
      .use(refuseCrossSite) //     403 for a state change a browser marks as another site's
      .use(auth.authenticate) //   providers by priority: certificate, BASIC, session, custom ones
      .use(auth.authorise) //      the route's role: rest.<role> or kura.admin, else 403
      .filter(auth.challenge); //  403 without a principal → 401; WWW-Authenticate while BASIC is on

    // Front ends that are not on the request core (src/api/families.ts says why).
    mountSessionApi(http, auth);
    this.assets.configure(cfg.assets, cfg.drivers);
    this.components.push({ name: 'assets', reconfigure: (c) => this.assets.configure(c.assets, c.drivers), stop: () => this.assets.close() });
    // MQTT parts are built here (status for system/v1); the service connects after the listeners open.
    const outbox = new TelemetryOutbox({ dir: path.join(cfg.dataDir, 'mqtt'), maxMessages: cfg.mqtt['outbox.max.messages'], maxBytes: cfg.mqtt['outbox.max.bytes'], log: log.child({ component: 'mqtt' }) });
    const telemetry = new Telemetry({ assets: this.assets, log, publish: (pid, records) => mqtt.publishTelemetry(pid, records) });
    // `type: sparkplug`: a Sparkplug B edge node instead (docs/mqtt.md "Sparkplug B"); the type applies from the next start.
    const client = (o: MqttClientOptions) => new MqttClient(o);
    const mqtt =
      cfg.mqtt.type === 'sparkplug'
        ? new SparkplugEdgeNode({ config: cfg.mqtt, outbox, telemetry, assets: this.assets, client, log, dataDir: cfg.dataDir, readTls: this.readTls })
        : new MqttService({ config: cfg.mqtt, applications: this.applications, outbox, telemetry, client, log, readTls: this.readTls });
    // Keystore entries named by the listeners and the broker connection take effect when they change.
    rotateOnKeystoreChange({ store: this.keystores, read: this.readTls, config: () => this.config, http, mqtt, log });
    mountConsole(http, { enabled: () => this.config.console['console.enabled'], log });
    if (cfg.file) {
      const listeningPorts = () => http.listeners().map((l) => l.port);
      this.configuration = await ConfigurationService.start({ file: cfg.file, registry: this.registry, log, apply: (c) => this.apply(c), loaded: this.loaded, listeningPorts });
      this.loaded = undefined;
    }
    const deploy = createDeployment({ dataDir: cfg.dataDir, config: cfg.deploy, drivers: this.registry, auth: auth.providers, applications: this.applications, log });
    mountDeployUpload(http, { deploy: deploy.service, log });

    // Every resource family, on REST and as MQTT applications.
    const system = { config: () => this.config, mqtt: () => ({ connected: mqtt.isConnected, ...outbox.stats() }), listenersRefused: () => this.listenersRefused };
    const keystores = { store: this.keystores, usedBy: (ks: string, alias: string) => usedBy(keystoreUses(this.config), ks, alias) };
    for (const family of families({ assets: this.assets, auth, http, system, configuration: this.configuration, deploy: deploy.service, keystores, log })) this.mount(family);

    // Installed packages start (and register their drivers, providers and MQTT applications) before
    // the listeners accept; they may read the identity store, so its seeding is over first.
    await auth.ready;
    await deploy.start();
    this.components.push(deploy);

    await this.listen();

    // MQTT connects in the background: readiness does not wait for the broker.
    await mqtt.start();
    this.components.push({ name: 'mqtt', reconfigure: (c) => mqtt.reconfigure(c.mqtt), stop: () => mqtt.stop() });

    log.always('gatewayd ready', { version: VERSION, ports: listenerSummary(http), pid: process.pid });
  }

  /**
   * Opens the listeners; those of the image file when the runtime layer's cannot open, kept for
   * check-config and shown in system/v1 status (docs/configuration-v2.md "Listener settings").
   */
  private async listen(): Promise<void> {
    const configuration = this.configuration;
    this.listenersRefused = await openListenersInForce(this.http, this.config, {
      log: this.log,
      fallback: () => configuration?.listenerFallback(),
      store: configuration?.store,
      readTls: this.readTls,
      adopt: async (config) => {
        this.config = config;
        await this.auth?.reconfigure(config);
      },
    });
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
    // While the image's listener settings stand in for the runtime layer's (listen()), they stay
    // until the next start, the revocation list and the allowed ports with them.
    if (this.listenersRefused) config = { ...config, rest: { ...config.rest, 'allowed.ports': this.config.rest['allowed.ports'] } };
    const crl = this.listenersRefused ? this.config.http['https.truststore.crl'] : config.http['https.truststore.crl'];
    if (httpNeedsRestart(this.config.http, config.http) || config.dataDir !== this.config.dataDir) {
      this.log.warn('http and dataDir changes take effect after a restart');
    }
    const crlInForce = reloadCrl(this.http, crl, this.config.http['https.truststore.crl'], this.log);
    config = { ...config, dataDir: this.config.dataDir, http: { ...this.config.http, 'https.truststore.crl': crlInForce } };
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
