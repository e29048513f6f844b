// Life-cycle messages as Kura's LifecyclePayloadBuilder and KuraBirthPayload build them
// (docs/mqtt.md "Life-cycle messages"): every metric a STRING with Kura's name, in Kura's order,
// absent when unknown (Kura omits nulls). Eclipse Kapua reads `uptime` and the others as strings
// and shows a device's Assets/Packages/Configuration tabs from `application_ids`.

import fs from 'node:fs';
import os from 'node:os';
import { VERSION } from '../version.js';
import type { PayloadEncoding } from './config.js';
import type { KuraMetric } from './kura-payload.js';

export interface LifecycleFacts {
  startedAt: number;
  clientId: string;
  encoding: PayloadEncoding;
  applicationIds: string[];
  /** Local address of the connection to the broker. */
  connectionIp?: string;
}

/** A device-tree property (ARM boards: model, serial number), without its trailing NUL. */
function deviceTree(name: string): string | undefined {
  try {
    return fs.readFileSync(`/proc/device-tree/${name}`, 'latin1').replace(/\0+$/, '').trim() || undefined;
  } catch {
    return undefined;
  }
}

/** Java's `os.arch` names for Node's `process.arch`. */
const ARCH: Record<string, string> = { x64: 'amd64', arm64: 'aarch64', ia32: 'x86' };

function interfaceOf(ip: string | undefined): string | undefined {
  if (!ip) return undefined;
  for (const [name, addrs] of Object.entries(os.networkInterfaces())) if (addrs?.some((a) => a.address === ip)) return name;
  return undefined;
}

function strings(pairs: [string, string | undefined][]): KuraMetric[] {
  return pairs.filter((p): p is [string, string] => p[1] !== undefined).map(([name, value]) => ({ name, type: 'STRING', value }));
}

const uptime = (f: LifecycleFacts) => String(Date.now() - f.startedAt);

/** BIRTH (after each connection, and again when the application ids change). */
export function birthMetrics(f: LifecycleFacts): KuraMetric[] {
  return strings([
    ['uptime', uptime(f)],
    ['display_name', os.hostname()],
    ['model_name', deviceTree('model')],
    ['serial_number', deviceTree('serial-number')],
    ['os', os.type()],
    ['os_version', os.release()],
    ['jvm_name', 'Node.js'],
    ['jvm_version', process.versions.node],
    ['application_framework', 'gatewayd'],
    ['application_framework_version', VERSION],
    ['connection_interface', interfaceOf(f.connectionIp)],
    ['connection_ip', f.connectionIp],
    ['accept_encoding', 'gzip'],
    ['application_ids', f.applicationIds.join(',')],
    ['available_processors', String(os.cpus().length || 1)],
    ['total_memory', String(Math.round(os.totalmem() / 1024))],
    ['os_arch', ARCH[process.arch] ?? process.arch],
    // The encoding of these very messages: the two JSON encodings send them as simple-json.
    ['payload_encoding', f.encoding === 'kura-protobuf' ? 'KURA_PROTOBUF' : 'SIMPLE_JSON'],
    // Not Kura's: which device this is, for subscribers of a wildcard.
    ['client_id', f.clientId],
  ]);
}

/** DC (before a clean disconnection). */
export function dcMetrics(f: LifecycleFacts): KuraMetric[] {
  return strings([
    ['uptime', uptime(f)],
    ['display_name', os.hostname()],
  ]);
}
