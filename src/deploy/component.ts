// How the daemon starts deployment: one call that builds the plug-in host and the deployment
// service and hands back a daemon component, whose `start` starts the installed packages. The
// front ends (src/api/deploy/) are mounted by the daemon between the two.

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
  /** Starts every installed package, in install order. */
  start(): Promise<void>;
  reconfigure(config: { deploy: DeployConfig }): void;
  stop(): Promise<void>;
}

/** The deployment service and its plug-in host; no package runs before `start`. */
export function createDeployment(deps: DeploymentDeps): DeploymentComponent {
  const plugins = new PluginHost({ log: deps.log, drivers: deps.drivers, auth: deps.auth, applications: deps.applications });
  // The package check follows the trust anchors and unsigned.allowed in force (DeploymentService.reconfigure).
  const service = new DeploymentService({ dataDir: deps.dataDir, config: deps.config, log: deps.log, plugins });
  return {
    name: 'deploy',
    service,
    start: () => service.start(),
    reconfigure: (c) => service.reconfigure(c.deploy),
    stop: () => service.stop(),
  };
}
