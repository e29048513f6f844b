// Recent values of a polled numeric channel, `GET /services/assets/{pid}/_history?channel=<name>`
// (docs/rest-api.md "History"; a gatewayd extension, role assets): the in-memory history that
// src/assets/history.ts keeps from the poll cycles, bounded as documented there.

import { RequestError } from '../core/errors.js';
import type { Family } from '../core/family.js';
import type { AssetService } from '../assets/types.js';
import { ChannelHistory } from '../assets/history.js';

const NUMERIC = new Set(['INTEGER', 'LONG', 'FLOAT', 'DOUBLE']);

export function assetHistoryFamily(assets: AssetService): Family {
  const history = new ChannelHistory();
  let polls = 0;
  assets.onPoll((pid, records) => {
    // A reconfiguration may drop assets or channels: their samples are forgotten now and then
    // (every thousand poll cycles), so what is tracked follows the configuration.
    if (++polls % 1000 === 0) {
      history.retain((p, name) => {
        const ch = assets.get(p)?.channels.find((c) => c.name === name);
        return ch !== undefined && NUMERIC.has(ch.valueType);
      });
    }
    history.record(pid, records);
  });
  return {
    name: 'assets/history',
    rest: '/services/assets',
    role: 'assets',
    errors: 'text',
    routes: [{
      method: 'GET',
      path: ':pid/_history',
      handler: (req) => {
        const pid = req.params.pid!;
        const asset = assets.get(pid);
        if (!asset) throw new RequestError(404, `Asset not found: ${pid}`);
        const name = req.query('channel');
        if (name === undefined || name === '') throw new RequestError(400, 'Query parameter channel is required: the name of a numeric channel');
        const ch = asset.channels.find((c) => c.name === name);
        if (!ch) throw new RequestError(404, `Channel not found: ${name.slice(0, 100)}`);
        if (!NUMERIC.has(ch.valueType)) throw new RequestError(400, `Channel ${name} is ${ch.valueType}: history is kept for INTEGER, LONG, FLOAT and DOUBLE channels`);
        return history.samples(pid, name);
      },
    }],
  };
}
