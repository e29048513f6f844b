// The benchmark's MQTT 3.1.1 client: just enough for QoS 0 request/reply through a broker. Kept
// separate from src/mqtt so the load generator and the echo baseline never measure gatewayd's code.

import net from 'node:net';
import mqttPacket from 'mqtt-packet';

export class BenchMqtt {
  private sock!: net.Socket;
  private parser = mqttPacket.parser({ protocolVersion: 4 });
  private pending = new Map<number, () => void>();
  private nextId = 1;
  onMessage: (topic: string, payload: Buffer) => void = () => {};

  static async connect(port: number, clientId: string): Promise<BenchMqtt> {
    const c = new BenchMqtt();
    await c.open(port, clientId);
    return c;
  }

  private open(port: number, clientId: string): Promise<void> {
    return new Promise((resolve, reject) => {
      this.sock = net.connect({ host: '127.0.0.1', port });
      this.sock.setNoDelay(true);
      this.sock.once('error', reject);
      this.sock.on('data', (d) => this.parser.parse(d));
      this.parser.on('packet', (p) => {
        if (p.cmd === 'connack') {
          if (p.returnCode !== 0) reject(new Error(`connack ${p.returnCode}`));
          else resolve();
        } else if (p.cmd === 'suback') {
          this.pending.get(p.messageId!)?.();
          this.pending.delete(p.messageId!);
        } else if (p.cmd === 'publish') {
          this.onMessage(p.topic, p.payload as Buffer);
        }
      });
      this.sock.once('connect', () => {
        this.sock.write(mqttPacket.generate({ cmd: 'connect', protocolId: 'MQTT', protocolVersion: 4, clean: true, clientId, keepalive: 0 }));
      });
    });
  }

  subscribe(topic: string): Promise<void> {
    const messageId = this.nextId++;
    return new Promise((resolve) => {
      this.pending.set(messageId, resolve);
      this.sock.write(mqttPacket.generate({ cmd: 'subscribe', messageId, subscriptions: [{ topic, qos: 0 }] }));
    });
  }

  publish(topic: string, payload: Buffer | string): void {
    this.sock.write(mqttPacket.generate({ cmd: 'publish', topic, payload, qos: 0, retain: false, dup: false }));
  }

  close(): void {
    this.sock.end(mqttPacket.generate({ cmd: 'disconnect' }));
  }
}
