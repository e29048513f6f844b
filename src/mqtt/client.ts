// A small MQTT 3.1.1 client over node:net / node:tls. `mqtt-packet` does the byte-level parse and
// generate; everything else (session, keep-alive, QoS 1, reconnect) is here.
//
// Life cycle: start() connects and keeps reconnecting (exponential backoff with random jitter, so a
// fleet of gateways does not stampede a restarted broker) until end(). Each successful CONNACK
// re-subscribes every wanted subscription, publishes the birth message and resends QoS 1 messages
// that were never acknowledged, with DUP set [MQTT-4.4.0-1]. The client never throws out of a socket
// callback: a malformed packet, a refused CONNACK or a silent broker closes the socket and the
// reconnect loop takes over.

import { EventEmitter } from 'node:events';
import net from 'node:net';
import type tls from 'node:tls';
import { lazyBuiltin, nodeCrypto } from '../core/builtin.js';
import { timerDelay } from '../core/timers.js';
import mqttPacket from 'mqtt-packet';
import type { Logger } from '../log.js';

// mqtt-packet otherwise fills a cache of all 65,536 two-byte numbers (a Buffer each, about 6 MB of
// heap under the launcher's 48 MB bound) at the first packet; generating the two bytes when needed
// costs next to nothing at telemetry rates.
mqttPacket.writeToStream.cacheNumbers = false;

// Loaded for an mqtts:// broker only (docs/installation.md "Start-up time").
const tlsModule = lazyBuiltin<typeof tls>('node:tls');

export interface MqttMessage {
  topic: string;
  payload: Buffer;
  qos?: 0 | 1;
  retain?: boolean;
}

export interface MqttClientOptions {
  /** `mqtt://host[:port]`, `tcp://…` (1883) or `mqtts://`, `ssl://`, `tls://` (8883). */
  url: string;
  clientId: string;
  username?: string;
  /** Never logged. */
  password?: string;
  /** Seconds; 0 disables keep-alive. */
  keepAlive: number;
  clean: boolean;
  /** The will; a function is asked at each CONNECT (a Sparkplug NDEATH carries that connection's bdSeq). */
  will?: MqttMessage | (() => MqttMessage);
  /** Published after each CONNACK (Kura's birth certificate). Built lazily so it carries fresh data. */
  birth?: () => MqttMessage;
  /** Published before a clean DISCONNECT. */
  disconnectMessage?: () => MqttMessage;
  tls?: { ca?: Buffer; cert?: Buffer; key?: Buffer };
  /** A CONNECT that is not answered within this time is abandoned (ms). */
  connectTimeout?: number;
  reconnectMin?: number;
  reconnectMax?: number;
  /**
   * Largest packet accepted from the broker (bytes of the remaining length). A bigger PUBLISH is
   * skipped as it streams in, never buffered, and acknowledged so a persistent session does not
   * redeliver it; any other bigger packet closes the connection. Default MAX_PACKET_BYTES.
   */
  maxPacketBytes?: number;
  log: Logger;
}

/**
 * Default bound on an incoming packet: 1 MiB above the request bound (MAX_REQUEST_BYTES in
 * src/mqtt/envelope.ts), so that a request somewhat too large is still read and answered 400
 * instead of being skipped without a reply (docs/mqtt.md "Requests too large").
 */
export const MAX_PACKET_BYTES = 5 * 1024 * 1024;

/**
 * Splits the broker's byte stream at packet boundaries using only the fixed header (type byte and
 * Remaining Length, [MQTT-2.2]) and passes packets within the bound to `pass`. A PUBLISH over the
 * bound is skipped while it streams: only its topic and packet identifier (at most 65,539 bytes)
 * are kept, `oversize` is told once, and the rest is counted away. Another packet type over the
 * bound, or a malformed Remaining Length, is `fatal`.
 */
export class PacketGate {
  private head: number[] = [];
  /** Bytes of the current packet still to pass on (state 'pass') or to discard ('skip'). */
  private left = 0;
  private state: 'head' | 'pass' | 'peek' | 'skip' = 'head';
  private peek: Buffer[] = [];
  private peeked = 0;
  private type = 0;
  private flags = 0;

