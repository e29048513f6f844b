// deploy/v2 on an HTTP server as the daemon mounts it (src/daemon.ts): the request-core family and
// the native upload route, for tests that drive a DeploymentService without a whole daemon.
import type { HttpServer } from '../../src/http/server.js';
import { mountRest } from '../../src/http/rest-family.js';
import { deployFamily } from '../../src/api/deploy/rest.js';
import { mountDeployUpload } from '../../src/api/deploy/upload.js';
import type { DeploymentService } from '../../src/deploy/service.js';
import type { Logger } from '../../src/log.js';

export function mountDeployApi(server: HttpServer, deps: { deploy: DeploymentService; log: Logger }): void {
  mountRest(server, deployFamily(deps.deploy, deps.log), { permissionsOf: () => undefined });
  mountDeployUpload(server, deps);
}
