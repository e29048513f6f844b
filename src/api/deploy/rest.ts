// Deployment API, `/services/deploy/v2` (docs/rest-api.md "deploy/v2"; Kura's DeploymentRestService),
// a request-core family (src/core/family.ts) mounted on REST only. Role `deploy`. Success bodies are
// JSON (statuses are bare JSON strings such as `"REQUEST_RECEIVED"`); errors are Kura's text/plain
// strings. The upload (`POST _upload`) is the one route of the family that is not on the core: it
// streams a multipart body to disk as it arrives (src/api/deploy/upload.ts).
//
// Extensions (documented in docs/rest-api.md): `GET /services/deploy/v2/_jobs` lists recent install
// and uninstall jobs with their state, because Kura's API never says whether one failed, and
// `DELETE /services/deploy/v2/_jobs/<id>` cancels one that is queued or downloading.

import { RequestError } from '../../core/errors.js';
import type { CoreRequest, Family } from '../../core/family.js';
import { isPlainObject } from '../../core/schema.js';
import type { Logger } from '../../log.js';
import type { DeploymentService } from '../../deploy/service.js';
import { UrlRefusedError, redactUrl } from '../../deploy/fetch.js';
import { DescriptorRequestError } from '../../deploy/descriptor.js';
import { QueueFullError } from '../../deploy/jobs.js';

export const DEPLOY_BASE = '/services/deploy/v2';
export const DEPLOY_ROLE = 'deploy';

/** Which driver instances and assets use the given driver factories (for a package's `_drivers`). */
export type DriverUsage = (factories: string[]) => { instances: string[]; assets: string[] };

export function deployFamily(deploy: DeploymentService, baseLog: Logger, usage: DriverUsage = () => ({ instances: [], assets: [] })): Family {
  const log = baseLog.child({ component: 'deploy-api' });
  return {
    name: 'deploy/v2',
    rest: DEPLOY_BASE,
    role: DEPLOY_ROLE,
    errors: 'text',
    routes: [
      { method: 'GET', path: '', handler: () => deploy.list() },
      { method: 'GET', path: '_jobs', handler: () => deploy.recentJobs() },
      // Extension (docs/rest-api.md): cancels a queued or downloading job; answers the job, now CANCELLED.
      {
        method: 'DEL',
        path: '_jobs/:id',
        handler: (req) => {
          const id = req.params.id!;
          const r = /^[1-9]\d{0,15}$/.test(id) ? deploy.cancelJob(Number(id)) : undefined;
          if (r === undefined) throw new RequestError(404, `No deployment job ${id}`);
          if (r === 'busy') throw new RequestError(409, `Deployment job ${id} is being applied and cannot be cancelled`);
          if (r === 'finished') throw new RequestError(409, `Deployment job ${id} has already ended`);
          return r;
        },
      },
      {
        method: 'POST',
        path: '_install',
        handler: async (req) => {
          const url = await urlOf(req);
          // An empty or missing url is 400 `Bad request` (Kura accepts "" and fails later; COMPATIBILITY.md).
          if (typeof url !== 'string' || url === '') throw new RequestError(400, 'Bad request');
          try {
            return deploy.requestInstall(url);
          } catch (err) {
            if (err instanceof UrlRefusedError) throw new RequestError(400, err.message);
            if (err instanceof QueueFullError) throw new RequestError(507, err.message);
            log.error('install request failed', { url: redactUrl(url), error: (err as Error).message });
            throw new RequestError(500, `Error installing deployment package: ${redactUrl(url)}`);
          }
        },
      },
      {
        // Extension (docs/rest-api.md): the driver factories a package's plug-in registered, and
        // the instances and assets that uninstalling it leaves without a driver.
        method: 'GET',
        path: ':name/_drivers',
        handler: (req) => {
          const name = req.params.name!;
          if (!deploy.list().some((p) => p.name === name)) throw new RequestError(404, `Package not found: ${name}`);
          const factories = deploy.driverFactoriesOf(name);
          return { factories, ...usage(factories) };
        },
      },
      {
        method: 'DEL',
        path: ':name',
        handler: (req) => {
          const name = req.params.name!;
          try {
            return deploy.requestUninstall(name);
          } catch (err) {
            if (err instanceof QueueFullError) throw new RequestError(507, err.message);
            log.error('uninstall request failed', { package: name, error: (err as Error).message });
            throw new RequestError(500, `Error uninstalling deployment package: ${name}`);
          }
        },
      },
      {
        method: 'PUT',
        path: '_packageDescriptor',
        handler: async (req) => {
          const url = await urlOf(req);
          try {
            return await deploy.packageDescriptor(url);
          } catch (err) {
            if (err instanceof DescriptorRequestError) throw new RequestError(400, err.message);
            log.error('package descriptor failed', { url: String(url), error: (err as Error).message });
            throw new RequestError(500, `Error checking package descriptor for ${String(url)}`);
          }
        },
      },
    ],
  };
}

/** The `url` of an InstallRequest body; `undefined` when absent. Malformed JSON is 400 (COMPATIBILITY.md). */
async function urlOf(req: CoreRequest): Promise<unknown> {
  // A missing body is Kura's `Bad request` (its null-request check), not the generic message.
  const body = await req.body();
  if (!isPlainObject(body)) throw new RequestError(400, 'Bad request');
  return body.url === null ? undefined : body.url;
}
