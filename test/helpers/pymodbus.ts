// A real Modbus device for tests: Debian's pymodbus (`/usr/bin/python3`, see pymodbus_server.py)
// over TCP on an ephemeral 127.0.0.1 port, or over RTU on one end of a socat pty pair.
//
//   const dev = await startPyModbusTcp(t);            // or startPyModbusRtu(t)
//   await dev.set(1, 'hr', 0, [1, 2, 3]);             // PDU address 0 = Kura memory.address 1
//   await dev.received()                              // every request the device received, in order
//   await dev.get(1, 'hr', 0, 3)                      // what the device holds now
//   await dev.stop(); await dev.start();              // device down / back (same port or pty)
//
// Processes and temp dirs are cleaned up in t.teardown. `havePeers(t, …)` skips a test when a peer
// is missing, or fails it under CI=true.

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import readline from 'node:readline';
import fs from 'node:fs';
import net from 'node:net';
import tty from 'node:tty';

const PYTHON = '/usr/bin/python3';
const SCRIPT = path.join(path.dirname(fileURLToPath(import.meta.url)), 'pymodbus_server.py');

export type Table = 'hr' | 'ir' | 'co' | 'di';

export interface DeviceRequest {
  unit: number;
  fc: number;
  address: number;
  count?: number;
  values?: number[];
}

// The subset of tap's Test used here (keeps the helper independent of tap's types).
interface T {
  teardown(fn: () => unknown): void;
  fail(msg: string): void;
  plan(n: number, comment?: string): void;
}

let peerCache: Record<string, string | null> | undefined;

/** Why each peer is unusable (null: usable). */
function peerProblems(): Record<string, string | null> {
  if (peerCache) return peerCache;
  const py = spawnSync(PYTHON, ['-c', 'import pymodbus, serial_asyncio; print(pymodbus.__version__)'], { encoding: 'utf8' });
  const socat = spawnSync('socat', ['-V'], { encoding: 'utf8' });
  const stty = spawnSync('stty', ['--version'], { encoding: 'utf8' });
  peerCache = {
    pymodbus: py.status === 0 ? null : `${PYTHON} with pymodbus and serial_asyncio not available`,
    socat: socat.status === 0 ? null : 'socat not available',
    stty: stty.status === 0 ? null : 'stty not available',
  };
  return peerCache;
}

/** True when all named peers exist; otherwise skips the file (under CI=true: fails it) and returns false. */
export function havePeers(t: T, ...names: ('pymodbus' | 'socat' | 'stty')[]): boolean {
  const missing = names.map((n) => peerProblems()[n]).filter((x): x is string => !!x);
  if (missing.length === 0) return true;
  const msg = missing.join('; ');
  if (process.env.CI === 'true') t.fail(`required test peer missing under CI: ${msg}`);
  else t.plan(0, `skip: ${msg}`);
  return false;
}

export interface PyModbusDevice {
  /** TCP: the listening port. RTU: 0. */
  readonly port: number;
  /** RTU: the pty the driver opens (`modbus.rtu.port.name`). TCP: ''. */
  readonly serialPort: string;
  /**
   * Requests received since start (or the last clearRequests()), across restarts, once every
   * request answered so far has been logged (the log and the answers travel separately).
   */
  received(): Promise<DeviceRequest[]>;
  /** Forgets the requests received so far (after they have all been logged). */
  clearRequests(): Promise<void>;
  set(unit: number, table: Table, address: number, values: (number | boolean)[]): Promise<void>;
  get(unit: number, table: Table, address: number, count: number): Promise<number[]>;
  /** Answer `delayMs` late, or not at all (`silent`; `silentUnits`: only those units). */
  mode(m: { delayMs?: number; silent?: boolean; silentUnits?: number[] }): Promise<void>;
  /** Kills the device process (the port or pty stays reserved for start()). */
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops everything; also done by t.teardown. */
  close(): Promise<void>;
}

interface Options {
  units?: number[];
  size?: number;
  baud?: number;
  /** Read Device Identification objects (FC 43 / MEI 14) by name: VendorName, ProductCode, MajorMinorRevision, VendorUrl, ProductName, ModelName, UserApplicationName. */
  identity?: Record<string, string>;
}

