// The human labels of the daemon's own components' properties (docs/configuration.md, one table per
// section): what configuration/v2, CONF-V2 and CONF-V1 carry as each AD's name and description, and
// what the console's editor shows beside a field (with the unit, which Kura's AD has no field for,
// at the end of the description). Keyed by property id; the id stays the key everywhere.

import type { PropertyLabel } from '../drivers/driver.js';

type Labels = Readonly<Record<string, PropertyLabel>>;

const L = (name: string, description: string, unit?: string): PropertyLabel => (unit ? { name, description, unit } : { name, description });

const DAEMON: Labels = {
  'log.level': L('Log level', 'The lowest level that is logged: error, warn, info or debug.'),
  'configuration.snapshots.max': L('Snapshots kept', 'Configuration snapshots kept; the oldest is removed beyond it.'),
  'configuration.snapshots.max.bytes': L('Snapshot bytes', 'What all snapshots may take together; beyond it the oldest are removed, the newest is always kept.', 'bytes'),
};

const REST: Labels = {
  'allowed.ports': L('Allowed ports', 'When not empty, the REST API answers only on these listener ports.'),
  'auth.password.enabled': L('Password login', 'Password login and BASIC credentials are possible.'),
  'auth.basic.enabled': L('BASIC credentials', 'BASIC credentials are accepted on every resource; needs password login.'),
  'auth.certificate.enabled': L('Certificate login', 'Client certificates authenticate, on the client-auth ports.'),
  'auth.certificate.stateless.enabled': L('Stateless certificates', 'A valid client certificate authenticates each request without a session.'),
  'session.management.enabled': L('Sessions', 'The session endpoints and the session cookie work; off, they answer 404.'),
  'session.inactivity.interval': L('Session inactivity', 'A session not used for this long expires.', 's'),
  'session.max.count': L('Most sessions', 'Sessions kept at once; at the bound a login evicts a least recently used one.'),
  'session.max.per.identity': L('Sessions per identity', 'Sessions one identity keeps; its next login evicts its own least recently used one.'),
  'login.throttle.max.delay': L('Longest login pause', 'The longest pause imposed after repeated wrong passwords; 0 turns throttling off.', 'ms'),
};

const CONSOLE: Labels = {
  'console.enabled': L('Console', 'Serve the field console at /console/; off, it answers 404.'),
  'access.banner.enabled': L('Show the banner', 'Show the banner text at login.'),
  'access.banner.content': L('Banner text', 'The text shown at login when the banner is on.'),
  'new.password.min.length': L('Shortest password', 'The fewest characters a new password may have.', 'characters'),
  'new.password.require.digits': L('Password needs a digit', 'A new password must contain a digit.'),
  'new.password.require.special.characters': L('Password needs a symbol', 'A new password must contain a character that is not a letter or a digit.'),
  'new.password.require.both.cases': L('Password needs both cases', 'A new password must contain upper- and lower-case letters.'),
};

const HTTP: Labels = {
  'http.ports': L('HTTP ports', 'Plain HTTP listeners. Takes effect after a restart.'),
  'https.ports': L('HTTPS ports', 'HTTPS listeners that never ask for a client certificate. Takes effect after a restart.'),
  'https.client.auth.ports': L('Client-certificate ports', 'HTTPS listeners that require a client certificate chaining to the truststore. Takes effect after a restart.'),
  'https.keystore.cert': L('Server certificate', 'The HTTPS certificate chain: a PEM file or a keystore entry (keystore:<keystore>/<alias>).'),
  'https.keystore.key': L('Server key', 'Its private key: a PEM file or a keystore entry; give both or neither.'),
  'https.truststore': L('Truststore', 'CA certificates that client certificates must chain to: a PEM file or a keystore.'),
  'https.truststore.crl': L('Revocation lists', 'A PEM file of CRLs checked on the client-auth ports; re-read at every reload.'),
  'bind.address': L('Bind address', 'The address every listener binds; 127.0.0.1 keeps the REST API local. Takes effect after a restart.'),
  'max.connections': L('Most connections', 'Open connections over all listeners; at the bound a new one takes the place of an idle or slow one.'),
  'body.timeout': L('Body timeout', 'The time to receive a request body read into memory; a slower one is answered 408.', 'ms'),
  'max.unauthenticated.bodies': L('Unauthenticated bodies', 'Requests without a principal (logins) that may be receiving a body at once.'),
};

