// Every resource family of the daemon in one list, what src/daemon.ts mounts: each on REST, as an
// MQTT application, or both, from its `rest` and `appId` (src/core/family.ts "Mounting"). The list
// order is the order MQTT applications are announced in BIRTH's `application_ids`, before those
// that installed packages add. Two routes are not on the request core and are mounted beside the
// list: session/v1 (src/api/session.ts) and the deploy/v2 upload (src/api/deploy/upload.ts); their
// headers say why.

import type { Family } from '../core/family.js';
import type { HttpServer } from '../http/server.js';
import type { Logger } from '../log.js';
import type { AssetService } from '../assets/types.js';
import type { PollStatus } from '../assets/service.js';
import type { AuthLayer } from '../auth/layer.js';
import type { ConfigurationService } from '../configuration/service.js';
import type { DeploymentService } from '../deploy/service.js';
import { assetsFamily } from './assets.js';
import { assetStatusFamily } from './asset-status.js';
import { assetChannelsCsvFamily } from './asset-channels-csv.js';
import { driversFamily, type DriverInstances } from './drivers.js';
import { assetHistoryFamily } from './asset-history.js';
import { assetV1Family } from './asset-v1/handler.js';
import { systemFamily, type SystemDeps } from './system.js';
import { identityFamily } from './identity.js';
import { configurationFamily } from './configuration.js';
import { confV1Family } from './conf-v1/handler.js';
import { deployFamily, type DriverUsage } from './deploy/rest.js';
import { deployV2Family } from './deploy/deploy-v2.js';
import { commandFamily } from './cmd-v1.js';
import { inventoryFamilies } from './inventory.js';
import { keystoresMqttFamily, keystoresRestFamily, type KeystoreDeps } from './keystores.js';
import { cloudConnectionFamily, type CloudConnectionDeps } from './cloudconnection.js';

export interface FamilyDeps {
  assets: AssetService & { pollStatus(pid: string): PollStatus; readonly drivers: DriverInstances };
  auth: AuthLayer;
  http: HttpServer;
  system: SystemDeps;
  /** The runtime configuration; undefined for a daemon built without a file (no configuration/v2). */
  configuration: ConfigurationService | undefined;
  deploy: DeploymentService;
  keystores: KeystoreDeps;
  /** The MQTT connections (src/mqtt/connections.ts through the daemon). */
  cloudconnection: CloudConnectionDeps;
  log: Logger;
}

export function families(d: FamilyDeps): Family[] {
  return [
    assetsFamily(d.assets), //                   REST /services/assets
    assetV1Family(d.assets), //                  MQTT ASSET-V1
    assetStatusFamily(d.assets), //              REST /services/assets/{pid}/_status
    assetHistoryFamily(d.assets), //             REST /services/assets/{pid}/_history
    driversFamily(d.assets.drivers), //          REST /services/drivers/{pid}/_probe, …
    systemFamily(d.http, d.system), //           REST /services/system/v1
    identityFamily(d.auth), //                   REST /services/identity/v1
    ...(d.configuration ? [configurationFamily(d.configuration, d.cloudconnection), confV1Family(d.configuration)] : []), // REST configuration/v2, MQTT CONF-V2 and CONF-V1
    ...(d.configuration ? [assetChannelsCsvFamily(d.configuration)] : []), // REST /services/assets/{pid}/_channels.csv
    deployFamily(d.deploy, d.log, driverUsage(d.assets)), // REST /services/deploy/v2
    deployV2Family(d.deploy, d.log), //          MQTT DEPLOY-V2
    commandFamily(d.system.config, d.log), //     MQTT CMD-V1, while command.enabled
    ...inventoryFamilies(d.deploy, d.log), //    REST /services/inventory/v1, MQTT INVENTORY-V1
    keystoresRestFamily(d.keystores), //         REST /services/keystores/v1
    keystoresMqttFamily(d.keystores), //         MQTT KEYS-V1
    cloudConnectionFamily(d.cloudconnection), // REST /services/cloudconnection/v1
  ];
}

/** The driver instances of the given factories and the assets on them (deploy/v2 `{name}/_drivers`). */
function driverUsage(assets: FamilyDeps['assets']): DriverUsage {
  return (factories) => {
    const f = new Set(factories);
    const instances = assets.drivers.list().filter((i) => f.has(i.factory)).map((i) => i.id);
    const on = new Set(instances);
    return { instances, assets: assets.list().filter((pid) => on.has(assets.get(pid)?.driverPid ?? '')) };
  };
}
