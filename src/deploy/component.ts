// How the daemon starts deployment: one call that builds the plug-in host and the deployment
// service, starts the installed packages, and hands back a daemon component. The REST API
// (src/api/deploy/) is mounted by the daemon.

import type { Logger } from '../log.js';
import type { DeployConfig } from './config.js';
import { DeploymentService } from './service.js';
import { PluginHost, type AuthProviderSink, type DriverFactorySink, type MqttApplicationSink } from '../plugins/host.js';

export interface DeploymentDeps {
  dataDir: string;
  config: DeployConfig;
  /** The daemon's DriverRegistry. */
  drivers: DriverFactorySink;
  /** The auth layer's AuthProviderRegistry, when there is one. */
  auth?: AuthProviderSink;
  /** The daemon's MqttApplications: packages may add MQTT applications. */
  applications?: MqttApplicationSink;
  log: Logger;
}

export interface DeploymentComponent {
  name: 'deploy';
  service: DeploymentService;
  reconfigure(config: { deploy: DeployConfig }): void;
  stop(): Promise<void>;
}

/** Starts every installed package, in install order. */
export async function startDeployment(deps: DeploymentDeps): Promise<DeploymentComponent> {
  const plugins = new PluginHost({ log: deps.log, drivers: deps.drivers, auth: deps.auth, applications: deps.applications });
  // The package check follows the trust anchors and unsigned.allowed in force (DeploymentService.reconfigure).
  const service = new DeploymentService({ dataDir: deps.dataDir, config: deps.config, log: deps.log, plugins });
  await service.start();
  return {
    name: 'deploy',
    service,
    reconfigure: (c) => service.reconfigure(c.deploy),
    stop: () => service.stop(),
  };
}