class Device implements PyModbusDevice {
  port = 0;
  serialPort = '';
  requests: DeviceRequest[] = [];
  private proc: ChildProcess | undefined;
  private nextId = 1;
  private waiting = new Map<number, (values: number[]) => void>();
  private stderrTail: string[] = [];
  private socat: ChildProcess | undefined;
  private devicePty = '';

  get peerPty(): string {
    return this.devicePty;
  }

  constructor(private readonly kind: 'tcp' | 'rtu', private readonly opts: Options) {}

  async startSocat(): Promise<void> {
    // `-d -d` makes socat print the two pty names it created: the driver gets one, pymodbus the other.
    const socat = spawn('socat', ['-d', '-d', 'pty,raw,echo=0', 'pty,raw,echo=0'], { stdio: ['ignore', 'ignore', 'pipe'] });
    this.socat = socat;
    const ptys: string[] = [];
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('socat did not report its ptys')), 5000);
      readline.createInterface({ input: socat.stderr! }).on('line', (line) => {
        const m = /PTY is (\S+)/.exec(line);
        if (m) ptys.push(m[1]);
        if (/starting data transfer loop/.test(line)) {
          clearTimeout(timer);
          resolve();
        }
      });
      socat.once('exit', (code) => reject(new Error(`socat exited with ${code}`)));
    });
    [this.serialPort, this.devicePty] = ptys;
  }

  async start(): Promise<void> {
    const args = [SCRIPT, '--units', (this.opts.units ?? [1]).join(','), '--size', String(this.opts.size ?? 1000), ...(this.opts.identity ? ['--identity', JSON.stringify(this.opts.identity)] : [])];
    if (this.kind === 'tcp') args.push('--tcp', String(this.port));
    else args.push('--rtu', this.devicePty, '--baud', String(this.opts.baud ?? 9600));
    const proc = spawn(PYTHON, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    this.proc = proc;
    readline.createInterface({ input: proc.stderr! }).on('line', (l) => {
      this.stderrTail.push(l);
      if (this.stderrTail.length > 20) this.stderrTail.shift();
    });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`pymodbus did not start: ${this.stderrTail.join('\n')}`)), 10_000);
      const early = (code: number | null) => {
        clearTimeout(timer);
        reject(new Error(`pymodbus exited with ${code}: ${this.stderrTail.join('\n')}`));
      };
      proc.once('exit', early);
      readline.createInterface({ input: proc.stdout! }).on('line', (line) => {
        let ev: { ev: string; port?: number; id?: number; values?: number[] } & DeviceRequest;
        try {
          ev = JSON.parse(line);
        } catch {
          return;
        }
        if (ev.ev === 'ready') {
          clearTimeout(timer);
          proc.removeListener('exit', early);
          if (this.kind === 'tcp') this.port = ev.port!;
          resolve();
        } else if (ev.ev === 'req') {
          const { unit, fc, address, count, values } = ev;
          this.requests.push(values ? { unit, fc, address, count, values } : { unit, fc, address, count });
        } else if (ev.ev === 'values') {
          this.waiting.get(ev.id!)?.(ev.values!);
          this.waiting.delete(ev.id!);
        }
      });
    });
  }

  private send(cmd: object): void {
    if (!this.proc?.stdin?.writable) throw new Error('pymodbus device is not running');
    this.proc.stdin.write(JSON.stringify(cmd) + '\n');
  }

  async clearRequests(): Promise<void> {
    await this.received();
    this.requests.length = 0;
  }

  async received(): Promise<DeviceRequest[]> {
    // stdout is ordered: once this answer is in, every request logged before it is too.
    await this.get((this.opts.units ?? [1])[0], 'hr', 0, 1);
    return [...this.requests];
  }

  get(unit: number, table: Table, address: number, count: number): Promise<number[]> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('pymodbus did not answer get')), 5000);
      this.waiting.set(id, (v) => {
        clearTimeout(timer);
        resolve(v);
      });
      this.send({ cmd: 'get', id, unit, table, address, count });
    });
  }

  async set(unit: number, table: Table, address: number, values: (number | boolean)[]): Promise<void> {
    this.send({ cmd: 'set', unit, table, address, values: values.map((v) => (typeof v === 'boolean' ? (v ? 1 : 0) : v)) });
    await this.get(unit, table, address, 1); // commands run in order: this answer means the set is done
  }

  async mode(m: { delayMs?: number; silent?: boolean; silentUnits?: number[] }): Promise<void> {
    this.send({ cmd: 'mode', delay_ms: m.delayMs ?? 0, silent: m.silent ?? false, silent_units: m.silentUnits ?? [] });
    await this.get((this.opts.units ?? [1])[0], 'hr', 0, 1);
  }

  async stop(): Promise<void> {
    const proc = this.proc;
    this.proc = undefined;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    await new Promise<void>((resolve) => {
      proc.once('exit', () => resolve());
      proc.kill('SIGKILL');
    });
  }

  /** Synchronous last resort when the test process exits without teardown. */
  killNow(): void {
    this.proc?.kill('SIGKILL');
    this.socat?.kill('SIGKILL');
  }

  async close(): Promise<void> {
    await this.stop();
    const socat = this.socat;
    this.socat = undefined;
    if (socat && socat.exitCode === null && socat.signalCode === null) {
      await new Promise<void>((resolve) => {
        socat.once('exit', () => resolve());
        socat.kill('SIGTERM');
      });
    }
  }
}

