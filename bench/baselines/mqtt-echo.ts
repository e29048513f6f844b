// Baseline for ASSET-V1 over MQTT: a bare echo through the same broker (the ceiling). It listens
// where gatewayd would (bare `json` encoding, docs/mqtt.md "Encodings") and answers every EXEC/read
// with the same reply bytes gatewayd sent, without reading anything.
//
//   node bench/out/mqtt-echo.mjs PORT CLIENT_ID REPLY_FILE   → {"ready":true}

import fs from 'node:fs';
import { BenchMqtt } from '../lib/mqtt.js';

const [port, clientId, replyFile] = process.argv.slice(2);
const reply = fs.readFileSync(replyFile);
const c = await BenchMqtt.connect(Number(port), clientId);
const prefix = `$EDC/account/${clientId}/ASSET-V1/EXEC/read/`;
c.onMessage = (topic) => {
  // <prefix>/<requester>/<request-id> → reply on $EDC/account/<requester>/ASSET-V1/REPLY/<request-id>
  const [requester, id] = topic.slice(prefix.length).split('/');
  c.publish(`$EDC/account/${requester}/ASSET-V1/REPLY/${id}`, reply);
};
await c.subscribe(`${prefix}+/+`);
process.stdout.write(JSON.stringify({ ready: true }) + '\n');