  constructor(
    private readonly limit: number,
    private readonly pass: (b: Buffer) => void,
    private readonly oversize: (p: { topic: string; qos: number; messageId?: number; bytes: number }) => void,
    private readonly fatal: (why: string) => void,
  ) {}

  /** Between packets: the next byte starts a fixed header. */
  get atBoundary(): boolean {
    return this.state === 'head' && this.head.length === 0;
  }

  push(chunk: Buffer): void {
    let i = 0;
    while (i < chunk.length) {
      if (this.state === 'head') {
        const b = chunk[i++]!;
        this.head.push(b);
        // Remaining Length: up to 4 bytes, 7 bits each, high bit = more [MQTT-2.2.3].
        if (this.head.length === 1 || (b & 0x80 && this.head.length < 5)) continue;
        if (b & 0x80) return this.fatal('malformed remaining length');
        let len = 0;
        for (let k = this.head.length - 1; k >= 1; k--) len = len * 128 + (this.head[k]! & 0x7f);
        this.type = this.head[0]! >> 4;
        this.flags = this.head[0]! & 0x0f;
        if (len <= this.limit) {
          this.pass(Buffer.from(this.head));
          this.state = 'pass';
        } else if (this.type === 3) {
          this.state = 'peek';
          this.peek = [];
          this.peeked = 0;
        } else {
          return this.fatal(`packet type ${this.type} of ${len} bytes exceeds the limit of ${this.limit}`);
        }
        this.left = len;
        this.head = [];
        if (len === 0) this.state = 'head';
        continue;
      }
      const n = Math.min(this.left, chunk.length - i);
      const part = chunk.subarray(i, i + n);
      i += n;
      this.left -= n;
      if (this.state === 'pass') this.pass(part);
      else if (this.state === 'peek') this.peekPublish(part);
      if (this.left === 0) this.state = 'head';
    }
  }

  /** Collects a skipped PUBLISH's topic length, topic and packet id [MQTT-3.3.2], then skips the rest. */
  private peekPublish(part: Buffer): void {
    this.peek.push(Buffer.from(part));
    this.peeked += part.length;
    const buf = Buffer.concat(this.peek);
    this.peek = [buf];
    if (buf.length < 2) return;
    const qos = (this.flags >> 1) & 3;
    const need = 2 + buf.readUInt16BE(0) + (qos > 0 ? 2 : 0);
    if (buf.length < need) return;
    const tl = buf.readUInt16BE(0);
    this.oversize({
      topic: buf.toString('utf8', 2, 2 + tl),
      qos,
      messageId: qos > 0 ? buf.readUInt16BE(2 + tl) : undefined,
      bytes: this.left + this.peeked,
    });
    this.peek = [];
    this.state = 'skip';
  }
}

interface Inflight {
  packet: mqttPacket.IPublishPacket;
  resolve: () => void;
  reject: (err: Error) => void;
  /** Written on the current connection. */
  sent: boolean;
  /** Written on some connection (a resend then carries DUP). */
  everSent?: boolean;
}

interface PendingAck {
  resolve: (granted: number[]) => void;
  reject: (err: Error) => void;
}

export class MqttError extends Error {
  /** The option at fault, when one is (`url`, `tls.ca`, `tls.cert`). */
  constructor(
    message: string,
    readonly option?: string,
  ) {
    super(message);
  }
}

const CONNACK_REASONS: Record<number, string> = {
  1: 'unacceptable protocol version',
  2: 'identifier rejected',
  3: 'server unavailable',
  4: 'bad user name or password',
  5: 'not authorized',
};

export function parseBrokerUrl(url: string): { host: string; port: number; secure: boolean } {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new MqttError(`invalid broker URL: ${url}`, 'url');
  }
  const scheme = u.protocol.replace(/:$/, '');
  const secure = ['mqtts', 'ssl', 'tls'].includes(scheme);
  if (!secure && !['mqtt', 'tcp'].includes(scheme)) throw new MqttError(`unsupported broker URL scheme: ${scheme}`, 'url');
  if (!u.hostname) throw new MqttError(`broker URL without host: ${url}`, 'url');
  const port = u.port ? Number(u.port) : secure ? 8883 : 1883;
  // IPv6 literals come back bracketed from URL.
  return { host: u.hostname.replace(/^\[(.*)\]$/, '$1'), port, secure };
}

