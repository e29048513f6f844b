// KEYS-V1 over MQTT as Eclipse Kapua sends it (docs/mqtt.md "KEYS-V1"): QoS 0 requests with a
// negative request.id, Kapua's JSON bodies for its three keystore job steps (keypair create,
// certificate create, item delete), its item query and its CSR request; replies on exactly
// `$EDC/<account>/<requester>/KEYS-V1/REPLY/<id>` with an INT32 response.code. KEYS-V1 is in BIRTH's
// application_ids, a requester without rest.keystores is refused, and no reply carries a private
// key. The real daemon, a real Mosquitto, openssl for the CSR.

import t from 'tap';
import { execFileSync } from 'node:child_process';
import { startDaemon } from '../helpers/daemon.js';
import { mosquittoSkip, startMosquitto } from '../helpers/mosquitto.js';
import { Requester, until, watchBirths } from '../helpers/mqtt-fixture.js';
import { haveOpenssl } from '../helpers/certs.js';
import { decodeKuraPayload, encodeKuraPayload, type KuraMetric } from '../../src/mqtt/kura-payload.js';

const DEVICE = 'gw-keys';
const CLOUD = 'org.eclipse.kura.cloud.CloudService';

const skip = mosquittoSkip().skip ?? (haveOpenssl() || process.env.CI === 'true' ? undefined : 'openssl not installed');

