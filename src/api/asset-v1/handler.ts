// ASSET-V1 as a request-core family (src/core/family.ts), MQTT only: one route per verb, one file
// per verb. Kura's native application rules: unknown resources are 400 naming them, PUT/POST/DEL
// are 500 `Operation … not supported.`, an unknown method is 400 without a message, and errors carry
// `response.exception.message` (the 'native' style of src/core/errors.ts). Each request runs on its
// own promise, so a slow device delays only the replies that wait for it.

import type { AssetService } from '../../assets/types.js';
import { RequestError, notSupported } from '../../core/errors.js';
import type { Family } from '../../core/family.js';
import { getAssets, parseGetAssetsBody } from './get-assets.js';
import { execRead, parseReadBody } from './exec-read.js';
import { execWrite, parseWriteBody } from './exec-write.js';

export const APP_ID = 'ASSET-V1';

export function assetV1Family(assets: AssetService): Family {
  return {
    name: APP_ID,
    appId: APP_ID,
    // The REST assets family's role: over MQTT a requester needs rest.assets (or kura.admin).
    role: 'assets',
    errors: 'native',
    routes: [
      { method: 'GET', path: 'assets', handler: async (req) => getAssets(assets, parseGetAssetsBody(await req.body())) },
      { method: 'EXEC', path: 'read', handler: async (req) => execRead(assets, parseReadBody(await req.body())) },
      { method: 'EXEC', path: 'write', handler: async (req) => execWrite(assets, parseWriteBody(await req.body())) },
    ],
    noMatch(method, resources) {
      if (method === 'GET' || method === 'EXEC') return new RequestError(400, `Unknown resource ${method}/${resources.join('/')}.`);
      if (method === 'PUT' || method === 'POST' || method === 'DEL') return notSupported(method);
      // Kura: an unknown method is 400 with no message.
      return new RequestError(400);
    },
  };
}