/** Payloads up to this size are sent in one buffer with their header (publishHead `whole`). */
const WHOLE_PUBLISH_MAX = 16 * 1024;

/**
 * A PUBLISH packet [MQTT-3.3] up to its payload: fixed header (DUP, QoS, RETAIN), Remaining Length,
 * topic, packet identifier (QoS > 0); followed by the payload, the bytes mqtt-packet generates,
 * without its intermediate buffers and without copying the payload (telemetry sends one per poll).
 * Undefined for what only mqtt-packet handles or refuses (a string payload, a topic over 65,535
 * bytes or with a NUL or wildcard, a packet over the protocol's size limit, QoS 1 without a packet
 * identifier). `whole`: the payload copied in after the header, the whole packet in one buffer.
 */
export function publishHead(p: mqttPacket.IPublishPacket, whole = false): Buffer | undefined {
  const payload = p.payload;
  const qos = p.qos ?? 0;
  if (!Buffer.isBuffer(payload) || qos > 1 || (qos === 1 && p.messageId === undefined) || /[\u0000#+]/.test(p.topic)) return undefined;
  const topicLength = Buffer.byteLength(p.topic);
  const length = 2 + topicLength + (qos > 0 ? 2 : 0) + payload.length;
  if (topicLength === 0 || topicLength > 0xffff || length > 268_435_455) return undefined;
  const lengthBytes = length < 0x80 ? 1 : length < 0x4000 ? 2 : length < 0x200000 ? 3 : 4;
  const buf = Buffer.allocUnsafe(1 + lengthBytes + length - (whole ? 0 : payload.length));
  buf[0] = 0x30 | (p.dup ? 8 : 0) | (qos << 1) | (p.retain ? 1 : 0);
  let at = 1;
  for (let x = length; ; ) {
    const b = x % 0x80;
    x = Math.floor(x / 0x80);
    buf[at++] = x > 0 ? b | 0x80 : b;
    if (x === 0) break;
  }
  buf.writeUInt16BE(topicLength, at);
  at += 2 + buf.write(p.topic, at + 2, 'utf8');
  if (qos > 0) buf.writeUInt16BE(p.messageId!, at);
  if (whole) payload.copy(buf, at + (qos > 0 ? 2 : 0));
  return buf;
}

/**
 * Events: `connect` (sessionPresent), `close`, `message` (topic, payload, packet), `error` is never
 * emitted (problems are logged), `offline` when a connection is lost.
 */
export class MqttClient extends EventEmitter {
  private socket?: net.Socket;
  private parser?: mqttPacket.Parser;
  private connected = false;
  private stopped = true;
  private attempt = 0;
  private reconnectTimer?: NodeJS.Timeout;
  private connectTimer?: NodeJS.Timeout;
  private keepAliveTimer?: NodeJS.Timeout;
  private lastSent = 0;
  private lastReceived = 0;
  private pingOutstanding = false;
  private nextId = 1;
  /** QoS 1 publications in send order, kept until PUBACK (resent on reconnect). */
  private readonly inflight = new Map<number, Inflight>();
  private readonly subAcks = new Map<number, PendingAck>();
  private readonly unsubAcks = new Map<number, PendingAck>();
  /** Wanted subscriptions, restored after each reconnect. */
  private readonly subscriptions = new Map<string, 0 | 1>();
  private readonly log: Logger;
  private readonly secureContext?: tls.SecureContext;

  constructor(private readonly opts: MqttClientOptions) {
    super();
    this.log = opts.log;
    // Validate now so a bad URL or unusable TLS material is a configuration error, not a retry loop
    // (tls.connect throws synchronously on a malformed PEM).
    if (parseBrokerUrl(opts.url).secure) this.secureContext = MqttClient.secureContextOf(opts.tls ?? {});
  }

  private static secureContextOf(t: { ca?: Buffer; cert?: Buffer; key?: Buffer }): tls.SecureContext {
    // OpenSSL's reason (e.g. "PEM routines::no start line") names the problem, never the content.
    const reason = (err: unknown) => String((err as Error).message).replace(/^error:[0-9A-F]+:/, '');
    try {
      // createSecureContext silently ignores a CA file without a certificate; parse it ourselves.
      if (t.ca) new (nodeCrypto().X509Certificate)(t.ca);
    } catch (err) {
      throw new MqttError(`unusable CA certificate: ${reason(err)}`, 'tls.ca');
    }
    try {
      return tlsModule().createSecureContext({ ca: t.ca, cert: t.cert, key: t.key });
    } catch (err) {
      throw new MqttError(`unusable client certificate or key: ${reason(err)}`, 'tls.cert');
    }
  }

  get isConnected(): boolean {
    return this.connected;
  }

  /** The local address of the connection to the broker (BIRTH's `connection_ip`). */
  get localAddress(): string | undefined {
    return this.socket?.localAddress;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.ended = false;
    this.open();
  }

  // ---- connection ---------------------------------------------------------------------------

  private open(): void {
    const { host, port, secure } = parseBrokerUrl(this.opts.url);
    this.log.debug('mqtt connecting', { broker: `${host}:${port}`, clientId: this.opts.clientId, tls: secure });
    let socket: net.Socket;
    let onChunk: (chunk: Buffer) => void = () => {};
    const onConnected = () => {
      socket.setNoDelay(true);
      this.sendConnect();
    };
    try {
      if (secure) {
        socket = tlsModule().connect({ host, port, secureContext: this.secureContext, servername: net.isIP(host) ? undefined : host });
        socket.once('secureConnect', onConnected);
      } else {
        // One reused read buffer: a stream of skipped over-size data allocates nothing per chunk.
        const rb = Buffer.allocUnsafe(65536);
        socket = net.connect({ host, port, onread: { buffer: rb, callback: (n) => (onChunk(rb.subarray(0, n)), true) } });
        socket.once('connect', onConnected);
      }
    } catch (err) {
      // Never expected after the constructor's checks; still, a timer callback must not throw.
      this.log.error('mqtt cannot open a connection', { broker: `${host}:${port}`, error: (err as Error).message });
      this.scheduleReconnect();
      return;
    }
    this.socket = socket;
    const parser = mqttPacket.parser({ protocolVersion: 4 });
    this.parser = parser;
    parser.on('packet', (p: mqttPacket.Packet) => {
      if (this.socket === socket) this.handlePacket(p);
    });
    parser.on('error', (err: Error) => {
      if (this.socket !== socket) return;
      this.log.warn('mqtt malformed packet from broker, closing connection', { error: err.message });
      socket.destroy();
    });
    const malformed = (error: string) => {
      this.log.warn('mqtt malformed packet from broker, closing connection', { error });
      socket.destroy();
    };
    const gate = new PacketGate(
      this.opts.maxPacketBytes ?? MAX_PACKET_BYTES,
      // A copy: the read buffer is reused, the parser may keep part of a packet until the rest comes.
      (b) => parser.parse(Buffer.from(b)),
      (p) => this.onOversize(p),
      malformed,
    );
    onChunk = (chunk: Buffer) => {
      if (this.socket !== socket) return;
      this.lastReceived = Date.now();
      try {
        // PUBACKs, what telemetry brings back, are taken without the general parser [MQTT-3.4].
        let i = 0;
        while (gate.atBoundary && chunk.length - i >= 4 && chunk[i] === 0x40 && chunk[i + 1] === 0x02) {
          this.onPuback(chunk.readUInt16BE(i + 2));
          i += 4;
        }
        if (i < chunk.length) gate.push(i > 0 ? chunk.subarray(i) : chunk);
      } catch (err) {
        malformed((err as Error).message);
      }
    };
    if (secure) socket.on('data', onChunk);
    socket.on('error', (err) => {
      if (this.socket === socket) this.log.warn('mqtt connection error', { broker: `${host}:${port}`, error: err.message });
    });
    socket.on('close', () => this.onClose(socket));
    const timeout = this.opts.connectTimeout ?? 30_000;
    this.connectTimer = setTimeout(() => {
      if (this.socket === socket && !this.connected) {
        this.log.warn('mqtt CONNECT not answered, giving up on this attempt', { broker: `${host}:${port}`, timeoutMs: timeout });
        socket.destroy();
      }
    }, timerDelay(timeout));
  }

  private sendConnect(): void {
    const o = this.opts;
    const packet: mqttPacket.IConnectPacket = {
      cmd: 'connect',
      protocolId: 'MQTT',
      protocolVersion: 4,
      clientId: o.clientId,
      clean: o.clean,
      keepalive: o.keepAlive,
    };
    if (o.username) packet.username = o.username;
    if (o.password) packet.password = Buffer.from(o.password, 'utf8');
    const will = typeof o.will === 'function' ? o.will() : o.will;
    if (will) packet.will = { topic: will.topic, payload: will.payload, qos: will.qos ?? 0, retain: will.retain ?? false };
    this.write(packet);
  }

  private onClose(socket: net.Socket): void {
    if (this.socket !== socket) return;
    clearTimeout(this.connectTimer);
    clearTimeout(this.keepAliveTimer);
    this.socket = undefined;
    this.parser = undefined;
    const wasConnected = this.connected;
    this.connected = false;
    this.pingOutstanding = false;
    for (const f of this.inflight.values()) f.sent = false;
    // SUBSCRIBE/UNSUBSCRIBE in flight are lost with the connection; the wanted set is restored on
    // reconnect, so callers waiting on an ack are told the connection dropped.
    for (const a of [...this.subAcks.values(), ...this.unsubAcks.values()]) a.reject(new MqttError('connection lost'));
    this.subAcks.clear();
    this.unsubAcks.clear();
    if (wasConnected) {
      if (this.stopped) this.log.info('mqtt disconnected', { clientId: this.opts.clientId });
      else this.log.warn('mqtt connection lost', { clientId: this.opts.clientId });
      this.emit('offline');
    }
    this.emit('close');
    if (!this.stopped) this.scheduleReconnect();
  }

  /** Exponential backoff from reconnectMin to reconnectMax, plus up to 50 % random jitter. */
  private scheduleReconnect(): void {
    const min = this.opts.reconnectMin ?? 1000;
    const max = this.opts.reconnectMax ?? 60_000;
    const base = Math.min(max, min * 2 ** Math.min(this.attempt, 20));
    // However the bounds were set, the doubled wait stays one a timer honours (src/core/timers.ts).
    const delay = timerDelay(Math.round(base + Math.random() * base * 0.5));
    this.attempt++;
    this.log.debug('mqtt reconnect scheduled', { delayMs: delay });
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = undefined;
      if (!this.stopped) this.open();
    }, delay);
  }

  private write(packet: mqttPacket.Packet): boolean {
    const s = this.socket;
    if (!s || s.destroyed) return false;
    let buf: Buffer;
    try {
      // A small payload is copied behind its header: one buffer, one plain write, cheaper than the
      // stream's corked two-chunk writev (a few KB, one telemetry message of 50 channels).
      const whole = packet.cmd === 'publish' && Buffer.isBuffer(packet.payload) && packet.payload.length <= WHOLE_PUBLISH_MAX;
      const head = packet.cmd === 'publish' ? publishHead(packet, whole) : undefined;
      if (head) {
        this.lastSent = Date.now();
        if (whole) {
          s.write(head);
          return true;
        }
        // Header and payload written together (one writev), the payload not copied: a telemetry
        // payload of 1,000 channels is 75 KB, and a copy per poll is malloc churn that stays
        // resident.
        s.cork();
        s.write(head);
        s.write((packet as mqttPacket.IPublishPacket).payload);
        s.uncork();
        return true;
      }
      buf = mqttPacket.generate(packet, { protocolVersion: 4 });
    } catch (err) {
      this.log.error('mqtt cannot encode packet', { cmd: packet.cmd, error: (err as Error).message });
      return false;
    }
    this.lastSent = Date.now();
    s.write(buf);
    return true;
  }

  // ---- incoming packets ---------------------------------------------------------------------

  private handlePacket(p: mqttPacket.Packet): void {
    switch (p.cmd) {
      case 'connack':
        return this.onConnack(p);
      case 'publish':
        return this.onPublish(p);
      case 'puback':
        if (p.messageId !== undefined) this.onPuback(p.messageId);
        return;
      case 'pubrel':
        // QoS 2 is never requested, but a broker may still send it; finish the flow [MQTT-4.3.3].
        this.write({ cmd: 'pubcomp', messageId: p.messageId });
        return;
      case 'suback': {
        const a = p.messageId !== undefined ? this.subAcks.get(p.messageId) : undefined;
        if (a) {
          this.subAcks.delete(p.messageId!);
          a.resolve(p.granted as number[]);
        }
        return;
      }
      case 'unsuback': {
        const a = p.messageId !== undefined ? this.unsubAcks.get(p.messageId) : undefined;
        if (a) {
          this.unsubAcks.delete(p.messageId!);
          a.resolve([]);
        }
        return;
      }
      case 'pingresp':
        this.pingOutstanding = false;
        return;
      default:
        // A broker must not send CONNECT, SUBSCRIBE, … to a client [MQTT-3.1.0-2 and per packet].
        this.log.warn('mqtt unexpected packet from broker, closing connection', { cmd: p.cmd });
        this.socket?.destroy();
    }
  }

  private onPuback(messageId: number): void {
    const f = this.inflight.get(messageId);
    if (f) {
      this.inflight.delete(messageId);
      f.resolve();
    }
  }

  private onConnack(p: mqttPacket.IConnackPacket): void {
    if (this.connected) {
      // [MQTT-3.2.0-1] only one CONNACK per connection.
      this.log.warn('mqtt second CONNACK from broker, closing connection');
      this.socket?.destroy();
      return;
    }
    clearTimeout(this.connectTimer);
    const code = p.returnCode ?? 0;
    if (code !== 0) {
      this.log.error('mqtt connection refused by broker', {
        clientId: this.opts.clientId,
        reason: CONNACK_REASONS[code] ?? `code ${code}`,
      });
      this.socket?.destroy();
      return;
    }
    this.connected = true;
    this.attempt = 0;
    this.lastReceived = Date.now();
    this.startKeepAlive();
    // host:port only: a broker URL may carry user info, which must not reach the log.
    const { host, port } = parseBrokerUrl(this.opts.url);
    this.log.info('mqtt connected', { broker: `${host}:${port}`, clientId: this.opts.clientId, sessionPresent: p.sessionPresent });
    // Restore subscriptions (the broker may have lost the session even when we asked to keep it).
    if (this.subscriptions.size > 0) {
      const subs = [...this.subscriptions].map(([topic, qos]) => ({ topic, qos }));
      this.sendSubscribe(subs).then(
        (granted) => this.checkGranted(subs.map((s) => s.topic), granted),
        () => {},
      );
    }
    if (this.opts.birth) {
      const b = this.opts.birth();
      this.publish(b.topic, b.payload, { qos: b.qos ?? 0, retain: b.retain }).catch(() => {});
    }
    // Resend unacknowledged QoS 1 publications, oldest first, with DUP [MQTT-4.4.0-1].
    for (const f of this.inflight.values()) {
      if (f.sent) continue;
      if (f.packet.dup === false && f.everSent) f.packet.dup = true;
      f.sent = this.write(f.packet);
      f.everSent = f.everSent || f.sent;
    }
    this.emit('connect', p.sessionPresent);
  }

  private onPublish(p: mqttPacket.IPublishPacket): void {
    if (p.qos === 1) this.write({ cmd: 'puback', messageId: p.messageId });
    else if (p.qos === 2) this.write({ cmd: 'pubrec', messageId: p.messageId });
    const payload = typeof p.payload === 'string' ? Buffer.from(p.payload) : p.payload;
    try {
      this.emit('message', p.topic, payload, p);
    } catch (err) {
      // A listener bug must not take the connection (or the process) down.
      this.log.error('mqtt message handler failed', { topic: p.topic, error: (err as Error).message });
    }
  }

  /**
   * A PUBLISH over the size bound, already skipped: acknowledged as its QoS requires (PUBACK, or
   * PUBREC and later PUBCOMP) so a persistent session does not deliver it again after a reconnect,
   * and dropped with one log line.
   */
  private onOversize(p: { topic: string; qos: number; messageId?: number; bytes: number }): void {
    const limit = this.opts.maxPacketBytes ?? MAX_PACKET_BYTES;
    this.log.warn('mqtt message over the size limit skipped and acknowledged', { topic: p.topic.slice(0, 200), bytes: p.bytes, limit, qos: p.qos });
    if (p.qos === 1) this.write({ cmd: 'puback', messageId: p.messageId });
    else if (p.qos === 2) this.write({ cmd: 'pubrec', messageId: p.messageId });
  }

  // ---- keep-alive ---------------------------------------------------------------------------

  /**
   * Sends PINGREQ once nothing was sent or received for a keep-alive period, and declares the broker
   * dead when nothing at all arrived for 1.5 × keep-alive (the same bound the broker applies to us,
   * [MQTT-3.1.2-24]). One timer, set for the moment the next of these can fall due (not a periodic
   * tick): a connection with traffic, or an idle one, wakes the process about once a keep-alive.
   */
  private startKeepAlive(): void {
    clearTimeout(this.keepAliveTimer);
    const ka = this.opts.keepAlive * 1000;
    if (ka <= 0) return;
    const arm = (ms: number) => {
      this.keepAliveTimer = setTimeout(check, Math.max(50, timerDelay(ms)));
      this.keepAliveTimer.unref?.();
    };
    const check = () => {
      const now = Date.now();
      if (now - this.lastReceived > ka * 1.5) {
        this.log.warn('mqtt broker not responding, closing connection', { keepAliveS: this.opts.keepAlive });
        this.socket?.destroy();
        return;
      }
      if (!this.pingOutstanding && (now - this.lastSent >= ka || now - this.lastReceived >= ka)) {
        this.pingOutstanding = true;
        this.write({ cmd: 'pingreq' });
      }
      // Next: the broker's deadline while a PINGREQ is unanswered, else when one falls due.
      const due = this.pingOutstanding ? this.lastReceived + ka * 1.5 + 1 : Math.min(this.lastSent, this.lastReceived) + ka;
      arm(due - now);
    };
    arm(ka);
  }

  // ---- operations ---------------------------------------------------------------------------

  private allocateId(): number {
    for (let i = 0; i < 65535; i++) {
      const id = this.nextId;
      this.nextId = this.nextId === 65535 ? 1 : this.nextId + 1;
      if (!this.inflight.has(id) && !this.subAcks.has(id) && !this.unsubAcks.has(id)) return id;
    }
    throw new MqttError('no free MQTT packet identifier (65535 messages in flight)');
  }

  /**
   * QoS 0: resolves once written (rejects when not connected: QoS 0 is fire-and-forget).
   * QoS 1: queued while offline, resolves on PUBACK, survives reconnects; rejects only on end().
   */
  publish(topic: string, payload: Buffer, opts: { qos?: 0 | 1; retain?: boolean } = {}): Promise<void> {
    const qos = opts.qos ?? 0;
    const packet: mqttPacket.IPublishPacket = { cmd: 'publish', topic, payload, qos, dup: false, retain: opts.retain ?? false };
    if (qos === 0) {
      if (!this.connected) return Promise.reject(new MqttError('not connected'));
      this.write(packet);
      return Promise.resolve();
    }
    if (this.ended) return Promise.reject(new MqttError('client stopped'));
    return new Promise<void>((resolve, reject) => {
      let id: number;
      try {
        id = this.allocateId();
      } catch (err) {
        reject(err as Error);
        return;
      }
      packet.messageId = id;
      const f: Inflight = { packet, resolve, reject, sent: false };
      this.inflight.set(id, f);
      if (this.connected) {
        f.sent = this.write(packet);
        f.everSent = f.sent;
      }
    });
  }

  /** Subscribes; resolves with the granted QoS per topic, rejects when the broker refused one (0x80). */
  async subscribe(topic: string, qos: 0 | 1 = 1): Promise<number> {
    this.subscriptions.set(topic, qos);
    if (!this.connected) return qos; // sent on connect
    const granted = await this.sendSubscribe([{ topic, qos }]);
    this.checkGranted([topic], granted);
    if (granted[0] === 0x80) throw new MqttError(`subscription refused by broker: ${topic}`);
    return granted[0] ?? qos;
  }

  private checkGranted(topics: string[], granted: number[]): void {
    topics.forEach((t, i) => {
      if (granted[i] === 0x80) {
        // [MQTT-3.9.3] 0x80 = failure; keep nothing that the broker will not honour.
        this.subscriptions.delete(t);
        this.log.error('mqtt subscription refused by broker', { topic: t });
      }
    });
  }

  private sendSubscribe(subs: { topic: string; qos: 0 | 1 }[]): Promise<number[]> {
    return new Promise((resolve, reject) => {
      const messageId = this.allocateId();
      this.subAcks.set(messageId, { resolve, reject });
      if (!this.write({ cmd: 'subscribe', messageId, subscriptions: subs })) {
        this.subAcks.delete(messageId);
        reject(new MqttError('not connected'));
      }
    });
  }

  async unsubscribe(topic: string): Promise<void> {
    this.subscriptions.delete(topic);
    if (!this.connected) return;
    await new Promise<number[]>((resolve, reject) => {
      const messageId = this.allocateId();
      this.unsubAcks.set(messageId, { resolve, reject });
      if (!this.write({ cmd: 'unsubscribe', messageId, unsubscriptions: [topic] })) {
        this.unsubAcks.delete(messageId);
        reject(new MqttError('not connected'));
      }
    });
  }

  /** Number of QoS 1 publications not yet acknowledged. */
  get inflightCount(): number {
    return this.inflight.size;
  }

  private ended = false;

  /**
   * Stops the client. Graceful: publishes the DC message (at its QoS), waits up to `drainMs` for
   * outstanding PUBACKs, sends DISCONNECT (so the broker discards the will) and closes. Unacknowledged
   * QoS 1 publications are rejected (the outbox still holds them).
   */
  async end(drainMs = 1000): Promise<void> {
    if (this.stopped && !this.socket) {
      this.ended = true;
      this.failInflight();
      return;
    }
    this.stopped = true;
    this.ended = true;
    clearTimeout(this.reconnectTimer);
    this.reconnectTimer = undefined;
    const socket = this.socket;
    if (this.connected && socket) {
      if (this.opts.disconnectMessage) {
        // At its QoS: a QoS 1 DC joins the publications the drain below waits for.
        const m = this.opts.disconnectMessage();
        if (m.qos === 1) {
          this.ended = false;
          this.publish(m.topic, m.payload, { qos: 1, retain: m.retain }).catch(() => {});
          this.ended = true;
        } else this.write({ cmd: 'publish', topic: m.topic, payload: m.payload, qos: 0, dup: false, retain: m.retain ?? false });
      }
      const deadline = Date.now() + drainMs;
      while (this.inflight.size > 0 && this.connected && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20));
      }
      this.write({ cmd: 'disconnect' });
      await new Promise<void>((resolve) => {
        if (socket.destroyed) return resolve();
        socket.once('close', () => resolve());
        socket.end();
        setTimeout(() => {
          socket.destroy();
          resolve();
        }, 500).unref?.();
      });
    } else {
      socket?.destroy();
    }
    this.failInflight();
  }

  private failInflight(): void {
    for (const f of this.inflight.values()) f.reject(new MqttError('client stopped'));
    this.inflight.clear();
  }
}
