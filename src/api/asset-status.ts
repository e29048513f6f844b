// Poll status of an asset, `GET /services/assets/{pid}/_status` (docs/rest-api.md "Poll status";
// an extension, role assets): when the asset last polled, last polled without a failed channel,
// how many polls in a row failed, overruns, and per device (Modbus unit) requests, responses,
// timeouts, exceptions and the end of its back-off. A stall is visible as an old `lastPoll`.

import { RequestError } from '../core/errors.js';
import type { Family } from '../core/family.js';
import { AssetNotFoundError } from '../assets/types.js';
import type { PollStatus } from '../assets/service.js';

export const assetStatusFamily = (assets: { pollStatus(pid: string): PollStatus }): Family => ({
  name: 'assets/status',
  rest: '/services/assets',
  role: 'assets',
  errors: 'text',
  routes: [{
    method: 'GET',
    path: ':pid/_status',
    handler: (req) => {
      try {
        return assets.pollStatus(req.params.pid);
      } catch (err) {
        // Kura's assets service answers an unknown asset with 404 and its message.
        if (err instanceof AssetNotFoundError) throw new RequestError(404, err.message);
        throw err;
      }
    },
  }],
});