async function launch(t: T, kind: 'tcp' | 'rtu', opts: Options): Promise<PyModbusDevice> {
  const dev = new Device(kind, opts);
  t.teardown(() => dev.close());
  const onExit = () => dev.killNow();
  process.once('exit', onExit);
  t.teardown(() => process.removeListener('exit', onExit));
  if (kind === 'rtu') await dev.startSocat();
  await dev.start();
  return dev;
}

export function startPyModbusTcp(t: T, opts: Options = {}): Promise<PyModbusDevice> {
  return launch(t, 'tcp', opts);
}

export function startPyModbusRtu(t: T, opts: Options = {}): Promise<PyModbusDevice> {
  return launch(t, 'rtu', opts);
}

/** The pty pair alone, for tests that play the device themselves (noise, bad CRCs). */
export async function startPtyPair(t: T): Promise<{ driverSide: string; peerSide: string }> {
  const dev = new Device('rtu', {});
  t.teardown(() => dev.close());
  await dev.startSocat();
  return { driverSide: dev.serialPort, peerSide: dev.peerPty };
}

/**
 * A serial-to-Ethernet converter in front of an RTU device: a TCP server on loopback relaying the
 * bytes of its connection to `serialPort` (the driver side of an RTU device's pty pair) and back.
 * Like such a box it serves one connection: a new one replaces the old. It opens the pty once, so
 * exactly one reader takes the device's answers. (It used to be `socat TCP-LISTEN,fork`, whose
 * child for a closing connection could still read an answer meant for the next one; the new child,
 * woken for the same bytes, then blocked in read() and stopped relaying: seen as a dead converter
 * for 40 s in about 1 run in 8 under load.) Resolves with the TCP port once it listens.
 */
export async function startRtuConverter(t: T, serialPort: string): Promise<number> {
  spawnSync('stty', ['-F', serialPort, 'raw', '-echo']);
  const fd = fs.openSync(serialPort, fs.constants.O_RDWR | fs.constants.O_NOCTTY | fs.constants.O_NONBLOCK);
  const pty = new tty.ReadStream(fd);
  let current: net.Socket | undefined;
  pty.on('data', (chunk: Buffer) => current?.write(chunk));
  pty.on('error', () => {}); // the device side went away; the test's teardown follows
  const server = net.createServer((sock) => {
    current?.destroy();
    current = sock;
    sock.on('data', (chunk) => {
      if (current === sock) pty.write(chunk);
    });
    sock.on('error', () => {});
    sock.on('close', () => {
      if (current === sock) current = undefined;
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  t.teardown(async () => {
    current?.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    pty.destroy();
  });
  return (server.address() as net.AddressInfo).port;
}
