// Recent values of a polled numeric channel, `GET /services/assets/{pid}/_history?channel=<name>`
// (docs/rest-api.md "History"; a gatewayd extension, role assets): the in-memory history that
// src/assets/history.ts keeps from the poll cycles, bounded as documented there.

import { RequestError } from '../core/errors.js';
import type { Family } from '../core/family.js';
import type { AssetService } from '../assets/types.js';
import { ChannelHistory } from '../assets/history.js';

const NUMERIC = new Set(['INTEGER', 'LONG', 'FLOAT', 'DOUBLE']);

/**
 * For one retain() pass: whether asset `pid` has a numeric channel `name` in the configuration in
 * force. Each asset's numeric channel names are gathered once per pass, at its first channel asked
 * for, so a pass costs one walk of every tracked asset's channels (a search of the channel list per
 * tracked channel grew with the square of an asset's channels: 10,000 channels, 10 million steps).
 */
export function configuredNumeric(assets: Pick<AssetService, 'get'>): (pid: string, name: string) => boolean {
  const numeric = new Map<string, ReadonlySet<string>>();
  return (pid, name) => {
    let names = numeric.get(pid);
    if (!names) {
      const set = new Set<string>();
      for (const c of assets.get(pid)?.channels ?? []) if (NUMERIC.has(c.valueType)) set.add(c.name);
      numeric.set(pid, (names = set));
    }
    return names.has(name);
  };
}

export function assetHistoryFamily(assets: AssetService): Family {
  const history = new ChannelHistory();
  let polls = 0;
  assets.onPoll((pid, records) => {
    // A reconfiguration may drop assets or channels: their samples are forgotten now and then
    // (every thousand poll cycles), so what is tracked follows the configuration.
    if (++polls % 1000 === 0) {
      history.retain(configuredNumeric(assets));
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
