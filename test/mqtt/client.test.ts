// The MQTT client against a real Mosquitto (plain and TLS) and against a scripted fake broker for
// the failures a real broker does not produce on demand.

import t from 'tap';
import fs from 'node:fs';
import net from 'node:net';
import { MqttClient, publishHead, type MqttClientOptions } from '../../src/mqtt/client.js';
import { createLogger, silentLogger } from '../../src/log.js';
import { startMosquitto, mosquittoSkip, type Broker } from '../helpers/mosquitto.js';
import { startFakeBroker, connack } from '../helpers/fake-broker.js';
import mqttPacket from 'mqtt-packet';

const until = async (cond: () => boolean, ms = 8000, what = 'condition'): Promise<void> => {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

function client(o: Partial<MqttClientOptions> & { url: string }): MqttClient {
  return new MqttClient({
    clientId: `c${Math.random().toString(16).slice(2, 10)}`,
    keepAlive: 30,
    clean: true,
    reconnectMin: 50,
    reconnectMax: 200,
    connectTimeout: 2000,
    log: silentLogger,
    ...o,
  });
}

function collect(c: MqttClient): { topic: string; payload: string; dup: boolean }[] {
  const got: { topic: string; payload: string; dup: boolean }[] = [];
  c.on('message', (topic: string, payload: Buffer, p: { dup: boolean }) => got.push({ topic, payload: payload.toString(), dup: p.dup }));
  return got;
}

t.test('against a real Mosquitto', mosquittoSkip(), async (t) => {
  const broker: Broker = await startMosquitto({ tls: true });
  t.teardown(() => broker.close());

  t.test('publish/subscribe QoS 0 and 1, birth on connect, DC before a clean disconnect', async (t) => {
    const watcher = client({ url: broker.url });
    const seen = collect(watcher);
    watcher.start();
    await until(() => watcher.isConnected);
    await watcher.subscribe('life/#', 1);

    const lines: string[] = [];
    const dev = client({
      url: broker.url,
      username: 'gw',
      password: 's3cret-pw',
      will: { topic: 'life/LWT', payload: Buffer.from('lwt') },
      birth: () => ({ topic: 'life/BIRTH', payload: Buffer.from('birth') }),
      disconnectMessage: () => ({ topic: 'life/DC', payload: Buffer.from('dc') }),
      log: createLogger('debug', (l) => lines.push(l)),
    });
    const own = collect(dev);
    dev.start();
    await until(() => seen.some((m) => m.topic === 'life/BIRTH'), 5000, 'birth');
    t.equal(await dev.subscribe('data/+', 1), 1, 'granted QoS 1');
    await dev.publish('data/q0', Buffer.from('zero'));
    await dev.publish('data/q1', Buffer.from('one'), { qos: 1 });
    await until(() => own.length === 2, 5000, 'own messages');
    t.same(own.map((m) => [m.topic, m.payload]).sort(), [['data/q0', 'zero'], ['data/q1', 'one']]);
    await dev.unsubscribe('data/+');
    await dev.publish('data/q1', Buffer.from('after'), { qos: 1 });
    await new Promise((r) => setTimeout(r, 200));
    t.equal(own.length, 2, 'nothing after UNSUBSCRIBE');

    await dev.end();
    await until(() => seen.some((m) => m.topic === 'life/DC'), 5000, 'DC');
    await new Promise((r) => setTimeout(r, 200));
    t.notOk(seen.some((m) => m.topic === 'life/LWT'), 'no will after a clean DISCONNECT');
    t.notOk(lines.some((l) => l.includes('s3cret-pw')), 'password never logged');
    t.ok(lines.some((l) => l.includes('mqtt connected')), 'connection logged');
    await watcher.end();
  });

  t.test('a lost connection fires the will; the client reconnects and sends birth again', async (t) => {
    const watcher = client({ url: broker.url });
    const seen = collect(watcher);
    watcher.start();
    await until(() => watcher.isConnected);
    await watcher.subscribe('life2/#', 1);
    const dev = client({
      url: broker.url,
      will: { topic: 'life2/LWT', payload: Buffer.from('lwt') },
      birth: () => ({ topic: 'life2/BIRTH', payload: Buffer.from('birth') }),
    });
    dev.start();
    await until(() => seen.filter((m) => m.topic === 'life2/BIRTH').length === 1, 5000, 'first birth');
    // Cut the TCP connection under the client, as a network failure would.
    (dev as unknown as { socket: net.Socket }).socket.destroy();
    await until(() => seen.some((m) => m.topic === 'life2/LWT'), 5000, 'will');
    await until(() => seen.filter((m) => m.topic === 'life2/BIRTH').length === 2, 5000, 'second birth');
    t.pass('will, then birth again');
    await dev.end();
    await watcher.end();
  });

  t.test('QoS 1 publications made while the broker is down are delivered after it restarts', async (t) => {
    const sub = client({ url: broker.url, clean: false, clientId: 'persistent-sub' });
    const got = collect(sub);
    sub.start();
    await until(() => sub.isConnected);
    await sub.subscribe('restart/#', 1);
    const dev = client({ url: broker.url });
    dev.start();
    await until(() => dev.isConnected);
    const acked: number[] = [];
    const pubs: Promise<void>[] = [];
    for (let i = 0; i < 5; i++) pubs.push(dev.publish('restart/x', Buffer.from(`m${i}`), { qos: 1 }).then(() => void acked.push(i)));
    await Promise.all(pubs);
    await broker.stop();
    await until(() => !dev.isConnected, 5000, 'offline');
    for (let i = 5; i < 10; i++) pubs.push(dev.publish('restart/x', Buffer.from(`m${i}`), { qos: 1 }).then(() => void acked.push(i)));
    t.equal(dev.inflightCount, 5, 'five publications wait for the broker');
    await broker.start();
    await Promise.all(pubs);
    await until(() => new Set(got.map((m) => m.payload)).size === 10, 8000, 'all ten');
    t.same([...new Set(got.map((m) => m.payload))].sort(), Array.from({ length: 10 }, (_, i) => `m${i}`).sort());
    await dev.end();
    await sub.end();
  });

  t.test('TLS with CA, client certificate and key', async (t) => {
    const c = broker.certs!;
    const dev = client({
      url: `mqtts://127.0.0.1:${broker.tlsPort}`,
      tls: { ca: fs.readFileSync(c.ca), cert: fs.readFileSync(c.clientCert), key: fs.readFileSync(c.clientKey) },
    });
    const got = collect(dev);
    dev.start();
    await until(() => dev.isConnected, 8000, 'TLS connect');
    await dev.subscribe('tls/t', 1);
    await dev.publish('tls/t', Buffer.from('secure'), { qos: 1 });
    await until(() => got.length === 1);
    t.equal(got[0]!.payload, 'secure');
    await dev.end();

    // Without a client certificate the broker refuses the handshake: the client keeps retrying.
    const lines: string[] = [];
    const anon = client({
      url: `mqtts://127.0.0.1:${broker.tlsPort}`,
      tls: { ca: fs.readFileSync(c.ca) },
      log: createLogger('debug', (l) => lines.push(l)),
    });
    anon.start();
    await until(() => lines.filter((l) => l.includes('mqtt connecting')).length >= 2, 8000, 'retries');
    t.notOk(anon.isConnected, 'not connected without a client certificate');
    t.notOk(lines.some((l) => /BEGIN|PRIVATE/.test(l)), 'no key material logged');
    await anon.end();
  });
});

t.test('a broker that accepts TCP but never answers CONNECT: the attempt times out and is retried', async (t) => {
  let accepted = 0;
  const sockets: net.Socket[] = [];
  const server = net.createServer((s) => {
    accepted++;
    sockets.push(s);
    s.on('data', () => {}); // reads, says nothing
    s.on('error', () => {});
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => {
    sockets.forEach((s) => s.destroy());
    server.close();
  });
  const lines: string[] = [];
  const dev = client({
    url: `mqtt://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    connectTimeout: 200,
    log: createLogger('debug', (l) => lines.push(l)),
  });
  dev.start();
  await until(() => accepted >= 3, 8000, 'three attempts');
  t.notOk(dev.isConnected);
  t.ok(lines.some((l) => l.includes('CONNECT not answered')), 'timeout logged');
  await dev.end();
});

t.test('PUBACKs coalesced with other packets or split across reads all settle their publications', async (t) => {
  const gen = (p: mqttPacket.Packet) => mqttPacket.generate(p);
  const ids: number[] = [];
  const fake = await startFakeBroker((conn, p) => {
    if (p.cmd === 'connect') conn.send(connack());
    if (p.cmd !== 'publish' || p.qos !== 1) return;
    ids.push(p.messageId!);
    if (ids.length < 4) return;
    // Four PUBACKs: two and a PUBLISH in one write, the third cut in two writes, the fourth alone.
    const acks = ids.map((id) => gen({ cmd: 'puback', messageId: id }));
    const publish = gen({ cmd: 'publish', topic: 'to/device', payload: Buffer.from('x'), qos: 0, dup: false, retain: false });
    conn.socket.write(Buffer.concat([acks[0]!, publish, acks[1]!, acks[2]!.subarray(0, 3)]));
    setTimeout(() => conn.socket.write(acks[2]!.subarray(3)), 50);
    setTimeout(() => conn.socket.write(acks[3]!), 100);
  });
  t.teardown(() => fake.close());
  const dev = client({ url: fake.url });
  const got: string[] = [];
  dev.on('message', (topic: string) => got.push(topic));
  dev.start();
  await until(() => dev.isConnected);
  const settled = await Promise.all([0, 1, 2, 3].map((i) => dev.publish(`t/${i}`, Buffer.from([i]), { qos: 1 }).then(() => i)));
  t.same(settled, [0, 1, 2, 3], 'every publication acknowledged');
  t.equal(dev.inflightCount, 0);
  t.same(got, ['to/device'], 'the PUBLISH between the PUBACKs delivered');
  await dev.end();
});

t.test('publishHead and the payload are the bytes mqtt-packet generates', async (t) => {
  let n = 0;
  for (const topic of ['a', 'acct/gw/assets/plc', 'é/ü/😀', 'x'.repeat(300)]) {
    for (const size of [0, 1, 100, 123, 124, 16_380, 16_384, 70_000, 2_097_200]) {
      for (const [qos, dup, retain] of [[0, false, false], [1, false, true], [1, true, false]] as const) {
        const p: mqttPacket.IPublishPacket = { cmd: 'publish', topic, payload: Buffer.alloc(size, size % 251), qos, dup, retain, messageId: qos ? 40_000 + n : undefined };
        const head = publishHead(p);
        const mine = head && Buffer.concat([head, p.payload as Buffer]);
        const generated = mqttPacket.generate(p);
        if (!mine || !mine.equals(generated)) t.fail(`differs: ${topic.slice(0, 20)} ${size} ${qos} ${dup} ${retain}`);
        if (!publishHead(p, true)?.equals(generated)) t.fail(`whole packet differs: ${topic.slice(0, 20)} ${size} ${qos} ${dup} ${retain}`);
        n++;
      }
    }
  }
  t.pass(`${n} packets the same`);
  for (const topic of ['', 'a/#', 'a/+/b', 'nul\u0000']) t.equal(publishHead({ cmd: 'publish', topic, payload: Buffer.from('x'), qos: 0, dup: false, retain: false }), undefined, `left to mqtt-packet: ${JSON.stringify(topic)}`);
});

t.test('a broker that goes silent is detected within 1.5 x keep-alive', async (t) => {
  const fake = await startFakeBroker((conn, p) => {
    if (p.cmd === 'connect') conn.send(connack());
    // PINGREQ deliberately unanswered.
  });
  t.teardown(() => fake.close());
  const dev = client({ url: fake.url, keepAlive: 1 });
  dev.start();
  await until(() => fake.connections.length === 1 && dev.isConnected);
  const connectedAt = Date.now();
  await fake.connections[0]!.closed;
  const after = Date.now() - connectedAt;
  t.ok(fake.connections[0]!.packets.some((p) => p.cmd === 'pingreq'), 'PINGREQ was sent');
  t.ok(after >= 1000, `not declared dead before the keep-alive (${after} ms)`);
  t.ok(after < 4000, `declared dead (${after} ms)`);
  await until(() => fake.connections.length >= 2, 5000, 'reconnect');
  await dev.end();
});

t.test('a broker that answers PINGREQ keeps an idle connection open, pinged about once a keep-alive', async (t) => {
  const fake = await startFakeBroker((conn, p) => {
    if (p.cmd === 'connect') conn.send(connack());
    if (p.cmd === 'pingreq') conn.send({ cmd: 'pingresp' });
  });
  t.teardown(() => fake.close());
  const dev = client({ url: fake.url, keepAlive: 1 });
  dev.start();
  await until(() => fake.connections.length === 1 && dev.isConnected);
  await until(() => fake.connections[0]!.packets.filter((p) => p.cmd === 'pingreq').length >= 3, 15_000, 'three PINGREQs');
  t.ok(dev.isConnected, 'still connected');
  t.equal(fake.connections.length, 1, 'never reconnected');
  await dev.end();
});

t.test('a malformed packet from the broker closes the connection and the client reconnects', async (t) => {
  const fake = await startFakeBroker((conn, p) => {
    if (p.cmd === 'connect') {
      conn.send(connack());
      // Packet type 0 is reserved [MQTT-2.2.1]; then a PUBLISH with a length beyond its bytes.
      if (conn.index === 0) conn.socket.write(Buffer.from([0x00, 0x02, 0xff, 0xff]));
    }
  });
  t.teardown(() => fake.close());
  const lines: string[] = [];
  const dev = client({ url: fake.url, log: createLogger('debug', (l) => lines.push(l)) });
  dev.start();
  await until(() => fake.connections.length >= 2 && dev.isConnected, 5000, 'reconnect');
  t.ok(lines.some((l) => l.includes('malformed packet')), 'logged');
  await dev.end();
});

t.test('SUBACK failure code rejects the subscription', async (t) => {
  const fake = await startFakeBroker((conn, p) => {
    if (p.cmd === 'connect') conn.send(connack());
    if (p.cmd === 'subscribe') conn.send({ cmd: 'suback', messageId: p.messageId!, granted: [0x80] });
  });
  t.teardown(() => fake.close());
  const dev = client({ url: fake.url });
  dev.start();
  await until(() => dev.isConnected);
  await t.rejects(dev.subscribe('forbidden/#', 1), /refused/);
  await dev.end();
});

t.test('unacknowledged QoS 1 is resent with DUP and the same id after a reconnect', async (t) => {
  const fake = await startFakeBroker((conn, p) => {
    if (p.cmd === 'connect') conn.send(connack());
    if (p.cmd === 'publish' && p.qos === 1) {
      if (conn.index === 0) conn.socket.destroy(); // lose it before PUBACK
      else conn.send({ cmd: 'puback', messageId: p.messageId! });
    }
  });
  t.teardown(() => fake.close());
  const dev = client({ url: fake.url });
  dev.start();
  await until(() => dev.isConnected);
  await dev.publish('a/b', Buffer.from('x'), { qos: 1 });
  const first = fake.connections[0]!.packets.find((p) => p.cmd === 'publish') as { dup: boolean; messageId: number };
  const second = fake.connections[1]!.packets.find((p) => p.cmd === 'publish') as { dup: boolean; messageId: number };
  t.equal(first.dup, false);
  t.equal(second.dup, true, 'DUP on resend');
  t.equal(second.messageId, first.messageId, 'same packet id');
  t.equal(dev.inflightCount, 0);
  await dev.end();
});

t.test('QoS 0 while offline is refused, QoS 1 after end() is refused', async (t) => {
  const dev = client({ url: 'mqtt://127.0.0.1:1' });
  await t.rejects(dev.publish('x', Buffer.from('y')), /not connected/);
  await dev.end();
  await t.rejects(dev.publish('x', Buffer.from('y'), { qos: 1 }), /stopped/);
  t.throws(() => client({ url: 'http://x' }), /unsupported broker URL scheme/);
});

t.test('reconnect delays grow exponentially, with jitter, up to the maximum', async (t) => {
  const times: number[] = [];
  const server = net.createServer((s) => {
    times.push(Date.now());
    s.destroy(); // refuse every session
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => server.close());
  const dev = client({ url: `mqtt://127.0.0.1:${(server.address() as net.AddressInfo).port}`, reconnectMin: 40, reconnectMax: 320 });
  dev.start();
  await until(() => times.length >= 7, 10_000, 'seven attempts');
  await dev.end();
  const gaps = times.slice(1).map((x, i) => x - times[i]!);
  // Base delays 40, 80, 160, 320, 320, 320 ms, each plus up to 50 % jitter.
  t.ok(gaps[0]! >= 40 && gaps[3]! >= 320, `gaps ${gaps.join(',')} ms`);
  t.ok(gaps[3]! > gaps[0]!, 'backoff grows');
  t.ok(gaps[5]! < 320 * 1.5 + 250, 'capped at the maximum (plus jitter)');
});

t.test('packets are encoded without mqtt-packet\'s cache of every two-byte number (about 6 MB of heap)', async (t) => {
  t.equal(mqttPacket.writeToStream.cacheNumbers, false);
  const buf = mqttPacket.generate({ cmd: 'puback', messageId: 0xfffe }, { protocolVersion: 4 });
  t.same([...buf], [0x40, 2, 0xff, 0xfe], 'message ids are still encoded big-endian');
});