t.test('KEYS-V1, Kapua-shaped', { skip }, async (t) => {
  const broker = await startMosquitto();
  t.teardown(() => broker.close());
  const births = await watchBirths(t, broker.url, `$EDC/acct/${DEVICE}/MQTT/#`, 'keys-watcher');

  const d = await startDaemon(t, {
    rest: { 'auth.basic.enabled': true, 'login.throttle.max.delay': 0 },
    identities: { admin: { password: 'Adm1n-Secret!', passwordChangeNeeded: false, permissions: ['kura.admin'] } },
    mqtt: { enabled: true, 'broker-url': broker.url, 'client-id': DEVICE, 'topic.context.account-name': 'acct', 'payload.encoding': 'kura-protobuf', 'requester.permissions': ['rest.keystores'] },
  });
  await d.waitForLog(/msg="mqtt connected"/);
  await until(() => births.length > 0, 10_000, 'BIRTH');
  t.ok(births.at(-1)!.split(',').includes('KEYS-V1'), `KEYS-V1 in application_ids (${births.at(-1)})`);

  // Kapua's requester: KapuaPool-<ms>-<random> client id, random (often negative) long request ids.
  const kapua = new Requester(broker.url, `KapuaPool-${Date.now()}-1234`, 'acct');
  await kapua.start();
  t.teardown(() => kapua.end());
  const bodies: string[] = [];
  let n = 0;
  const ask = async (methodResource: string, body?: object) => {
    const rid = `-${4611686018427387904n + BigInt(++n)}`;
    const metrics: KuraMetric[] = [
      { name: 'requester.client.id', type: 'STRING', value: kapua.id },
      { name: 'request.id', type: 'STRING', value: rid },
    ];
    const payload = encodeKuraPayload({ metrics, body: body === undefined ? undefined : Buffer.from(JSON.stringify(body)) });
    await kapua.client.publish(`$EDC/acct/${DEVICE}/KEYS-V1/${methodResource}`, payload, { qos: 0 });
    await until(() => kapua.replies.has(rid), 15_000, `reply to ${methodResource}`);
    const { topic, payload: raw } = kapua.replies.get(rid)!;
    t.equal(topic, `$EDC/acct/${kapua.id}/KEYS-V1/REPLY/${rid}`, 'the exact reply topic');
    const dec = decodeKuraPayload(raw);
    if (!dec.ok) throw new Error(dec.error);
    const code = dec.value.metrics.find((m) => m.name === 'response.code');
    t.equal(code?.type, 'INT32', 'response.code is an INT32');
    const text = dec.value.body?.toString() ?? '';
    bodies.push(text, raw.toString('latin1'));
    return { code: Number(code?.value), message: dec.value.metrics.find((m) => m.name === 'response.exception.message')?.value as string | undefined, body: text };
  };

  let r = await ask('GET/keystores');
  t.equal(r.code, 200);
  t.same(JSON.parse(r.body), [{ keystoreServicePid: 'HttpsKeystore', type: 'PEM', size: 0 }, { keystoreServicePid: 'SSLKeystore', type: 'PEM', size: 0 }]);

  // Job step "Keystore Keypair Create" (KuraKeystoreKeypair; Jackson writes every field).
  r = await ask('POST/keystores/entries/keypair', { keystoreServicePid: 'SSLKeystore', alias: 'cloud', algorithm: 'RSA', signatureAlgorithm: 'SHA256withRSA', size: 2048, attributes: 'CN=gw-keys, O=Fleet' });
  t.same([r.code, r.body], [200, '']);
  // The CSR request (KuraKeystoreCSRInfo): Kura's handler answers a JSON string.
  r = await ask('POST/keystores/entries/csr', { keystoreServicePid: 'SSLKeystore', alias: 'cloud', signatureAlgorithm: 'SHA256withRSA', attributes: 'CN=gw-keys, O=Fleet' });
  t.equal(r.code, 200);
  const csr = JSON.parse(r.body) as string;
  t.match(execFileSync('openssl', ['req', '-verify', '-noout', '-subject', '-nameopt', 'RFC2253'], { input: csr, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] }), 'subject=CN=gw-keys,O=Fleet');

  // Job step "Keystore Certificate Create" (KuraKeystoreCertificate), with the certificate of the
  // device's own key pair as a trusted certificate elsewhere.
  r = await ask('GET/keystores/entries/entry', { keystoreServicePid: 'SSLKeystore', alias: 'cloud' });
  const item = JSON.parse(r.body);
  t.match(item, { keystoreServicePid: 'SSLKeystore', alias: 'cloud', type: 'PRIVATE_KEY', algorithm: 'RSA', size: 2048, subjectDN: 'CN=gw-keys, O=Fleet' });
  r = await ask('POST/keystores/entries/certificate', { keystoreServicePid: 'HttpsKeystore', alias: 'peer', certificate: item.certificateChain[0] });
  t.same([r.code, r.body], [200, '']);
  // Kapua's item query: by keystore, by alias (null fields as Jackson writes them), or none.
  r = await ask('GET/keystores/entries', { keystoreServicePid: 'HttpsKeystore', alias: null });
  t.match(JSON.parse(r.body), [{ alias: 'peer', type: 'TRUSTED_CERTIFICATE', subjectDN: 'CN=gw-keys, O=Fleet', issuer: 'CN=gw-keys,O=Fleet', algorithm: 'SHA256withRSA', size: 2048 }]);
  r = await ask('GET/keystores/entries', { keystoreServicePid: null, alias: 'cloud' });
  t.same(JSON.parse(r.body).map((x: any) => x.keystoreServicePid), ['SSLKeystore']);
  r = await ask('GET/keystores/entries');
  t.same(JSON.parse(r.body).map((x: any) => x.alias).sort(), ['cloud', 'peer']);

  // Errors as a native handler's: Kapua shows response.exception.message.
  r = await ask('POST/keystores/entries/keypair', { keystoreServicePid: 'SSLKeystore', alias: 'x', algorithm: 'EC', size: 255, signatureAlgorithm: 'SHA256withECDSA', attributes: 'CN=x' });
  t.same([r.code, r.message], [400, 'Bad request. EC key size 255 is not supported: use one of 256, 384, 521']);
  r = await ask('GET/keystores/entries/entry', { keystoreServicePid: 'SSLKeystore', alias: 'gone' });
  t.same([r.code, r.message], [404, 'entry "gone" not found in keystore SSLKeystore']);
  r = await ask('GET/keystores/nothing');
  t.same([r.code, r.message], [400, 'Bad request. Resource not found']);
  r = await ask('POST/keystores/entries/certificate', { keystoreServicePid: 'HttpsKeystore' });
  t.equal(r.code, 400);
  t.match(r.message, /expected request format/);

  // Hostile bodies: not JSON, not an object, a certificate past the bound: 400 with the reason.
  const raw = async (methodResource: string, body: Buffer) => {
    const rid = `-${Date.now()}${++n}`;
    await kapua.client.publish(`$EDC/acct/${DEVICE}/KEYS-V1/${methodResource}`, encodeKuraPayload({ metrics: [{ name: 'requester.client.id', type: 'STRING', value: kapua.id }, { name: 'request.id', type: 'STRING', value: rid }], body }), { qos: 0 });
    await until(() => kapua.replies.has(rid), 15_000, 'reply');
    const dec = decodeKuraPayload(kapua.replies.get(rid)!.payload);
    if (!dec.ok) throw new Error(dec.error);
    return { code: dec.value.metrics.find((m) => m.name === 'response.code')?.value, message: String(dec.value.metrics.find((m) => m.name === 'response.exception.message')?.value) };
  };
  let bad = await raw('POST/keystores/entries/certificate', Buffer.from('{"keystoreServicePid": '));
  t.equal(bad.code, 400, `not JSON: ${bad.message}`);
  bad = await raw('POST/keystores/entries/certificate', Buffer.from('["SSLKeystore"]'));
  t.same([bad.code, bad.message], [400, 'Bad request, expected request format: {"keystoreServicePid": "MyKeystoreName", "alias": "MyAlias", "type": "TrustedCertificate", "certificate": "..."}']);
  bad = await raw('POST/keystores/entries/certificate', Buffer.from(JSON.stringify({ keystoreServicePid: 'SSLKeystore', alias: 'big', certificate: 'A'.repeat(200_000) })));
  t.same([bad.code, bad.message], [400, 'Bad request. certificate: longer than 65536 characters']);

  // Job step "Keystore Item Delete" (KuraKeystoreItemQuery body on DEL).
  r = await ask('DEL/keystores/entries', { keystoreServicePid: 'HttpsKeystore', alias: 'peer' });
  t.same([r.code, r.body], [200, '']);
  r = await ask('GET/keystores');
  t.same(JSON.parse(r.body).map((x: any) => x.size), [0, 1]);

  // A requester without rest.keystores (set by the administrator over REST) is refused.
  const admin = { authorization: `Basic ${Buffer.from('admin:Adm1n-Secret!').toString('base64')}` };
  const put = await d.request('/services/configuration/v2/configurableComponents/configurations/_update', { method: 'PUT', headers: admin, body: { configs: [{ pid: CLOUD, properties: { 'requester.permissions': { type: 'STRING', value: ['rest.assets'] } } }], takeSnapshot: false } });
  t.equal(put.status, 200, put.body);
  r = await ask('DEL/keystores/entries', { keystoreServicePid: 'SSLKeystore', alias: 'cloud' });
  t.same([r.code, r.message], [400, 'Forbidden: requires rest.keystores']);
  r = await ask('GET/keystores');
  t.same([r.code, r.message], [400, 'Forbidden: requires rest.keystores']);
  const still = await d.request('/services/keystores/v1/entries/entry?keystoreServicePid=SSLKeystore&alias=cloud', { headers: admin });
  t.equal(still.status, 200, 'nothing deleted');

  t.notMatch([...bodies, ...d.logs].join('\n'), /PRIVATE KEY/, 'no private key in any reply or log line');
});
