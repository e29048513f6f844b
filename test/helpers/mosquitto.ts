// Starts a real Mosquitto broker on an ephemeral 127.0.0.1 port, with its config in a temp dir.
// Optional TLS listener with a CA, server and client certificate generated here with openssl.
// The broker can be stopped and restarted on the same ports (persistence on, so QoS 1 sessions of
// persistent clients survive a restart as they would in the field).

import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './ports.js';
import { makePki } from './certs.js';

export { freePort };

export const MOSQUITTO = '/usr/sbin/mosquitto';

export function haveBinary(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export function haveMosquitto(): boolean {
  return haveBinary(MOSQUITTO) && haveBinary('/usr/bin/mosquitto_pub') && haveBinary('/usr/bin/openssl');
}

/**
 * For `t.test(name, skipUnlessMosquitto(), fn)`: skips when the broker is missing, except under
 * CI=true where a missing peer must fail the run.
 */
export function mosquittoSkip(): { skip?: string } {
  if (haveMosquitto()) return {};
  if (process.env.CI === 'true') throw new Error('mosquitto/openssl not installed but CI=true: the MQTT tests cannot run');
  return { skip: 'mosquitto not installed' };
}

export interface Certs {
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
}

/** A throw-away CA with a server certificate for 127.0.0.1/localhost and a client certificate. */
export function makeCerts(dir: string): Certs {
  const pki = makePki(dir);
  const client = pki.client('gatewayd-client');
  return { ca: pki.caCert, serverCert: pki.serverCert, serverKey: pki.serverKey, clientCert: client.cert, clientKey: client.key };
}

export interface Broker {
  port: number;
  /** Present with `tls: true`: a listener that requires a client certificate signed by `certs.ca`. */
  tlsPort?: number;
  certs?: Certs;
  dir: string;
  url: string;
  stop(signal?: NodeJS.Signals): Promise<void>;
  start(): Promise<void>;
  restart(): Promise<void>;
  /** Stops the broker and removes the temp dir. */
  close(): Promise<void>;
  /** What the broker logged since its last start (`log_type` lines given in `conf`). */
  output(): string;
}

async function waitForPort(port: number, child: ChildProcess, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`mosquitto exited with code ${child.exitCode}`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect({ host: '127.0.0.1', port });
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`mosquitto did not listen on ${port}`);
}

/** `conf`: extra mosquitto.conf lines (e.g. `acl_file …`, `log_type all`). */
export async function startMosquitto(opts: { tls?: boolean; conf?: string[] } = {}): Promise<Broker> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatewayd-mosquitto-'));
  const port = await freePort();
  const tlsPort = opts.tls ? await freePort() : undefined;
  let certs: Certs | undefined;
  try {
    certs = opts.tls ? makeCerts(dir) : undefined;
  } catch (err) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw new Error(`openssl could not generate test certificates: ${(err as Error).message}`);
  }
  const lines = [
    // Run as whoever runs the test: as root, mosquitto would otherwise drop to user `mosquitto` and
    // lose access to the private temp dir.
    `user ${os.userInfo().username}`,
    'per_listener_settings false',
    'allow_anonymous true',
    'persistence true',
    `persistence_location ${dir}/`,
    'log_dest stdout',
    'log_type error',
    ...(opts.conf ?? []),
    `listener ${port} 127.0.0.1`,
  ];
  if (certs && tlsPort) {
    lines.push(
      `listener ${tlsPort} 127.0.0.1`,
      `cafile ${certs.ca}`,
      `certfile ${certs.serverCert}`,
      `keyfile ${certs.serverKey}`,
      'require_certificate true',
    );
  }
  const conf = path.join(dir, 'mosquitto.conf');
  fs.writeFileSync(conf, lines.join('\n') + '\n');
  let child: ChildProcess | undefined;
  let output = '';

  const broker: Broker = {
    port,
    tlsPort,
    certs,
    dir,
    url: `mqtt://127.0.0.1:${port}`,
    async start() {
      if (child && child.exitCode === null) return;
      output = '';
      const c = spawn(MOSQUITTO, ['-c', conf], { stdio: ['ignore', 'pipe', 'pipe'] });
      c.stdout!.on('data', (d) => (output += d));
      c.stderr!.on('data', (d) => (output += d));
      child = c;
      try {
        await waitForPort(port, c);
        if (tlsPort) await waitForPort(tlsPort, c);
      } catch (err) {
        c.kill('SIGKILL');
        throw new Error(`${(err as Error).message}: ${output}`);
      }
    },
    async stop(signal: NodeJS.Signals = 'SIGTERM') {
      const c = child;
      if (!c || c.exitCode !== null || c.signalCode !== null) return;
      await new Promise<void>((resolve) => {
        c.once('exit', () => resolve());
        c.kill(signal);
      });
    },
    async restart() {
      await broker.stop();
      await broker.start();
    },
    async close() {
      await broker.stop('SIGKILL');
      fs.rmSync(dir, { recursive: true, force: true });
    },
    output: () => output,
  };
  try {
    await broker.start();
  } catch (err) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  return broker;
}

/** Runs mosquitto_sub for `count` messages on `topic` (with `-v`: "topic payload" lines). */
export function subscribeLines(
  port: number,
  topic: string,
  extra: string[] = [],
): { lines: string[]; proc: ChildProcess; ready: Promise<void>; stop: () => void } {
  const proc = spawn('/usr/bin/mosquitto_sub', ['-h', '127.0.0.1', '-p', String(port), '-t', topic, '-v', ...extra], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let buf = '';
  proc.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      lines.push(buf.slice(0, i));
      buf = buf.slice(i + 1);
    }
  });
  // mosquitto_sub gives no "subscribed" signal; a short settle time is enough on loopback.
  const ready = new Promise<void>((r) => setTimeout(r, 300));
  return { lines, proc, ready, stop: () => proc.kill('SIGTERM') };
}
