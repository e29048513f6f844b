// How the daemon starts deployment: one call that builds the plug-in host, the deployment service
// and the deploy/v2 routes, starts the installed packages, and hands back a daemon component.

import type { Logger } from '../log.js';
import type { HttpServer } from '../http/server.js';
import type { DeployConfig } from './config.js';
import { DeploymentService } from './service.js';
import { PluginHost, type AuthProviderSink, type DriverFactorySink } from '../plugins/host.js';
import { mountDeployApi } from '../api/deploy.js';
import { refuseUnsigned, signatureCheck } from './signature.js';

export interface DeploymentDeps {
  server: HttpServer;
  dataDir: string;
  config: DeployConfig;
  /** The daemon's DriverRegistry. */
  drivers: DriverFactorySink;
  /** The auth layer's AuthProviderRegistry, when there is one. */
  auth?: AuthProviderSink;
  log: Logger;
}

export interface DeploymentComponent {
  name: 'deploy';
  service: DeploymentService;
  reconfigure(config: { deploy: DeployConfig }): void;
  stop(): Promise<void>;
}

/** Mounts `/services/deploy/v2` and starts every installed package, in install order. */
export async function startDeployment(deps: DeploymentDeps): Promise<DeploymentComponent> {
  const plugins = new PluginHost({ log: deps.log, drivers: deps.drivers, auth: deps.auth });
  // Trust anchors are read once at start; a changed list needs a restart (it guards every install).
  const anchors = deps.config['trust.anchors'];
  const check = anchors.length > 0 ? signatureCheck(anchors) : deps.config['unsigned.allowed'] ? undefined : refuseUnsigned;
  const service = new DeploymentService({ dataDir: deps.dataDir, config: deps.config, log: deps.log, plugins, check });
  mountDeployApi(deps.server, { deploy: service, log: deps.log });
  await service.start();
  return {
    name: 'deploy',
    service,
    reconfigure: (c) => service.reconfigure(c.deploy),
    stop: () => service.stop(),
  };
}