/** Both halves of a connection (the transport's keys and the cloud service's), one table. */
const CONNECTION: Labels = {
  'broker-url': L('Broker URL', 'mqtt://host[:port] or, with TLS, mqtts://host[:port].'),
  'client-id': L('Client id', 'The MQTT client id, also the device\'s topic level.'),
  username: L('User name', 'The broker user name; empty: none.'),
  password: L('Password', 'The broker password; never shown or logged.'),
  'keep-alive': L('Keep-alive', 'The MQTT keep-alive interval; 0 turns it off.', 's'),
  'clean-session': L('Clean session', 'Off keeps the subscription and queued QoS 1 messages on the broker across reconnections.'),
  'tls.ca': L('Broker CA', 'The CA the broker\'s certificate must chain to: a PEM file or a keystore entry; empty: the system\'s.'),
  'tls.cert': L('Client certificate', 'The client certificate for the broker: a PEM file or a keystore entry; give with the key.'),
  'tls.key': L('Client key', 'Its private key: a PEM file or a keystore entry.'),
  enabled: L('Enabled', 'When off, no connection is attempted.'),
  'topic.context.account-name': L('Account name', 'The account topic level.'),
  'topic.control-prefix': L('Control prefix', 'The first level of request, reply and life-cycle topics.'),
  'payload.encoding': L('Payload encoding', 'How requests, replies, telemetry and life-cycle messages are encoded.'),
  'outbox.max.messages': L('Outbox messages', 'Telemetry messages kept while the broker is unreachable; beyond it the oldest are dropped.'),
  'outbox.max.bytes': L('Outbox bytes', 'What the outbox\'s files may take; beyond it the oldest messages are dropped.', 'bytes'),
  'encode.gzip': L('Gzip payloads', 'Gzip protobuf payloads when that makes them shorter.'),
  'requester.permissions': L('Requester permissions', 'What a client sending requests over this connection may do, as an identity\'s permissions over REST.'),
  'applications.disabled': L('Applications off', 'MQTT applications this connection does not serve (not subscribed, not in BIRTH, no reply).'),
  type: L('Type', 'What the connection speaks: kura (Kura\'s topics and applications) or sparkplug (a Sparkplug B edge node).'),
  'sparkplug.group.id': L('Sparkplug group', 'The Sparkplug group id; required with type sparkplug.'),
  'sparkplug.edge.node.id': L('Sparkplug edge node', 'The edge node id; empty: the client id.'),
  'sparkplug.primary.host.id': L('Primary host', 'The primary host application whose STATE decides when the edge node may publish; empty: none.'),
  'telemetry.assets': L('Telemetry assets', 'Whose telemetry this connection publishes: * (every asset) or a list of asset PIDs.'),
};

const DEPLOY: Labels = {
  'marketplace.url': L('Marketplace URL', 'The base from which package descriptors are fetched.'),
  'gateway.version': L('Gateway version', 'The version compared with a package\'s compatibility range.'),
  'upload.max.bytes': L('Largest package', 'The largest upload or download accepted; more is refused with 413.', 'bytes'),
  'download.timeout': L('Download timeout', 'For connecting, and for each pause while a download streams.', 'ms'),
  'download.deadline': L('Download deadline', 'The longest a whole download may take, however slowly the server sends.', 'ms'),
  'download.max.redirects': L('Redirects', 'Redirects a download follows (only to http or https).'),
  'queue.max.jobs': L('Queued jobs', 'Deployment jobs queued or running at once; one more is refused with 507.'),
  'queue.max.bytes': L('Queued bytes', 'Package bytes the queued and running jobs bring onto the device together; past it 507.', 'bytes'),
  'file.allowed.dirs': L('Allowed folders', 'file: URLs given to an install must point inside one of these folders.'),
  'trust.anchors': L('Trust anchors', 'Public keys (PEM text or file paths); when not empty, every package must be signed by one of them.'),
  'unsigned.allowed': L('Unsigned packages', 'Off refuses every package while there is no trust anchor.'),
  'system.packages.database': L('System packages', 'Where the image\'s own packages are listed: auto, none, dpkg:<path> or opkg:<path>.'),
};

const COMMAND: Labels = {
  'command.enabled': L('Remote command', 'CMD-V1 is registered and announced only while on; turning it off ends the commands still running.'),
  'command.password': L('Command password', 'What a request\'s password must equal; empty refuses every request. Never shown or logged.'),
  'command.working.directory': L('Working folder', 'Where commands run, inside the data folder; empty: <dataDir>/command.'),
  'command.timeout': L('Timeout', 'A request\'s timeout when it names none, and the longest one may ask for.', 's'),
  'command.output.max.bytes': L('Output bytes', 'The bytes of standard output, and of standard error, sent back; the rest is dropped.', 'bytes'),
  'command.max.concurrent': L('Commands at once', 'Commands running at once; one more is refused.'),
};

/** The labels of a singleton component's properties, by the PID without its connection suffix. */
export const COMPONENT_LABELS: Readonly<Record<string, Labels>> = {
  'org.eclipse.kura.gatewayd.Daemon': DAEMON,
  'org.eclipse.kura.internal.rest.provider.RestService': REST,
  'org.eclipse.kura.web.Console': CONSOLE,
  'org.eclipse.kura.http.server.manager.HttpService': HTTP,
  'org.eclipse.kura.core.data.transport.mqtt.MqttDataTransport': CONNECTION,
  'org.eclipse.kura.cloud.CloudService': CONNECTION,
  'org.eclipse.kura.deployment.agent': DEPLOY,
  'org.eclipse.kura.cloud.app.command.CommandCloudApp': COMMAND,
};
