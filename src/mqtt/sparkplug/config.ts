// The Sparkplug keys of an `mqtt` connection are validated with the section (src/mqtt/config.ts);
// this is what the edge node makes of them (docs/configuration.md "mqtt").

import type { MqttConfig } from '../config.js';

/** The edge node id in force: `sparkplug.edge.node.id`, else the client-id. */
export const edgeNodeId = (c: MqttConfig): string => c['sparkplug.edge.node.id'] || c['client-id'];
