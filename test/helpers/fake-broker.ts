// A scripted MQTT "broker" for the failure cases a real broker will not produce on demand: a CONNECT
// that is never answered, a broker that goes silent, malformed packets, refused subscriptions,
// withheld PUBACKs. Each accepted connection is handed to `onConnection` with its parsed packets.

import net from 'node:net';
import mqttPacket from 'mqtt-packet';

export interface FakeConnection {
  index: number;
  socket: net.Socket;
  packets: mqttPacket.Packet[];
  send(p: mqttPacket.Packet): void;
  closed: Promise<void>;
}

export interface FakeBroker {
  port: number;
  url: string;
  connections: FakeConnection[];
  close(): Promise<void>;
}

export async function startFakeBroker(
  onPacket: (conn: FakeConnection, p: mqttPacket.Packet) => void = () => {},
): Promise<FakeBroker> {
  const connections: FakeConnection[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    const parser = mqttPacket.parser({ protocolVersion: 4 });
    const conn: FakeConnection = {
      index: connections.length,
      socket,
      packets: [],
      send: (p) => {
        if (!socket.destroyed) socket.write(mqttPacket.generate(p));
      },
      closed: new Promise((r) => socket.once('close', () => r())),
    };
    connections.push(conn);
    parser.on('packet', (p: mqttPacket.Packet) => {
      conn.packets.push(p);
      onPacket(conn, p);
    });
    parser.on('error', () => socket.destroy());
    socket.on('data', (d) => parser.parse(d));
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    url: `mqtt://127.0.0.1:${port}`,
    connections,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

export const connack = (): mqttPacket.IConnackPacket => ({ cmd: 'connack', returnCode: 0, sessionPresent: false });
